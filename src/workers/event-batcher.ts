/**
 * EventBatcher: one call's executor events → wire Events, with output lines batched (issue 11).
 * Consecutive lines of one stream go out as one `logs` Event when BATCH_LINES or BATCH_BYTES are
 * reached, when the other stream or a metric comes (order is kept: SPEC W2), on `flush()`/`close()`
 * (before the call's terminal), or FLUSH_MS after the first waiting line — so a quiet node's line
 * shows at once and a chatty one costs one message per batch on every hop. A lone line goes out
 * as a `log` Event, as before batching.
 */
import type { Event } from '../../generated/ts/berth/v1/calls.js';
import type { ExecEvent } from './executors/types.js';
import { toEvent } from './task.js';

/** Most lines in one batch. */
export const BATCH_LINES = 256;
/** Bytes (UTF-16 units, close enough) at which a batch is sent. */
export const BATCH_BYTES = 16 * 1024;
/** Longest a line waits for company, in ms. */
export const FLUSH_MS = 5;

/** Batches one call's output lines. */
export class EventBatcher {
  #stream: 'stdout' | 'stderr' = 'stdout';
  #lines: string[] = [];
  #size = 0;
  #timer?: NodeJS.Timeout;

  /** @param emit receives each wire Event, in order. */
  constructor(
    readonly callId: string,
    readonly emit: (e: Event) => void,
  ) {}

  /** Takes one executor event: a line joins the batch, a metric goes out after the lines before it. */
  push(e: ExecEvent): void {
    if (e.kind !== 'log') {
      this.flush();
      this.emit(toEvent(this.callId, e));
      return;
    }
    if (this.#lines.length > 0 && e.stream !== this.#stream) this.flush();
    this.#stream = e.stream;
    this.#lines.push(e.line);
    this.#size += e.line.length + 1;
    if (this.#lines.length >= BATCH_LINES || this.#size >= BATCH_BYTES) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Sends the waiting lines now. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#lines.length === 0) return;
    const lines = this.#lines;
    this.#lines = [];
    this.#size = 0;
    this.emit(
      lines.length === 1
        ? toEvent(this.callId, { kind: 'log', stream: this.#stream, line: lines[0] })
        : { callId: this.callId, kind: { $case: 'logs', value: { stream: this.#stream, lines } }, seq: 0 },
    );
  }

  /** Sends the waiting lines; call before the call's terminal. */
  close(): void {
    this.flush();
  }
}
