/**
 * AttachedWorker: one worker stream as the hub sees it — its machine, its calls in flight, its
 * slots (SPEC W4), pending compile checks, ordered frame writes to it, and the routing of its
 * frames (events in order, one terminal per call; heartbeats only prove liveness, SPEC W2).
 */
import type { Failure, WarmPools } from '../../generated/ts/berth/v1/calls.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import type {
  CallAck,
  CompileResult,
  HeldCall,
  WorkerStreamRequest,
  WorkerStreamResponse,
} from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { MachineSpec } from '../placement/types.js';
import { CallRecord } from './call-record.js';
import { checkFrame } from './frames.js';
import { Slots } from './slots.js';
import type { WirePayload } from './task.js';

/** Writes one frame to the worker; resolves when handed to the transport. */
export type FrameSink = (frame: WorkerStreamResponse['frame']) => Promise<void>;

/** A call to start: its id parts and payload. */
export interface CallSpec {
  callId: string;
  runId: string;
  flow: string;
  node: string;
  payload: WirePayload;
  /** Who runs it, when client identities are configured (SPEC R7). */
  owner?: string;
  /** How long the call is held when its worker's link breaks, in ms (0: the server's `--worker-hold`; SPEC S2). */
  disconnectGraceMs?: number;
}

/** Who the agent behind a stream is (SPEC S2): its Hello's agent_id, instance_id and the calls it still holds. */
export interface AgentHello {
  agentId: string;
  instanceId: string;
  heldCalls: HeldCall[];
}

/** Most ms between a worker's events and their Ack frame (SPEC S1): at most one Ack per worker per interval. */
export const ACK_INTERVAL_MS = 200;

/** A worker attached over one stream. */
export class AttachedWorker {
  readonly calls = new Map<string, CallRecord>();
  readonly #compiles = new Map<string, (r: CompileResult | BerthError) => void>();
  /** Its slots (SPEC W4); a reconnected stream takes over those of the stream it succeeds. */
  slots: Slots;
  /** The stream that took over this one's calls after a reconnect (SPEC S2): frames to them go there. */
  successor?: AttachedWorker;
  /** Welcome.calls for a reconnect: the held calls the server still knows, with what it has of each (SPEC S1). */
  welcomeCalls: CallAck[] = [];
  /** Calls whose events or ending moved on since the last Ack (only for agents with an agent id). */
  readonly #acking?: Set<CallRecord>;
  #ackTimer?: ReturnType<typeof setTimeout>;
  /** Aborted (with the reason) when this stream is no longer the worker's: ended, replaced, silent. */
  readonly gone = new AbortController();
  /** How the stream itself ends when that differs from what its calls are told (replaced: FAILED_PRECONDITION). */
  streamEnd?: BerthError;
  /** When the worker last sent any frame (ms since the epoch). */
  lastSeen = Date.now();
  /** Its warm Python pools as of its last own heartbeat (undefined before the first). */
  warmPools: WarmPools | undefined;
  /** Calls whose Result or Failure frame came from the worker (an ending of ours may have come first: a Cancel). */
  readonly #answered = new WeakSet<CallRecord>();
  #chain: Promise<void> = Promise.resolve();
  #ids = 0;

  /**
   * @param identity who attached it (SPEC R7): a stream with another `key` may not replace it;
   *   default: the shared identity (any stream of the same name replaces it, SPEC W1).
   */
  #severed = false;
  /** Restored from the journal after a restart (SPEC S4): no stream yet; its agent instance re-binds its calls. */
  restored = false;
  /** The engine keeper's stream (issue 19 item 5): its machine is the engine's, never in the books. */
  keeper = false;

  constructor(
    readonly spec: MachineSpec,
    readonly sink: FrameSink,
    readonly identity: { key: string; describe: string } = { key: 'shared', describe: 'no credential' },
    readonly agent: AgentHello = { agentId: '', instanceId: '', heldCalls: [] },
  ) {
    this.slots = new Slots(spec.maxParallel ?? 0);
    if (agent.agentId) this.#acking = new Set();
  }

  /** Name of the machine. */
  get name(): string {
    return this.spec.name;
  }

  /**
   * Queues a frame in order; a failed write (stream gone) is ignored: `gone` says it. Once a reconnected stream
   * took over (`successor`), frames go there.
   */
  send(frame: WorkerStreamResponse['frame']): Promise<void> {
    if (this.#severed) return Promise.resolve();
    if (this.successor) return this.successor.send(frame);
    this.#chain = this.#chain.then(() => this.sink(frame)).catch(() => undefined);
    return this.#chain;
  }

  /** The server stops without draining (SPEC S5): from now on nothing is sent to this worker, not even a Cancel. */
  sever(): void {
    this.#severed = true;
  }

  /**
   * Takes a slot (waiting in line when max_parallel are running; SPEC W4), then sends the Call.
   * The slot is freed when the worker answers the call (or leaves).
   * @throws the worker's leave reason, or the reason of the first of `signals` (the caller's, the
   *   claim's, a Cancel's) that aborts before the Call is sent.
   */
  async startCall(spec: CallSpec, allocation: Allocation, signals: readonly AbortSignal[]): Promise<CallRecord> {
    const release = await this.slots.acquire([...signals, this.gone.signal]);
    if (this.gone.signal.aborted) {
      release();
      throw this.gone.signal.reason;
    }
    const rec = new CallRecord(spec.callId, spec.runId, this.name, allocation, (reason) => {
      void this.send({ $case: 'cancel', value: { callId: spec.callId, reason: reason.message } });
    });
    rec.holdMs = spec.disconnectGraceMs ?? 0;
    void rec.settled.then(() => {
      release();
      for (let w: AttachedWorker | undefined = this; w; w = w.successor)
        if (w.calls.get(spec.callId) === rec) w.calls.delete(spec.callId);
    });
    this.calls.set(spec.callId, rec);
    const { owner: _owner, disconnectGraceMs = 0, ...call } = spec;
    void this.send({ $case: 'call', value: { ...call, allocation, timeoutMs: 0, disconnectGraceMs } });
    return rec;
  }

  /**
   * Asks the worker to compile `source` (SPEC W5); resolves with the failure, or undefined when it compiled.
   * @throws the leave reason when the worker goes away first; `signal.reason` when the caller does.
   */
  async compile(flow: string, node: string, source: string, signal: AbortSignal): Promise<Failure | undefined> {
    const requestId = `k${++this.#ids}`;
    const answer = await new Promise<CompileResult | BerthError>((resolve) => {
      const onAbort = () => {
        this.#compiles.delete(requestId);
        resolve(signal.reason instanceof BerthError ? signal.reason : new BerthError('cancelled', 'compile cancelled'));
      };
      this.#compiles.set(requestId, (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      });
      signal.addEventListener('abort', onAbort, { once: true });
      void this.send({ $case: 'compile', value: { requestId, flow, node, source } });
    });
    if (answer instanceof BerthError) throw answer;
    if (answer.ok) return undefined;
    return answer.failure ?? { callId: '', type: 'CompileError', message: 'compile failed', traceback: '' };
  }

  /**
   * Routes one frame from the worker: events to their call in order; a Result or Failure ends
   * the call and frees its slot; heartbeats only prove liveness and are never forwarded.
   * @throws BerthError invalid_argument for a bad frame (SPEC R1) that names no call in flight, or
   *   a second Hello; a bad frame of a call in flight fails only that call.
   */
  receive(frame: WorkerStreamRequest['frame']): void {
    this.lastSeen = Date.now();
    try {
      checkFrame(frame);
    } catch (err) {
      if (this.#badCallFrame(frame, err as BerthError)) return;
      throw err;
    }
    switch (frame?.$case) {
      case undefined:
        return;
      case 'heartbeat':
        if (frame.value.callId === '' && frame.value.warmPools) this.warmPools = frame.value.warmPools;
        return;
      case 'event': {
        const rec = this.calls.get(frame.value.callId);
        if (!rec) return;
        if (frame.value.seq > 0 && frame.value.seq <= rec.lastSeq) return; // a resend after a reconnect (SPEC S1)
        rec.event(frame.value);
        if (this.#acking) this.#ackLater(rec);
        return;
      }
      case 'result':
      case 'failure': {
        const rec = this.calls.get(frame.value.callId);
        if (!rec) return;
        rec.finish(
          frame.$case === 'result' ? { $case: 'result', value: frame.value } : { $case: 'failure', value: frame.value },
        );
        rec.markSettled();
        this.#answered.add(rec);
        if (this.#acking) this.#ackLater(rec);
        return;
      }
      case 'stopping':
        return; // the stream's server acts on it (serve-stream.ts)
      case 'compileResult': {
        const done = this.#compiles.get(frame.value.requestId);
        this.#compiles.delete(frame.value.requestId);
        done?.(frame.value);
        return;
      }
      case 'hello':
        throw new BerthError('invalid_argument', 'frame: hello may only be the first frame');
    }
  }

  /** Sends one Ack within ACK_INTERVAL_MS for `rec` and every other call that moved on meanwhile. */
  #ackLater(rec: CallRecord): void {
    this.#acking!.add(rec);
    if (this.#ackTimer) return;
    this.#ackTimer = setTimeout(() => this.#flushAcks(), ACK_INTERVAL_MS);
    this.#ackTimer.unref();
  }

  /**
   * One Ack frame (SPEC S1): per call, the newest seq handed to every current follower (none following: nothing
   * new), and `ended` once its Result or Failure is recorded and journaled. Calls whose followers still lag are
   * looked at again at the next interval.
   */
  #flushAcks(): void {
    this.#ackTimer = undefined;
    const calls: CallAck[] = [];
    const kept: Promise<void>[] = [];
    let again = false;
    for (const rec of this.#acking!) {
      // The worker's own ending counts even when the call had ended here first (cancelled, failed): else the agent
      // would hold the ended call, unacknowledged, for as long as it runs.
      const ended = rec.finished || this.#answered.has(rec);
      const safe = ended ? rec.lastSeq : (rec.safeSeq() ?? 0);
      if (safe > rec.ackedSeq || ended) {
        rec.ackedSeq = Math.max(safe, rec.ackedSeq);
        calls.push({ callId: rec.callId, seq: rec.ackedSeq, ended });
        if (ended) kept.push(rec.endingKept);
      }
      if (!ended && rec.followers > 0 && rec.ackedSeq < rec.lastSeq) again = true;
      else this.#acking!.delete(rec);
    }
    // An ended call is acknowledged only once its ending is journaled (SPEC S4): the agent drops what it acked, so a
    // server crash between the two would lose the ending for good. Without endings to wait for, it goes out now.
    const ack = () => void this.send({ $case: 'ack', value: { calls } });
    if (calls.length && kept.length) void Promise.all(kept).then(ack);
    else if (calls.length) ack();
    if (again) {
      this.#ackTimer = setTimeout(() => this.#flushAcks(), ACK_INTERVAL_MS);
      this.#ackTimer.unref();
    }
  }

  /**
   * The link broke but the worker is held (SPEC S2): nothing new is sent to this stream (new calls and slot
   * waiters get `reason`, pending compiles too); its calls stay, for a reconnect or until their holds run out.
   */
  unlink(reason: BerthError): void {
    if (this.gone.signal.aborted) return;
    this.gone.abort(reason);
    for (const done of this.#compiles.values()) done(reason);
    this.#compiles.clear();
    if (this.#ackTimer) clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    this.#acking?.clear();
  }

  /**
   * A bad event or terminal frame of a call in flight fails only that call (issue 10 item 9): its
   * caller gets a `WorkerError` Failure naming the field; after a bad event the worker is sent a
   * Cancel and the call is settled once it answers (or leaves). False when the frame names no such call.
   */
  #badCallFrame(frame: WorkerStreamRequest['frame'], err: BerthError): boolean {
    if (frame?.$case !== 'event' && frame?.$case !== 'result' && frame?.$case !== 'failure') return false;
    const callId = frame.value.callId;
    const rec = typeof callId === 'string' ? this.calls.get(callId) : undefined;
    if (!rec) return false;
    const message = `worker ${this.name} sent a bad ${frame.$case} frame for call ${callId}: ${err.message}`;
    rec.finish({ $case: 'failure', value: { callId, type: 'WorkerError', message, traceback: '' } });
    if (frame.$case === 'event') rec.stop(new BerthError('cancelled', message));
    else rec.markSettled();
    return true;
  }

  /**
   * This stream is over: every call in flight fails at once with `reason` (SPEC W3), pending
   * compiles get it too; the stream ends with `streamEnd` (default `reason`). Idempotent.
   */
  leave(reason: BerthError, streamEnd: BerthError = reason): void {
    if (!this.gone.signal.aborted) {
      this.streamEnd = streamEnd;
      this.gone.abort(reason);
    }
    if (this.#ackTimer) clearTimeout(this.#ackTimer);
    for (const c of this.calls.values()) {
      c.fail(reason);
      c.markSettled();
    }
    this.calls.clear();
    for (const done of this.#compiles.values()) done(reason);
    this.#compiles.clear();
  }
}
