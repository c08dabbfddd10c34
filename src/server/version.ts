/** Version of this berth build, sent to workers in Welcome and shown by `--version` (package.json). */
export { VERSION as SERVER_VERSION_TEXT } from '../package-info.js';
