/**
 * The embedded store (issue 19 item 4): one LMDB environment at `<state-dir>/journal`, through the
 * `lmdb` package (prebuilt binaries; installs with --ignore-scripts). One `write()` is one LMDB
 * transaction, committed synchronously on the calling thread without an fsync (the environment is
 * opened with lmdb-js's `noSync`, LMDB's MDB_NOSYNC): once `write()` resolves the commit is in the
 * kernel's page cache, which a process kill cannot undo. The fsync runs off the main thread (lmdb's
 * env sync on libuv's thread pool), batched, at most every 100 ms (disk-sync.ts): a power loss or
 * kernel crash may lose the last ≤ 100 ms of commits, and keeps the journal consistent only when the
 * filesystem preserves write order (LMDB's MDB_NOSYNC caveat; docs/journal.md "Power loss").
 * lmdb-js's own write thread was measured dearer in CPU for a lone claim stream (3.46× journal off).
 * One server per state directory: the caller holds state-lock.ts's lock first.
 */
import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { DiskSync, SYNC_EVERY_MS } from './disk-sync.js';
import { StoreError, type Store, type StoreOp } from './store.js';

/** The journal's file name inside the state directory. */
export const JOURNAL_DIR = 'journal';

/** A Store on LMDB. Open with `LmdbStore.open`. */
export class LmdbStore implements Store {
  readonly maxBatchOps = Infinity;
  readonly maxBatchBytes = Infinity;
  /** One at a time: lmdb-js already shares one commit among the transactions of a turn. */
  readonly maxWritesInFlight = 1;
  #closed?: Promise<void>;
  /** The batched fsync of committed transactions. */
  readonly disk: DiskSync;

  private constructor(
    readonly where: string,
    readonly db: RootDatabase<unknown, string>,
    syncEveryMs: number,
    onSyncError?: (err: StoreError) => void,
  ) {
    const env = db as unknown as { sync(done: (err?: Error | null) => void): void };
    const failed = (err: Error) => onSyncError?.(new StoreError(where, `fsync failed: ${err.message}`));
    this.disk = new DiskSync((done) => env.sync(done), syncEveryMs, failed);
  }

  /**
   * Opens (creating when missing) the journal under `stateDir`; commits reach the disk within
   * `syncEveryMs` (default 100); a failed fsync is passed to `onSyncError` (once).
   * @throws StoreError naming the directory when it cannot be created or is not an LMDB journal (corrupt).
   */
  static open(stateDir: string, syncEveryMs = SYNC_EVERY_MS, onSyncError?: (err: StoreError) => void): LmdbStore {
    const path = join(stateDir, JOURNAL_DIR);
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      checkHeader(join(path, 'data.mdb'));
      const db = open<unknown, string>({ path, encoding: 'json', compression: false, noSync: true });
      db.getKeysCount(); // reads the meta pages now: a corrupt file fails here, not at the first write
      return new LmdbStore(path, db, syncEveryMs, onSyncError);
    } catch (err) {
      throw new StoreError(path, `cannot be opened (${(err as Error).message}); move it away to start empty`);
    }
  }

  /**
   * Commits `ops` in one transaction before returning (no fsync: that follows within the sync period).
   * @returns a settled promise: resolved once committed; rejected with StoreError when the commit or an
   * earlier fsync failed (nothing is acknowledged on a disk that failed to sync).
   */
  write(ops: readonly StoreOp[]): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreError(this.where, 'closed'));
    const failed = this.disk.failure;
    if (failed) return Promise.reject(new StoreError(this.where, `write failed: fsync failed: ${failed.message}`));
    try {
      this.db.transactionSync(() => {
        for (const op of ops) {
          if ('delete' in op) this.db.removeSync(op.key);
          else this.db.putSync(op.key, op.value);
        }
      });
    } catch (err) {
      return Promise.reject(new StoreError(this.where, `write failed: ${(err as Error).message}`));
    }
    this.disk.wrote();
    return Promise.resolve();
  }

  async load(): Promise<Array<[string, unknown]>> {
    try {
      const out: Array<[string, unknown]> = [];
      for (const { key, value } of this.db.getRange()) out.push([key, value]);
      return out;
    } catch (err) {
      throw new StoreError(this.where, `cannot be read (${(err as Error).message}); move it away to start empty`);
    }
  }

  /** Syncs what is committed to the disk, then closes the environment. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= this.disk
      .close()
      .catch(() => {}) // already reported; closing goes on
      .then(() => this.db.close());
    return this.#closed;
  }
}

/** LMDB's meta page magic (MDB_MAGIC), little-endian after the 16-byte page header and the 8-byte address. */
const MDB_MAGIC = 0xbeefc0de;
const MAGIC_AT = 24;

/**
 * Refuses a data file whose first meta page does not carry LMDB's magic: LMDB trusts its meta pages, and
 * a file of garbage would crash the process instead of failing. A missing or empty file is a new journal.
 * @throws Error "not an LMDB journal" for a file that is not one.
 */
function checkHeader(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    const b = Buffer.alloc(MAGIC_AT + 4);
    const n = readSync(fd, b, 0, b.length, 0);
    if (n === 0) return;
    if (n < b.length || b.readUInt32LE(MAGIC_AT) !== MDB_MAGIC) throw new Error(`${file} is not an LMDB journal`);
  } finally {
    closeSync(fd);
  }
}
