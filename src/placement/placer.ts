/**
 * The placer: claims as leases across every machine (SPEC P1–P12). Decisions run on the event
 * loop without locks. A change of books marks the machines it touched; `#settle` then wakes only
 * the wait classes a touched machine could serve, oldest head first, and moves the reservations
 * of classes whose target machine changed (P7, P12). Release is idempotent (P8).
 */
import { randomUUID } from 'node:crypto';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, anyCanEverHold, chooseNow, clampTarget, eligible, requires, reservationTarget } from './choose.js';
import { askVerdict, limitingDimension, noCores, noCoresError, oversizeError, type AskVerdict } from './oversize.js';
import { allocationEnv } from './env.js';
import { MachineHolds } from './holds.js';
import { Lease } from './lease.js';
import { MachineSet, type MachineEntry } from './machines.js';
import { withReason, type DemandView, type Provisioning, type Unmet } from './provisioner.js';
import { queuedInfo } from './queued.js';
import { comingBackDetail, restoreLease, type RestoredClaim } from './restore.js';
import { placerSnapshot, type PlacerSnapshot } from './snapshot.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from './types.js';
import { WaitQueue, type WaitClass, type Waiter } from './waiting.js';

/**
 * Placer construction options. `reconnectGraceMs`: how long a detached label still counts (default
 * 30 000); `restartGraceMs`: how long after construction any required label counts as coming back
 * (a restarted server waiting for its workers to reconnect; default 0).
 */
export interface PlacerOptions {
  engine: MachineSpec;
  events: EventBus;
  reconnectGraceMs?: number;
  restartGraceMs?: number;
  /**
   * Makes claim ids. Default `c-<random UUID>`: 122 random bits, so an id cannot be guessed
   * (SPEC R7). Tests that judge arrival order by id may pass a counter.
   */
  newClaimId?: () => string;
  /** The provisioning loop (SPEC P10, V2): told the demand after every change of the books. */
  provisioning?: Provisioning;
}

interface Held {
  grant: Lease;
  entry: MachineEntry;
  since: number;
  /** Released, its books kept until the runs inside it are gone (SPEC R5). */
  releasing?: boolean;
}

/**
 * When a released claim's resources may be granted again (SPEC R5): stops the runs inside claim
 * `claimId` with `reason()` (built on demand; leaves them running when `reason` is undefined) and returns a promise
 * that resolves once their processes are gone, or undefined when nothing runs inside it (the books
 * are given back at once).
 */
export type ReleaseGate = (claimId: string, reason: (() => BerthError) | undefined) => Promise<void> | undefined;

const same = (x: Amount, y: Amount) => x.cpus === y.cpus && x.gpus === y.gpus && x.ramMb === y.ramMb;

/** Keeps the books of every machine and grants claims. */
export class Placer {
  readonly machines = new MachineSet();
  readonly #events: EventBus;
  readonly #graceMs: number;
  /** Until when (ms since the epoch) every required label counts as coming back (SPEC P3, issue 10 item 10). */
  readonly #restartUntil: number;
  readonly #prov?: Provisioning;
  readonly #queue = new WaitQueue();
  readonly #held = new Map<string, Held>();
  readonly #detachedLabels = new Map<string, number>();
  /** Machines whose free capacity changed or that left: classes reserving there re-choose. */
  readonly #changed = new Set<MachineEntry>();
  /** Machines with more room than before (release, attach, a reservation gone): may serve a waiter. */
  readonly #touched = new Set<MachineEntry>();
  /** Classes whose head may be grantable now. */
  readonly #woken = new Set<WaitClass>();
  #settling = false;
  /** Set by the worker hub: defers a release until the runs inside the claim are gone (SPEC R5). */
  releaseGate?: ReleaseGate;
  /** Set by the worker hub: told when a disconnected machine's hold runs out, before it leaves (SPEC S2). */
  holdExpired?: (name: string, reason: string) => void;
  readonly #newClaimId: () => string;
  #frozen = false;
  readonly #holds: MachineHolds;

  constructor(opts: PlacerOptions) {
    this.#events = opts.events;
    this.#holds = new MachineHolds({
      machines: this.machines,
      events: opts.events,
      changed: (e) => this.#cameBack(e),
      detach: (name, reason) => this.detach(name, reason),
      expired: (name, reason) => this.holdExpired?.(name, reason),
    });
    this.#graceMs = opts.reconnectGraceMs ?? 30_000;
    this.#restartUntil = Date.now() + (opts.restartGraceMs ?? 0);
    if (opts.restartGraceMs) setTimeout(() => this.#expireLabels(), opts.restartGraceMs + 1).unref();
    this.#newClaimId = opts.newClaimId ?? (() => `c-${randomUUID()}`);
    this.#prov = opts.provisioning;
    this.machines.add({ ...opts.engine, remote: false });
    this.#prov?.bind({ retire: (name, why) => this.#retire(name, why), requeue: (ids) => this.#requeue(ids) });
  }

  /**
   * A worker's books join (SPEC P1); the same name replaces the old machine (W1). Waiters are
   * re-fitted (P11) and those it could serve woken (P7). A disconnected machine of that name with the same
   * inventory reconnects instead (SPEC S2): its claims stay, with the same GPU ids.
   */
  attach(m: MachineSpec): void {
    const old = this.machines.get(m.name);
    if (old && this.#holds.reconnect(old, m)) return;
    if (old) this.detach(m.name, `worker ${m.name} was replaced by a new stream`);
    const e = this.machines.add({ ...m, remote: true });
    this.#events.emit({
      kind: 'worker_attached',
      machine: m.name,
      label: m.labels.join(','),
      granted: { cpus: m.inventory.cpus, gpus: m.inventory.gpuIds.length, ramMb: m.inventory.ramMb },
      gpuIds: m.inventory.gpuIds,
      detail:
        `${m.name}: ${m.inventory.cpus} cpu(s), ${m.inventory.gpuIds.length} gpu(s)` +
        `${m.labels.length ? `, labels ${m.labels.join(',')}` : ''}`,
    });
    this.#cameBack(e);
  }

  /**
   * Worker `name`'s stream broke: it is held as disconnected until `untilMs` (ms since the epoch), see holds.ts
   * (SPEC S2, S6); `detach` ends the hold. @throws Error when no worker of that name is attached.
   */
  disconnect(name: string, untilMs: number, why: string): void {
    this.#holds.disconnect(name, untilMs, why);
  }

  /** Attaches `spec` straight as disconnected until `untilMs` (a journaled machine after a restart, SPEC S4, S6). */
  restoreMachine(spec: MachineSpec, untilMs: number): void {
    this.#holds.restore(spec, untilMs);
  }

  /**
   * After a restart: the last worker carrying `label` left at `goneAt` (ms since the epoch, from the journal), so a
   * required ask for it waits until the reconnect grace from then is over, as before the restart (SPEC P3).
   */
  restoreLabel(label: string, goneAt: number): void {
    this.#detachedLabels.set(label, Math.max(goneAt, this.#detachedLabels.get(label) ?? 0));
    const left = goneAt + this.#graceMs - Date.now();
    if (left > 0) setTimeout(() => this.#expireLabels(), left + 1).unref();
  }

  /** A machine joined or came back: waiters are re-fitted and those it could serve woken. */
  #cameBack(e: MachineEntry): void {
    this.#touched.add(e);
    this.#changed.add(e);
    this.#refit();
    this.#settle();
  }

  /**
   * A machine leaves with its books (SPEC W3): each claim on it loses its lease (`lost` aborts
   * with UNAVAILABLE "worker <name> went away"); waiters are re-fitted (P11) and woken. No-op for
   * unknown names.
   */
  detach(name: string, reason = `worker ${name} went away`): void {
    if (this.#frozen) return;
    const entry = this.machines.get(name);
    if (!entry?.spec.remote) return;
    this.#holds.clear(entry);
    this.machines.remove(name);
    for (const cls of this.#queue.reserved.classesOn(entry)) {
      this.#queue.setTarget(cls, reservationTarget(this.machines, cls.ask, cls.amount));
    }
    for (const label of entry.spec.labels) this.#detachedLabels.set(label, Date.now());
    const lost = [...this.#held.values()].filter((h) => h.entry === entry);
    for (const h of lost) this.#held.delete(h.grant.claimId);
    for (const h of lost) {
      const g = h.grant;
      g.lose(new BerthError('unavailable', `${reason}: claim ${g.claimId} on ${name} lost`));
      this.#events.emit({
        kind: 'claim_lost',
        claimId: g.claimId,
        machine: name,
        node: g.ask.node,
        runId: g.ask.runId,
        detail: reason,
        ...heldFacts(h),
        outcome: 'lost',
      });
    }
    this.#events.emit({ kind: 'worker_detached', machine: name, detail: reason });
    if (entry.spec.labels.length) setTimeout(() => this.#expireLabels(), this.#graceMs + 1).unref();
    this.#refit();
    this.#settle();
  }

  /**
   * Claims resources for `ask`: resolves with the Grant now, or after waiting (calling
   * `onQueued` once with why). Rejects with BerthError: FAILED_PRECONDITION for a required
   * label no machine carries (P3) or an `on_oversize: fail` ask no machine can hold (issue 13);
   * the signal's reason when it aborts while waiting.
   */
  claim(ask: NormalizedAsk, opts: { signal: AbortSignal; onQueued?: (q: QueuedInfo) => void }): Promise<Grant> {
    const r = this.claimOrWait(ask, opts);
    return r instanceof Promise ? r : Promise.resolve(r);
  }

  /**
   * As `claim`, but a grant made at once is returned as it is, not in a promise (the Claim hot
   * path, issue 9: no race with the stream when nothing waits). Errors still come as a rejection.
   * `signal` may be a function: called only when the claim has to wait (a caller that checked
   * it is not aborted need not make an AbortSignal for a grant made at once).
   */
  claimOrWait(
    ask: NormalizedAsk,
    opts: { signal: AbortSignal | (() => AbortSignal); onQueued?: (q: QueuedInfo) => void },
  ): Grant | Promise<Grant> {
    const given = opts.signal;
    if (typeof given !== 'function' && given.aborted) return Promise.reject(given.reason);
    let fit: { amount: Amount; clamped: boolean };
    try {
      this.#checkLabel(ask);
      fit = this.#fit(ask, true); // on_oversize fail: FAILED_PRECONDITION (issue 13)
    } catch (err) {
      return Promise.reject(err);
    }
    const claimId = this.#newClaimId();
    const { amount, clamped } = fit;
    const now = chooseNow(
      this.machines,
      ask,
      amount,
      (m) => m.books.fitsNow(amount, this.#queue.reserved.on(m)) && this.#placeable(m),
    );
    if (now) {
      const g = this.#grant(claimId, ask, amount, clamped, now.machine, now.fellBack);
      this.#settle();
      return g;
    }
    const signal = typeof given === 'function' ? given() : given;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<Grant>((resolve, reject) => {
      const onAbort = () => this.#abandon(w, signal.reason);
      const w = this.#queue.add(
        {
          claimId,
          ask,
          since: Date.now(),
          resolve,
          reject,
          detach: () => signal.removeEventListener('abort', onAbort),
          notify: opts.onQueued,
        },
        amount,
        clamped,
        () => reservationTarget(this.machines, ask, amount),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      const info = this.#queuedInfo(w, this.#queue.size);
      info.detail += comingBackDetail(this.machines, ask, amount);
      const until = this.#comingBackUntil(ask);
      if (until)
        info.detail +=
          `: waiting for workers labelled '${ask.label}' to come back (reconnect grace, ` +
          `${Math.ceil((until - Date.now()) / 1000)} s left)`;
      this.#events.emit({
        kind: 'node_queued',
        claimId,
        node: ask.node,
        runId: ask.runId,
        machine: info.bestMachine,
        detail: info.detail,
        ...askFacts(ask, w.cls.amount, w.cls.clamped),
        queued: info,
      });
      opts.onQueued?.(info);
      this.#plan();
    });
  }

  /**
   * The control plane stops without draining (SPEC S5): from now on nothing is released or detached, so the streams
   * that end as the server goes down neither stop the work inside their claims nor give anything back — the work
   * keeps running and a restarted server restores the books from its journal. Irreversible.
   */
  freeze(): void {
    this.#frozen = true;
  }

  /**
   * Gives a claim back (SPEC P8, R5). Its lease ends now: `lost` aborts with CANCELLED "claim <id>
   * released (<why>)" and runs inside it are stopped; its books are given back (waking waiters it
   * could serve) once `releaseGate` says their processes are gone. `keepRuns` (a drain, SPEC R3):
   * the runs keep their grace and the books come back when they end. Idempotent: false when the id
   * holds nothing.
   */
  release(claimId: string, why = 'released', opts: { keepRuns?: boolean } = {}): boolean {
    if (this.#frozen) return false;
    const h = this.#held.get(claimId);
    if (!h || h.releasing) return false;
    // Built only if a run inside must be stopped or someone reads the lease's `lost` (issue 9).
    let made: BerthError | undefined;
    const reason = () =>
      (made ??= new BerthError(
        'cancelled',
        why === 'released' ? `claim ${claimId} released` : `claim ${claimId} released (${why})`,
      ));
    const gate = this.releaseGate?.(claimId, opts.keepRuns ? undefined : reason);
    if (!opts.keepRuns) h.grant.loseLazily(reason);
    if (!gate) return this.#give(claimId, h, why);
    h.releasing = true;
    void gate.then(() => this.#give(claimId, h, why));
    return true;
  }

  #give(claimId: string, h: Held, why: string): boolean {
    if (this.#held.get(claimId) !== h) return false; // its machine left meanwhile, books and all
    this.#held.delete(claimId);
    this.machines.give(h.entry, claimId);
    this.#changed.add(h.entry);
    this.#touched.add(h.entry);
    this.#events.emit({
      kind: 'claim_released',
      claimId,
      machine: h.grant.machine,
      node: h.grant.ask.node,
      runId: h.grant.ask.runId,
      detail: why,
      ...heldFacts(h),
      outcome: why.toLowerCase().replace(/[^a-z0-9]+/g, '_'),
    });
    this.#settle();
    return true;
  }

  /**
   * Takes back a claim read from the journal (SPEC S4): exactly `c.allocation` on `c.machine`, not
   * through the queue, and returns its Grant. Emits node_placed ("restored from the journal").
   * @throws BerthError FAILED_PRECONDITION when the machine is not in the books or those resources
   *   are not free; the books are unchanged then.
   */
  restoreClaim(c: RestoredClaim): Grant {
    if (this.#held.has(c.claimId))
      throw new BerthError('failed_precondition', `claim ${c.claimId} cannot be restored: it is held already`);
    const { lease, entry } = restoreLease(this.machines, c);
    this.#held.set(c.claimId, { grant: lease, entry, since: Date.now() });
    this.#changed.add(entry);
    const a = lease.allocation;
    this.#events.emit({
      kind: 'node_placed',
      claimId: c.claimId,
      node: c.ask.node,
      runId: c.ask.runId,
      machine: entry.spec.name,
      ...askFacts(c.ask, { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb }, lease.clamped),
      granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
      gpuIds: a.gpuIds,
      detail:
        `restored from the journal: ${describeAmount({ cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb })} ` +
        `on ${entry.spec.name}${a.gpuIds.length ? ` (gpu ${a.gpuIds.join(',')})` : ''}`,
    });
    this.#settle();
    return lease;
  }

  /** False for a disconnected (held) machine, restored or not (SPEC S2, S6): nothing new goes there. */
  #placeable(m: MachineEntry): boolean {
    return m.hold === undefined;
  }

  /** The held claim `claimId`, if any (not one being released). */
  get(claimId: string): Grant | undefined {
    const h = this.#held.get(claimId);
    return h && !h.releasing ? h.grant : undefined;
  }

  /**
   * Abandons the waiting claims of `runId` (Cancel); returns how many. With `owner` given, only
   * claims whose ask has that owner (SPEC R7).
   */
  cancelRun(runId: string, owner?: string): number {
    const mine = this.#queue.inRun(runId).filter((w) => owner === undefined || w.ask.owner === owner);
    for (const w of mine) this.#abandon(w, new BerthError('cancelled', `run ${runId} cancelled`));
    return mine.length;
  }

  /**
   * Satisfiable's structured answer (issue 13, see oversize.ts): runs_now, waits,
   * waits_for_provisioner (with wait_for), clamped or impossible (with clamped_to and limiting).
   * A required label no machine carries, none is coming back (P3 grace) and no provisioner covers is
   * impossible with limiting "label" (issue 23 item 7): a verdict, where a Claim fails FAILED_PRECONDITION.
   */
  verdict(ask: NormalizedAsk): AskVerdict {
    if (this.#labelMissing(ask) && this.#graceUntil(ask.label) < Date.now())
      return { verdict: 'impossible', waitFor: '', limiting: 'label' };
    if (this.#coresNowhere(ask)) return { verdict: 'impossible', waitFor: '', limiting: 'cpus' };
    return askVerdict(
      this.machines,
      (a) => this.#prov?.covers(a) ?? false,
      ask,
      (m, amount) => m.hold === undefined && m.books.fitsNow(amount, this.#queue.reserved.on(m)),
    );
  }

  /** The books, waiting claims (with where each holds back resources) and held claims. */
  snapshot(): PlacerSnapshot {
    return placerSnapshot(
      this.machines,
      [...this.#queue.waiters()],
      [...this.#held.values()],
      (id) => this.#prov?.reason(id),
      this.#prov?.statuses() ?? [],
    );
  }

  /**
   * Checks every machine's books, that held claims match them, and the waiting classes and their
   * reservations (P8). @throws BooksError or Error naming what broke.
   */
  checkInvariants(): void {
    let claims = 0;
    for (const m of this.machines.all()) {
      m.books.check(m.spec.name);
      claims += m.books.claims;
    }
    if (claims !== this.#held.size) throw new Error(`books hold ${claims} claims, placer ${this.#held.size}`);
    for (const w of this.#queue.waiters())
      if (this.#held.has(w.claimId)) throw new Error(`claim ${w.claimId} both waiting and held`);
    this.#queue.check((m) => this.machines.has(m));
  }

  #checkLabel(ask: NormalizedAsk): void {
    if (this.#labelMissing(ask) && this.#graceUntil(ask.label) < Date.now()) throw this.#noLabel(ask);
  }

  /**
   * FAILED_PRECONDITION for a required label no machine carries, none is coming back and no provisioner can
   * start (SPEC P3); when provisioners start machines with the label, but none big enough, it names their shapes.
   */
  #noLabel(ask: NormalizedAsk): BerthError {
    const label = ask.label;
    const shapes = this.#prov?.shapesWithLabel(label) ?? '';
    if (!shapes) {
      return new BerthError(
        'failed_precondition',
        `no machine carries label '${label}' and no provisioner can start one`,
      );
    }
    const asked = describeAmount(amountOf(ask));
    return new BerthError(
      'failed_precondition',
      `no machine carries label '${label}' and no provisioner can start one that holds ${asked} ` +
        `(with that label they start ${shapes})`,
    );
  }

  /**
   * True when `ask` needs cores no eligible machine has, no provisioner covers it and the restart grace
   * (workers reconnecting) is over: it fails FAILED_PRECONDITION rather than be clamped to 0 cores (issue 23 item 7).
   */
  #coresNowhere(ask: NormalizedAsk): boolean {
    return this.#restartUntil < Date.now() && !this.#prov?.covers(ask) && noCores(this.machines, ask);
  }

  /** True when `ask` requires a label that no machine carries and no provisioner covers (SPEC P3, P10). */
  #labelMissing(ask: NormalizedAsk): boolean {
    return requires(ask) && !this.machines.hasLabel(ask.label) && !this.#prov?.covers(ask);
  }

  /**
   * Until when the workers of `label` count as coming back: the reconnect grace after its last
   * machine left, or the restart grace after the placer started.
   */
  #graceUntil(label: string): number {
    const gone = this.#detachedLabels.get(label);
    return Math.max(gone === undefined ? 0 : gone + this.#graceMs, this.#restartUntil);
  }

  /** For a required label no machine carries, `#graceUntil`; 0 when it is carried, not required, or covered. */
  #comingBackUntil(ask: NormalizedAsk): number {
    return this.#labelMissing(ask) ? this.#graceUntil(ask.label) : 0;
  }

  /**
   * The amount to wait for: the ask when some machine could ever hold it, when a provisioner covers it (P10; the
   * provisioning loop plans a machine) or when no machine is eligible (a required label within its grace, P3); else
   * clamped to the best real machine (P5), emitting node_clamped when `announce`.
   * @throws BerthError FAILED_PRECONDITION when it would be clamped but asks `on_oversize: fail` (issue 13).
   */
  #fit(ask: NormalizedAsk, announce: boolean): { amount: Amount; clamped: boolean; best?: MachineEntry } {
    const amount = amountOf(ask);
    if (anyCanEverHold(this.machines, ask, amount)) return { amount, clamped: false };
    if (this.#prov?.covers(ask)) return { amount, clamped: false }; // the provisioning loop plans it (#plan)
    const t = clampTarget(this.machines, ask);
    if (!t) {
      // No cores anywhere (issue 23 item 7): FAILED_PRECONDITION once the restart grace is over, else wait.
      if (announce && this.#coresNowhere(ask)) throw noCoresError(this.machines, ask);
      return { amount, clamped: false }; // no eligible machine: a required label within its grace (P3) — wait
    }
    if (ask.onOversize === 'fail') throw oversizeError(amount, t); // loud clamping (issue 13)
    if (announce) this.#clampedEvent(ask, t.amount, t.machine);
    return { amount: t.amount, clamped: true, best: t.machine };
  }

  #clampedEvent(ask: NormalizedAsk, to: Amount, m: MachineEntry): void {
    const asked = amountOf(ask);
    this.#events.emit({
      kind: 'node_clamped',
      node: ask.node,
      runId: ask.runId,
      machine: m.spec.name,
      label: ask.label || undefined,
      asked,
      granted: to,
      clamped: true,
      limiting: limitingDimension(asked, to),
      detail: `${describeAmount(asked)} → ${describeAmount(to)} (best machine: ${m.spec.name})`,
    });
  }

  /**
   * The set of machines changed: every class's verdict is fitted again, both ways (P11) — a
   * clamped class gets its whole ask once a machine could hold it, and one whose only fitting
   * machine left is clamped again. A class whose amount changed, or that had no target, re-chooses
   * its target and wakes. Cost: per wait class, per machine class.
   */
  #refit(): void {
    const failed: [WaitClass, unknown][] = [];
    for (const cls of this.#queue.classes()) {
      let f: { amount: Amount; clamped: boolean; best?: MachineEntry };
      try {
        f = this.#fit(cls.ask, false);
      } catch (err) {
        failed.push([cls, err]); // on_oversize fail and its only fitting machine left (P11, issue 13)
        continue;
      }
      if (cls.target && same(f.amount, cls.amount)) continue;
      if (!same(f.amount, cls.amount)) {
        this.#queue.setAmount(cls, f.amount, f.clamped);
        if (f.best) for (let w = cls.head; w; w = w.next) this.#clampedEvent(w.ask, f.amount, f.best);
      }
      this.#retarget(cls);
      this.#woken.add(cls);
    }
    for (const [cls, err] of failed) for (let w = cls.head; w; w = cls.head) this.#abandon(w, err);
  }

  /** Points `cls` at the machine it is closest to fitting, keeping its target when that is as close. */
  #retarget(cls: WaitClass): void {
    const old = cls.target;
    const t = reservationTarget(this.machines, cls.ask, cls.amount, old);
    if (t === old) return;
    this.#queue.setTarget(cls, t);
    if (old) this.#touched.add(old);
  }

  #grant(
    claimId: string,
    ask: NormalizedAsk,
    amount: Amount,
    clamped: boolean,
    entry: MachineEntry,
    fellBack: boolean,
    since?: number,
  ): Grant {
    const holding = this.machines.take(entry, claimId, amount);
    this.#changed.add(entry);
    const env = allocationEnv(holding.cpus, holding.gpuIds, ask.env);
    const allocation = { cpus: holding.cpus, gpuIds: holding.gpuIds, ramMb: holding.ramMb, env };
    const grant = new Lease(claimId, entry.spec.name, entry.spec.remote, allocation, clamped, fellBack, ask);
    this.#held.set(claimId, { grant, entry, since: Date.now() });
    this.#events.emit({
      kind: 'node_placed',
      claimId,
      node: ask.node,
      runId: ask.runId,
      machine: entry.spec.name,
      ...askFacts(ask, amount, clamped),
      granted: { cpus: holding.cpus, gpus: holding.gpuIds.length, ramMb: holding.ramMb },
      gpuIds: holding.gpuIds,
      fellBack,
      durationMs: since === undefined ? 0 : Date.now() - since,
      detail:
        `${describeAmount(amount)} on ${entry.spec.name}` +
        `${holding.gpuIds.length ? ` (gpu ${holding.gpuIds.join(',')})` : ''}` +
        `${fellBack ? ', fell back' : ''}${clamped ? ', clamped' : ''}`,
    });
    return grant;
  }

  /** Takes `w` out of the queue; what its class held back on its target becomes room. */
  #unwait(w: Waiter): boolean {
    const target = w.cls.target;
    if (!this.#queue.remove(w)) return false;
    w.detach();
    if (target) this.#touched.add(target);
    return true;
  }

  #abandon(w: Waiter, reason: unknown): void {
    if (!this.#unwait(w)) return;
    this.#events.emit({
      kind: 'node_abandoned',
      claimId: w.claimId,
      node: w.ask.node,
      runId: w.ask.runId,
      detail: reason instanceof Error ? reason.message : 'abandoned',
      durationMs: Date.now() - w.since,
    });
    w.reject(reason);
    this.#settle();
  }

  /**
   * Brings the queue to rest after a change (P7, P12): classes reserving on a changed machine
   * re-choose their target; classes a touched machine's free room could serve wake (looked up by
   * amount, not by walking the queue); the oldest woken head is granted if it fits behind the
   * reservations of older waiters, else its class sleeps. Repeats until nothing is woken. Cost:
   * the classes a change could serve, the classes reserving on a changed machine, and the grants made.
   */
  #settle(): void {
    if (this.#settling) return;
    this.#settling = true;
    try {
      for (;;) {
        for (const m of this.#changed) for (const cls of this.#queue.reserved.classesOn(m)) this.#retarget(cls);
        this.#changed.clear();
        for (const m of this.#touched) {
          if (!this.machines.has(m)) continue;
          for (const cls of this.#queue.servable(m.books.freeGpus, m.books.freeCpus)) {
            if (eligible(m, cls.ask) && m.books.fitsNow(cls.amount)) this.#woken.add(cls);
          }
        }
        this.#touched.clear();
        let next: Waiter | undefined;
        for (const cls of this.#woken) {
          if (!cls.head) this.#woken.delete(cls);
          else if (!next || cls.head.seq < next.seq) next = cls.head;
        }
        if (!next) return;
        const w = next;
        const c = chooseNow(
          this.machines,
          w.ask,
          w.cls.amount,
          (m) => this.#queue.reserved.fitsBehind(m, w) && this.#placeable(m),
        );
        if (!c) {
          this.#woken.delete(w.cls);
          continue;
        }
        const { amount, clamped } = w.cls;
        this.#unwait(w);
        w.resolve(this.#grant(w.claimId, w.ask, amount, clamped, c.machine, c.fellBack, w.since));
      }
    } finally {
      this.#settling = false;
      this.#plan();
    }
  }

  /**
   * Tells provisioning the demand (SPEC V2): the waiters no attached machine can ever hold; one ask
   * per other wait class; attached workers' claim counts. Cost: per wait class plus unmet waiters.
   */
  #plan(): void {
    if (!this.#prov) return;
    const unmet: Unmet[] = [];
    const waiting: DemandView['waiting'] = [];
    for (const cls of this.#queue.classes()) {
      if (anyCanEverHold(this.machines, cls.ask, cls.amount)) waiting.push({ ask: cls.ask, amount: cls.amount });
      else for (let w = cls.head; w; w = w.next) unmet.push({ claimId: w.claimId, ask: w.ask, amount: cls.amount });
    }
    const machines: DemandView['machines'] = [];
    for (const m of this.machines.all())
      if (m.spec.remote && this.#placeable(m)) machines.push({ name: m.spec.name, claims: m.books.claims }); // S6
    this.#prov.plan({ unmet, waiting, machines });
  }

  /** Why `w` waits (P6), with the provisioner's reason when it waits for a machine being started (P10). */
  #queuedInfo(w: Waiter, position: number): QueuedInfo {
    return withReason(
      queuedInfo(this.machines, w.claimId, w.ask, w.cls.amount, position),
      this.#prov?.reason(w.claimId),
    );
  }

  /**
   * Provisioning gives a machine back: it leaves the books now, unless it is attached and holds a claim (SPEC V3).
   * One restored from the journal whose worker is not back leaves with its claims (lost).
   */
  #retire(name: string, why: string): boolean {
    const entry = this.machines.get(name);
    if (entry?.books.claims && this.#placeable(entry)) return false; // a machine not back leaves, claims and all
    if (entry) this.detach(name, why);
    return true;
  }

  /** Sends waiting claims whose provisioning reason changed a fresh Queued (SPEC V4). */
  #requeue(claimIds: string[]): void {
    const ids = new Set(claimIds);
    let position = 0;
    for (const w of this.#queue.waiters()) {
      position++;
      if (ids.has(w.claimId)) w.notify?.(this.#queuedInfo(w, position));
    }
  }

  /**
   * Fails waiters requiring a label whose machines left longer ago than the reconnect grace (or,
   * never seen, once the restart grace is over). A timer may fire a little before the grace has
   * passed by the wall clock (the event loop's clock lags); such labels are checked again when
   * their grace ends.
   */
  #expireLabels(): void {
    let again = Infinity;
    for (const cls of [...this.#queue.classes()]) {
      if (!this.#prov?.covers(cls.ask) && noCores(this.machines, cls.ask)) {
        // queued within the restart grace for cores no machine has (issue 23 item 7)
        if (this.#restartUntil >= Date.now()) again = Math.min(again, this.#restartUntil + 1 - Date.now());
        else for (let w = cls.head, err = noCoresError(this.machines, cls.ask); w; w = cls.head) this.#abandon(w, err);
        continue;
      }
      if (!this.#labelMissing(cls.ask)) continue;
      const until = this.#graceUntil(cls.ask.label); // reconnect or restart grace
      if (until >= Date.now()) again = Math.min(again, until + 1 - Date.now());
      else for (let w = cls.head, err = this.#noLabel(cls.ask); w; w = cls.head) this.#abandon(w, err);
    }
    if (again > 0 && again < Infinity) setTimeout(() => this.#expireLabels(), again).unref();
  }
}

/** Typed event facts of an ask (issue 13): what was asked before clamping, the label, clamped. */
function askFacts(ask: NormalizedAsk, amount: Amount, clamped: boolean) {
  const asked = amountOf(ask);
  return {
    asked,
    label: ask.label || undefined,
    clamped,
    limiting: clamped ? limitingDimension(asked, amount) : undefined,
  };
}

/** Typed event facts of a held claim given back or lost: the amount, its device ids and how long it was held (ms). */
function heldFacts(h: Held) {
  const a = h.grant.allocation;
  return {
    granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
    gpuIds: a.gpuIds,
    durationMs: Date.now() - h.since,
    label: h.grant.ask.label || undefined,
  };
}
