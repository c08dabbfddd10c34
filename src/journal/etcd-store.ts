/**
 * The replicated store (issue 20): the journal's records in etcd under `<prefix>/journal/`, behind the same Store
 * interface as the embedded one. Fencing (SPEC S7): every write is one etcd transaction conditioned on the writer's
 * leader key still existing with its create revision equal to the epoch — a deposed leader's writes fail, whatever
 * its client library believes. One `write` is one transaction; the journal batches (group-commit.ts) within etcd's
 * default limits — 128 operations (`--max-txn-ops`) and 1.5 MiB (`--max-request-bytes`) per request — and keeps a
 * few disjoint writes in flight. `load` reads the journal in pages of LOAD_PAGE records, each a request of its own,
 * so a takeover's read of a large journal (10,000 claims are about 5 MB) never decodes it all in one turn of the
 * event loop; the client (etcd-client.ts) takes responses of any size, as etcd's own client does.
 */
import { type Etcd3, Range } from 'etcd3';
import { opBytes, StoreError, type Store, type StoreOp } from './store.js';

/** etcd's default `--max-txn-ops`. */
export const MAX_TXN_OPS = 128;
/** etcd's default `--max-request-bytes` (1.5 MiB). */
export const MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
/** Room kept in a request for the fence's compare and the request's own framing. */
const REQUEST_MARGIN = 4096;
/** Writes in flight at once (each a transaction of its own, on disjoint keys). */
export const WRITES_IN_FLIGHT = 4;
/** Records per page of `load`. */
export const LOAD_PAGE = 1000;

/** What the writes are conditioned on: the leader key and its create revision (the epoch). */
export interface Fence {
  key: string;
  epoch: number;
}

/** A Store in etcd; `fence()` is read at each commit (undefined: not the leader, writes refused). */
export class EtcdStore implements Store {
  readonly maxBatchOps = MAX_TXN_OPS;
  /** etcd's request limit less the margin and the journal prefix each key carries (not counted by opBytes). */
  readonly maxBatchBytes: number;
  readonly maxWritesInFlight = WRITES_IN_FLIGHT;
  #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(
    readonly client: Etcd3,
    /** Key prefix of this cluster, e.g. `/berth/<cluster>`. */
    readonly prefix: string,
    /** Endpoints, for messages (never credentials). */
    readonly where: string,
    readonly fence: () => Fence | undefined,
  ) {
    this.maxBatchBytes = MAX_REQUEST_BYTES - REQUEST_MARGIN - MAX_TXN_OPS * Buffer.byteLength(this.#journal);
  }

  get #journal(): string {
    return `${this.prefix}/journal/`;
  }

  /** Commits `ops` as one fenced transaction. @throws StoreError (tooLarge) for a batch over the limits. */
  write(ops: readonly StoreOp[]): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreError(this.where, 'closed'));
    const bytes = ops.reduce((n, op) => n + opBytes(op), 0);
    if (ops.length > this.maxBatchOps || bytes > this.maxBatchBytes) {
      const limits = `${this.maxBatchOps} ops and ${this.maxBatchBytes} bytes`;
      return Promise.reject(
        new StoreError(this.where, `a batch of ${ops.length} ops, ${bytes} bytes, is over etcd's ${limits}`, true),
      );
    }
    const t = this.#commit(ops).finally(() => this.#inFlight.delete(t));
    this.#inFlight.add(t);
    return t;
  }

  /**
   * Every journal record, in key order, read page by page: the next page starts after the last key read (the
   * journal has one writer, the fenced leader, so nothing writes while the new leader reads it).
   * @throws StoreError naming the store when etcd cannot be read.
   */
  async load(): Promise<Array<[string, unknown]>> {
    const out: Array<[string, unknown]> = [];
    const end = Range.prefix(this.#journal).end;
    let from = Buffer.from(this.#journal);
    for (;;) {
      let res: Awaited<ReturnType<ReturnType<Etcd3['getAll']>['exec']>>;
      try {
        res = await this.client.getAll().inRange({ start: from, end }).sort('Key', 'Ascend').limit(LOAD_PAGE).exec();
      } catch (err) {
        throw new StoreError(this.where, `cannot be read (${(err as Error).message})`);
      }
      for (const kv of res.kvs) {
        out.push([kv.key.toString().slice(this.#journal.length), JSON.parse(kv.value.toString())]);
      }
      if (!res.more || res.kvs.length === 0) return out;
      from = Buffer.concat([res.kvs[res.kvs.length - 1].key, Buffer.from([0])]);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #commit(ops: readonly StoreOp[]): Promise<void> {
    const fence = this.fence();
    if (!fence) throw new StoreError(this.where, 'not the leader: write refused');
    const clauses = ops.map((op) =>
      'delete' in op
        ? this.client.delete().key(this.#journal + op.key)
        : this.client.put(this.#journal + op.key).value(op.json ?? JSON.stringify(op.value)),
    );
    let succeeded: boolean;
    try {
      const res = await this.client
        .if(fence.key, 'Create', '==', fence.epoch)
        .then(...clauses)
        .commit();
      succeeded = res.succeeded;
    } catch (err) {
      throw new StoreError(this.where, `write failed: ${(err as Error).message}`);
    }
    if (!succeeded) throw new StoreError(this.where, `epoch ${fence.epoch} is no longer the leader's: write refused`);
  }
}
