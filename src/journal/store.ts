/**
 * The durable store under the journal (SPEC S4, issue 19 item 4): keyed records written in atomic
 * batches and read back whole at start. The embedded store (lmdb-store.ts, under `--state-dir`) is
 * the default; a replicated one (etcd, issue 20) implements the same interface. Values are plain
 * JSON-shaped objects (no class instances, no undefined inside arrays), so any store can encode them.
 */

/**
 * One change in a batch: put `value` under `key`, or delete `key` (deleting a missing key is no error). `json`, when
 * set, is `JSON.stringify(value)` already made (the journal measures a batch's bytes with it; a store may reuse it).
 */
export type StoreOp = { key: string; value: unknown; json?: string } | { key: string; delete: true };

/** A store of keyed records. */
export interface Store {
  /** Where the records live, for messages: a directory, or a store URL (never credentials). */
  readonly where: string;
  /** Most ops one `write` may carry (Infinity: no limit); the journal cuts its batches to fit. */
  readonly maxBatchOps: number;
  /** Most bytes one `write` may carry, counted by `opBytes` (Infinity: no limit). */
  readonly maxBatchBytes: number;
  /**
   * How many writes may be in flight at once (≥ 1). The journal keeps the keys of writes in flight disjoint, so
   * concurrent writes may commit in any order; it acknowledges them in the order they were made.
   */
  readonly maxWritesInFlight: number;
  /**
   * Applies `ops` in order, all or none, and resolves once they are durable (a process killed
   * after the promise resolved finds them at the next `load`). Batches may share one commit.
   * @throws StoreError when the store cannot write (full disk, closed, lost its lease, a batch over its limits).
   */
  write(ops: readonly StoreOp[]): Promise<void>;
  /** Every record, keys in ascending order (keys sort by their UTF-16 code units). @throws StoreError. */
  load(): Promise<Array<[string, unknown]>>;
  /** Waits for writes in flight and closes. Idempotent; `write` after `close` rejects. */
  close(): Promise<void>;
}

/** Bytes an op counts for against `maxBatchBytes`: its key, its JSON value (`op.json`, made when missing), 16 more. */
export function opBytes(op: StoreOp): number {
  if ('delete' in op) return Buffer.byteLength(op.key) + 16;
  op.json ??= JSON.stringify(op.value);
  return Buffer.byteLength(op.key) + Buffer.byteLength(op.json) + 16;
}

/**
 * A store failed: the message names the store (`where`) and the reason. `tooLarge`: a change that can never be
 * written (over the store's per-write limits), as opposed to a store that cannot write now.
 */
export class StoreError extends Error {
  constructor(
    readonly where: string,
    reason: string,
    readonly tooLarge = false,
  ) {
    super(`journal ${where}: ${reason}`);
    this.name = 'StoreError';
  }
}
