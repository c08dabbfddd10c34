/**
 * Leadership (SPEC S7, issue 20): one leader per cluster, elected in etcd. Each candidate holds an etcd lease (TTL
 * `ttlMs`) and a key `<prefix>/leader/<lease id>` bound to it whose value is its
 * advertised address; the candidate whose key has the lowest create revision leads, and that revision is its
 * *epoch* — the fencing token every store write is conditioned on (etcd-store.ts) and every frame to a worker
 * carries. The others are standbys and know the leader's address.
 *
 * The lease is granted and renewed by a thread of its own (renewer.ts), so a busy event loop cannot starve its
 * keep-alives. berth keeps its own deadline instead of trusting the client library's late `lost` event (it reports
 * a lost lease only after about twice the TTL when cut off): a leader whose newest answered keep-alive was sent
 * more than `ttlMs - marginMs` ago stops acting (`deposed` fires) before etcd can expire its lease and elect another.
 */
import { EventEmitter } from 'node:events';
import type { Etcd3 } from 'etcd3';
import type { EtcdConnection } from './etcd-client.js';
import { Renewer } from './renewer.js';

/** Where a candidate stands. */
export type Role = 'candidate' | 'leader' | 'standby' | 'deposed';

/** Settings. Units: ms. */
export interface LeadershipOptions {
  client: Etcd3;
  /** How the renewer's thread reaches etcd (the same endpoints and credentials as `client`). */
  connection: EtcdConnection;
  /** Key prefix of this cluster, e.g. `/berth/<cluster>`. */
  prefix: string;
  /** The address clients and workers dial to reach this server (the leader hint standbys give). */
  advertise: string;
  /** Lease TTL (default 5000; etcd counts whole seconds, at least 2). */
  ttlMs?: number;
  /** How long before the lease could expire the leader stops acting (default 1500). */
  marginMs?: number;
}

/**
 * One candidacy. `start()` campaigns; events: `leader` (epoch) once elected, `standby` (leader address) while
 * another leads and whenever that changes, `deposed` (reason) when a leader can no longer be sure it leads — after
 * which it must stop acting (the server halts and exits). `resign()` hands over at once.
 */
export class Leadership extends EventEmitter {
  role: Role = 'candidate';
  /** This candidate's epoch (its key's create revision) once it has a key; the fencing token while it leads. */
  epoch = 0;
  /** The leader's advertised address as last seen ('' while unknown). */
  leaderAddress = '';
  /** The etcd key this candidate holds. */
  key = '';
  readonly #o: Required<LeadershipOptions>;
  #renewer?: Renewer;
  #watchdog?: NodeJS.Timeout;
  #watcher?: { cancel(): Promise<void> };
  #stopped = false;

  constructor(o: LeadershipOptions) {
    super();
    this.#o = { ttlMs: 5000, marginMs: 1500, ...o };
  }

  /** Key prefix of the leader keys. */
  get leaderPrefix(): string {
    return `${this.#o.prefix}/leader/`;
  }

  /** The deadline (ms since the epoch) by which a leader stops acting unless a keep-alive succeeds first. */
  get actsUntil(): number {
    return (this.#renewer?.renewedAt ?? 0) + this.#o.ttlMs - this.#o.marginMs;
  }

  /**
   * True while this candidate leads and its deadline has not passed: check before every grant and every frame
   * sent to a worker (SPEC S7).
   */
  get acting(): boolean {
    return this.role === 'leader' && Date.now() < this.actsUntil;
  }

  /**
   * Grants the lease, puts the candidate key and settles the first role.
   * @throws Error naming the etcd endpoints' failure when the lease or key cannot be created.
   */
  async start(): Promise<void> {
    const ttlS = Math.max(2, Math.round(this.#o.ttlMs / 1000));
    // several keep-alives before the deadline, so one lost or slow answer costs nothing
    const intervalMs = Math.max(100, Math.floor((this.#o.ttlMs - this.#o.marginMs) / 3));
    const renewer = new Renewer({ connection: this.#o.connection, ttlS, intervalMs });
    this.#renewer = renewer;
    renewer.on('lost', (message: string) => this.#depose(`lease lost: ${message}`));
    const id = await renewer.start();
    this.key = `${this.leaderPrefix}${id}`;
    let put: Awaited<ReturnType<ReturnType<Etcd3['if']>['commit']>>;
    try {
      put = await this.#o.client
        .if(this.key, 'Create', '==', 0)
        .then(this.#o.client.put(this.key).value(this.#o.advertise).lease(id))
        .commit();
    } catch (err) {
      await renewer.revoke();
      throw err;
    }
    this.epoch = Number(put.header.revision);
    this.#watchdog = setInterval(() => this.#checkDeadline(), 100);
    this.#watchdog.unref();
    const watcher = await this.#o.client.watch().prefix(this.leaderPrefix).create();
    this.#watcher = watcher;
    watcher.on('delete', () => void this.#settle());
    watcher.on('put', () => void this.#settle());
    await this.#settle();
  }

  /** Gives leadership (or candidacy) up at once: the key and its lease are revoked, a standby takes over. */
  async resign(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#watchdog);
    await this.#watcher?.cancel().catch(() => undefined);
    await this.#renewer?.revoke();
    if (this.role === 'leader') this.role = 'deposed';
  }

  /** Re-reads who leads: the leader key with the lowest create revision. */
  async #settle(): Promise<void> {
    if (this.#over()) return;
    let first: { key: string; value: string } | undefined;
    try {
      const res = await this.#o.client.getAll().prefix(this.leaderPrefix).sort('Create', 'Ascend').limit(1).exec();
      const kv = res.kvs[0];
      first = kv && { key: kv.key.toString(), value: kv.value.toString() };
    } catch {
      return; // etcd unreachable: the deadline watchdog decides for a leader; a standby keeps its last hint
    }
    if (this.#over()) return;
    if (!first) {
      if (this.role === 'leader') this.#depose('the leader key is gone');
      return;
    }
    if (first.key === this.key) {
      if (this.role !== 'leader') {
        this.role = 'leader';
        this.leaderAddress = this.#o.advertise;
        this.emit('leader', this.epoch);
      }
      return;
    }
    if (this.role === 'leader') {
      this.#depose(`another candidate leads (${first.value})`);
      return;
    }
    const changed = this.role !== 'standby' || this.leaderAddress !== first.value;
    this.role = 'standby';
    this.leaderAddress = first.value;
    if (changed) this.emit('standby', first.value);
  }

  /** True once resigned or deposed (read after every await: the role changes meanwhile). */
  #over(): boolean {
    return this.#stopped || this.role === 'deposed';
  }

  #checkDeadline(): void {
    if (this.role === 'leader' && Date.now() >= this.actsUntil) {
      const since = Date.now() - (this.#renewer?.renewedAt ?? 0);
      this.#depose(`no keep-alive succeeded for ${since} ms (lease TTL ${this.#o.ttlMs} ms)`);
    }
  }

  #depose(reason: string): void {
    if (this.role === 'deposed' || this.#stopped) return;
    const was = this.role;
    this.role = 'deposed';
    clearInterval(this.#watchdog);
    if (was === 'leader') this.emit('deposed', reason);
    else this.emit('deposed', `candidacy ended: ${reason}`);
  }
}
