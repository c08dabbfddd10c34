/**
 * The durable store under the journal (SPEC S4, issue 19 item 4): keyed records written in atomic
 * batches and read back whole at start. The embedded store (lmdb-store.ts, under `--state-dir`) is
 * the default; a replicated one (etcd, issue 20) implements the same interface. Values are plain
 * JSON-shaped objects (no class instances, no undefined inside arrays), so any store can encode them.
 */

/** One change in a batch: put `value` under `key`, or delete `key` (deleting a missing key is no error). */
export type StoreOp = { key: string; value: unknown } | { key: string; delete: true };

/** A store of keyed records. */
export interface Store {
  /** Where the records live, for messages: a directory, or a store URL (never credentials). */
  readonly where: string;
  /**
   * Applies `ops` in order, all or none, and resolves once they are durable (a process killed
   * after the promise resolved finds them at the next `load`). Batches may share one commit.
   * @throws StoreError when the store cannot write (full disk, closed, lost its lease).
   */
  write(ops: readonly StoreOp[]): Promise<void>;
  /** Every record, keys in ascending order (keys sort by their UTF-16 code units). @throws StoreError. */
  load(): Promise<Array<[string, unknown]>>;
  /** Waits for writes in flight and closes. Idempotent; `write` after `close` rejects. */
  close(): Promise<void>;
}

/** A store failed: the message names the store (`where`) and the reason. */
export class StoreError extends Error {
  constructor(
    readonly where: string,
    reason: string,
  ) {
    super(`journal ${where}: ${reason}`);
    this.name = 'StoreError';
  }
}
