/**
 * CallRecord: one call in flight (remote or on the engine host), fanned out to every Run that
 * follows it (a retried Run with the same call id joins instead of running twice). Events are
 * kept (up to MAX_REPLAY) so a joiner sees them in order before the one terminal (SPEC W2).
 */
import type { Event, Failure, Result } from '../../generated/ts/berth/v1/calls.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';

/** Most events replayed to a Run that joins late. */
export const MAX_REPLAY = 10_000;

/** The one ending of a call: its Result or its Failure. */
export type Terminal = { $case: 'result'; value: Result } | { $case: 'failure'; value: Failure };

/** What a follower receives, in order: events, then exactly one terminal. */
export type CallItem = { $case: 'event'; value: Event } | Terminal;

/** One call in flight. `stop(reason)` is how it is cancelled on its machine. */
export class CallRecord {
  readonly startedAt = Date.now();
  readonly #items: CallItem[] = [];
  #end?: Terminal | BerthError;
  #wakers = new Set<() => void>();
  /** Runs following the call now (the first caller and any that joined). */
  followers = 0;
  #settle!: () => void;
  /** Resolves once the machine is really done with the call (terminal frame, process exit, or worker gone). */
  readonly settled = new Promise<void>((resolve) => (this.#settle = resolve));

  constructor(
    readonly callId: string,
    readonly runId: string,
    readonly machine: string,
    readonly allocation: Allocation,
    readonly stop: (reason: BerthError) => void,
  ) {}

  /** True once the call ended for its callers. */
  get ended(): boolean {
    return this.#end !== undefined;
  }

  /** Records an event (ignored after the end). */
  event(e: Event): void {
    if (this.#end) return;
    if (this.#items.length < MAX_REPLAY) this.#items.push({ $case: 'event', value: e });
    this.#wake();
  }

  /** Ends the call with its Result or Failure (first ending wins). */
  finish(t: Terminal): void {
    if (this.#end) return;
    this.#end = t;
    this.#items.push(t);
    this.#wake();
  }

  /** Ends the call with an RPC error for its callers (first ending wins): went away, deadline, cancelled. */
  fail(err: BerthError): void {
    if (this.#end) return;
    this.#end = err;
    this.#wake();
  }

  /** Marks the machine done with the call. */
  markSettled(): void {
    this.#settle();
  }

  /**
   * Yields every item from the start, waiting for new ones, until the terminal; throws the
   * BerthError when the call failed, or `signal.reason` when the follower goes away.
   */
  async *follow(signal: AbortSignal): AsyncGenerator<CallItem> {
    this.followers++;
    try {
      for (let i = 0; ; ) {
        while (i < this.#items.length) {
          const item = this.#items[i++];
          yield item;
          if (item.$case !== 'event') return;
        }
        if (this.#end instanceof BerthError) throw this.#end;
        signal.throwIfAborted();
        await new Promise<void>((resolve) => {
          const done = () => {
            this.#wakers.delete(done);
            signal.removeEventListener('abort', done);
            resolve();
          };
          this.#wakers.add(done);
          signal.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      this.followers--;
    }
  }

  #wake(): void {
    for (const w of [...this.#wakers]) w();
  }
}
