/**
 * nextOrAbort: the next item of an async iterator, or done as soon as a signal aborts — without
 * racing a long-lived promise (which would retain one reaction per item for the stream's life).
 */

/** `it.next()`, or `{ done: true }` once `signal` aborts; the abort listener is removed after each item. */
export function nextOrAbort<T>(it: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T>> {
  if (signal.aborted) return Promise.resolve({ done: true, value: undefined });
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve({ done: true, value: undefined });
    signal.addEventListener('abort', onAbort, { once: true });
    it.next().then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
