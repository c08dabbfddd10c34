/**
 * WorkerHub: the workers attached over WorkerStream (SPEC W1–W5) and every call in flight.
 * Attaches on Hello (books join the placer), replaces on re-attach under the same name, leaves on
 * stream end, error or keepalive silence (books leave, calls fail at once with "went away"),
 * routes worker frames to calls (heartbeats are only liveness), and runs engine-host calls
 * in-process with the same executors the agent uses.
 */
import type { Call, CompileResult, WorkerStreamRequest } from '../../generated/ts/berth/v1/worker.js';
import type { Failure } from '../../generated/ts/berth/v1/calls.js';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { Grant } from '../placement/types.js';
import { AttachedWorker } from './attached.js';
import { CallRecord } from './call-record.js';
import { Executors } from './executors/index.js';
import { toEvent, toTerminal, type WirePayload, toTask } from './task.js';

/** Hub settings. Units: ms. */
export interface HubOptions {
  placer: Placer;
  events: EventBus;
  log: Logger;
  /** Interval the worker heartbeats at (sent in Welcome). */
  heartbeatMs: number;
  /** SIGTERM → SIGKILL grace for engine-host calls. */
  graceMs: number;
}

/** A call to start: its id parts, payload and deadline. */
export interface CallSpec {
  callId: string;
  runId: string;
  flow: string;
  node: string;
  payload: WirePayload;
}

/** All attached workers and all calls in flight of one server. */
export class WorkerHub {
  readonly workers = new Map<string, AttachedWorker>();
  readonly calls = new Map<string, CallRecord>();
  #local?: Executors;
  #compileIds = 0;

  constructor(readonly o: HubOptions) {}

  /** How long a worker may stay silent before it is dropped: 3 heartbeats and a second. */
  get keepaliveMs(): number {
    return this.o.heartbeatMs * 3 + 1000;
  }

  /** Attaches `w` (its Hello was valid): replaces a worker of the same name (SPEC W1), joins the books. */
  attach(w: AttachedWorker): void {
    const old = this.workers.get(w.name);
    if (old) {
      old.leave(new BerthError('unavailable', `worker ${w.name} went away: replaced by a new stream under the same name`));
      this.o.events.emit({ kind: 'worker_replaced', machine: w.name, detail: `worker ${w.name} re-attached; the old stream was ended` });
    }
    this.workers.set(w.name, w);
    this.o.placer.attach(w.spec);
    this.o.log.info({ worker: w.name, labels: w.spec.labels, cpus: w.spec.inventory.cpus, gpus: w.spec.inventory.gpuIds.length }, 'worker attached');
  }

  /** `w`'s stream is over (end, error, silence): its calls fail, its books leave (SPEC W3). No-op if replaced. */
  leave(w: AttachedWorker, why: string): void {
    const reason = new BerthError('unavailable', `worker ${w.name} went away: ${why}`);
    for (const id of w.calls.keys()) this.calls.delete(id);
    w.leave(reason);
    if (this.workers.get(w.name) !== w) return;
    this.workers.delete(w.name);
    this.o.placer.detach(w.name, `worker ${w.name} went away: ${why}`);
    this.o.log.info({ worker: w.name, why }, 'worker detached');
  }

  /**
   * Starts a call inside `grant` on its machine: on a worker after taking one of its slots
   * (SPEC W4), or in-process on the engine host. Resolves once the call is running.
   * @throws BerthError unavailable when the worker is gone; `signal.reason` if it aborts while waiting for a slot.
   */
  async start(spec: CallSpec, grant: Grant, signal: AbortSignal): Promise<CallRecord> {
    const allocation = { cpus: grant.allocation.cpus, gpuIds: grant.allocation.gpuIds, ramMb: grant.allocation.ramMb, env: grant.allocation.env };
    const task = toTask(spec.callId, allocation, spec.payload);
    if (!grant.remote) return this.#startLocal(spec, grant, task);
    const w = this.workers.get(grant.machine);
    if (!w) throw new BerthError('unavailable', `worker ${grant.machine} went away`);
    const release = await w.slots.acquire(AbortSignal.any([signal, w.gone.signal]));
    if (w.gone.signal.aborted) {
      release();
      throw w.gone.signal.reason;
    }
    const rec = new CallRecord(spec.callId, spec.runId, w.name, allocation, (reason) => {
      void w.send({ $case: 'cancel', value: { callId: spec.callId, reason: reason.message } });
    });
    void rec.settled.then(() => {
      release();
      if (w.calls.get(spec.callId) === rec) w.calls.delete(spec.callId);
      if (this.calls.get(spec.callId) === rec) this.calls.delete(spec.callId);
    });
    w.calls.set(spec.callId, rec);
    this.calls.set(spec.callId, rec);
    const call: Call = { callId: spec.callId, runId: spec.runId, flow: spec.flow, node: spec.node, allocation, payload: spec.payload, timeoutMs: 0 };
    void w.send({ $case: 'call', value: call });
    return rec;
  }

  /** Cancels every call in flight of `runId` (a Cancel frame each; SPEC "Cancel"); returns how many. */
  cancelRun(runId: string): number {
    const mine = [...this.calls.values()].filter((c) => c.runId === runId && !c.ended);
    for (const c of mine) {
      const reason = new BerthError('cancelled', `run ${runId} cancelled`);
      c.stop(reason);
      c.fail(reason);
    }
    return mine.length;
  }

  /**
   * Asks a worker carrying `label` to compile `source` (SPEC W5). Undefined when none is attached.
   * @throws BerthError unavailable when the worker goes away before answering.
   */
  async compile(label: string, flow: string, node: string, source: string, signal: AbortSignal): Promise<{ worker: string; failure?: Failure } | undefined> {
    const w = [...this.workers.values()].find((x) => x.spec.labels.includes(label));
    if (!w) return undefined;
    const requestId = `k${++this.#compileIds}`;
    const answer = await new Promise<CompileResult | BerthError>((resolve) => {
      const onAbort = () => {
        w.compiles.delete(requestId);
        resolve(signal.reason instanceof BerthError ? signal.reason : new BerthError('cancelled', 'compile cancelled'));
      };
      w.compiles.set(requestId, (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      });
      signal.addEventListener('abort', onAbort, { once: true });
      void w.send({ $case: 'compile', value: { requestId, flow, node, source } });
    });
    if (answer instanceof BerthError) throw answer;
    return { worker: w.name, failure: answer.ok ? undefined : answer.failure ?? { callId: '', type: 'CompileError', message: 'compile failed', traceback: '' } };
  }

  /**
   * Routes one frame from `w` to its call (SPEC W2): events in order, a Result or Failure ends
   * the call and frees its slot; heartbeats only prove liveness and are never forwarded.
   * @throws BerthError invalid_argument for a second Hello.
   */
  route(w: AttachedWorker, frame: WorkerStreamRequest['frame']): void {
    w.lastSeen = Date.now();
    if (!frame) return;
    switch (frame.$case) {
      case 'heartbeat':
        return;
      case 'event':
        w.calls.get(frame.value.callId)?.event(frame.value);
        return;
      case 'result':
      case 'failure': {
        const rec = w.calls.get(frame.value.callId);
        if (!rec) return;
        rec.finish(frame.$case === 'result' ? { $case: 'result', value: frame.value } : { $case: 'failure', value: frame.value });
        rec.markSettled();
        return;
      }
      case 'compileResult': {
        const done = w.compiles.get(frame.value.requestId);
        w.compiles.delete(frame.value.requestId);
        done?.(frame.value);
        return;
      }
      case 'hello':
        throw new BerthError('invalid_argument', 'frame: hello may only be the first frame');
    }
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

  /** Closes the engine host's warm Python processes. */
  async close(): Promise<void> {
    await this.#local?.close();
  }

  #startLocal(spec: CallSpec, grant: Grant, task: ReturnType<typeof toTask>): CallRecord {
    this.#local ??= new Executors({ graceMs: this.o.graceMs });
    const ac = new AbortController();
    const allocation = { cpus: grant.allocation.cpus, gpuIds: grant.allocation.gpuIds, ramMb: grant.allocation.ramMb, env: grant.allocation.env };
    const rec = new CallRecord(spec.callId, spec.runId, grant.machine, allocation, (reason) => ac.abort(reason));
    this.calls.set(spec.callId, rec);
    void this.#local
      .run(task, (e) => rec.event(toEvent(spec.callId, e)), ac.signal)
      .then((o) => rec.finish(toTerminal(spec.callId, o)), (err: unknown) => rec.fail(err instanceof BerthError ? err : new BerthError('unavailable', String(err))))
      .finally(() => {
        if (this.calls.get(spec.callId) === rec) this.calls.delete(spec.callId);
        rec.markSettled();
      });
    return rec;
  }
}
