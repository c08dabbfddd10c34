/**
 * Flushing buffered log lines on demand, with no dependency (so the CLI entry can use it without loading
 * pino): logger.ts registers its flusher here; code that writes to stderr itself (a fatal message just
 * before exit) calls flushLogs() first, so its message comes after the log lines that led to it.
 */
const flushers = new Set<() => void>();

/** Registers `flush` (synchronous: the lines are written when it returns). */
export function onFlushLogs(flush: () => void): void {
  flushers.add(flush);
}

/** Writes every buffered log line of this process now (synchronously). */
export function flushLogs(): void {
  for (const flush of flushers) flush();
}
