/**
 * WorkerHub: the workers attached over WorkerStream (SPEC W1–W5) and every call in flight.
 * Attaches on Hello (books join the placer), replaces on re-attach under the same name, leaves on
 * stream end, error or keepalive silence (books leave, calls fail at once with "went away"), and
 * starts calls on their claim's machine — a worker, or the engine host in-process. It is the
 * placer's release gate: a released claim's calls are stopped and its books come back only once
 * their processes are gone (SPEC R5).
 */
import type { Failure, WarmPools } from '../../generated/ts/berth/v1/calls.js';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { Grant } from '../placement/types.js';
import type { AttachedWorker, CallSpec } from './attached.js';
import { CallIds } from './call-ids.js';
import type { CallRecord } from './call-record.js';
import { EngineRunner } from './engine-runner.js';

export type { CallSpec } from './attached.js';

/** A call started (`rec`) or starting inside a claim; `gone` resolves once its process is gone. */
interface InClaim {
  rec?: CallRecord;
  gone: Promise<void>;
  done(): void;
}

/** How long and how many ended calls stay followable (RunRequest.follow, SPEC S3) after their ending. */
export const ENDED_KEPT_MS = 60_000;
export const ENDED_KEPT_MAX = 1000;

/** Why a worker's stream was ended when a newer stream attached under its name (SPEC W1). */
export const REPLACED_MESSAGE = 'replaced by a new stream under the same name';

/** Hub settings. Units: ms. */
export interface HubOptions {
  placer: Placer;
  events: EventBus;
  log: Logger;
  /** Name of the engine host's machine (no worker may take it). */
  engineName: string;
  /** Server version sent in Welcome. */
  serverVersion: string;
  /** Interval workers heartbeat at (sent in Welcome). */
  heartbeatMs: number;
  /** SIGTERM → SIGKILL grace for engine-host calls (on cancel and on shutdown). */
  graceMs: number;
  /** The engine's cores: the cap of its warm Python processes (default 64). */
  engineCpus?: number;
}

/** All attached workers and all calls in flight of one server. */
export class WorkerHub {
  readonly workers = new Map<string, AttachedWorker>();
  readonly calls = new Map<string, CallRecord>();
  /** Call ids being placed: one call id, one execution. */
  readonly ids = new CallIds();
  readonly #engine: EngineRunner;
  /** Calls holding their claim but waiting for a worker slot (SPEC W4); Cancel reaches them too. */
  readonly #waitingForSlot = new Set<{ runId: string; owner?: string; abort: AbortController }>();
  /** Calls started or starting inside each claim, until their processes are gone (SPEC R5). */
  readonly #inClaim = new Map<string, Set<InClaim>>();
  /** Calls that ended lately, oldest first, for a caller following one again (SPEC S3). */
  readonly #ended = new Map<string, { rec: CallRecord; at: number }>();

  constructor(readonly o: HubOptions) {
    this.#engine = new EngineRunner(o.engineName, o.graceMs, o.engineCpus);
    o.placer.releaseGate = (claimId, reason) => this.#stopClaim(claimId, reason);
  }

  /** Warm Python pools by machine: the engine's now, each worker's as of its last heartbeat. */
  warmPools(): Map<string, WarmPools> {
    const out = new Map<string, WarmPools>([[this.o.engineName, this.#engine.warmPools()]]);
    for (const [name, w] of this.workers) if (w.warmPools) out.set(name, w.warmPools);
    return out;
  }

  /** How long a worker may stay silent before it is dropped: 3 heartbeats and a second. */
  get keepaliveMs(): number {
    return this.o.heartbeatMs * 3 + 1000;
  }

  /**
   * Attaches `w` (its Hello was valid): replaces a worker of the same name (SPEC W1), joins the
   * books. The old stream's calls fail UNAVAILABLE ("went away"); the old stream itself ends
   * FAILED_PRECONDITION (REPLACED_MESSAGE), which tells a live agent not to reconnect.
   * @throws BerthError permission_denied when a live stream of another identity holds the name
   *   (SPEC R7); nothing changes then.
   */
  attach(w: AttachedWorker): void {
    const old = this.workers.get(w.name);
    if (old && old.identity.key !== w.identity.key) {
      throw new BerthError(
        'permission_denied',
        `worker ${w.name} is held by a live stream of another identity (${old.identity.describe}); ` +
          `this stream has ${w.identity.describe}`,
      );
    }
    if (old) {
      this.#forget(old);
      old.leave(
        new BerthError('unavailable', `worker ${w.name} went away: ${REPLACED_MESSAGE}`),
        new BerthError(
          'failed_precondition',
          `worker ${w.name}: ${REPLACED_MESSAGE} (another worker holds the name now)`,
        ),
      );
      this.o.events.emit({
        kind: 'worker_replaced',
        machine: w.name,
        detail: `worker ${w.name} re-attached; the old stream was ended`,
      });
    }
    this.workers.set(w.name, w);
    this.o.placer.attach(w.spec);
    this.o.log.info(
      { worker: w.name, labels: w.spec.labels, cpus: w.spec.inventory.cpus, gpus: w.spec.inventory.gpuIds.length },
      'worker attached',
    );
  }

  /** `w`'s stream is over (end, error, silence): its calls fail, its books leave (SPEC W3). Idempotent. */
  leave(w: AttachedWorker, why: string): void {
    this.#forget(w);
    w.leave(new BerthError('unavailable', `worker ${w.name} went away: ${why}`));
    if (this.workers.get(w.name) !== w) return;
    this.workers.delete(w.name);
    this.o.placer.detach(w.name, `worker ${w.name} went away: ${why}`);
    this.o.log.info({ worker: w.name, why }, 'worker detached');
  }

  /**
   * Starts a call inside `grant` on its machine: on a worker after taking one of its slots
   * (SPEC W4: the claim is already held, so the two never deadlock), or on the engine host.
   * The call is bound to the claim's lease: releasing the claim stops it, and the claim's books
   * are given back only once its process is gone (SPEC R5).
   * @throws BerthError unavailable when the worker is gone; invalid_argument for a bad payload;
   *   `signal.reason` (or the lease's end, `grant.lost.reason`) if it aborts while waiting for a slot.
   */
  async start(spec: CallSpec, grant: Grant, signal: AbortSignal): Promise<CallRecord> {
    const a = grant.allocation;
    const allocation = { cpus: a.cpus, gpuIds: a.gpuIds, ramMb: a.ramMb, env: a.env };
    // The call's lease: the caller's signal and the claim's. No AbortSignal.any per call (issue 11: it
    // showed in the Run path's profile, and a held claim's `lost` would gather one dependant per call).
    signal.throwIfAborted();
    grant.lost.throwIfAborted();
    const held = this.#track(grant.claimId);
    let rec: CallRecord;
    try {
      if (!grant.remote) {
        rec = this.#engine.start(spec, allocation);
      } else {
        const w = this.workers.get(grant.machine);
        if (!w) throw new BerthError('unavailable', `worker ${grant.machine} went away`);
        const waiting = { runId: spec.runId, owner: spec.owner, abort: new AbortController() };
        this.#waitingForSlot.add(waiting);
        try {
          rec = await w.startCall(spec, allocation, [signal, grant.lost, waiting.abort.signal]);
        } finally {
          this.#waitingForSlot.delete(waiting);
        }
      }
    } catch (err) {
      held.done();
      throw err;
    }
    held.rec = rec;
    void rec.settled.then(held.done);
    if (grant.lost.aborted) {
      const why = grant.lost.reason as BerthError; // released while the call was being sent
      rec.stop(why);
      rec.fail(why);
    }
    rec.owner = spec.owner;
    this.calls.set(spec.callId, rec);
    void rec.settled.then(() => {
      if (this.calls.get(spec.callId) === rec) this.calls.delete(spec.callId);
      this.#keepEnded(rec);
    });
    return rec;
  }

  /**
   * The call `callId` to follow again (SPEC S3): in flight, or ended within the last ENDED_KEPT_MS (at most
   * ENDED_KEPT_MAX kept); undefined otherwise.
   */
  followable(callId: string): CallRecord | undefined {
    const live = this.calls.get(callId);
    if (live) return live;
    const kept = this.#ended.get(callId);
    return kept && Date.now() - kept.at <= ENDED_KEPT_MS ? kept.rec : undefined;
  }

  #keepEnded(rec: CallRecord): void {
    const now = Date.now();
    this.#ended.delete(rec.callId);
    this.#ended.set(rec.callId, { rec, at: now });
    for (const [id, e] of this.#ended) {
      if (this.#ended.size <= ENDED_KEPT_MAX && now - e.at <= ENDED_KEPT_MS) break;
      this.#ended.delete(id);
    }
  }

  /**
   * Cancels every call of `runId` in flight (a Cancel frame each) or waiting for a worker slot;
   * those Runs end CANCELLED. Returns how many. With `owner` given, only calls that owner started (SPEC R7).
   */
  cancelRun(runId: string, owner?: string): number {
    const reason = new BerthError('cancelled', `run ${runId} cancelled`);
    const ours = (x: { runId: string; owner?: string }) =>
      x.runId === runId && (owner === undefined || x.owner === owner);
    const mine = [...this.calls.values()].filter((c) => ours(c) && !c.ended);
    for (const c of mine) {
      c.stop(reason);
      c.fail(reason);
    }
    const queued = [...this.#waitingForSlot].filter(ours);
    for (const q of queued) q.abort.abort(reason);
    return mine.length + queued.length;
  }

  /**
   * Asks a worker carrying `label` to compile `source` (SPEC W5). Undefined when none is attached.
   * @throws BerthError unavailable when the worker goes away before answering.
   */
  async compile(
    label: string,
    flow: string,
    node: string,
    source: string,
    signal: AbortSignal,
  ): Promise<{ worker: string; failure?: Failure } | undefined> {
    const w = [...this.workers.values()].find((x) => x.spec.labels.includes(label));
    if (!w) return undefined;
    return { worker: w.name, failure: await w.compile(flow, node, source, signal) };
  }

  /** Calls in flight (for snapshots); elapsed in ms. */
  callsInFlight(): Array<{ callId: string; runId: string; machine: string; elapsedMs: number }> {
    const now = Date.now();
    return [...this.calls.values()].map((c) => ({
      callId: c.callId,
      runId: c.runId,
      machine: c.machine,
      elapsedMs: Math.min(now - c.startedAt, 0xffffffff),
    }));
  }

  /** Calls running per machine (for snapshots). */
  runningByMachine(): Map<string, number> {
    const m = new Map<string, number>();
    for (const c of this.calls.values()) m.set(c.machine, (m.get(c.machine) ?? 0) + 1);
    return m;
  }

  /**
   * Shutdown of the engine host's calls: those still running are stopped (SIGTERM, SIGKILL after
   * `graceMs`); resolves once their process groups are gone (bounded), warm Python processes closed.
   */
  close(): Promise<void> {
    return this.#engine.close();
  }

  /** SIGKILLs the engine host's running calls' process groups now (synchronous; second signal). */
  killNow(): void {
    this.#engine.killNow();
  }

  /** Registers a call starting inside `claimId`; `done()` once it failed to start or its process is gone. */
  #track(claimId: string): InClaim {
    let set = this.#inClaim.get(claimId);
    if (!set) this.#inClaim.set(claimId, (set = new Set()));
    let resolve!: () => void;
    const gone = new Promise<void>((r) => (resolve = r));
    const t: InClaim = {
      gone,
      done: () => {
        set.delete(t);
        if (set.size === 0 && this.#inClaim.get(claimId) === set) this.#inClaim.delete(claimId);
        resolve();
      },
    };
    set.add(t);
    return t;
  }

  /**
   * Release gate (SPEC R5): stops the calls inside `claimId` with `reason` (none: they keep
   * running, a drain's grace); resolves once their processes are gone.
   */
  #stopClaim(claimId: string, makeReason: (() => BerthError) | undefined): Promise<void> | undefined {
    const set = this.#inClaim.get(claimId);
    if (!set?.size) return undefined;
    const all = [...set];
    const reason = makeReason?.();
    for (const t of all) {
      if (reason && t.rec && !t.rec.ended) {
        t.rec.stop(reason);
        t.rec.fail(reason);
      }
    }
    return Promise.all(all.map((t) => t.gone)).then(() => undefined);
  }

  #forget(w: AttachedWorker): void {
    for (const [id, rec] of w.calls) if (this.calls.get(id) === rec) this.calls.delete(id);
  }
}
