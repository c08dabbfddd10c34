/**
 * CallIds: one call id, one execution (issue 10 item 3). A Run whose call id `<run_id>:<flow>.<node>`
 * is in flight follows that call; one whose call id is being placed (its claim waited for, its
 * worker slot waited for) waits for that placement and then follows the call it started, instead
 * of claiming again. Never two records for one id.
 */
import { BerthError } from '../errors.js';
import type { CallRecord } from './call-record.js';

/** How a placement of a call id ended, as its followers see it. */
type Placed = { rec: CallRecord } | { err: unknown } | { retry: true };

/** What `once` gives a Run: the record to follow, and whether this Run placed (and so owns) it. */
export interface Once<T> {
  rec: CallRecord;
  /** What `place` returned when this Run placed the call; undefined for a follower. */
  placed?: T;
}

/** The call ids being placed right now, next to the hub's calls in flight. */
export class CallIds {
  readonly #placing = new Map<string, Promise<Placed>>();
  readonly #waiting = new Map<string, number>();

  /** How many Runs wait for another Run's placement of `callId` (they claimed nothing). */
  following(callId: string): number {
    return this.#waiting.get(callId) ?? 0;
  }

  /**
   * Resolves with the record of `callId` to follow: the one in flight in `calls`, the one another
   * Run is placing (once it started), or the one `place` starts for this Run. A namesake that ended
   * but is still stopping is waited for first. When another Run's placement is cancelled (Cancel of
   * the run), this Run ends the same way; when it fails otherwise (its caller went away, its claim
   * id or ask was bad, its label missing), this Run places the call itself.
   * @throws what `place` throws, the other placement's error, or `signal.reason`.
   */
  async once<T extends { rec: CallRecord }>(
    callId: string,
    calls: ReadonlyMap<string, CallRecord>,
    signal: AbortSignal,
    place: () => Promise<T>,
  ): Promise<Once<T>> {
    for (;;) {
      signal.throwIfAborted();
      const live = calls.get(callId);
      if (live && !live.ended) return { rec: live };
      const other = this.#placing.get(callId);
      if (other) {
        this.#waiting.set(callId, this.following(callId) + 1);
        const o = await abortable(other, signal).finally(() => {
          const n = this.following(callId) - 1;
          if (n > 0) this.#waiting.set(callId, n);
          else this.#waiting.delete(callId);
        });
        if ('rec' in o) return { rec: o.rec };
        if ('err' in o) throw o.err;
        continue;
      }
      if (live) {
        await abortable(live.settled, signal); // a cancelled namesake is still stopping: let it finish first
        continue;
      }
      let settle!: (p: Placed) => void;
      this.#placing.set(callId, new Promise<Placed>((resolve) => (settle = resolve)));
      try {
        const placed = await place();
        settle({ rec: placed.rec });
        return { rec: placed.rec, placed };
      } catch (err) {
        const cancelled = !signal.aborted && err instanceof BerthError && err.kind === 'cancelled';
        settle(cancelled ? { err } : { retry: true });
        throw err;
      } finally {
        this.#placing.delete(callId);
      }
    }
  }
}

/** `p`, or `signal.reason` if the caller goes away first. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then((v) => {
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    });
  });
}
