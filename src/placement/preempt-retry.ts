/**
 * Preempting waiters that found nothing to take when they arrived (SPEC Q2), looked at again while they wait: every
 * `everyMs`, at most `perTick` of them, oldest first, until one preempts or stops waiting. Room may appear later —
 * a lower claim granted since, a victim past its minimum runtime, a machine that attached — as kube-scheduler tries
 * preemption again on each scheduling cycle. Cost: only while such waiters exist, `perTick` scans per tick.
 */
import type { Waiter } from './waiting.js';

/** The waiters to look at again, and the timer that does. */
export class PreemptRetries {
  readonly #waiters = new Set<Waiter>();
  #timer?: NodeJS.Timeout;

  /**
   * @param again looks at `w` again: true when it is done with (it preempted, or no longer waits), false to keep it
   */
  constructor(
    readonly everyMs: number,
    readonly perTick: number,
    readonly again: (w: Waiter) => boolean,
  ) {}

  /** Number of waiters looked at again. */
  get size(): number {
    return this.#waiters.size;
  }

  /** Looks at `w` again from the next tick on. */
  add(w: Waiter): void {
    this.#waiters.add(w);
    this.#arm();
  }

  /** Stops the timer (the server stops). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiters.clear();
  }

  #arm(): void {
    if (this.#timer || this.#waiters.size === 0) return;
    this.#timer = setTimeout(() => this.#tick(), this.everyMs);
    this.#timer.unref();
  }

  #tick(): void {
    this.#timer = undefined;
    let n = 0;
    for (const w of this.#waiters) {
      if (n++ >= this.perTick) break;
      if (this.again(w)) this.#waiters.delete(w);
    }
    this.#arm();
  }
}
