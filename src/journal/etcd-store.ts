/**
 * The replicated store (issue 20): the journal's records in etcd under `<prefix>/journal/`, behind the same Store
 * interface as the embedded one. Fencing (SPEC S7): every write is one etcd transaction conditioned on the writer's
 * leader key still existing with its create revision equal to the epoch — a deposed leader's writes fail, whatever
 * its client library believes. Writes arriving in the same event-loop turn share one transaction (group commit),
 * up to etcd's default limit of 128 operations per transaction; a single `write` is never split.
 */
import type { Etcd3 } from 'etcd3';
import { StoreError, type Store, type StoreOp } from './store.js';

/** etcd's default `--max-txn-ops`. */
export const MAX_TXN_OPS = 128;

/** What the writes are conditioned on: the leader key and its create revision (the epoch). */
export interface Fence {
  key: string;
  epoch: number;
}

interface Pending {
  ops: readonly StoreOp[];
  done: (err?: Error) => void;
}

/** A Store in etcd; `fence()` is read at each commit (undefined: not the leader, writes refused). */
export class EtcdStore implements Store {
  readonly #queue: Pending[] = [];
  #scheduled = false;
  #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(
    readonly client: Etcd3,
    /** Key prefix of this cluster, e.g. `/berth/<cluster>`. */
    readonly prefix: string,
    /** Endpoints, for messages (never credentials). */
    readonly where: string,
    readonly fence: () => Fence | undefined,
  ) {}

  get #journal(): string {
    return `${this.prefix}/journal/`;
  }

  write(ops: readonly StoreOp[]): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreError(this.where, 'closed'));
    if (ops.length > MAX_TXN_OPS) {
      return Promise.reject(new StoreError(this.where, `a batch of ${ops.length} ops is over etcd's ${MAX_TXN_OPS}`));
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ ops, done: (err) => (err ? reject(err) : resolve()) });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  async load(): Promise<Array<[string, unknown]>> {
    try {
      const res = await this.client.getAll().prefix(this.#journal).sort('Key', 'Ascend').exec();
      return res.kvs.map((kv) => [kv.key.toString().slice(this.#journal.length), JSON.parse(kv.value.toString())]);
    } catch (err) {
      throw new StoreError(this.where, `cannot be read (${(err as Error).message})`);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Commits the queued writes, as many whole writes per transaction as fit in MAX_TXN_OPS. */
  #flush(): void {
    this.#scheduled = false;
    while (this.#queue.length) {
      const batch: Pending[] = [];
      let n = 0;
      while (this.#queue.length && n + this.#queue[0].ops.length <= MAX_TXN_OPS) {
        const p = this.#queue.shift()!;
        n += p.ops.length;
        batch.push(p);
      }
      const t = this.#commit(batch).finally(() => this.#inFlight.delete(t));
      this.#inFlight.add(t);
    }
  }

  async #commit(batch: Pending[]): Promise<void> {
    const fence = this.fence();
    if (!fence) {
      for (const p of batch) p.done(new StoreError(this.where, 'not the leader: write refused'));
      return;
    }
    const clauses = batch.flatMap((p) =>
      p.ops.map((op) =>
        'delete' in op
          ? this.client.delete().key(this.#journal + op.key)
          : this.client.put(this.#journal + op.key).value(JSON.stringify(op.value)),
      ),
    );
    try {
      const res = await this.client
        .if(fence.key, 'Create', '==', fence.epoch)
        .then(...clauses)
        .commit();
      if (!res.succeeded) {
        const err = new StoreError(this.where, `epoch ${fence.epoch} is no longer the leader's: write refused`);
        for (const p of batch) p.done(err);
        return;
      }
      for (const p of batch) p.done();
    } catch (err) {
      const e = new StoreError(this.where, `write failed: ${(err as Error).message}`);
      for (const p of batch) p.done(e);
    }
  }
}
