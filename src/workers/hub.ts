/**
 * WorkerHub: the workers attached over WorkerStream (SPEC W1–W5) and every call in flight.
 * Attaches on Hello (books join the placer), replaces on re-attach under the same name, leaves on
 * stream end, error or keepalive silence (books leave, calls fail at once with "went away"), and
 * starts calls on their claim's machine — a worker, or the engine host in-process. It is the
 * placer's release gate: a released claim's calls are stopped and its books come back only once
 * their processes are gone (SPEC R5).
 */
import { namedPlain } from '../resources/quantity.js';
import type { Event, Failure, WarmPools } from '../../generated/ts/berth/v1/calls.js';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { Grant, MachineSpec } from '../placement/types.js';
import { AttachedWorker, type CallSpec } from './attached.js';
import { CallIds } from './call-ids.js';
import { CallRecord, type Terminal } from './call-record.js';
import { EngineRunner } from './engine-runner.js';
import type { EngineKeeper } from './engine-keeper.js';
import { LinkHolds } from './link-holds.js';

export type { CallSpec } from './attached.js';

/** A call started (`rec`) or starting inside a claim; `gone` resolves once its process is gone. */
interface InClaim {
  rec?: CallRecord;
  gone: Promise<void>;
  done(): void;
}

/** How often a Run inside a claim on a disconnected (held) worker looks whether it is back, in ms. */
const HELD_POLL_MS = 50;

/** How long and how many ended calls stay followable (RunRequest.follow, SPEC S3) after their ending. */
export const ENDED_KEPT_MS = 60_000;
export const ENDED_KEPT_MAX = 1000;

/** Why a worker's stream was ended when a newer stream attached under its name (SPEC W1). */
export const REPLACED_MESSAGE = 'replaced by a new stream under the same name';

/** Hub settings. Units: ms. */
/** A call journaled in flight, restored after a restart inside its restored claim's grant; `startedAt`: ms. */
export interface RestoredCall {
  callId: string;
  runId: string;
  grant: Grant;
  startedAt?: number;
}

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
  /** How long a broken worker link holds a call that asked for no hold (`--worker-hold`, SPEC S2; default 2000). */
  workerHoldMs?: number;
  /** The engine keeper (issue 19 item 5): engine-host commands run in it; undefined: all run in-process. */
  keeper?: EngineKeeper;
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
  /** Calls that ended before the restart, by id: their ended journal records' endings (SPEC S3, issue 19). */
  readonly #journaled = new Map<
    string,
    {
      runId: string;
      machine: string;
      owner?: string;
      end: Terminal | BerthError;
      until: number;
      events: readonly Event[];
      lastSeq: number;
    }
  >();
  /** Workers whose link broke, held (SPEC S2). */
  readonly #holds: LinkHolds;

  constructor(readonly o: HubOptions) {
    this.#engine = new EngineRunner(o.engineName, o.graceMs, o.engineCpus);
    this.#holds = new LinkHolds(o.placer, o.log, o.workerHoldMs ?? 2000);
    o.placer.releaseGate = (claimId, reason) => this.#stopClaim(claimId, reason);
    o.placer.holdExpired = (name, reason) => this.#holdExpired(name, reason);
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
   * Attaches `w` (its Hello was valid) and returns it. The same agent instance (agent_id and instance_id) coming
   * back for a held or still-attached worker is a reconnect (SPEC S2): the held calls it lists move to `w` (its
   * `welcomeCalls` answer them), the rest fail, the claims stay. Else a
   * worker of the same name is replaced (SPEC W1): its calls fail UNAVAILABLE ("went away", at once: a new instance
   * of the agent holds none of them), the old stream ends FAILED_PRECONDITION (REPLACED_MESSAGE), which tells a
   * live agent not to reconnect, and the books join anew.
   * @throws BerthError permission_denied when a live stream of another identity holds the name (SPEC R7), or
   *   another agent id holds it, connected or held (SPEC S2: naming the host); nothing changes then.
   */
  attach(w: AttachedWorker): AttachedWorker {
    if (w.keeper) {
      this.o.keeper?.attach(w);
      return w;
    }
    const old = this.workers.get(w.name);
    if (old && !old.restored && old.identity.key !== w.identity.key) {
      throw new BerthError(
        'permission_denied',
        `worker ${w.name} is held by a live stream of another identity (${old.identity.describe}); ` +
          `this stream has ${w.identity.describe}`,
      );
    }
    const was = old?.agent;
    if (old && was?.agentId && w.agent.agentId && was.agentId !== w.agent.agentId) {
      const state = this.#holds.has(old) ? `disconnected, ${this.#holds.leftMs(old)} ms of its hold left` : 'connected';
      throw new BerthError(
        'permission_denied',
        `worker ${w.name} is held by the agent on ${hostOf(was.agentId)} (agent id ${was.agentId}, ${state}); ` +
          `this stream is from the agent on ${hostOf(w.agent.agentId)} (agent id ${w.agent.agentId}): ` +
          'give it another --name, or stop the other agent',
      );
    }
    if (old && was?.agentId && was.agentId === w.agent.agentId && was.instanceId === w.agent.instanceId) {
      // The old stream may still look open (a cut the server has not noticed): it is over all the same.
      this.#holds.hold(old, 'a new stream of the same agent instance arrived');
      this.#holds.resume(old, w);
      this.workers.set(w.name, w);
      this.o.placer.attach(w.spec);
      return w;
    }
    if (old) {
      const restarted = was?.agentId && was.agentId === w.agent.agentId;
      const why = restarted ? 'the agent restarted (a new instance of it attached)' : REPLACED_MESSAGE;
      this.#holds.forget(old);
      this.#forget(old);
      old.leave(
        new BerthError('unavailable', `worker ${w.name} went away: ${why}`),
        new BerthError(
          'failed_precondition',
          `worker ${w.name}: ${REPLACED_MESSAGE} (another worker holds the name now)`,
        ),
      );
      this.o.placer.detach(w.name, `worker ${w.name} was replaced by a new stream`);
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
    return w;
  }

  /**
   * `w`'s stream is over for good (Stopping, bad frame, drain, replaced): its calls fail at once, its books
   * leave (SPEC W3). Idempotent; nothing for a held worker (its holds decide).
   */
  leave(w: AttachedWorker, why: string): void {
    if (w.keeper) return this.o.keeper?.leave(w, why);
    if (this.#holds.has(w)) return;
    this.#forget(w);
    w.leave(new BerthError('unavailable', `worker ${w.name} went away: ${why}`));
    if (this.workers.get(w.name) !== w) return;
    this.workers.delete(w.name);
    this.o.placer.detach(w.name, `worker ${w.name} went away: ${why}`);
    this.o.log.info({ worker: w.name, why }, 'worker detached');
  }

  /**
   * `w`'s link broke (cut, silent, ended without a Stopping): it is held (SPEC S2, LinkHolds) — unless it is no
   * longer the worker of its name, when this is `leave`.
   */
  lost(w: AttachedWorker, why: string): void {
    if (w.keeper) return this.o.keeper?.lost(w, why);
    if (this.workers.get(w.name) !== w || (w.gone.signal.aborted && !this.#holds.has(w))) return this.leave(w, why);
    this.#holds.hold(w, why);
  }

  /**
   * After a restart (SPEC S4): call `callId` was in flight at the crash and cannot be re-bound (it ran on the engine
   * host, which stopped with the server, or its worker or claim is not in the journal). It is kept as ended with
   * `reason` (UNAVAILABLE) for ENDED_KEPT_MS, so that its caller following it again is told it was lost.
   */
  restoreLost(callId: string, runId: string, machine: string, reason: string): void {
    const rec = new CallRecord(
      callId,
      runId,
      machine,
      { cpus: 0, gpuIds: [], env: {}, resources: {} },
      () => undefined,
    );
    rec.fail(new BerthError('unavailable', reason));
    rec.markSettled();
    this.#keepEnded(rec);
  }

  /**
   * After a restart (SPEC S4): worker `spec` as the journal knew it (its machine is restored as disconnected), held
   * with the calls that were in flight on it, each inside its restored claim's `grant`, for `holdMs` (the restart
   * hold). When the same agent instance re-attaches listing them, they are re-bound (Welcome.calls) and followed
   * again; otherwise they fail "went away" when the hold runs out. Returns the calls' records.
   */
  restoreWorker(
    spec: MachineSpec,
    agent: { agentId: string; instanceId: string },
    calls: readonly RestoredCall[],
    holdMs: number,
  ): CallRecord[] {
    const w = new AttachedWorker(spec, () => Promise.resolve(), undefined, { ...agent, heldCalls: [] });
    w.restored = true;
    const out = this.#restoreCalls(w, calls, holdMs);
    this.workers.set(spec.name, w);
    this.#holds.hold(w, 'the server restarted');
    return out;
  }

  /**
   * After a restart (issue 19 item 5): the engine host's calls that ran in the engine keeper, held for `holdMs`
   * awaiting the keeper's return (EngineKeeper.hold); they fail "went away" at once without a keeper. Returns their
   * records; none without a keeper (they died with the server).
   */
  restoreKeeperCalls(calls: readonly RestoredCall[], holdMs: number): CallRecord[] {
    const keeper = this.o.keeper;
    if (!keeper || !calls.length) return [];
    const spec = { name: this.o.engineName, labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: true };
    const w = new AttachedWorker(spec, () => Promise.resolve());
    w.keeper = true;
    w.restored = true;
    const out = this.#restoreCalls(w, calls, holdMs);
    keeper.hold(w, holdMs, 'the server restarted');
    return out;
  }

  /**
   * Records held on `w` for `calls` (each inside its restored claim's grant), followable by call id, timed from
   * each call's journaled start.
   */
  #restoreCalls(w: AttachedWorker, calls: readonly RestoredCall[], holdMs: number): CallRecord[] {
    const out: CallRecord[] = [];
    for (const c of calls) {
      const a = c.grant.allocation;
      const allocation = {
        cpus: a.cpus,
        gpuIds: a.gpuIds,
        ramMb: a.ramMb,
        env: a.env,
        resources: namedPlain(a.resources),
      };
      const rec = new CallRecord(c.callId, c.runId, w.name, allocation, (reason) => {
        void w.send({ $case: 'cancel', value: { callId: c.callId, reason: reason.message } });
      });
      rec.holdMs = holdMs;
      rec.owner = c.grant.ask.owner;
      if (c.startedAt !== undefined) rec.startedAt = c.startedAt; // its ELAPSED counts from its first start
      w.calls.set(c.callId, rec);
      this.calls.set(c.callId, rec);
      const held = this.#track(c.grant.claimId);
      held.rec = rec;
      void rec.settled.then(() => {
        held.done();
        if (this.calls.get(c.callId) === rec) this.calls.delete(c.callId);
        this.#keepEnded(rec);
      });
      out.push(rec);
    }
    return out;
  }

  /**
   * Moves the hold of worker `name` — still away, held in the books — to `untilMs` (ms since the epoch) because
   * `why`, with its calls' holds when the hub holds them (SPEC S7: no mass expiry after a takeover).
   * Returns false when it is not held (it came back, or left).
   */
  extendHold(name: string, untilMs: number, why: string): boolean {
    if (!this.o.placer.machines.get(name)?.hold) return false;
    const w = this.workers.get(name);
    if (w && this.#holds.has(w)) this.#holds.extend(w, untilMs, why);
    else this.o.placer.disconnect(name, untilMs, why);
    return true;
  }

  /** A held worker's hold ran out (the placer's timer): its calls still held fail, it leaves the hub. */
  #holdExpired(name: string, reason: string): void {
    const w = this.workers.get(name);
    if (!w || !this.#holds.has(w)) return;
    this.#holds.expire(w);
    this.#forget(w);
    w.leave(new BerthError('unavailable', reason));
    this.workers.delete(name);
    this.o.log.info({ worker: name, why: reason }, 'worker detached: its hold ran out');
  }

  /**
   * True when the call `spec` on `grant` can outlive this server process: it runs on a remote worker or in the engine
   * keeper (SPEC S5). An in-process engine-host call dies with the server, so its claim need not be durable before it
   * starts (SPEC S4: nothing it acknowledges can outlive a crash that the record would have to account for).
   */
  outlivesServer(spec: CallSpec, grant: Grant): boolean {
    return grant.remote || (this.o.keeper?.wants(spec) ?? false);
  }

  /**
   * Starts a call inside `grant` on its machine: on a worker after taking one of its slots
   * (SPEC W4: the claim is already held, so the two never deadlock), or on the engine host.
   * The call is bound to the claim's lease: releasing the claim stops it, and the claim's books
   * are given back only once its process is gone (SPEC R5).
   * `ready`, when given, is awaited first (the claim's journal record, SPEC S4: nothing is sent before it is
   * durable); meanwhile the call counts as waiting for a slot, so Cancel(run_id) reaches it.
   * On a worker that is disconnected and held (SPEC S2, S6) it waits for the worker to come back, as it does for a
   * slot; when the hold runs out instead, it fails UNAVAILABLE "went away".
   * @throws BerthError unavailable when the worker is gone; invalid_argument for a bad payload;
   *   `signal.reason` (or the lease's end, `grant.lost.reason`) if it aborts while waiting for a slot;
   *   whatever `ready` rejects with; the Cancel's CANCELLED when it came while waiting for `ready`.
   */
  async start(spec: CallSpec, grant: Grant, signal: AbortSignal, ready?: Promise<void>): Promise<CallRecord> {
    if (ready) await this.#whileWaiting(spec, ready);
    const a = grant.allocation;
    const allocation = {
      cpus: a.cpus,
      gpuIds: a.gpuIds,
      ramMb: a.ramMb,
      env: a.env,
      resources: namedPlain(a.resources),
    };
    // The call's lease: the caller's signal and the claim's. No AbortSignal.any per call (issue 11: it
    // showed in the Run path's profile, and a held claim's `lost` would gather one dependant per call).
    signal.throwIfAborted();
    grant.lost.throwIfAborted();
    const held = this.#track(grant.claimId);
    let rec: CallRecord;
    try {
      if (!grant.remote) {
        const keeper = this.o.keeper?.wants(spec) ? await this.o.keeper.link() : undefined;
        signal.throwIfAborted();
        grant.lost.throwIfAborted();
        rec = keeper
          ? await keeper.startCall(spec, allocation, [signal, grant.lost])
          : this.#engine.start(spec, allocation);
      } else {
        const waiting = { runId: spec.runId, owner: spec.owner, abort: new AbortController() };
        this.#waitingForSlot.add(waiting);
        try {
          const signals = [signal, grant.lost, waiting.abort.signal];
          const w = await this.#connected(grant.machine, signals);
          if (!w) throw new BerthError('unavailable', `worker ${grant.machine} went away`);
          rec = await w.startCall(spec, allocation, signals);
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
   * The connected worker `name`, waiting while its machine is disconnected and held (SPEC S2, S6: a Run inside a
   * claim on it waits for it to come back, it does not fail); undefined once it is gone (its hold ran out).
   * @throws the reason of the first of `signals` to abort meanwhile.
   */
  async #connected(name: string, signals: readonly AbortSignal[]): Promise<AttachedWorker | undefined> {
    for (;;) {
      for (const s of signals) s.throwIfAborted();
      const w = this.workers.get(name);
      const held = w ? this.#holds.has(w) : this.o.placer.machines.get(name)?.hold !== undefined;
      if (!held) return w;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, HELD_POLL_MS);
        function done() {
          clearTimeout(t);
          for (const s of signals) s.removeEventListener('abort', done);
          resolve();
        }
        for (const s of signals) s.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Awaits `ready` with the call listed as waiting for a slot (a Cancel aborts it); throws the Cancel's reason. */
  async #whileWaiting(spec: CallSpec, ready: Promise<void>): Promise<void> {
    const waiting = { runId: spec.runId, owner: spec.owner, abort: new AbortController() };
    this.#waitingForSlot.add(waiting);
    try {
      await ready;
    } finally {
      this.#waitingForSlot.delete(waiting);
    }
    waiting.abort.signal.throwIfAborted();
  }

  /**
   * The call `callId` to follow again (SPEC S3): in flight, or ended within the last ENDED_KEPT_MS (at most
   * ENDED_KEPT_MAX kept), or ended before the restart (`restoreEnded`: its ending and its newest events); else
   * undefined.
   */
  followable(callId: string): CallRecord | undefined {
    const live = this.calls.get(callId);
    if (live) return live;
    const kept = this.#ended.get(callId);
    if (kept && Date.now() - kept.at <= ENDED_KEPT_MS) return kept.rec;
    const j = this.#journaled.get(callId);
    if (!j || Date.now() > j.until) {
      this.#journaled.delete(callId); // past the retention: the journal prunes its record too
      return undefined;
    }
    const rec = new CallRecord(callId, j.runId, j.machine, { cpus: 0, gpuIds: [], env: {}, resources: {} }, () => {});
    rec.owner = j.owner;
    rec.restoreEvents(j.events, j.lastSeq);
    if (j.end instanceof BerthError) rec.fail(j.end);
    else rec.finish(j.end);
    rec.markSettled();
    return rec;
  }

  /**
   * After a restart or a takeover (SPEC S3, S4): call `callId` of `owner` ended before it, with `end` (from its
   * ended journal record, kept until `until`, ms since the epoch), its newest events `events` (seq order) and the
   * seq `lastSeq` of its newest. Following it by id until then answers Started, the kept events after the follow's
   * seq, and `end`; FAILED_PRECONDITION when events after that seq were not kept.
   */
  restoreEnded(
    c: { callId: string; runId: string; machine: string; owner?: string; lastSeq?: number },
    end: Terminal | BerthError,
    until: number,
    events: readonly Event[] = [],
  ): void {
    const { runId, machine, owner } = c;
    this.#journaled.set(c.callId, { runId, machine, owner, end, until, events, lastSeq: c.lastSeq ?? 0 });
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
    const w = [...this.workers.values()].find((x) => x.spec.labels.includes(label) && !x.gone.signal.aborted);
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
   * Shutdown of the engine host's calls: those still running in-process are stopped (SIGTERM, SIGKILL after
   * `graceMs`); resolves once their process groups are gone (bounded), warm Python processes closed. The engine
   * keeper's calls are stopped too (a Cancel each; awaited, bounded) unless `keepKeeper` (a stop without drain,
   * SPEC S5: they run on).
   */
  async close(keepKeeper = false): Promise<void> {
    const kept = keepKeeper ? [] : (this.o.keeper?.calls().filter((r) => !r.ended) ?? []);
    const reason = new BerthError('unavailable', `server stopped: call stopped on ${this.o.engineName}`);
    for (const rec of kept) {
      rec.stop(reason);
      rec.fail(reason);
    }
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, this.o.graceMs + 3000)));
    await Promise.all([
      this.#engine.close(),
      kept.length ? Promise.race([Promise.all(kept.map((r) => r.settled)), bound]) : undefined,
    ]);
    clearTimeout(timer);
  }

  /**
   * The server stops without draining (SPEC S5): no frame reaches any worker from now on, so the calls they run are
   * neither cancelled nor told; they keep running through the agents' disconnect grace.
   */
  sever(): void {
    for (const w of this.workers.values()) w.sever();
    this.o.keeper?.sever();
  }

  /** SIGKILLs the engine host's running calls' process groups now (synchronous; second signal). */
  killNow(): void {
    this.#engine.killNow();
    this.o.keeper?.killNow();
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

/** The host part of an agent id `<host>:<state dir>`. */
function hostOf(agentId: string): string {
  const i = agentId.indexOf(':');
  return i > 0 ? agentId.slice(0, i) : agentId;
}
