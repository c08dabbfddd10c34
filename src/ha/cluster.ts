/**
 * A clustered server's standing (SPEC S7, issue 20): its etcd client, its candidacy (leadership.ts) and the
 * fenced store (etcd-store.ts) it journals to once it leads. Answers the standby gate (server/standby.ts), reports
 * role, leader and epoch for GetSnapshot and metrics, and logs one decision line per election change.
 */
import type { Etcd3 } from 'etcd3';
import type { ServeOptions } from '../config/serve-options.js';
import { EtcdStore } from '../journal/etcd-store.js';
import type { Logger } from '../log/logger.js';
import type { StandbyAnswer } from '../server/standby.js';
import { clusterPrefix, etcdClient, etcdConnection } from './etcd-client.js';
import { Leadership, type Role } from './leadership.js';

/** Where this server stands, for GetSnapshot and `berth status`. */
export interface ClusterInfo {
  cluster: string;
  role: Role;
  /** The leader's advertised address ('' while unknown). */
  leader: string;
  /** The leader's epoch while this server leads; 0 otherwise. */
  epoch: number;
  /** Since when this server leads, ms since the Unix epoch; 0 when it does not. */
  leaderSinceMs: number;
  /** The other candidates' advertised addresses, in election order (as last read from etcd). */
  standbys: string[];
}

/** One server's membership of a cluster. `start()` campaigns; `onLeader` / `onDeposed` say what happened. */
export class Cluster {
  readonly client: Etcd3;
  readonly leadership: Leadership;
  readonly prefix: string;
  /** Since when this server leads (ms since the Unix epoch); 0 while it does not. */
  leaderSinceMs = 0;
  /** Every candidate's advertised address in election order (the leader first), as last read from etcd. */
  #candidates: string[] = [];
  #watcher?: { cancel(): Promise<void> };

  constructor(
    readonly options: ServeOptions,
    /** This server's advertised address (known once its port is bound: create the Cluster after binding). */
    advertise: string,
    readonly log: Logger,
    deps: { client?: Etcd3; marginMs?: number } = {},
  ) {
    const connection = etcdConnection(options);
    this.client = deps.client ?? etcdClient(connection);
    this.prefix = clusterPrefix(options.cluster);
    const ttlMs = options.leaderTtl * 1000;
    this.leadership = new Leadership({
      client: this.client,
      connection,
      prefix: this.prefix,
      advertise,
      ttlMs,
      marginMs: deps.marginMs ?? Math.min(1500, ttlMs * 0.3),
    });
    this.leadership.on('standby', (leader: string) =>
      log.info({ event: 'cluster_standby', cluster: options.cluster, leader }, `standby: the leader is at ${leader}`),
    );
  }

  /** The endpoints, for messages. */
  get where(): string {
    return this.options.store?.url ?? '';
  }

  /**
   * The store to journal to, fenced on this server's leader key and epoch: writes are refused once it stops
   * acting (its own deadline), and etcd refuses them once another leads.
   */
  store(): EtcdStore {
    const l = this.leadership;
    return new EtcdStore(this.client, this.prefix, this.where, () =>
      l.acting ? { key: l.key, epoch: l.epoch } : undefined,
    );
  }

  /** Campaigns. @throws Error naming the endpoints when etcd cannot be reached. */
  async start(): Promise<void> {
    try {
      await this.leadership.start();
      const watcher = await this.client.watch().prefix(this.leadership.leaderPrefix).create();
      this.#watcher = watcher;
      watcher.on('put', () => void this.#readCandidates());
      watcher.on('delete', () => void this.#readCandidates());
      await this.#readCandidates();
    } catch (err) {
      throw new Error(`--store ${this.where}: cannot campaign in etcd (${(err as Error).message})`);
    }
  }

  /** Re-reads the candidates (for `berth status`); etcd unreachable: the last list stays. */
  async #readCandidates(): Promise<void> {
    try {
      const res = await this.client.getAll().prefix(this.leadership.leaderPrefix).sort('Create', 'Ascend').exec();
      this.#candidates = res.kvs.map((kv) => kv.value.toString());
    } catch {
      // the list is for display only
    }
  }

  /** Calls `fn(epoch)` once this server is elected (with a decision log line). */
  onLeader(fn: (epoch: number) => void): void {
    this.leadership.once('leader', (epoch: number) => {
      this.leaderSinceMs = Date.now();
      this.log.info(
        { event: 'cluster_elected', cluster: this.options.cluster, epoch, address: this.leadership.leaderAddress },
        `elected leader of cluster ${this.options.cluster}, epoch ${epoch}`,
      );
      fn(epoch);
    });
  }

  /** Calls `fn(reason)` when this server can no longer be sure it leads (or its candidacy ended). */
  onDeposed(fn: (reason: string) => void): void {
    this.leadership.once('deposed', fn);
  }

  /** The standby gate's answer: undefined while this server leads and acts. */
  answer(): StandbyAnswer | undefined {
    return this.leadership.acting ? undefined : { cluster: this.options.cluster, leader: this.leaderHint() };
  }

  /** The leader's address as clients should dial it ('' while none is known, or when it is this deposed server). */
  leaderHint(): string {
    const l = this.leadership;
    return l.role === 'deposed' ? '' : l.leaderAddress;
  }

  /** Role, leader and epoch now. */
  info(): ClusterInfo {
    const l = this.leadership;
    const leading = l.acting;
    return {
      cluster: this.options.cluster,
      role: l.role,
      leader: this.leaderHint(),
      epoch: leading ? l.epoch : 0,
      leaderSinceMs: leading ? this.leaderSinceMs : 0,
      standbys: this.#candidates.slice(1),
    };
  }

  /** Resigns at once (a standby takes over) unless deposed, then closes the client. Idempotent. */
  async close(resign: boolean): Promise<void> {
    await this.#watcher?.cancel().catch(() => undefined);
    if (resign) await this.leadership.resign();
    this.client.close();
  }
}
