/**
 * WorkerAgent: the `berth worker` process's core. Holds one WorkerStream to the server at a time
 * and reconnects with exponential backoff and jitter when it drops, re-sending Hello (SPEC W6) with
 * its identity and the calls it still holds: calls outlive the stream for their disconnect grace
 * (SPEC S1, held-calls.ts). Token: `authorization: Bearer <token>` (SPEC R2). It stops instead of
 * retrying when retrying cannot help: a refused token, a refused Hello, or its name taken over by
 * another live worker. With several servers (an HA cluster, SPEC S7) it tries them in turn and dials the leader
 * a standby names next (servers.ts); it ignores frames of an older leader epoch than it has seen (epoch.ts).
 */
import { namedPlain } from '../resources/quantity.js';
import { join } from 'node:path';
import { status, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { WorkerServiceClient, type Hello } from '../../generated/ts/berth/v1/worker.js';
import { authMetadata, channelCredentials } from '../cli/client.js';
import { fromStandby } from '../ha/leader-hint.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { VERSION } from '../package-info.js';
import type { HostInventory } from '../resources/inventory.js';
import { AGENT_MAX_MESSAGE_BYTES, Executors } from '../workers/executors/index.js';
import { GroupSet } from '../workers/executors/kill.js';
import { poolCap } from '../workers/executors/pools.js';
import { KEEPER_HEADER } from '../workers/keeper-process.js';
import { backoffDelay, sleep, type BackoffOptions, DEFAULT_BACKOFF, heldBackoff } from './backoff.js';
import { BACKPRESSURE_CHANNEL_OPTIONS } from './frame-writer.js';
import { HeldCalls } from './held-calls.js';
import { agentId, newInstanceId } from './identity.js';
import { EpochGuard } from './epoch.js';
import { DEFAULT_OUTBOX, type OutboxBounds } from './outbox.js';
import { type LookupAll, ServerTargets, type Target } from './servers.js';
import { Session, type SessionEnd } from './session.js';
import { StateDir } from './state-dir.js';

/** Agent version sent in Hello (package.json). */
export const AGENT_VERSION = VERSION;

/** Default `--disconnect-grace`: calls run on 120 s without a stream to the server. */
export const DEFAULT_DISCONNECT_GRACE_MS = 120_000;

/** What the agent needs. Units: graceMs and disconnectGraceMs in ms. */
export interface AgentOptions {
  /** "host:port", or several comma-separated (the members of an HA cluster), or a DNS name with several records. */
  server: string;
  name: string;
  labels: string[];
  inventory: HostInventory;
  maxParallel: number;
  graceMs: number;
  token?: string;
  backoff?: BackoffOptions;
  python?: string;
  /** PEM files: `ca` turns TLS on; `cert` + `key` add a client certificate (mutual TLS). */
  tls?: { ca: string; cert?: string; key?: string };
  /** Wait for the Welcome after Hello before retrying, in ms (default DEFAULT_WELCOME_TIMEOUT_MS). */
  welcomeTimeoutMs?: number;
  /**
   * Directory recording the process groups this agent runs; on start, what a killed predecessor
   * left there is ended before Hello (SPEC R5, state-dir.ts). Undefined: nothing is recorded.
   */
  stateDir?: string;
  /**
   * How long calls keep running while no stream to the server is up (default DEFAULT_DISCONNECT_GRACE_MS);
   * a call whose Call.disconnect_grace_ms is longer is kept that long.
   */
  disconnectGraceMs?: number;
  /** How a DNS name in `server` is resolved to its records (default: the system resolver); for tests. */
  lookupAll?: LookupAll;
  /** Per-call bounds of the unacknowledged output kept in memory and spilled to the state dir (DEFAULT_OUTBOX). */
  outbox?: Partial<OutboxBounds>;
  /**
   * Set for the engine keeper (issue 19 item 5: the server's own local agent, src/workers/engine-keeper.ts): sent
   * as KEEPER_HEADER, and the agent ends by itself once it holds no call while its stream is down.
   */
  keeperSecret?: string;
}

/** What the agent is doing, for logs and tests. */
export interface AgentStatus {
  attached: boolean;
  running: number;
  /** Calls held: running, or ended with the ending not yet acknowledged. */
  held: number;
  pools: number;
  attaches: number;
  /** The server of the current (or last) stream. */
  server?: string;
  /** The newest leader epoch seen (SPEC S7; 0 without a cluster). */
  epoch: number;
}

/** The worker agent. `start()`, later `stop()`. */
export class WorkerAgent {
  readonly executors: Executors;
  /** The calls this agent runs and the frames the server has not acknowledged (they outlive streams). */
  readonly calls: HeldCalls;
  /** Stable across restarts of this agent: `<host>:<state dir>` (identity.ts). */
  readonly agentId: string;
  /** This start of the agent (random). */
  readonly instanceId = newInstanceId();
  /** The newest leader epoch seen, across streams (SPEC S7). */
  readonly epochs = new EpochGuard();
  readonly #targets: ServerTargets;
  #server?: string;
  readonly #stop = new AbortController();
  #stopped?: Promise<void>;
  #session?: Session;
  #attached = false;
  #attaches = 0;
  #loop?: Promise<void>;
  /** When the last stream went down (ms since the epoch); undefined while attached. */
  #downSince?: number;
  readonly #attachedWaiters = new Set<() => void>();

  readonly #state?: StateDir;

  constructor(
    readonly options: AgentOptions,
    readonly log: Logger,
  ) {
    this.#state = options.stateDir ? new StateDir(options.stateDir, log) : undefined;
    this.executors = new Executors({
      groups: new GroupSet(this.#state),
      graceMs: options.graceMs,
      python: options.python,
      onPoolsChanged: (pools) => log.info({ pools }, 'python pools changed'),
      pool: { cap: poolCap(options.inventory.cpus, options.maxParallel) },
    });
    this.agentId = agentId(options.stateDir, options.name);
    this.#targets = new ServerTargets(options.server, options.lookupAll);
    this.calls = new HeldCalls({
      executors: this.executors,
      log,
      disconnectGraceMs: this.#disconnectGraceMs,
      outbox: { ...DEFAULT_OUTBOX, ...options.outbox },
      spillRoot: () => (this.#state?.own ? join(this.#state.own, 'outbox') : undefined),
    });
  }

  get #disconnectGraceMs(): number {
    return this.options.disconnectGraceMs ?? DEFAULT_DISCONNECT_GRACE_MS;
  }

  /** Current status: attached or not, calls running, Python pools, attaches so far. */
  status(): AgentStatus {
    return {
      attached: this.#attached,
      running: this.calls.running,
      held: this.calls.size,
      pools: this.executors.python.pools.count,
      attaches: this.#attaches,
      server: this.#server,
      epoch: this.epochs.newest,
    };
  }

  /** Why the agent gave up (see fatalEnd); undefined while it keeps (re)connecting. */
  fatal?: string;
  /** The engine keeper ended by itself: its stream was down and it held no call. */
  idle = false;

  /** Starts connecting (and reconnecting) in the background. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Resolves when the agent stops: after `stop()`, or when it gives up (see `fatal`). */
  get finished(): Promise<void> {
    return this.#loop ?? Promise.resolve();
  }

  /** Resolves the next time a Welcome arrives (for tests and the CLI). */
  nextAttach(): Promise<void> {
    return new Promise((resolve) => this.#attachedWaiters.add(resolve));
  }

  /**
   * Stops for good (SIGTERM/SIGINT of `berth worker`; SPEC S2): sends Stopping{reason} while the stream is
   * up, then stops every call (SIGTERM, then SIGKILL after the grace) and sends their Failures, then ends the
   * stream, forgets the calls and closes the pools. Idempotent.
   */
  stop(reason = 'stop requested'): Promise<void> {
    this.#stopped ??= this.#shutdown(reason);
    return this.#stopped;
  }

  async #shutdown(reason: string): Promise<void> {
    this.#stop.abort();
    const s = this.#session;
    if (s?.welcomed) void s.stopping(reason);
    const name = this.options.name;
    await this.calls.stopAll(new BerthError('unavailable', `worker ${name} stopping (${reason})`), 'WorkerLost');
    if (s?.welcomed) {
      await this.calls.flushed(2000);
      await s.close();
    } else s?.stream.cancel();
    await this.#loop;
    this.calls.close();
    await this.executors.close();
  }

  #hello(): Hello {
    const inv = this.options.inventory;
    return {
      name: this.options.name,
      labels: this.options.labels,
      inventory: {
        cpus: inv.cpus,
        gpuIds: inv.gpuIds,
        ramMb: inv.ramMb,
        resources: namedPlain(inv.resources),
        gpuType: inv.gpuType,
        gpuNames: inv.gpuNames ?? [],
      },
      maxParallel: this.options.maxParallel,
      version: AGENT_VERSION,
      agentId: this.agentId,
      instanceId: this.instanceId,
      heldCalls: this.calls.held(),
      disconnectGraceMs: Math.min(this.#disconnectGraceMs, 0xffffffff),
    };
  }

  async #run(): Promise<void> {
    try {
      await this.#state?.takeOver(); // a predecessor's leftovers are gone before the first Hello
    } catch (err) {
      this.fatal = (err as Error).message;
      this.log.error({ reason: this.fatal }, 'cannot take over the state directory');
      return;
    }
    const targets = this.#targets;
    while (!this.#stop.signal.aborted) {
      let creds: ChannelCredentials;
      try {
        // insecure, TLS or mutual TLS; the files are read at each connect, so renewals apply
        const t = this.options.tls;
        creds = channelCredentials({ tlsCa: t?.ca, tlsCert: t?.cert, tlsKey: t?.key });
      } catch (err) {
        targets.failed();
        const delay = backoffDelay(targets.rounds, this.options.backoff ?? DEFAULT_BACKOFF);
        this.log.warn({ reason: (err as Error).message, retryInMs: delay }, 'cannot read a TLS file; retrying');
        await sleep(delay, this.#stop.signal);
        continue;
      }
      const target = await targets.next();
      this.#server = target.address;
      const client = new WorkerServiceClient(target.address, creds, channelOptions(target));
      const md = authMetadata(this.options.token);
      if (this.options.keeperSecret) md.set(KEEPER_HEADER, this.options.keeperSecret);
      const session = new Session(
        client.workerStream(md),
        this.#hello(),
        this.calls,
        this.executors,
        this.log.child({ server: target.address }),
        () => this.#onAttached(),
        this.options.welcomeTimeoutMs,
        this.epochs,
      );
      this.#session = session;
      const end = await session.run();
      this.#attached = false;
      this.#session = undefined;
      client.close();
      if (this.#stop.signal.aborted) break;
      const fatal = fatalEnd(end, this.options.name);
      if (fatal) {
        this.fatal = fatal;
        this.log.error({ reason: end.details ?? end.reason }, 'not reconnecting: retrying cannot help');
        break;
      }
      if (end.welcomed) targets.lost(end.leader);
      else targets.failed(end.leader, fromStandby(end));
      this.#downSince ??= Date.now();
      if (this.#keeperDone(targets.rounds)) {
        this.idle = true;
        this.log.info('engine keeper: no call held and no server; exiting');
        break;
      }
      const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
      const delay = backoffDelay(targets.rounds, this.calls.held().length > 0 ? heldBackoff(backoff) : backoff);
      this.log.warn(
        { server: target.address, reason: end.details ?? end.reason, leader: end.leader, retryInMs: delay },
        end.welcomed ? 'detached from server; reconnecting' : 'cannot attach; retrying',
      );
      await sleep(delay, this.#stop.signal);
    }
    // giving up (see fatal): nothing will take the calls' endings, so their processes go now
    if (this.fatal) {
      const why = new BerthError('unavailable', `worker ${this.options.name} stopping (${this.fatal})`);
      await this.calls.stopAll(why, 'WorkerLost');
    }
  }

  /**
   * The engine keeper outlives its server only for its calls: it is done once none runs and none waits to deliver
   * its ending (or the disconnect grace has passed since the stream went down), after it has attached once or
   * failed to 5 times.
   */
  #keeperDone(attempt: number): boolean {
    if (!this.options.keeperSecret || (this.#attaches === 0 && attempt < 5) || this.calls.running > 0) return false;
    const down = Date.now() - (this.#downSince ?? Date.now());
    return this.calls.size === 0 || down >= this.#disconnectGraceMs;
  }

  #onAttached(): void {
    this.#downSince = undefined;
    this.#targets.welcomed();
    this.#attached = true;
    this.#attaches++;
    for (const w of this.#attachedWaiters) w();
    this.#attachedWaiters.clear();
  }
}

/** Channel settings of the WorkerStream to `t` (keepalive, message limits, backpressure, TLS name of a DNS record). */
function channelOptions(t: Target): ChannelOptions {
  return {
    'grpc.keepalive_time_ms': 10_000,
    'grpc.keepalive_timeout_ms': 5_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': AGENT_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': AGENT_MAX_MESSAGE_BYTES,
    ...BACKPRESSURE_CHANNEL_OPTIONS, // issue 11: writes wait for HTTP/2, not grpc-js's retry buffer
    ...(t.serverName && { 'grpc.ssl_target_name_override': t.serverName, 'grpc.default_authority': t.serverName }),
  };
}

/**
 * Why a session's end means the agent must stop rather than reconnect, or undefined to retry:
 * UNAUTHENTICATED (a refused token); INVALID_ARGUMENT before the Welcome (the server refused the
 * Hello, e.g. too many device ids); PERMISSION_DENIED (the name is not what its certificate or
 * token binds, or another identity holds it live; SPEC R7); FAILED_PRECONDITION (a newer stream took over `name` while
 * this one was live: two workers share a name; see worker.proto).
 */
export function fatalEnd(end: SessionEnd, name: string): string | undefined {
  const said = end.details ?? end.reason;
  if (end.code === status.UNAUTHENTICATED) return `the server refused the token: ${said}`;
  if (end.code === status.INVALID_ARGUMENT && !end.welcomed) return `the server refused this worker: ${said}`;
  if (end.code === status.PERMISSION_DENIED) return `the server refused this worker: ${said}`;
  if (end.code === status.FAILED_PRECONDITION)
    return `name '${name}' was taken over by another worker; not reconnecting`;
  return undefined;
}
