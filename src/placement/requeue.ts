/**
 * Requeue on preemption (SPEC Q2, docs/priorities.md): a claim held on a Claim stream whose ask does not say
 * `on_preempt: cancel` waits again once it is preempted and given back — by its holder's Release with requeue, or
 * when the grace runs out — at its original place: its priority and its first arrival number, so it stands ahead of
 * claims of its priority that came after it and behind its preemptor (kueue#7157: never re-admitted ahead of it).
 * The claim waits again in the same placer step as its books come back, before the queue settles, so no claim behind
 * it takes what it could use. It gets a new claim id; damping still counts it as the same work (`requeuedFrom`).
 * Memory: one entry per held claim whose stream asked for this.
 */
import type { Held } from './state.js';
import type { Grant, QueuedInfo } from './types.js';

/** What a Claim stream hands over to hear its claim's second grant. */
export interface RequeueWatch {
  /** The stream's signal: called only when the claim has to wait; its abort ends the wait. */
  signal: () => AbortSignal;
  /** Hears each Queued of the new wait (requeued set). */
  onQueued?: (q: QueuedInfo) => void;
}

/** A watch filed: the new grant, once preempted and granted again, and `stop()` for a stream that ends first. */
export interface Requeued {
  /** The new Grant; rejects with the claim error or the signal's reason; never settles unless preempted. */
  granted: Promise<Grant>;
  /** The stream ends: its claim, if preempted later, is not requeued. */
  stop(): void;
}

/** Filing a preempted claim as a waiter again: the placer's `claimOrWait` at the claim's place. */
export type FileAgain = (h: Held, watch: RequeueWatch, why: string) => Grant | Promise<Grant>;

/** The held claims that requeue when preempted, by claim id. */
export class Requeues {
  readonly #watching = new Map<string, RequeueWatch & { resolve(g: Grant): void; reject(e: unknown): void }>();

  constructor(readonly file: FileAgain) {}

  /** Number of held claims that requeue when preempted. */
  get size(): number {
    return this.#watching.size;
  }

  /** Asks that claim `claimId`, once preempted and given back, wait again at its place (see the header). */
  watch(claimId: string, watch: RequeueWatch): Requeued {
    let resolve!: (g: Grant) => void;
    let reject!: (e: unknown) => void;
    const granted = new Promise<Grant>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    granted.catch(() => {}); // read by the stream only once it was preempted
    const entry = { ...watch, resolve, reject };
    this.#watching.set(claimId, entry);
    const stop = () => {
      if (this.#watching.get(claimId) === entry) this.#watching.delete(claimId);
    };
    return { granted, stop };
  }

  /** True when claim `claimId` requeues if preempted. */
  watched(claimId: string): boolean {
    return this.#watching.has(claimId);
  }

  /**
   * Preempted claim `h` is given back (its books are free, the queue has not settled yet): files it again if its
   * stream watches it. `why`: the preemption, for its Queued.
   */
  given(h: Held, why: string): void {
    const id = h.grant.claimId;
    const w = this.#watching.get(id);
    if (!w) return;
    this.#watching.delete(id);
    let out: Grant | Promise<Grant>;
    try {
      out = this.file(h, w, why);
    } catch (err) {
      w.reject(err);
      return;
    }
    if (out instanceof Promise) out.then(w.resolve, w.reject);
    else w.resolve(out);
  }
}
