/**
 * The journal's fsync, off the main thread and batched (issue 19 item 4, docs/journal.md "Power loss"):
 * commits are acknowledged once committed (a process kill cannot undo them) and the disk is synced at most
 * every `everyMs` after a write, by a sync function that runs elsewhere (lmdb's env sync on libuv's thread
 * pool). Writes made while a sync runs are covered by the next one. A failed sync is kept: the store refuses
 * to acknowledge anything after it (`failure`).
 */

/** Runs one sync elsewhere and calls back once everything written before the call is on disk. */
export type SyncFn = (done: (err?: Error | null) => void) => void;

/** Default longest time between a committed write and the fsync that makes it survive a power loss, in ms. */
export const SYNC_EVERY_MS = 100;

/** Schedules syncs after writes: one at a time, at most one every `everyMs`. */
export class DiskSync {
  #timer?: NodeJS.Timeout;
  #running = false;
  #dirty = false;
  #lastStart = Number.NEGATIVE_INFINITY;
  /** Waiting for the sync that runs now (everything they wait for was written before it started). */
  #current: Array<(err?: Error) => void> = [];
  /** Waiting for the next sync. */
  #next: Array<(err?: Error) => void> = [];
  #failure?: Error;
  #closing = false;

  constructor(
    private readonly sync: SyncFn,
    private readonly everyMs = SYNC_EVERY_MS,
    private readonly onError?: (err: Error) => void,
  ) {}

  /** The first sync failure, if any: nothing written after it may be acknowledged. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Something was committed: a sync follows within `everyMs` (sooner when the last one was long ago). */
  wrote(): void {
    this.#dirty = true;
    this.#schedule();
  }

  /** Resolves once everything committed before the call is on disk; rejects with the sync's error. */
  synced(): Promise<void> {
    if (!this.#dirty && !this.#running) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => (err ? reject(err) : resolve());
      if (this.#dirty) this.#next.push(settle);
      else this.#current.push(settle);
    });
  }

  /** Syncs now what is not synced yet and stops scheduling; resolves once it is on disk. */
  async close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const done = this.synced();
    if (this.#dirty && !this.#running) this.#run();
    await done;
  }

  #schedule(): void {
    if (this.#timer || this.#running || !this.#dirty) return;
    if (this.#closing) return this.#run(); // the last sync, at once
    const wait = Math.max(0, this.#lastStart + this.everyMs - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#run();
    }, wait);
    this.#timer.unref(); // a stopping server syncs in close(); the timer never keeps the process alive
  }

  #run(): void {
    this.#dirty = false;
    this.#running = true;
    this.#lastStart = performance.now();
    this.#current = this.#next;
    this.#next = [];
    this.sync((err) => {
      this.#running = false;
      const e = err ?? undefined;
      if (e && !this.#failure) {
        this.#failure = e;
        this.onError?.(e);
      }
      for (const settle of this.#current) settle(e);
      this.#current = [];
      this.#schedule();
    });
  }
}
