/**
 * The last words of a started worker's log file, for the messages that say why a start failed
 * (SPEC V4: the engine's own message). A worker logs pino JSON lines; one of those reads as
 * `msg: reason` ("cannot attach; retrying: 14 UNAVAILABLE: … ECONNREFUSED 127.0.0.1:1").
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Bytes read from the end of the log: enough for a few lines, bounded for a huge log. */
const TAIL_BYTES = 4096;
/** Longest text returned, in characters. */
const MAX_CHARS = 300;

/**
 * The last non-empty line of the file at `path`, summarised when it is a JSON log line;
 * '' when the file is missing, unreadable or empty. Never throws.
 */
export function lastWords(path: string): string {
  let text: string;
  try {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TAIL_BYTES);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      text = buffer.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
  const lines = text.split('\n').map((l) => l.trim());
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return clip(summarise(lines.pop() ?? ''));
}

/** `msg: reason` (or `msg: err.message`) for a pino JSON line; the line itself otherwise. */
function summarise(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const entry = JSON.parse(line) as { msg?: unknown; reason?: unknown; err?: { message?: unknown } };
    const msg = typeof entry.msg === 'string' ? entry.msg : '';
    const why = typeof entry.reason === 'string' ? entry.reason : entry.err?.message;
    if (!msg) return line;
    return typeof why === 'string' && why !== '' ? `${msg}: ${why}` : msg;
  } catch {
    return line;
  }
}

function clip(s: string): string {
  return s.length > MAX_CHARS ? `${s.slice(0, MAX_CHARS - 1)}…` : s;
}
