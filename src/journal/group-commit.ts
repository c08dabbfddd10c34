/**
 * Group commit onto a Store (SPEC S4, issue 20): changes are queued synchronously into the batch that is filling;
 * it is written once fewer writes than the store allows are in flight, and what queues meanwhile goes into the next
 * one, so many changes share one commit. A batch is cut at the store's limits (`maxBatchOps`, `maxBatchBytes`; the
 * records of one change always stay in one batch); up to `maxWritesInFlight` batches are written at once, each
 * touching no key a write in flight touches (so concurrent writes commit in any order without reordering a key's
 * changes). Acknowledgements keep the order the changes were made in: `flushed()` resolves once every batch queued
 * so far is durable. Within a batch the last change of a key wins.
 */
import { opBytes, StoreError, type Store, type StoreOp } from './store.js';

interface Entry {
  op: StoreOp;
  bytes: number;
}

interface Batch {
  ops: Map<string, Entry>;
  bytes: number;
  /** This batch's own write. */
  written: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** This batch's write and every earlier one not settled when it was opened: what `flushed()` waits for. */
  ack: Promise<void>;
}

/** Observers of the commits: latency in ms and records written; a failed write. */
export interface CommitObservers {
  onCommit?: (ms: number, records: number) => void;
  onError?: (err: StoreError) => void;
}

/** The batching of one Store's writes. */
export class GroupCommit {
  /** Batches not written yet, in order; the last one may be `#filling`. */
  readonly #pending: Batch[] = [];
  /** Batches opened and not settled, in order (written or not). */
  readonly #unsettled: Batch[] = [];
  readonly #writing = new Set<Batch>();
  readonly #keysWriting = new Set<string>();
  #filling?: Batch;
  #scheduled = false;
  readonly #measure: boolean;

  constructor(
    readonly store: Store,
    readonly observers: CommitObservers = {},
  ) {
    this.#measure = Number.isFinite(store.maxBatchBytes);
  }

  /**
   * Queues one change: `ops` are written together, in one write. Returns a StoreError (tooLarge) without queueing
   * anything when the change alone is over the store's limits and can never be written.
   */
  change(ops: readonly StoreOp[]): StoreError | undefined {
    const { maxBatchOps, maxBatchBytes } = this.store;
    const entries = ops.map((op) => ({ op, bytes: this.#measure ? opBytes(op) : 0 }));
    const bytes = entries.reduce((n, e) => n + e.bytes, 0);
    if (entries.length > maxBatchOps || bytes > maxBatchBytes) {
      const what =
        entries.length === 1 ? `record ${ops[0].key}` : `change of ${entries.length} records (${ops[0].key}, …)`;
      return new StoreError(
        this.store.where,
        `${what} is ${bytes} bytes, over the store's limit of ${maxBatchBytes} bytes and ${maxBatchOps} records ` +
          'per write: not written',
        true,
      );
    }
    let b = this.#filling;
    if (b && !fits(b, entries, maxBatchOps, maxBatchBytes)) {
      this.#filling = undefined; // sealed: written as soon as it may be
      b = undefined;
    }
    b ??= this.#open();
    for (const e of entries) {
      const old = b.ops.get(e.op.key);
      if (old) {
        b.bytes -= old.bytes;
        b.ops.delete(e.op.key); // the last change of a key wins, in the order it was made
      }
      b.ops.set(e.op.key, e);
      b.bytes += e.bytes;
    }
    this.#schedule();
    return undefined;
  }

  /** Resolves once every change queued so far is durable; rejects with StoreError when one of their writes failed. */
  flushed(): Promise<void> {
    return this.#unsettled.at(-1)?.ack ?? Promise.resolve();
  }

  #open(): Batch {
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const written = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    written.catch(() => {}); // a failed write is reported to whoever awaits its ack, never unhandled
    const before = this.#unsettled.map((u) => u.written);
    const ack = before.length ? Promise.all([...before, written]).then(() => undefined) : written;
    ack.catch(() => {});
    const b: Batch = { ops: new Map(), bytes: 0, written, resolve, reject, ack };
    this.#pending.push(b);
    this.#unsettled.push(b);
    this.#filling = b;
    return b;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  /**
   * Starts the writes that may start, in order, while fewer than `maxWritesInFlight` are in flight and their keys
   * are disjoint from those in flight. The filling batch goes too: with one write at a time (lmdb) that is plain
   * group commit; with several (etcd), the next batch commits while the last ones are still waiting for etcd.
   */
  #pump(): void {
    while (this.#pending.length && this.#writing.size < this.store.maxWritesInFlight) {
      const b = this.#pending[0];
      for (const key of b.ops.keys()) if (this.#keysWriting.has(key)) return; // after the write of that key
      this.#pending.shift();
      if (b === this.#filling) this.#filling = undefined;
      this.#write(b);
    }
  }

  #write(b: Batch): void {
    const ops = [...b.ops.values()].map((e) => e.op);
    for (const key of b.ops.keys()) this.#keysWriting.add(key);
    this.#writing.add(b);
    const start = performance.now();
    void this.store
      .write(ops)
      .then(
        () => {
          this.observers.onCommit?.(performance.now() - start, ops.length);
          return undefined;
        },
        (err: unknown) => {
          const e = err instanceof StoreError ? err : new StoreError(this.store.where, String(err));
          this.observers.onError?.(e);
          return e;
        },
      )
      .then((err) => {
        for (const key of b.ops.keys()) this.#keysWriting.delete(key);
        this.#writing.delete(b);
        this.#unsettled.splice(this.#unsettled.indexOf(b), 1);
        if (err) b.reject(err);
        else b.resolve();
        this.#pump();
      });
  }
}

/** True when `entries` fit into `b` without taking it over `maxOps` ops or `maxBytes` bytes. */
function fits(b: Batch, entries: readonly Entry[], maxOps: number, maxBytes: number): boolean {
  let ops = b.ops.size;
  let bytes = b.bytes;
  for (const e of entries) {
    const old = b.ops.get(e.op.key);
    if (old) bytes += e.bytes - old.bytes;
    else {
      ops++;
      bytes += e.bytes;
    }
  }
  return ops <= maxOps && bytes <= maxBytes;
}
