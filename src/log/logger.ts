/**
 * Structured logs (pino): pretty on a terminal, JSON lines otherwise.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

import type { LogLevel } from './levels.js';

export { LOG_LEVELS, type LogLevel } from './levels.js';

/**
 * Creates the process logger. Writes to stderr so stdout stays free for command output.
 * `pretty` defaults to whether stderr is a terminal.
 */
export function createLogger(level: LogLevel = 'info', pretty = process.stderr.isTTY === true): Logger {
  if (pretty) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true, ignore: 'pid,hostname' } },
    });
  }
  const dest = pino.destination({ dest: 2, sync: true });
  dest.on('error', () => {}); // stderr gone (EPIPE): drop logs, never block shutdown
  return pino({ level, base: { pid: process.pid } }, dest);
}

/** A logger that drops everything (tests, embedded use). */
export const silentLogger: Logger = pino({ level: 'silent' });
