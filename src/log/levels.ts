/** Log levels accepted by `--log-level` / BERTH_LOG_LEVEL (no pino here: option parsing stays light). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** One of LOG_LEVELS. */
export type LogLevel = (typeof LOG_LEVELS)[number];
