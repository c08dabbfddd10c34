/**
 * When the TypeScript client picks a broken stream up again (SPEC S3), as the Python client does
 * (clients/python/src/berth_client: claim_resume.py, resume.py): which endings are a broken stream
 * rather than the claim's or call's own ending, the backoff with jitter between attempts, and the
 * wait itself, cut short by the caller's AbortSignal. Every test takes the mapped BerthError.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NoWorker, Unavailable, WorkerGone } from './errors.js';

/**
 * How long a broken Run stream is followed again, in ms: the server's default restart hold (Python RESUME_WINDOW_S).
 */
export const RESUME_WINDOW_MS = 60_000;

/** The server's answer while it still sees a claim's old stream (it has not noticed the break yet): try again. */
const LIVE_STREAM = 'held by a live stream';

/** Backoff of claim resumes (a hold may be a few seconds only) and of run follows, in ms: first and longest. */
export const CLAIM_BACKOFF = { firstMs: 50, maxMs: 1000 } as const;
export const RUN_BACKOFF = { firstMs: 100, maxMs: 2000 } as const;

/**
 * True when a Claim stream that ended with `e` may be taken back: the link or the server went away
 * (Unavailable, but not WorkerGone: the claim's machine left), or the server still sees the old stream.
 */
export function claimWorthResuming(e: unknown): boolean {
  if (e instanceof WorkerGone) return false;
  if (e instanceof Unavailable) return true;
  return e instanceof NoWorker && e.message.includes(LIVE_STREAM);
}

/**
 * True when a Run stream that ended with `e` may be followed again: Unavailable for a broken link or a
 * server restart; not WorkerGone (the call's own ending) nor a drain (the server asks callers to stop).
 */
export function runWorthFollowing(e: unknown): boolean {
  return e instanceof Unavailable && !(e instanceof WorkerGone) && !e.message.includes('draining');
}

/**
 * The wait before attempt `attempt` (0-based), in ms: doubling from `firstMs` up to `maxMs`, 50-100 %
 * of it at random, so that many clients coming back after a restart do not come in step.
 */
export function backoffMs(attempt: number, b: { firstMs: number; maxMs: number }): number {
  const cap = Math.min(b.maxMs, b.firstMs * 2 ** Math.min(attempt, 30));
  return cap * (0.5 + Math.random() / 2);
}

/** Waits `ms`; rejects with `signal.reason` as soon as `signal` aborts. */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (e) {
    throw signal?.aborted ? signal.reason : e;
  }
}
