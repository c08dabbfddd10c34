/**
 * readMessages: the client messages of a grpc-js server stream as an async iterator, lean enough
 * for the claim hot path (issue 9): one object per call with one 'data'/'end'/'error' listener
 * and one scope listener — no Node stream async iterator (whose end-of-stream watcher builds an
 * error with a stack on every close), no `once` wrappers, no listener added and removed per message.
 */
import type { EventEmitter } from 'node:events';

/** Messages buffered before the stream is paused (HTTP/2 flow control then holds the client back). */
const HIGH_WATER = 16;

/** What ends the reading early: a CallScope (a listener without an AbortController). */
export interface Stopper {
  readonly aborted: boolean;
  /** Calls `fn` when it ends; returns the unsubscribe function. */
  onAbort(fn: () => void): () => void;
}

/** A readable server call: what readMessages needs of it. */
type Readable = EventEmitter & { pause(): unknown; resume(): unknown };

/**
 * Client messages until half-close, or until `until` ends (then it just stops: the caller
 * reads its reason). A stream error, or a message `check` throws on, rejects the next `next()`.
 * Never destroys the call, so a status can still be sent; `return()` stops listening. One
 * `next()` at a time.
 */
export function readMessages<T>(
  call: Readable,
  until: Stopper,
  check: (m: T) => T = (m) => m,
): AsyncIterableIterator<T> {
  return new MessageReader(call, until, check);
}

const DONE: IteratorResult<never> = Object.freeze({ done: true, value: undefined });

/** readMessages as one object per call: its listeners are the only closures (issue 9). */
class MessageReader<T> implements AsyncIterableIterator<T> {
  readonly #queue: T[] = [];
  #ended = false; // half-closed: deliver what is queued, then done
  #stopped = false; // aborted or returned: done at once
  #failure: { err: unknown } | undefined;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(
    readonly call: Readable,
    until: Stopper,
    readonly check: (m: T) => T,
  ) {
    if (until.aborted) {
      this.#stopped = true;
      return;
    }
    call.on('data', this.#onData);
    call.on('end', this.#onEnd);
    call.on('error', this.#onError);
    this.#unsubscribe = until.onAbort(this.#stop);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#stopped) return Promise.resolve(DONE);
    const queue = this.#queue;
    if (queue.length) {
      const value = queue.shift() as T;
      if (queue.length < HIGH_WATER / 2) this.call.resume();
      return Promise.resolve({ done: false, value });
    }
    if (this.#failure) return Promise.reject(this.#failure.err);
    if (this.#ended) {
      this.#stop();
      return Promise.resolve(DONE);
    }
    this.call.resume();
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.#stop();
    return Promise.resolve(DONE);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  #settle(): void {
    const w = this.#waiter;
    if (!w) return;
    if (this.#queue.length && !this.#stopped) {
      this.#waiter = undefined;
      w.resolve({ done: false, value: this.#queue.shift() as T });
    } else if (this.#failure && !this.#stopped) {
      this.#waiter = undefined;
      w.reject(this.#failure.err);
    } else if (this.#ended || this.#stopped) {
      this.#waiter = undefined;
      w.resolve(DONE);
    }
  }

  readonly #onData = (m: T): void => {
    try {
      this.#queue.push(this.check(m));
    } catch (err) {
      this.#onError(err); // e.g. an undecodable body: INVALID_ARGUMENT for the whole call
      return;
    }
    if (this.#queue.length >= HIGH_WATER) this.call.pause();
    this.#settle();
  };

  readonly #onEnd = (): void => {
    this.#ended = true;
    this.#settle();
  };

  readonly #onError = (err: unknown): void => {
    this.#failure ??= { err }; // the first error wins
    this.#settle();
  };

  readonly #stop = (): void => {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#queue.length = 0;
    this.call.off('data', this.#onData);
    this.call.off('end', this.#onEnd);
    this.call.off('error', this.#onError);
    this.#unsubscribe?.();
    this.#settle();
  };
}
