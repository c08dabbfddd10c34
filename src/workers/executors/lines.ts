/**
 * LineSplitter: bytes in, complete lines out, invalid UTF-8 replaced (U+FFFD). Very long lines
 * are cut into pieces of at most `maxLine` characters so one line cannot hold memory forever.
 */

import type { Readable } from 'node:stream';
import type { Flow } from './types.js';

/** Default longest line in characters before it is cut. */
export const MAX_LINE = 64 * 1024;

/** Splits a byte stream into lines without their trailing newline (and `\r`). */
export class LineSplitter {
  readonly #decoder = new TextDecoder('utf-8', { fatal: false });
  #buf = '';

  constructor(readonly onLine: (line: string) => void, readonly maxLine = MAX_LINE) {}

  /** Feeds a chunk; emits every complete line it finishes. */
  push(chunk: Uint8Array): void {
    this.#buf += this.#decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = this.#buf.indexOf('\n')) >= 0) {
      this.#emit(this.#buf.slice(0, nl));
      this.#buf = this.#buf.slice(nl + 1);
    }
    while (this.#buf.length > this.maxLine) {
      this.onLine(this.#buf.slice(0, this.maxLine));
      this.#buf = this.#buf.slice(this.maxLine);
    }
  }

  /** Emits what is left (a last line without newline). */
  end(): void {
    this.#buf += this.#decoder.decode();
    if (this.#buf !== '') this.#emit(this.#buf);
    this.#buf = '';
  }

  #emit(line: string): void {
    this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
}

/**
 * Feeds `stream` into `split`, pausing the stream while the consumer's flow (`flow()`, looked up
 * per chunk) is full and resuming once it has room.
 */
export function pipeLines(stream: Readable, split: LineSplitter, flow: () => Flow | undefined): void {
  let paused = false;
  stream.on('data', (d: Buffer) => {
    split.push(d);
    const f = flow();
    if (paused || !f?.full()) return;
    paused = true;
    stream.pause();
    void f.room().then(() => {
      paused = false;
      stream.resume();
    });
  });
  stream.on('end', () => split.end());
}
