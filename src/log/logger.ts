/**
 * Structured logs (pino): pretty on a terminal, JSON lines otherwise.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

import { onFlushLogs } from './flush.js';
import type { LogLevel } from './levels.js';

export { LOG_LEVELS, type LogLevel } from './levels.js';

/** Bytes of log lines gathered before a write, and the longest a line waits, ms. */
const BUFFER_BYTES = 4096;
const FLUSH_MS = 50;

type Destination = ReturnType<typeof pino.destination>;
/** Buffered destinations written to since their last flush; flushed together by one timer and at exit. */
const dirty = new Set<Destination>();
let flushing = false;

/** When lines were last written out (performance.now(), ms). */
let lastFlush = -Infinity;

function flushAll(): void {
  if (dirty.size === 0) return;
  lastFlush = performance.now();
  for (const d of dirty) d.flush();
  dirty.clear();
}

function startFlushing(): void {
  if (flushing) return;
  flushing = true;
  process.once('exit', flushAll);
  setInterval(flushAll, FLUSH_MS).unref();
  onFlushLogs(flushAll);
}

/**
 * Creates the process logger, writing to `to`: a file descriptor or a path (default 2, stderr, so stdout stays
 * free for command output). `pretty` defaults to whether stderr is a terminal. A JSON line is written at once
 * after a quiet FLUSH_MS (50 ms), else within FLUSH_MS, and at exit.
 */
export function createLogger(
  level: LogLevel = 'info',
  pretty = process.stderr.isTTY === true,
  to: number | string = 2,
): Logger {
  if (pretty) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { destination: to, colorize: true, ignore: 'pid,hostname' } },
    });
  }
  // Buffered (issue 9): a write(2) per grant and per release doubled the server's CPU per claim cycle at
  // `info`. A line is written at once when none was in the last FLUSH_MS; lines that follow within it are
  // written once BUFFER_BYTES gather or FLUSH_MS after, and what is left when the process exits (a crash
  // included), so only SIGKILL loses lines. Writes stay synchronous:
  // sonic-boom's flushSync retries EPIPE forever, so pino's own exit flush of an async destination would
  // hang the exit once whoever read stderr has gone.
  const dest = pino.destination({ dest: to, sync: true, minLength: BUFFER_BYTES });
  let broken = false;
  dest.on('error', () => {
    broken = true; // stderr gone (EPIPE): drop logs, never block shutdown
    dirty.delete(dest);
  });
  startFlushing();
  // pino writes through this: a line after a quiet FLUSH_MS is written at once (the timer may not fire while
  // start-up work holds the event loop), later ones gather; the timer flushes only destinations holding lines.
  const stream = {
    write(line: string): void {
      if (broken) return;
      dirty.add(dest);
      dest.write(line);
      if (performance.now() - lastFlush >= FLUSH_MS) flushAll();
    },
  };
  return pino({ level, base: { pid: process.pid } }, stream);
}

/** A logger that drops everything (tests, embedded use). */
export const silentLogger: Logger = pino({ level: 'silent' });
