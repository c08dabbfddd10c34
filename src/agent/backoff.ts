/**
 * Reconnect delays: exponential backoff with full jitter, capped (SPEC W6).
 */

/** Base and cap of the backoff, in ms. */
export interface BackoffOptions {
  baseMs: number;
  capMs: number;
}

/** Default: 250 ms doubling up to 5 s, so a worker is back within seconds of the server. */
export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, capMs: 5000 };
/** The engine keeper's (a local agent, issue 19 item 5): 100 ms up to 1 s, so a restarted server re-adopts it soon. */
export const KEEPER_BACKOFF: BackoffOptions = { baseMs: 100, capMs: 1000 };

/**
 * Delay before reconnect attempt `attempt` (0-based): uniform in [ceiling/2, ceiling] where
 * ceiling = min(cap, base·2^attempt). `random` is injectable for tests.
 */
export function backoffDelay(
  attempt: number,
  o: BackoffOptions = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(o.capMs, o.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
