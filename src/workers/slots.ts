/**
 * Slots: at most `max` calls at once on one worker (SPEC W4); 0 = unlimited. Waiters are served
 * in arrival order; a waiter whose signal aborts leaves the line. Slots are taken only after the
 * claim is granted, so a claim never waits on a slot held by a waiting claim (no deadlock).
 */

/** A counting semaphore with abortable, FIFO waiters. */
export class Slots {
  #used = 0;
  readonly #waiters: Array<() => void> = [];

  constructor(readonly max: number) {}

  /** Slots in use. */
  get used(): number {
    return this.#used;
  }

  /**
   * Resolves with a release function once a slot is free.
   * @throws the reason of the first of `signals` to abort (checked at once, and while waiting).
   */
  async acquire(signals: readonly AbortSignal[]): Promise<() => void> {
    for (const s of signals) s.throwIfAborted();
    if (this.max === 0 || (this.#used < this.max && this.#waiters.length === 0)) {
      this.#used++;
      return this.#releaser();
    }
    const signal = AbortSignal.any([...signals]); // only a waiter needs one signal to listen to
    await new Promise<void>((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', onAbort);
        this.#used++;
        resolve();
      };
      const onAbort = () => {
        const i = this.#waiters.indexOf(go);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal.reason);
      };
      this.#waiters.push(go);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return this.#releaser();
  }

  #releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#used--;
      if (this.#used < this.max || this.max === 0) this.#waiters.shift()?.();
    };
  }
}
