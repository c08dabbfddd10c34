/**
 * LineSplitter: bytes in, complete lines out, invalid UTF-8 replaced (U+FFFD). A line longer than
 * `maxLine` UTF-8 bytes is cut: its first bytes (at a character boundary) are kept and the rest
 * dropped as it arrives, with a marker saying how many bytes were cut — memory stays bounded and
 * one line can never make a frame gRPC refuses.
 */

import type { Readable } from 'node:stream';
import type { Flow } from './types.js';

/** Default longest output line, in UTF-8 bytes, before it is cut (64 KiB). */
export const MAX_LINE = 64 * 1024;

/** The marker appended to a cut line or text: ` [berth: N bytes cut]`. */
export function cutMarker(bytes: number): string {
  return ` [berth: ${bytes} bytes cut]`;
}

/** Length of the longest prefix of `b` (at most `max` bytes) that ends on a UTF-8 character boundary. */
function boundary(b: Uint8Array, max: number): number {
  if (b.length <= max) return b.length;
  let i = max;
  while (i > 0 && (b[i] & 0xc0) === 0x80) i--; // b[i] is the first byte not kept: step back over continuation bytes
  return i;
}

/** `text` cut to at most `maxBytes` UTF-8 bytes (plus a cutMarker) when longer. */
export function clipText(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3) return text; // cannot exceed: a UTF-16 unit is at most 3 UTF-8 bytes
  const b = Buffer.from(text, 'utf8');
  if (b.length <= maxBytes) return text;
  const keep = boundary(b, maxBytes);
  return b.subarray(0, keep).toString('utf8') + cutMarker(b.length - keep);
}

/** Splits a byte stream into lines without their trailing newline (and `\r`). */
export class LineSplitter {
  #parts: Buffer[] = [];
  #kept = 0;
  #cut = 0;
  #lastCR = false;

  constructor(
    readonly onLine: (line: string) => void,
    readonly maxLine = MAX_LINE,
  ) {}

  /** Feeds a chunk; emits every complete line it finishes. */
  push(chunk: Uint8Array): void {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (;;) {
      const nl = b.indexOf(0x0a, start);
      this.#take(b.subarray(start, nl < 0 ? b.length : nl));
      if (nl < 0) return;
      this.#emit();
      start = nl + 1;
    }
  }

  /** Emits what is left (a last line without newline). */
  end(): void {
    if (this.#kept > 0 || this.#cut > 0) this.#emit();
  }

  #take(b: Buffer): void {
    if (b.length === 0) return;
    this.#lastCR = b[b.length - 1] === 0x0d;
    const room = this.maxLine - this.#kept;
    if (b.length <= room) {
      this.#parts.push(b);
      this.#kept += b.length;
      return;
    }
    if (room > 0) {
      this.#parts.push(Buffer.from(b.subarray(0, room))); // a copy: the chunk itself is not held
      this.#kept += room;
    }
    this.#cut += b.length - room;
  }

  #emit(): void {
    let bytes = this.#parts.length === 1 ? this.#parts[0] : Buffer.concat(this.#parts, this.#kept);
    let cut = this.#cut;
    if (this.#lastCR) {
      if (cut > 0) cut--;
      else bytes = bytes.subarray(0, bytes.length - 1);
    }
    this.#parts = [];
    this.#kept = 0;
    this.#cut = 0;
    this.#lastCR = false;
    if (cut === 0) return this.onLine(bytes.toString('utf8'));
    const end = utf8Complete(bytes, bytes.length);
    this.onLine(bytes.subarray(0, end).toString('utf8') + cutMarker(cut + bytes.length - end));
  }
}

/** Length of `b[0, n)` without a trailing incomplete UTF-8 sequence. */
function utf8Complete(b: Uint8Array, n: number): number {
  let i = n - 1;
  let back = 0;
  while (i >= 0 && back < 3 && (b[i] & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return n;
  const lead = b[i];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return i + need <= n ? n : i;
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
