/**
 * OutputCapture: one job's combined stdout+stderr, as bytes in arrival order (SPEC D5). The two
 * streams are merged at line boundaries (a line is never cut by the other stream's bytes; a
 * partial line longer than MAX_PARTIAL_LINE is let through as it is). Every byte goes to the
 * job's log file (written synchronously, so order holds and memory stays flat
 * however much the job prints); the most recent `ringBytes` stay in memory for reports. The log
 * file is created at the job's first byte: a job that prints nothing costs no file (issue 11).
 * Invalid UTF-8 is only decoded (with U+FFFD replacement) when shown, never on the write path.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

/** Default bytes of recent output kept in memory per job (64 KiB). */
export const DEFAULT_RING_BYTES = 64 * 1024;
/** Bytes of an unfinished line held back per stream before it is written anyway. */
export const MAX_PARTIAL_LINE = 64 * 1024;

/** Log file plus memory-bounded ring buffer of one job's output. */
export class OutputCapture {
  #fd: number | undefined;
  readonly #ringBytes: number;
  #chunks: Buffer[] = [];
  #held = 0;
  #total = 0;
  #closed = false;
  readonly #partial = new Map<string, Buffer>();

  /**
   * @param logFile path of the log file to create (truncated) at the first byte, or undefined for memory only.
   * @param ringBytes bytes of recent output kept in memory (≥ 1).
   */
  constructor(
    readonly logFile: string | undefined,
    ringBytes = DEFAULT_RING_BYTES,
  ) {
    this.#ringBytes = Math.max(1, ringBytes);
  }

  /** True once the log file exists (something was written to it). */
  get logged(): boolean {
    return this.#fd !== undefined;
  }

  /** Total bytes captured. */
  get bytes(): number {
    return this.#total;
  }

  /**
   * Takes a chunk of stream `source` (e.g. 'stdout'): whole lines go out at once, an unfinished
   * line waits for its end (or for MAX_PARTIAL_LINE bytes, or `flush`).
   */
  take(source: string, chunk: Buffer): void {
    const held = this.#partial.get(source);
    const data = held === undefined ? chunk : Buffer.concat([held, chunk]);
    const cut = data.lastIndexOf(0x0a) + 1;
    const rest = data.subarray(cut);
    this.write(data.subarray(0, cut));
    if (rest.length >= MAX_PARTIAL_LINE) {
      this.write(rest);
      this.#partial.delete(source);
    } else if (rest.length > 0) this.#partial.set(source, Buffer.from(rest));
    else this.#partial.delete(source);
  }

  /** Writes out the unfinished lines of every stream (at the end of a job). */
  flush(): void {
    for (const b of this.#partial.values()) this.write(b);
    this.#partial.clear();
  }

  /** Appends bytes to the log and the ring as they are. Ignored after close. */
  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#total += chunk.length;
    if (this.logFile !== undefined && !this.#closed && this.logError === undefined) this.#toFile(chunk);
    this.#chunks.push(Buffer.from(chunk)); // a copy: a slice would keep its whole parent alive
    this.#held += chunk.length;
    while (this.#held - this.#chunks[0].length >= this.#ringBytes) this.#held -= this.#chunks.shift()!.length;
  }

  #toFile(chunk: Buffer): void {
    try {
      this.#fd ??= openSync(this.logFile!, 'w');
      for (let off = 0; off < chunk.length; ) off += writeSync(this.#fd, chunk, off, chunk.length - off);
    } catch (e) {
      // the output still reaches the ring (and the report); the log stops here, saying why
      this.logError = `log file ${this.logFile}: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  /** Why the log file could not be created or written, once that happened (output then stays in memory only). */
  logError: string | undefined;

  /** Appends a note of dispatch's own (e.g. "[berth] sent SIGTERM") to the log and the ring. */
  note(text: string): void {
    this.flush();
    const last = this.#chunks.at(-1);
    const fresh = last === undefined || last[last.length - 1] === 0x0a;
    this.write(Buffer.from(`${fresh ? '' : '\n'}[berth dispatch] ${text}\n`));
  }

  /** Recent output decoded as UTF-8 (invalid bytes → U+FFFD); at most `ringBytes` bytes' worth. */
  tail(): string {
    let buf = Buffer.concat(this.#chunks);
    if (buf.length > this.#ringBytes) buf = buf.subarray(buf.length - this.#ringBytes);
    const cut = this.#total > buf.length;
    let start = 0;
    // a cut may land inside a character: skip its continuation bytes rather than show U+FFFD
    while (cut && start < 3 && start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
    return new TextDecoder('utf-8', { fatal: false }).decode(buf.subarray(start));
  }

  /** Last `n` lines of `tail()`, and whether earlier output was left out. */
  lastLines(n: number): { text: string; truncated: boolean } {
    const text = this.tail().replace(/\n$/, '');
    const lines = text === '' ? [] : text.split('\n');
    const truncated = lines.length > n || this.#total > this.#ringBytes;
    return { text: lines.slice(-n).join('\n'), truncated };
  }

  /** Flushes unfinished lines and closes the log file; safe to call twice. */
  close(): void {
    this.flush();
    if (this.#fd !== undefined && !this.#closed) {
      this.#closed = true;
      closeSync(this.#fd);
    }
  }
}
