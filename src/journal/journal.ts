/**
 * The journal (issue 19 item 4, SPEC S4): berth's durable records on a Store, written by group
 * commit. Changes are queued synchronously (never awaited by the placer: the journal is off the
 * placement hot path); one batch is written at a time, and what queued meanwhile goes in the next
 * batch, so many claims share one commit. A handler that acknowledges something awaits
 * `flushed()` first: what the server acknowledged is durable (Granted only after the grant's record).
 * Within a batch the last change of a key wins.
 */
import { DEFAULT_HISTORY_MAX } from './history.js';
import { StoreError, type Store, type StoreOp } from './store.js';
import {
  KEYS,
  parseRecords,
  type CallRecord,
  type ClaimRecord,
  type EndedRecord,
  type JournalState,
  type ReleasedRecord,
  type WorkerRecord,
} from './records.js';

/** Default time an ended call's or claim's record is kept (`--history-retention`): one day, in ms. */
export const DEFAULT_RETENTION_MS = 24 * 3600_000;

interface Batch {
  ops: Map<string, StoreOp>;
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => {}); // a failed batch is reported to whoever awaits it, never unhandled
  return { ops: new Map(), done, resolve, reject };
}

/**
 * Journal options: retention of ended calls and claims (ms) and most of them kept (SPEC S9), a commit observer
 * (latency in ms, records written).
 */
export interface JournalOptions {
  retentionMs?: number;
  maxHistory?: number;
  onCommit?: (ms: number, records: number) => void;
  onError?: (err: StoreError) => void;
}

/** berth's journal on one Store. Open with `Journal.open`. */
export class Journal {
  #filling?: Batch;
  #writing?: Batch;
  #closed = false;
  #frozenWorkers = false;
  readonly #claims = new Map<string, ClaimRecord>();
  /** Ended calls' and claims' record keys → when they ended, oldest first (the history, SPEC S9). */
  readonly #ended = new Map<string, number>();
  readonly #retentionMs: number;
  readonly #maxHistory: number;
  #prune?: NodeJS.Timeout;

  private constructor(
    readonly store: Store,
    readonly opts: JournalOptions,
  ) {
    this.#retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#maxHistory = opts.maxHistory ?? DEFAULT_HISTORY_MAX;
  }

  /**
   * Loads everything `store` holds and returns the journal with that state; ended calls and claims past the
   * retention or the count cap are dropped (written at the first commit).
   * @throws StoreError naming the store when it cannot be read or holds a record of the wrong shape.
   */
  static async open(store: Store, opts: JournalOptions = {}): Promise<{ journal: Journal; state: JournalState }> {
    let state: JournalState;
    try {
      state = parseRecords(await store.load());
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(store.where, `${(err as Error).message}; move it away to start empty`);
    }
    const j = new Journal(store, opts);
    const all = [
      ...state.ended.map((e) => [KEYS.ended(e.callId), e.endedAt] as const),
      ...state.released.map((r) => [KEYS.released(r.claimId), r.endedAt] as const),
    ].sort((a, b) => a[1] - b[1]);
    for (const [key, at] of all) j.#ended.set(key, at);
    j.#pruneEnded();
    state.ended = state.ended.filter((e) => j.#ended.has(KEYS.ended(e.callId)));
    state.released = state.released.filter((r) => j.#ended.has(KEYS.released(r.claimId)));
    for (const c of state.claims) j.#claims.set(c.claimId, c);
    j.#prune = setInterval(() => j.#pruneEnded(), Math.min(j.#retentionMs, 60_000));
    j.#prune.unref();
    return { journal: j, state };
  }

  /** Resolves once every change queued so far is durable; rejects with StoreError when its batch failed. */
  flushed(): Promise<void> {
    return this.#filling?.done ?? this.#writing?.done ?? Promise.resolve();
  }

  /** A worker attached (or re-attached with a new spec): it is known across restarts until it leaves for good. */
  workerKnown(w: WorkerRecord): void {
    this.#queue({ key: KEYS.worker(w.name), value: w });
  }

  /** A worker left for good (stopped, or its hold ran out). Ignored after `freezeWorkers` (the server stopping). */
  workerGone(name: string): void {
    if (!this.#frozenWorkers) this.#queue({ key: KEYS.worker(name), delete: true });
  }

  /**
   * From now on workers leaving are not recorded: the server is stopping, which is not its workers
   * leaving (they come back after the restart).
   */
  freezeWorkers(): void {
    this.#frozenWorkers = true;
  }

  /** A claim was granted (or restored): its record with exactly its allocation. */
  claimHeld(c: ClaimRecord): void {
    this.#claims.set(c.claimId, c);
    this.#queue({ key: KEYS.claim(c.claimId), value: c });
  }

  /**
   * The holder of claim `claimId` may take it back after a broken stream (SPEC S3): the hash of its
   * resume token and its own hold in ms are added to its record. No-op for a claim not journaled.
   */
  claimHolder(claimId: string, tokenHash: string, holdMs: number): void {
    const c = this.#claims.get(claimId);
    if (c) this.claimHeld({ ...c, tokenHash, holdMs });
  }

  /** The claim was released or lost: its record goes. No-op for a claim not journaled. */
  claimGone(claimId: string): void {
    if (this.#claims.delete(claimId)) this.#queue({ key: KEYS.claim(claimId), delete: true });
  }

  /** True when claim `claimId` is journaled (held, or restored and awaiting its holder). */
  holds(claimId: string): boolean {
    return this.#claims.has(claimId);
  }

  /** The claim ids journaled now (held, or restored and awaiting their holder). */
  get claims(): number {
    return this.#claims.size;
  }

  /** A call started. */
  callStarted(c: CallRecord): void {
    this.#queue({ key: KEYS.call(c.callId), value: c });
  }

  /** A call ended: its in-flight record goes and how it ended is kept for the retention period. */
  callEnded(e: EndedRecord): void {
    this.#queue({ key: KEYS.call(e.callId), delete: true });
    this.#kept(KEYS.ended(e.callId), e.endedAt, e);
  }

  /** A claim ended (released or lost): how, kept for the retention period (SPEC S9). */
  claimEnded(r: ReleasedRecord): void {
    this.#kept(KEYS.released(r.claimId), r.endedAt, r);
  }

  #kept(key: string, endedAt: number, value: unknown): void {
    this.#ended.delete(key);
    this.#ended.set(key, endedAt);
    this.#queue({ key, value });
    if (this.#ended.size > this.#maxHistory) this.#pruneEnded();
  }

  /** Writes what is queued, then closes the store. Changes queued after this are dropped. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#prune);
    await this.flushed().catch(() => {});
    await this.store.close();
  }

  #queue(op: StoreOp): void {
    if (this.#closed) return;
    if (!this.#filling) {
      this.#filling = newBatch();
      if (!this.#writing) setImmediate(() => this.#next());
    }
    this.#filling.ops.delete(op.key); // the last change of a key wins, in the order it was made
    this.#filling.ops.set(op.key, op);
  }

  /** Writes the filling batch, then the one that filled meanwhile, one at a time (group commit). */
  #next(): void {
    const b = this.#filling;
    if (!b || this.#writing) return;
    this.#filling = undefined;
    const ops = [...b.ops.values()];
    const start = performance.now();
    this.#writing = b;
    void this.store
      .write(ops)
      .then(
        () => {
          this.opts.onCommit?.(performance.now() - start, ops.length);
          b.resolve();
        },
        (err: unknown) => {
          const e = err instanceof StoreError ? err : new StoreError(this.store.where, String(err));
          this.opts.onError?.(e);
          b.reject(e);
        },
      )
      .then(() => {
        this.#writing = undefined;
        this.#next();
      });
  }

  /** Deletes the oldest ended records: those past the retention, and those past the count cap. */
  #pruneEnded(): void {
    const cut = Date.now() - this.#retentionMs;
    for (const [key, at] of this.#ended) {
      if (at >= cut && this.#ended.size <= this.#maxHistory) break;
      this.#ended.delete(key);
      this.#queue({ key, delete: true });
    }
  }
}
