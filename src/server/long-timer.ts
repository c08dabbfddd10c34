/**
 * A timer for delays past what Node's setTimeout holds (2^31-1 ms, about 24.8 days: a longer delay
 * fires at once). Used for Run `timeout_ms`, which may be up to 30 days (issue 10 item 9).
 */

/** Longest single setTimeout delay, in ms. */
const MAX_DELAY = 2 ** 31 - 1;

/** Calls `fn` once `ms` have passed (chained timers past MAX_DELAY); returns a function that cancels it. */
export function longTimeout(fn: () => void, ms: number): () => void {
  const due = Date.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = due - Date.now();
    timer = left > MAX_DELAY ? setTimeout(arm, MAX_DELAY) : setTimeout(fn, Math.max(0, left));
  };
  arm();
  return () => clearTimeout(timer);
}
