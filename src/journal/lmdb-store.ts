/**
 * The embedded store (issue 19 item 4): one LMDB environment at `<state-dir>/journal`, through the
 * `lmdb` package (prebuilt binaries; installs with --ignore-scripts). Writes of one `write()` go in
 * one transaction; lmdb-js queues the transactions of one event-loop turn into one commit (group
 * commit) on its write thread and resolves them once committed, which a process kill cannot undo; the
 * fsync follows (its default overlapping sync: a machine crash keeps the journal consistent and may lose
 * the last commits). A synchronous commit with an fsync each was measured: it held the event loop for
 * every commit and cut the engine's Run rate several times (docs/journal.md).
 * One server per state directory: the caller holds state-lock.ts's lock first.
 */
import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
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

  private constructor(
    readonly where: string,
    readonly db: RootDatabase<unknown, string>,
  ) {}

  /**
   * Opens (creating when missing) the journal under `stateDir`.
   * @throws StoreError naming the directory when it cannot be created or is not an LMDB journal (corrupt).
   */
  static open(stateDir: string): LmdbStore {
    const path = join(stateDir, JOURNAL_DIR);
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      checkHeader(join(path, 'data.mdb'));
      const db = open<unknown, string>({ path, encoding: 'json', compression: false });
      db.getKeysCount(); // reads the meta pages now: a corrupt file fails here, not at the first write
      return new LmdbStore(path, db);
    } catch (err) {
      throw new StoreError(path, `cannot be opened (${(err as Error).message}); move it away to start empty`);
    }
  }

  write(ops: readonly StoreOp[]): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreError(this.where, 'closed'));
    const done = this.db.transaction(() => {
      for (const op of ops) {
        if ('delete' in op) this.db.removeSync(op.key);
        else this.db.putSync(op.key, op.value);
      }
    });
    return done.then(
      () => undefined,
      (err: Error) => {
        throw new StoreError(this.where, `write failed: ${err.message}`);
      },
    );
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

  close(): Promise<void> {
    this.#closed ??= this.db.close();
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
