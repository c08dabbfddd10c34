/**
 * WorkerHub: the workers attached over WorkerStream (SPEC W1–W5) and every call in flight.
 * Attaches on Hello (books join the placer), replaces on re-attach under the same name, leaves on
 * stream end, error or keepalive silence (books leave, calls fail at once with "went away"), and
 * starts calls on their claim's machine — a worker, or the engine host in-process.
 */
import type { Failure, WarmPools } from '../../generated/ts/berth/v1/calls.js';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { Grant } from '../placement/types.js';
import type { AttachedWorker, CallSpec } from './attached.js';
import type { CallRecord } from './call-record.js';
import { EngineRunner } from './engine-runner.js';

export type { CallSpec } from './attached.js';

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
  readonly #engine: EngineRunner;
  /** Calls holding their claim but waiting for a worker slot (SPEC W4); Cancel reaches them too. */
  readonly #waitingForSlot = new Set<{ runId: string; abort: AbortController }>();

  constructor(readonly o: HubOptions) {
    this.#engine = new EngineRunner(o.engineName, o.graceMs, o.engineCpus);
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
   */
  attach(w: AttachedWorker): void {
    const old = this.workers.get(w.name);
    if (old) {
      this.#forget(old);
      old.leave(
        new BerthError('unavailable', `worker ${w.name} went away: ${REPLACED_MESSAGE}`),
        new BerthError('failed_precondition', `worker ${w.name}: ${REPLACED_MESSAGE} (another worker holds the name now)`),
      );
      this.o.events.emit({ kind: 'worker_replaced', machine: w.name, detail: `worker ${w.name} re-attached; the old stream was ended` });
    }
    this.workers.set(w.name, w);
    this.o.placer.attach(w.spec);
    this.o.log.info({ worker: w.name, labels: w.spec.labels, cpus: w.spec.inventory.cpus, gpus: w.spec.inventory.gpuIds.length }, 'worker attached');
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
   * @throws BerthError unavailable when the worker is gone; invalid_argument for a bad payload;
   *   `signal.reason` if it aborts while waiting for a slot.
   */
  async start(spec: CallSpec, grant: Grant, signal: AbortSignal): Promise<CallRecord> {
    const a = grant.allocation;
    const allocation = { cpus: a.cpus, gpuIds: a.gpuIds, ramMb: a.ramMb, env: a.env };
    let rec: CallRecord;
    if (!grant.remote) {
      rec = this.#engine.start(spec, allocation);
    } else {
      const w = this.workers.get(grant.machine);
      if (!w) throw new BerthError('unavailable', `worker ${grant.machine} went away`);
      const waiting = { runId: spec.runId, abort: new AbortController() };
      this.#waitingForSlot.add(waiting);
      try {
        rec = await w.startCall(spec, allocation, AbortSignal.any([signal, waiting.abort.signal]));
      } finally {
        this.#waitingForSlot.delete(waiting);
      }
    }
    this.calls.set(spec.callId, rec);
    void rec.settled.then(() => {
      if (this.calls.get(spec.callId) === rec) this.calls.delete(spec.callId);
    });
    return rec;
  }

  /**
   * Cancels every call of `runId` in flight (a Cancel frame each) or waiting for a worker slot;
   * those Runs end CANCELLED. Returns how many.
   */
  cancelRun(runId: string): number {
    const reason = new BerthError('cancelled', `run ${runId} cancelled`);
    const mine = [...this.calls.values()].filter((c) => c.runId === runId && !c.ended);
    for (const c of mine) {
      c.stop(reason);
      c.fail(reason);
    }
    const queued = [...this.#waitingForSlot].filter((x) => x.runId === runId);
    for (const q of queued) q.abort.abort(reason);
    return mine.length + queued.length;
  }

  /**
   * Asks a worker carrying `label` to compile `source` (SPEC W5). Undefined when none is attached.
   * @throws BerthError unavailable when the worker goes away before answering.
   */
  async compile(label: string, flow: string, node: string, source: string, signal: AbortSignal): Promise<{ worker: string; failure?: Failure } | undefined> {
    const w = [...this.workers.values()].find((x) => x.spec.labels.includes(label));
    if (!w) return undefined;
    return { worker: w.name, failure: await w.compile(flow, node, source, signal) };
  }

  /** Calls in flight (for snapshots); elapsed in ms. */
  callsInFlight(): Array<{ callId: string; runId: string; machine: string; elapsedMs: number }> {
    const now = Date.now();
    return [...this.calls.values()].map((c) => ({ callId: c.callId, runId: c.runId, machine: c.machine, elapsedMs: Math.min(now - c.startedAt, 0xffffffff) }));
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

  #forget(w: AttachedWorker): void {
    for (const [id, rec] of w.calls) if (this.calls.get(id) === rec) this.calls.delete(id);
  }
}
