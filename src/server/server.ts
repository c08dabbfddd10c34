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
import type { ServeOptions } from '../config/serve-options.js';
import { EventBus } from '../events.js';
import { Placer } from '../placement/placer.js';
import { buildProvisioning } from '../provision/build.js';
import type { ProvisioningLoop } from '../provision/loop.js';
import type { HostInventory } from '../resources/inventory.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { WorkerHub } from '../workers/hub.js';
import type { ServerContext } from './context.js';
import { loadDescriptors } from './descriptors.js';
import { Lifecycle, type LifecycleState } from './lifecycle.js';
import { placementService, workerService } from './services.js';
import { SERVER_VERSION_TEXT } from './version.js';
import { MAX_MESSAGE_BYTES } from '../workers/executors/limits.js';

/** Names reported by grpc.health.v1: '' is the whole server. */
const HEALTH_NAMES = ['', 'berth.v1.PlacementService', 'berth.v1.WorkerService'];


/** One berth server. Create, `start()`, later `stop()`. */
export class BerthServer {
  readonly lifecycle = new Lifecycle();
  readonly #grpc = new Server({
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': 5000,
    // Explicit, documented size limit (README "Workers"): far above every frame a worker sends.
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  });
  readonly #health = new HealthImplementation(Object.fromEntries(HEALTH_NAMES.map((n) => [n, 'NOT_SERVING'])));
  readonly #log: Logger;
  readonly context: ServerContext;
  #port = 0;
  #stopping?: Promise<void>;
  readonly #provisioning?: ProvisioningLoop;

  /**
   * @param options validated serve options (see resolveServeOptions)
   * @param engine the engine host's inventory
   * @param deps optional logger, provisioning loop factory (SPEC P10; default: built from options.provisioners)
   *   and worker heartbeat interval in ms (default 5000)
   */
  constructor(readonly options: ServeOptions, engine: HostInventory, deps: { log?: Logger; provisioning?: (events: EventBus, log: Logger) => ProvisioningLoop; heartbeatMs?: number } = {}) {
    const log = deps.log ?? silentLogger;
    this.#log = log;
    const events = new EventBus();
    const target = () => ({ server: this.advertised, token: options.token, stateDir: options.stateDir });
    this.#provisioning = deps.provisioning?.(events, log) ?? (options.provisioners.length ? buildProvisioning(options.provisioners, options.stateDir, target, { events, log }) : undefined);
    const placer = new Placer({
      engine: { name: options.engineName, labels: options.engineLabels ?? [], inventory: engine, remote: false },
      events,
      reconnectGraceMs: options.reconnectGrace * 1000,
      provisioning: this.#provisioning,
    });
    const hub = new WorkerHub({ placer, events, log, engineName: options.engineName, serverVersion: SERVER_VERSION_TEXT, heartbeatMs: deps.heartbeatMs ?? 5000, graceMs: options.grace * 1000 });
    this.context = { log, token: options.token, drain: this.lifecycle.drain, options, engine, events, placer, hub };
    this.#grpc.addService(PlacementServiceService, placementService(this.context));
    this.#grpc.addService(WorkerServiceService, workerService(this.context));
    this.#health.addToServer(this.#grpc);
    new ReflectionService(loadDescriptors()).addToServer(this.#grpc);
  }

  /** Current lifecycle state. */
  get state(): LifecycleState {
    return this.lifecycle.state;
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
   * Binds `options.listen`, starts the provisioning loop (shapes, a first reconcile) and starts
   * serving; health turns SERVING.
   * @throws ListenError when the address cannot be bound (in use, not on this host, not allowed),
   *   naming the option and the value; Error `--tls-…: cannot read '<file>': …` for a TLS file;
   *   Error when a provisioner cannot read its shapes (sinfo fails).
   */
  async start(): Promise<number> {
    const creds = this.#credentials();
    this.#port = await new Promise<number>((resolve, reject) => {
      this.#grpc.bindAsync(this.options.listen, creds, (err, port) => (err ? reject(new ListenError(this.options.listen, err)) : resolve(port)));
    });
    await this.#provisioning?.start();
    if (!this.lifecycle.to('serving')) return this.#port; // stop() came first: stay NOT_SERVING
    for (const n of HEALTH_NAMES) this.#health.setStatus(n, 'SERVING');
    this.#log.info({ address: this.address, tls: Boolean(this.options.tlsCert) }, 'berth serving');
    return this.#port;
  }

  /**
   * Drains then stops: health turns NOT_SERVING, the drain signal ends streams (workers are
   * told), in-flight calls get `graceMs` (default: options.grace) to finish, then the rest are
   * cut; engine-host processes still running then get SIGTERM, SIGKILL after the executor grace
   * (options.grace), and stop resolves once their process groups are gone — at most about
   * `graceMs` + options.grace + 3 s in all. Provisioning stops planning at once; after the drain
   * every machine it started is stopped and awaited (local process groups gone, Slurm jobs out
   * of squeue: up to 30 s more). Idempotent: a second call returns the same promise.
   */
  stop(graceMs = this.options.grace * 1000): Promise<void> {
    this.#stopping ??= this.#stop(graceMs);
    return this.#stopping;
  }

  async #stop(graceMs: number): Promise<void> {
    for (const n of HEALTH_NAMES) this.#health.setStatus(n, 'NOT_SERVING');
    this.context.events.emit({ kind: 'server_draining', detail: `draining, grace ${graceMs} ms` });
    this.lifecycle.to('draining');
    this.#provisioning?.pause();
    this.#log.info({ graceMs }, 'berth draining');
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#log.warn('grace elapsed: closing remaining calls');
        this.#grpc.forceShutdown();
        resolve();
      }, graceMs);
      this.#grpc.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    // engine-host processes: SIGTERM, SIGKILL after the grace, gone; started machines: stopped, gone from their engine
    await Promise.all([this.context.hub.close(), this.#provisioning?.close()]);
    this.lifecycle.to('stopped');
    this.#log.info('berth stopped');
  }

  /** SIGKILLs the process groups of engine-host calls still running, now (synchronous: for a second signal before exit). */
  killNow(): void {
    this.context.hub.killNow();
  }

  #credentials(): ServerCredentials {
    const { tlsCert, tlsKey, tlsCa } = this.options;
    if (!tlsCert || !tlsKey) return ServerCredentials.createInsecure();
    const ca = tlsCa ? readFlagFile('--tls-ca', tlsCa) : null;
    return ServerCredentials.createSsl(ca, [{ cert_chain: readFlagFile('--tls-cert', tlsCert), private_key: readFlagFile('--tls-key', tlsKey) }], Boolean(ca));
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
  constructor(readonly address: string, cause: Error) {
    const why = BIND_ERRORS.find(([re]) => re.test(cause.message))?.[1] ?? `cannot listen: ${cause.message}`;
    super(`--listen ${address}: ${why}`);
    this.name = 'ListenError';
  }
}

