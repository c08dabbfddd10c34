/** Version of this berth build, sent to workers in Welcome and shown by `--version`. */
export const SERVER_VERSION_TEXT = '0.1.0';
