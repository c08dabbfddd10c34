/**
 * readMessages: the client messages of a grpc-js server stream as an async iterator, lean enough
 * for the claim hot path (issue 9): one 'data'/'end'/'error' listener and one abort listener per
 * call — no Node stream async iterator (whose end-of-stream watcher builds an error with a stack
 * on every close) and no listener added and removed per message.
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
 * reads its reason). A stream error, or a message `check` throws on, rejects the next `next()`. Never destroys the
 * call, so a status can still be sent; `return()` stops listening. One `next()` at a time.
 */
export function readMessages<T>(
  call: Readable,
  until: Stopper,
  check: (m: T) => T = (m) => m,
): AsyncIterableIterator<T> {
  const queue: T[] = [];
  let ended = false; // half-closed: deliver what is queued, then done
  let stopped = false; // aborted or returned: done at once
  let failure: { err: unknown } | undefined;
  let waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  const DONE: IteratorResult<T> = { done: true, value: undefined };

  const settle = () => {
    if (!waiter) return;
    const w = waiter;
    if (queue.length && !stopped) {
      waiter = undefined;
      w.resolve({ done: false, value: queue.shift() as T });
    } else if (failure && !stopped) {
      waiter = undefined;
      w.reject(failure.err);
    } else if (ended || stopped) {
      waiter = undefined;
      w.resolve(DONE);
    }
  };
  const onData = (m: T) => {
    try {
      queue.push(check(m));
    } catch (err) {
      onError(err); // e.g. an undecodable body: INVALID_ARGUMENT for the whole call
      return;
    }
    if (queue.length >= HIGH_WATER) call.pause();
    settle();
  };
  const onEnd = () => {
    ended = true;
    settle();
  };
  const onError = (err: unknown) => {
    failure = { err };
    settle();
  };
  const stop = () => {
    if (stopped) return;
    stopped = true;
    queue.length = 0;
    call.off('data', onData);
    call.off('end', onEnd);
    call.off('error', onError);
    unsubscribe();
    settle();
  };
  let unsubscribe = () => {};
  if (until.aborted) stopped = true;
  else {
    call.on('data', onData);
    call.once('end', onEnd);
    call.once('error', onError);
    unsubscribe = until.onAbort(stop);
  }

  return {
    next(): Promise<IteratorResult<T>> {
      if (stopped) return Promise.resolve(DONE);
      if (queue.length) {
        const value = queue.shift() as T;
        if (queue.length < HIGH_WATER / 2) call.resume();
        return Promise.resolve({ done: false, value });
      }
      if (failure) return Promise.reject(failure.err);
      if (ended) {
        stop();
        return Promise.resolve(DONE);
      }
      call.resume();
      return new Promise((resolve, reject) => (waiter = { resolve, reject }));
    },
    return(): Promise<IteratorResult<T>> {
      stop();
      return Promise.resolve(DONE);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
