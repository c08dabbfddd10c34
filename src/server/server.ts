/**
 * BerthServer: binds the gRPC server, serves berth.v1, health and reflection, and runs the
 * lifecycle starting → serving → draining → stopped with a grace and a force timeout (SPEC R3).
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { PlacementServiceService } from '../../generated/ts/berth/v1/placement.js';
import { WorkerServiceService } from '../../generated/ts/berth/v1/worker.js';
import { readFlagFile } from '../config/fields.js';
import { readConfigFile } from '../config/config-file.js';
import { SERVE_FLAGS, type ServeOptions } from '../config/serve-options.js';
import { EventBus } from '../events.js';
import { Placer } from '../placement/placer.js';
import { ClaimHolds, withHolds } from './claim-holds.js';
import { GroupHolds } from './group-holds.js';
import { buildProvisioning } from '../provision/build.js';
import type { ProvisioningLoop } from '../provision/loop.js';
import type { HostInventory } from '../resources/inventory.js';
import { logDecisions } from '../log/decisions.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { join } from 'node:path';
import { EngineKeeper } from '../workers/engine-keeper.js';
import { WorkerHub } from '../workers/hub.js';
import type { ServerContext } from './context.js';
import { tolerantDecoding } from './decode.js';
import { loadDescriptors } from './descriptors.js';
import { BerthError } from '../errors.js';
import { Identities } from './identity.js';
import { BerthMetrics } from '../observe/metrics.js';
import { ObserveServer } from '../observe/http.js';
import { toClusterStatus, toSnapshot, toWatchEvent } from './convert.js';
import { Lifecycle, type LifecycleState } from './lifecycle.js';
import { DRAINING, haltReason } from './live-calls.js';
import { placementService, workerService } from './services.js';
import { SERVER_VERSION_TEXT } from './version.js';
import { followEvents } from '../journal/follow.js';
import { History, historyEntries } from '../journal/history.js';
import { restoreFromJournal, type Restored } from './restore.js';
import { MAX_MESSAGE_BYTES } from '../workers/executors/limits.js';
import { Cluster } from '../ha/cluster.js';
import { clusterMetrics, storeMetrics } from '../observe/ha-metrics.js';
import { gated } from './standby.js';
import { holdWhileMostMissing } from './takeover-hold.js';
import type { Store } from '../journal/store.js';

/** After the drain, how long open streams (health watches, idle agents) get to close after the GOAWAY, in ms. */
const CLOSE_MS = 1000;

/** How long a deposed server waits for its halt before `onDeposed` runs anyway (it exits then), in ms. */
const DEPOSED_STOP_MS = 10_000;

/** Names reported by grpc.health.v1: '' is the whole server. */
const HEALTH_NAMES = ['', 'berth.v1.PlacementService', 'berth.v1.WorkerService'];

/**
 * Server keepalive (SPEC R6, issue 10): an HTTP/2 ping every `timeMs` on every connection, calls
 * or not; a peer that does not answer within `timeoutMs` is dropped, which ends its calls
 * (a frozen client's claims are released and its runs cancelled within timeMs + timeoutMs).
 */
export interface KeepaliveOptions {
  timeMs: number;
  timeoutMs: number;
}

/** 10 s + 5 s: a frozen peer is dropped within about 15 s (README "Silent peers"). */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 10_000, timeoutMs: 5_000 };

/** One berth server. Create, `start()`, later `stop()`. */
export class BerthServer {
  readonly lifecycle = new Lifecycle();
  readonly #grpc: Server;
  readonly #health = new HealthImplementation(Object.fromEntries(HEALTH_NAMES.map((n) => [n, 'NOT_SERVING'])));
  readonly #log: Logger;
  readonly context: ServerContext;
  #port = 0;
  #observe?: ObserveServer;
  #stopping?: Promise<void>;
  /** Resolves once the drain is over (before the port closes): kept calls finished within the grace, and cancelled. */
  #drained?: Promise<{ finished: number; cancelled: number }>;
  readonly #provisioning?: ProvisioningLoop;
  #restored?: Restored;
  #unfollow?: () => void;
  #journalClosed?: Promise<void>;
  /** With `--store etcd://…`: this server's standing in its cluster (from start(), once its port is bound). */
  #cluster?: Cluster;
  /** True once this clustered server has taken over (restored) and serves. */
  #leading = false;
  /** Why this server was deposed (it stops acting and exits non-zero), once it was. */
  #deposed?: string;
  readonly #onDeposed?: (reason: string) => void;
  #metrics?: BerthMetrics;
  /** Stops holding the workers missing after a takeover (takeover-hold.ts). */
  #unhold?: () => void;

  /**
   * @param options validated serve options (see resolveServeOptions)
   * @param engine the engine host's inventory
   * @param deps optional logger, provisioning loop factory (SPEC P10; default: built from options.provisioners),
   *   worker heartbeat interval in ms (default 5000), server keepalive (default DEFAULT_KEEPALIVE), and what to do
   *   once this clustered server is deposed (after it stopped acting; `berth serve` exits non-zero)
   */
  constructor(
    readonly options: ServeOptions,
    engine: HostInventory,
    deps: {
      log?: Logger;
      provisioning?: (events: EventBus, log: Logger) => ProvisioningLoop;
      heartbeatMs?: number;
      keepalive?: KeepaliveOptions;
      onDeposed?: (reason: string) => void;
    } = {},
  ) {
    this.#onDeposed = deps.onDeposed;
    const keepalive = deps.keepalive ?? DEFAULT_KEEPALIVE;
    this.#grpc = new Server({
      'grpc.keepalive_time_ms': keepalive.timeMs,
      'grpc.keepalive_timeout_ms': keepalive.timeoutMs,
      'grpc.keepalive_permit_without_calls': 1,
      // Clients may ping every 5 s (the agent pings every 10 s); grpcio servers read this, grpc-js ignores it.
      'grpc.http2.min_ping_interval_without_data_ms': 5000,
      // Explicit, documented size limit (README "Workers"): far above every frame a worker sends.
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      // berth serves no channelz service, so grpc-js's per-call channelz counters and timestamps are pure cost.
      'grpc.enable_channelz': 0,
    });
    const log = deps.log ?? silentLogger;
    this.#log = log;
    const events = new EventBus();
    // issue 13: one structured line per decision, from the event bus — from start(), after the restore, which logs
    // one line for all it restored (a line per restored claim made a restart of 10,000 claims 2 s slower)
    const target = () => ({ server: this.advertised, token: options.token, stateDir: options.stateDir });
    this.#provisioning =
      deps.provisioning?.(events, log) ??
      (options.provisioners.length
        ? buildProvisioning(options.provisioners, options.stateDir, target, { events, log })
        : undefined);
    const placer = new Placer({
      engine: { name: options.engineName, labels: options.engineLabels ?? [], inventory: engine, remote: false },
      events,
      reconnectGraceMs: options.reconnectGrace * 1000,
      // No blanket restart grace with the journal (SPEC S6): after a restart the workers it knows count, each for
      // --restart-hold; a label none of them carried is unknown at once (an empty journal: a first start).
      // Without it (--journal off), every start gives required labels the reconnect grace (issue 10 item 10).
      restartGraceMs: options.journal === 'off' ? options.reconnectGrace * 1000 : 0,
      provisioning: this.#provisioning,
      pools: options.pools,
      defaultRamMbPerCpu: options.defaultRamMbPerCpu,
      priorityClasses: options.priorityClasses,
      tenantQuotas: options.tenants,
      preemptionGraceMs: Math.round(options.preemptionGrace * 1000),
      preemptionMinRuntimeMs: Math.round(options.preemptionMinRuntime * 1000),
      preemptionLimit: options.preemptionLimit,
      preemptionWindowMs: Math.round(options.preemptionWindow * 1000),
    });
    const hub = new WorkerHub({
      placer,
      events,
      log,
      engineName: options.engineName,
      serverVersion: SERVER_VERSION_TEXT,
      heartbeatMs: deps.heartbeatMs ?? 5000,
      graceMs: options.grace * 1000,
      engineCpus: engine.cpus,
      workerHoldMs: Math.round(options.workerHold * 1000),
      keeper: this.#keeper(options, engine, log),
    });
    const { live } = this.lifecycle;
    const identities = new Identities({
      token: options.token,
      workerTokens: options.workerTokens,
      clientTokens: options.clientTokens,
      mtls: Boolean(options.tlsCa && options.tlsCert),
    });
    const holds = new ClaimHolds(placer, events, live);
    const groupHolds = new GroupHolds(placer, events, live);
    const history = new History(options.historyRetention * 1000, options.historyMax);
    const entryOf = historyEntries();
    events.subscribe((e) => {
      const h = entryOf(e);
      if (h) history.add(h); // finished work stays queryable (SPEC S9)
    });
    this.context = {
      log,
      token: options.token,
      identities,
      live,
      options,
      engine,
      events,
      placer,
      hub,
      holds,
      groupHolds,
      history,
      preemptNotices: new Map(),
    };
    const notices = this.context.preemptNotices;
    placer.onPreempting = (n) => notices.get(n.victim)?.(n); // the victim's Claim stream, if one holds it (SPEC Q2)
    this.context.drain = (graceMs) => {
      void this.stop(graceMs);
      return this.#drained ?? Promise.resolve({ finished: 0, cancelled: 0 });
    };
    if (options.metricsListen) {
      const metrics = new BerthMetrics(events, {
        snapshot: () => placer.snapshot(),
        callsInFlight: () => hub.calls.size,
      });
      this.context.metrics = metrics;
      this.#metrics = metrics;
      this.#observe = new ObserveServer(options.metricsListen, {
        events,
        metrics,
        token: options.token,
        toJson: toWatchEvent,
        snapshot: () => ({
          ...toSnapshot(withHolds(placer.snapshot(), holds), hub.callsInFlight(), hub.runningByMachine()),
          cluster: toClusterStatus(this.context.cluster?.()),
        }),
      });
    }
    // SPEC S7: a clustered server answers berth.v1 only while it leads; until then every call ends UNAVAILABLE
    // with the leader's address (standby.ts). The embedded store has no gate at all.
    const gate = () => (this.#leading ? this.#cluster?.answer() : this.#standbyAnswer());
    const serve = <S extends object>(def: typeof PlacementServiceService | typeof WorkerServiceService, impl: S) =>
      options.store ? gated(def, impl, gate) : impl;
    this.#grpc.addService(
      tolerantDecoding(PlacementServiceService),
      serve(PlacementServiceService, placementService(this.context)),
    );
    this.#grpc.addService(
      tolerantDecoding(WorkerServiceService),
      serve(WorkerServiceService, workerService(this.context)),
    );
    this.#health.addToServer(this.#grpc);
    // Real descriptors (buf-built), not proto-loader's: the cast is to the fields @grpc/reflection reads.
    new ReflectionService(
      loadDescriptors() as unknown as ConstructorParameters<typeof ReflectionService>[0],
    ).addToServer(this.#grpc);
  }

  /**
   * The engine keeper (issue 19 item 5) unless `--engine-keeper off`, `--journal off` (nothing would re-adopt it) or
   * TLS (it dials this server's loopback address in the clear): engine-host commands then run in-process.
   */
  #keeper(options: ServeOptions, engine: HostInventory, log: Logger): EngineKeeper | undefined {
    if (options.engineKeeper === 'off' || options.journal === 'off' || options.tlsCert) return undefined;
    return new EngineKeeper({
      dir: join(options.stateDir, 'engine-keeper'),
      engineName: options.engineName,
      cpus: engine.cpus,
      graceMs: options.grace * 1000,
      disconnectGraceMs: options.restartHold * 1000,
      log,
      server: () => {
        const host = this.options.listen.slice(0, this.options.listen.lastIndexOf(':'));
        return `${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${this.#port}`;
      },
    });
  }

  /** Current lifecycle state. */
  get state(): LifecycleState {
    return this.lifecycle.state;
  }

  /** The HTTP port for /metrics and the status page (`--metrics-listen`), if configured. */
  get observe(): ObserveServer | undefined {
    return this.#observe;
  }

  /** Bound port (useful with `127.0.0.1:0`); 0 before start. */
  get port(): number {
    return this.#port;
  }

  /** `host:port` clients can dial. */
  get address(): string {
    const host = this.options.listen.slice(0, this.options.listen.lastIndexOf(':'));
    return `${host}:${this.#port}`;
  }

  /** The address started workers dial: --advertise, else the bound listen address (a wildcard host → loopback). */
  get advertised(): string {
    if (this.options.advertise) return this.options.advertise;
    const host = this.options.listen.slice(0, this.options.listen.lastIndexOf(':'));
    return `${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${this.#port}`;
  }

  /**
   * Restores from the journal of `--state-dir` (SPEC S4, S6; unless `--journal off`), then binds
   * `options.listen`, starts the provisioning loop (shapes, a first reconcile) and starts serving;
   * health turns SERVING.
   * @throws ListenError when the address cannot be bound (in use, not on this host, not allowed),
   *   naming the option and the value; Error `--tls-…: cannot read '<file>': …` for a TLS file;
   *   Error when a provisioner cannot read its shapes (sinfo fails); Error naming the state directory
   *   when another live server holds it or it cannot be written; StoreError `journal <dir>: …` when the
   *   journal is corrupt or unreadable; with `--store etcd://…`, Error `--store <url>: cannot campaign in etcd
   *   (…)`.
   *   A clustered server (SPEC S7) resolves once it stands by or leads: it restores and serves when elected.
   */
  async start(): Promise<number> {
    const creds = this.#credentials();
    if (!this.options.store) await this.#restore();
    logDecisions(this.context.events, this.#log);
    try {
      this.#port = await new Promise<number>((resolve, reject) => {
        this.#grpc.bindAsync(this.options.listen, creds, (err, port) =>
          err ? reject(new ListenError(this.options.listen, err)) : resolve(port),
        );
      });
    } catch (err) {
      await this.#closeJournal();
      throw err;
    }
    if (this.#observe) {
      try {
        await this.#observe.start();
      } catch (err) {
        this.#grpc.forceShutdown();
        await this.#closeJournal();
        throw err;
      }
      this.#log.info({ url: this.#observe.url, metrics: `${this.#observe.url}/metrics` }, 'status page and metrics');
    }
    if (this.options.store) await this.#campaign();
    else await this.#serve();
    return this.#port;
  }

  /** Starts the provisioning loop and serves: health SERVING (a clustered server: once it leads and restored). */
  async #serve(): Promise<void> {
    await this.#provisioning?.start();
    if (!this.lifecycle.to('serving')) return; // stop() came first: stay NOT_SERVING
    for (const n of HEALTH_NAMES) this.#health.setStatus(n, 'SERVING');
    this.#log.info(
      { address: this.address, tls: Boolean(this.options.tlsCert), epoch: this.context.epoch },
      'berth serving',
    );
  }

  /**
   * SPEC S7: a clustered server is live (health '' SERVING) but a standby (PlacementService NOT_SERVING, every
   * berth.v1 call UNAVAILABLE with the leader's address) until it is elected; then it takes over.
   * @throws Error naming the endpoints when etcd cannot be reached (the port is closed again).
   */
  async #campaign(): Promise<void> {
    this.#health.setStatus('', 'SERVING');
    if (!this.options.advertise && /^(0\.0\.0\.0|\[::\]):/.test(this.options.listen)) {
      this.#log.warn(
        { listen: this.options.listen, advertise: this.advertised },
        'listening on every interface without --advertise: standbys will name a loopback leader address',
      );
    }
    const cluster = new Cluster(this.options, this.advertised, this.#log);
    this.#cluster = cluster;
    this.context.acting = () => this.#leading && cluster.leadership.acting;
    this.context.cluster = () => cluster.info();
    const counted = this.#metrics && clusterMetrics(this.#metrics.registry, () => cluster.info());
    cluster.onLeader((epoch) => {
      counted?.elected();
      void this.#takeOver(epoch);
    });
    // A candidacy that fails while it starts (etcd refuses the lease) is a start-up error, not a deposition.
    let starting = true;
    let endedEarly: string | undefined;
    cluster.onDeposed((reason) => (starting ? (endedEarly = reason) : this.#depose(reason)));
    try {
      await cluster.start();
      starting = false;
      if (endedEarly !== undefined) this.#depose(endedEarly);
    } catch (err) {
      this.#grpc.forceShutdown();
      await this.#observe?.stop();
      await cluster.close(false);
      throw err;
    }
    if (!this.#leading && cluster.leadership.role !== 'leader') {
      const { address, advertised } = this;
      this.#log.info({ address, advertise: advertised, cluster: this.options.cluster }, 'berth standing by');
    }
  }

  /** The standby gate's answer before this server took over (also while it is restoring). */
  #standbyAnswer(): { cluster: string; leader: string } {
    return { cluster: this.options.cluster, leader: this.#cluster?.leaderHint() ?? '' };
  }

  /**
   * Elected (SPEC S7): restores from the etcd store exactly as a restart restores from its journal (workers
   * held for --restart-hold and claims for --claim-hold, counted from now), then serves under `epoch`.
   */
  async #takeOver(epoch: number): Promise<void> {
    const cluster = this.#cluster;
    if (!cluster || this.#stopping) return;
    const started = performance.now();
    this.context.epoch = epoch;
    try {
      await this.#restore(cluster.store());
    } catch (err) {
      this.#depose(`the takeover failed: ${(err as Error).message}`);
      return;
    }
    if (this.#stopping || !cluster.leadership.acting) {
      if (!this.#stopping) this.#depose('deposed while restoring');
      return;
    }
    this.#leading = true;
    const { hub, placer } = this.context;
    const names = this.#restored?.workerNames ?? [];
    this.#unhold = holdWhileMostMissing(names, this.options.restartHold * 1000, { hub, placer, log: this.#log });
    await this.#serve();
    const ms = Math.round(performance.now() - started);
    this.#log.info(
      { event: 'cluster_took_over', cluster: this.options.cluster, epoch, ms, workers: this.#restored?.workers },
      `took over cluster ${this.options.cluster} at epoch ${epoch}`,
    );
  }

  /**
   * This server can no longer be sure it leads (its own renew deadline passed, its lease was lost, another leads):
   * it stops acting at once as halt() stops (nothing more is granted, sent or written), then `onDeposed` runs.
   */
  #depose(reason: string): void {
    if (this.#deposed !== undefined) return;
    this.#deposed = reason;
    const wasLeading = this.#leading;
    this.#leading = false;
    this.#log.error(
      { event: 'cluster_deposed', cluster: this.options.cluster, epoch: this.context.epoch, reason },
      wasLeading ? `deposed: ${reason}; stopping at once` : `candidacy ended: ${reason}; stopping`,
    );
    // bounded: an etcd call in flight may take its whole deadline, engine-host processes their grace
    const bound = new Promise<void>((resolve) => setTimeout(resolve, DEPOSED_STOP_MS).unref());
    void Promise.race([this.halt(), bound]).finally(() => this.#onDeposed?.(reason));
  }

  /** 0, or 3 once this clustered server was deposed (`berth serve`'s exit status). */
  get exitCode(): number {
    return this.#deposed === undefined ? 0 : 3;
  }

  /** The cluster's standing (undefined with the embedded store). */
  get cluster(): Cluster | undefined {
    return this.#cluster;
  }

  /** What start-up restored from the journal (undefined before `start()`). */
  get restored(): Restored | undefined {
    return this.#restored;
  }

  /**
   * Restore on start (SPEC S4, S6), before the port is bound: the journal of --state-dir is read and
   * the workers and claims it holds put back in the books; from then on it follows the event bus.
   */
  async #restore(store?: Store): Promise<void> {
    if (this.options.journal === 'off') return;
    const { placer, holds, hub: workers } = this.context;
    const observe = this.#metrics && storeMetrics(this.#metrics.registry, this.options.store ? 'etcd' : 'embedded');
    const r = await restoreFromJournal(
      this.options,
      placer,
      holds,
      this.#log,
      store,
      workers,
      this.context.history,
      observe,
      this.context.groupHolds,
    );
    this.#restored = r;
    this.context.journal = r.journal;
    const { hub } = this.context;
    const agentOf = (name: string) => hub.workers.get(name)?.agent.agentId ?? '';
    const instanceOf = (name: string) => hub.workers.get(name)?.agent.instanceId ?? '';
    const endOf = (callId: string) => {
      const rec = hub.followable(callId);
      const end = rec?.ending instanceof BerthError ? undefined : rec?.ending;
      return rec && { owner: rec.owner, end, events: rec.keptEvents(), lastSeq: rec.lastSeq };
    };
    this.#unfollow = followEvents(r.journal, this.context.events, placer, agentOf, instanceOf, endOf);
  }

  /** Writes what the journal has queued, closes it and gives the state directory back. Idempotent. */
  #closeJournal(): Promise<void> {
    const r = this.#restored;
    if (!r) return Promise.resolve();
    this.#journalClosed ??= (async () => {
      this.#unhold?.();
      this.#unfollow?.();
      r.cancel();
      await r.journal.close();
      r.lock?.release();
    })();
    return this.#journalClosed;
  }

  /**
   * A clustered server's part of stopping: the journal written and closed, then the candidacy given up — at once,
   * so a standby takes over (hand-over, SPEC S7) — unless deposed (nothing of it is to be written any more).
   */
  async #leave(): Promise<void> {
    if (!this.#cluster) return;
    await this.#closeJournal();
    await this.#cluster.close(this.#deposed === undefined);
  }

  /**
   * Drains then stops (SPEC R3). From the first moment: health turns NOT_SERVING (Check answers it:
   * the port stays open during the drain), claims waiting and calls not yet started end UNAVAILABLE
   * "server is draining", no claim is granted, workers are sent Drain. Held leases and calls
   * running (engine host and workers) get `graceMs` (default: options.grace) to finish; then
   * whatever is left ends UNAVAILABLE "server is draining: the grace … elapsed", the port closes
   * (GOAWAY, connections cut 1 s later at most), and engine-host processes still running get
   * SIGTERM, SIGKILL after the executor grace (options.grace); stop resolves once their process
   * groups are gone — at most about `graceMs` + options.grace + 4 s in all. Idempotent.
   * Provisioning stops planning at once; after the drain every machine it started is stopped and
   * awaited (local process groups gone, Slurm jobs out of squeue: up to 30 s more).
   */
  stop(graceMs = this.options.grace * 1000): Promise<void> {
    if (!this.#stopping) {
      let done!: (counts: { finished: number; cancelled: number }) => void;
      this.#drained = new Promise((resolve) => (done = resolve));
      this.#stopping = this.#stop(graceMs, done);
    }
    return this.#stopping;
  }

  /**
   * Stops the control plane and leaves the work running (SPEC S5; what SIGTERM does unless `--on-stop drain`):
   * health turns NOT_SERVING, the books are frozen (no stream ending releases a claim or stops a run: the workers
   * keep their calls through their disconnect grace, clients resume their claims from a restarted server), every
   * connection is cut at once (no Drain is sent to workers), the provisioners' machines are left running.
   * The engine host's commands run in the engine keeper and run on too (issue 19 item 5); its calls that run
   * in-process (Python source, or every call without a keeper) are stopped as a drain stops them (SIGTERM, SIGKILL
   * after the grace). Resolves once they are gone. Idempotent; a stop() or halt()
   * already under way is awaited instead.
   */
  halt(): Promise<void> {
    this.#stopping ??= this.#halt();
    return this.#stopping;
  }

  async #halt(): Promise<void> {
    for (const n of HEALTH_NAMES) this.#health.setStatus(n, 'NOT_SERVING');
    this.context.events.emit({ kind: 'server_stopping', detail: 'stopping the control plane; work keeps running' });
    this.context.placer.freeze();
    this.lifecycle.live.halt();
    this.context.hub.sever();
    // The journal keeps the books as they are now: nothing the streams ending below do is written (SPEC S4, S5).
    this.#unfollow?.();
    this.#unfollow = undefined;
    this.#provisioning?.pause();
    this.#log.info({ calls: this.context.hub.calls.size }, 'berth stopping: work keeps running');
    // Every RPC ends with the halt's own reason before the connections are cut (first reason wins): a Run's stream
    // ended by it is the server going, not its caller leaving — its call is neither stopped nor failed (SPEC S5).
    this.lifecycle.live.abortAll(haltReason());
    this.#grpc.forceShutdown();
    this.lifecycle.to('draining');
    await this.#leave();
    await this.context.hub.close(true);
    await this.#observe?.stop();
    await this.#closeJournal();
    this.lifecycle.to('stopped');
    this.#log.info('berth stopped');
  }

  async #stop(graceMs: number, drained: (counts: { finished: number; cancelled: number }) => void): Promise<void> {
    this.context.journal?.freezeWorkers(); // stopping is not the workers leaving: they are restored at the next start
    for (const n of HEALTH_NAMES) this.#health.setStatus(n, 'NOT_SERVING');
    this.context.events.emit({ kind: 'server_draining', detail: `draining, grace ${graceMs} ms` });
    this.context.drainGraceMs = graceMs;
    this.lifecycle.to('draining');
    this.#provisioning?.pause();
    const live = this.lifecycle.live;
    const inFlight = live.keptCount;
    this.#log.info({ graceMs, inFlight }, 'berth draining');
    if (await live.idle(graceMs)) {
      live.abortAll(new BerthError('unavailable', `${DRAINING}: the server is stopping`)); // event watchers
      drained({ finished: inFlight, cancelled: 0 });
    } else {
      const left = live.keptCount;
      this.#log.warn({ inFlight: left }, 'grace elapsed: ending the calls still in flight');
      live.abortAll(new BerthError('unavailable', `${DRAINING}: the grace of ${graceMs} ms elapsed`));
      drained({ finished: Math.max(0, inFlight - left), cancelled: left });
    }
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#grpc.forceShutdown();
        resolve();
      }, CLOSE_MS);
      this.#grpc.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    // engine-host processes: SIGTERM, SIGKILL after the grace, gone; started machines: stopped, gone from their engine
    await Promise.all([this.context.hub.close(), this.#provisioning?.close()]);
    await this.#observe?.stop();
    await this.#closeJournal();
    await this.#leave();
    this.lifecycle.to('stopped');
    this.#log.info('berth stopped');
  }

  /**
   * Re-reads `--worker-tokens` and `--client-tokens` (SIGHUP): from now on only their tokens are
   * accepted; streams already attached stay. All or nothing.
   * @throws OptionsError naming the flag and file when one cannot be read or is bad (old tokens stay).
   */
  reloadIdentities(): void {
    if (!this.options.workerTokens && !this.options.clientTokens) {
      this.#log.info('SIGHUP: no --worker-tokens or --client-tokens to re-read');
      return;
    }
    this.context.identities?.reload();
    this.#log.info(
      { workerTokens: this.options.workerTokens, clientTokens: this.options.clientTokens },
      'token files re-read',
    );
  }

  /**
   * Re-reads the config file's `priority_classes:` (SIGHUP, SPEC Q1) and `tenants:` (SPEC Q3): asks from now on
   * resolve against the classes (waiting and held claims keep their priority); every tenant's use is recounted against
   * the new quotas and waiting claims held or freed by them. All or nothing: a bad file changes nothing. Other keys are
   * read at start only. @throws OptionsError naming the file, the line and the key (the old classes and quotas stay).
   */
  reloadPriorityClasses(): void {
    const path = this.options.config;
    if (!path) {
      this.#log.info('SIGHUP: no --config to re-read');
      return;
    }
    const { priorityClasses, tenants } = readConfigFile(path, Object.keys(SERVE_FLAGS));
    this.context.placer.setPriorityClasses(priorityClasses);
    this.context.placer.setTenantQuotas(tenants);
    this.#log.info(
      { config: path, priorityClasses: Object.keys(priorityClasses), tenants: Object.keys(tenants) },
      'priority classes and tenant quotas re-read',
    );
  }

  /**
   * For a second signal before exit, synchronous: SIGKILLs the process groups of engine-host calls still running,
   * and ends the machines the provisioners started (local worker groups SIGKILLed, Slurm jobs scancelled).
   */
  killNow(): void {
    this.context.hub.killNow();
    this.#provisioning?.killNow();
  }

  #credentials(): ServerCredentials {
    const { tlsCert, tlsKey, tlsCa } = this.options;
    if (!tlsCert || !tlsKey) return ServerCredentials.createInsecure();
    const ca = tlsCa ? readFlagFile('--tls-ca', tlsCa) : null;
    return ServerCredentials.createSsl(
      ca,
      [{ cert_chain: readFlagFile('--tls-cert', tlsCert), private_key: readFlagFile('--tls-key', tlsKey) }],
      Boolean(ca),
    );
  }
}

/** Plain words for why an address cannot be bound, by the errno name grpc-js reports. */
const BIND_ERRORS: Array<[RegExp, string]> = [
  [/EADDRINUSE/, 'address already in use'],
  [/EADDRNOTAVAIL/, 'address not available on this host'],
  [/EACCES|EPERM/, 'permission denied (ports below 1024 need privileges)'],
  [/ENOTFOUND|EAI_AGAIN/, 'host name not found'],
];

/** `listen` cannot be bound; the message is `--listen <address>: <why>`, e.g. `address already in use`. */
export class ListenError extends Error {
  constructor(
    readonly address: string,
    cause: Error,
  ) {
    const why = BIND_ERRORS.find(([re]) => re.test(cause.message))?.[1] ?? `cannot listen: ${cause.message}`;
    super(`--listen ${address}: ${why}`);
    this.name = 'ListenError';
  }
}
