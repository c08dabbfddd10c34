/**
 * The placer: claims as leases across every machine (SPEC P1–P12). Decisions run on the event
 * loop without locks. A change of books marks the machines it touched; the settle loop (settle.ts) then wakes
 * only the wait classes a touched machine could serve, oldest head first, and moves the reservations
 * of classes whose target machine changed (P7, P12). Release is idempotent (P8). This file is the
 * entry points; the parts are: the shared state (state.ts), making a grant (grant.ts), the claim lifecycle
 * (claims.ts), the settle/wake loop (settle.ts), fitting and re-fitting (refit.ts), label grace (grace.ts)
 * and demand for provisioning (demand.ts).
 */
import { randomUUID } from 'node:crypto';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import { chooseNow, reservationTarget } from './choose.js';
import { ClaimBook, type ReleaseGate } from './claims.js';
import { Demand } from './demand.js';
import { LabelGrace } from './grace.js';
import { askFacts, grant } from './grant.js';
import { MachineHolds } from './holds.js';
import type { MachineEntry, MachineSet } from './machines.js';
import { askVerdict, type AskVerdict } from './oversize.js';
import type { Provisioning } from './provisioner.js';
import { Refitter, type Fit } from './refit.js';
import { comingBackDetail, type RestoredClaim } from './restore.js';
import { Settler } from './settle.js';
import { GroupBook, type GroupClaimOptions } from './groups.js';
import type { GroupGrant } from './group-books.js';
import type { GroupStrategy } from './group-fit.js';
import type { RestoredGroup } from './group-restore.js';
import { groupVerdict, type GroupVerdict } from './group-verdict.js';
import { poolsFitNew, splitPools } from './pool-fit.js';
import { resizePool } from './pool-resize.js';
import { withDefaultRam } from './default-ram.js';
import { lackingDetail } from './lacking.js';
import { placerSnapshot, type PlacerSnapshot } from './snapshot.js';
import { checkGroups, groupViews } from './group-views.js';
import { fitsNew, placeable, PlacerState, syncShares } from './state.js';
import { Preemptions, type PreemptionNotice } from './preempt.js';
import { PreemptRetries } from './preempt-retry.js';
import { type Requeued, Requeues, type RequeueWatch } from './requeue.js';
import { priorityOf, type PriorityClasses } from './priority.js';
import { askUsage } from './held.js';
import type { TenantQuotas, TenantView } from './quota.js';
import { Damping } from './damping.js';
import { weightsOf } from './fair-share.js';
import { holdForQuota } from './quota-gate.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from './types.js';
import type { Held } from './state.js';
import type { Waiter } from './waiting.js';

export type { ReleaseGate } from './claims.js';

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
  /** Cluster-wide pools (config `pools`, issue 23 item 1): name → size in units of 1e-4 (resources/quantity.ts). */
  pools?: Record<string, number>;
  /**
   * Memory an ask without `ram_mb` gets per core it asks, in MB (config `default_ram_mb_per_cpu`, issue 23 item 2,
   * as Slurm's DefMemPerCPU); absent or 0: such an ask asks no memory.
   */
  defaultRamMbPerCpu?: number;
  /** The config's priority classes (`priority_classes:`, SPEC Q1), checked by its schema; absent = none. */
  priorityClasses?: PriorityClasses;
  /** How long a preempted claim's holder has to give it back before berth releases it, in ms (SPEC Q2; 30 000). */
  preemptionGraceMs?: number;
  /** Claims held less than this are not preempted yet, in ms (SPEC Q2; 0). */
  preemptionMinRuntimeMs?: number;
  /** The same work (owner, run id, node) is preempted at most this many times per window (SPEC Q2; 3). */
  preemptionLimit?: number;
  /** That window, in ms (600 000). */
  preemptionWindowMs?: number;
  /** The config's tenant quotas (`tenants:`, SPEC Q3), checked by its schema; absent = none. */
  tenantQuotas?: TenantQuotas;
}

/** Keeps the books of every machine and grants claims. */
export class Placer {
  readonly #s: PlacerState;
  readonly machines: MachineSet;
  /** Set by the worker hub: defers a release until the runs inside the claim are gone (SPEC R5). */
  releaseGate?: ReleaseGate;
  /** Set by the worker hub: told when a disconnected machine's hold runs out, before it leaves (SPEC S2). */
  holdExpired?: (name: string, reason: string) => void;
  readonly #newClaimId: () => string;
  readonly #holds: MachineHolds;
  readonly #demand: Demand;
  readonly #settler: Settler;
  readonly #grace: LabelGrace;
  readonly #refit: Refitter;
  readonly #claims: ClaimBook;
  readonly #ramPerCpu: number;
  readonly #groups: GroupBook;
  readonly #preempt: Preemptions;
  readonly #preemptAgain: PreemptRetries;
  readonly #requeues: Requeues;
  /** Releases preempted claim `id` (ABORTED, `why`); one its stream watches waits again (requeue.ts). */
  readonly #preempted: (id: string, why: string) => boolean;

  constructor(opts: PlacerOptions) {
    const s = (this.#s = new PlacerState(opts.events, opts.provisioning, opts.pools));
    this.machines = s.machines;
    this.#holds = new MachineHolds({
      machines: this.machines,
      events: opts.events,
      changed: (e) => this.#cameBack(e),
      detach: (name, reason) => this.detach(name, reason),
      expired: (name, reason) => this.holdExpired?.(name, reason),
    });
    this.#demand = new Demand(s, (name, why) => this.detach(name, why));
    this.#settler = new Settler(s, this.#demand);
    const restartUntil = Date.now() + (opts.restartGraceMs ?? 0);
    this.#grace = new LabelGrace(s, this.#settler, opts.reconnectGraceMs ?? 30_000, restartUntil);
    this.#refit = new Refitter(s, this.#settler, this.#grace);
    this.#claims = new ClaimBook(s, this.#settler);
    this.#groups = new GroupBook(s, this.#grace, () => this.#settler.settle());
    this.#demand.groups = () => this.#groups.waiting;
    this.#settler.groups = this.#groups;
    this.#requeues = new Requeues((h, watch, why) => this.#fileAgain(h, watch, why));
    const given = (h: Held, why: string) => this.#requeues.given(h, why);
    const preempted = (id: string, why: string) =>
      this.#claims.release(
        id,
        why,
        false,
        this.releaseGate,
        true,
        this.#requeues.size ? (h) => given(h, why) : undefined,
      );
    this.#preempted = preempted;
    const damping = new Damping(opts.preemptionLimit ?? 3, opts.preemptionWindowMs ?? 600_000);
    const grace = opts.preemptionGraceMs ?? 30_000;
    this.#preempt = new Preemptions(s, grace, preempted, opts.preemptionMinRuntimeMs, damping);
    this.#preempt.releaseGroup = (id, why) => this.#groups.release(id, why, true); // a group goes whole (rule G1)
    this.#groups.preempted = (id) => this.#preempt.notice(id) !== undefined; // a preempted group is not requeued
    this.#preemptAgain = new PreemptRetries(1000, 16, (w) => this.#preemptAgainFor(w));
    // a waiting group of a preempting class evicts strictly lower claims across the machines it needs (SPEC Q2)
    this.#groups.preempt = (w, pinFor) => {
      if (s.frozen || !w.asks[0] || !s.priorities.preempts(w.asks[0])) return undefined;
      return this.#preempt.considerGroup(w, pinFor).detail;
    };
    this.#newClaimId = opts.newClaimId ?? (() => `c-${randomUUID()}`);
    this.#ramPerCpu = opts.defaultRamMbPerCpu ?? 0;
    s.priorities.set(opts.priorityClasses ?? {});
    s.quotas.set(opts.tenantQuotas ?? {}, []);
    s.fair.set(weightsOf(opts.tenantQuotas ?? {}), []);
    this.machines.add({ ...opts.engine, remote: false });
    s.prov?.bind({
      retire: (name, why) => this.#demand.retire(name, why),
      requeue: (ids) => this.#demand.requeue(ids),
    });
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
    this.#s.events.emit({
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
    this.#grace.restore(label, goneAt);
  }

  /** A machine joined or came back: waiters are re-fitted and those it could serve woken. */
  #cameBack(e: MachineEntry): void {
    this.#s.touched.add(e);
    this.#s.changed.add(e);
    this.#refit.refit();
    this.#settler.settle();
  }

  /**
   * A machine leaves with its books (SPEC W3): each claim on it loses its lease (`lost` aborts
   * with UNAVAILABLE "worker <name> went away"); waiters are re-fitted (P11) and woken. No-op for
   * unknown names.
   */
  detach(name: string, reason = `worker ${name} went away`): void {
    const s = this.#s;
    if (s.frozen) return;
    const entry = this.machines.get(name);
    if (!entry?.spec.remote) return;
    this.#holds.clear(entry);
    this.machines.remove(name);
    this.#groups.unpinAll(); // re-made by the next group pass (rule G4)
    for (const cls of s.queue.reserved.classesOn(entry)) {
      s.queue.setTarget(cls, reservationTarget(this.machines, cls.ask, cls.amount));
    }
    const announce = this.#groups.loseOn(entry, name, reason); // whole groups: no member is lost alone (rule G1)
    this.#claims.loseOn(entry, name, reason);
    announce();
    s.events.emit({ kind: 'worker_detached', machine: name, detail: reason });
    this.#grace.left(entry.spec.labels);
    this.#refit.refit();
    this.#settler.settle();
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
    asked: NormalizedAsk,
    opts: {
      signal: AbortSignal | (() => AbortSignal);
      onQueued?: (q: QueuedInfo) => void;
      /** A preempted claim waiting again (requeue.ts): at arrival number `seq`, its Queued saying `why`. */
      requeue?: { seq?: number; why: string };
    },
  ): Grant | Promise<Grant> {
    const given = opts.signal;
    if (typeof given !== 'function' && given.aborted) return Promise.reject(given.reason);
    const s = this.#s;
    let ask: NormalizedAsk;
    let fit: Fit;
    try {
      ask = splitPools(s, withDefaultRam(s.priorities.resolve(asked), this.#ramPerCpu));
      this.#grace.check(ask);
      fit = this.#refit.fit(ask, true); // on_oversize fail: FAILED_PRECONDITION (issue 13)
    } catch (err) {
      return Promise.reject(err);
    }
    const { amount, clamped } = fit;
    // a claim its tenant's quota can never admit, as configured, fails at once (SPEC Q3) rather than wait for ever
    const never = s.quotas.active ? s.quotas.never(ask.owner, askUsage(amount, ask.pools)) : undefined;
    if (never) return Promise.reject(new BerthError('failed_precondition', never));
    const claimId = this.#newClaimId();
    const prio = priorityOf(ask);
    syncShares(s); // the order between tenants reads their shares (SPEC Q1)
    // quota is checked in the same step as placement (SPEC Q3): a claim over it waits, holding nothing back
    const overQuota = s.quotas.active ? s.quotas.blocked(ask.owner, askUsage(amount, ask.pools)) : undefined;
    let heldBack = false; // with fair sharing on: only what waiters ahead hold back keeps it off a machine (SPEC Q1)
    const poolsFit = !overQuota && poolsFitNew(s, ask);
    if (!overQuota && !poolsFit && s.fair.active) heldBack = s.pools.fits(ask.pools!);
    const again = opts.requeue;
    const now =
      !again && // a requeued claim waits at its place; the settle that follows grants it there if it fits
      poolsFit &&
      chooseNow(this.machines, ask, amount, (m) => {
        if (!placeable(m)) return false;
        if (fitsNew(s, m, amount, prio, ask.owner)) return true;
        if (s.fair.active) heldBack ||= m.books.fitsNow(amount);
        return false;
      });
    if (now) {
      const g = grant(s, claimId, ask, amount, clamped, now.machine, now.fellBack);
      this.#settler.settle();
      return g;
    }
    const signal = typeof given === 'function' ? given() : given;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<Grant>((resolve, reject) => {
      const onAbort = () => this.#settler.abandon(w, signal.reason);
      const w = s.queue.add(
        {
          claimId,
          ask,
          prio,
          fair: s.fair.of(ask.owner),
          since: Date.now(),
          resolve,
          reject,
          detach: () => signal.removeEventListener('abort', onAbort),
          notify: opts.onQueued,
          ...(again ? { requeued: again.why } : {}),
        },
        amount,
        clamped,
        () => (overQuota ? undefined : reservationTarget(this.machines, ask, amount)),
        again?.seq,
      );
      signal.addEventListener('abort', onAbort, { once: true });
      if (overQuota) holdForQuota(s, w.cls, overQuota);
      else if (s.fair.active) w.cls.heldBack ||= heldBack;
      // a requeued claim looks to preempt only once it is found still waiting at its place (#settleRequeued)
      const preempting =
        !overQuota && !again && s.priorities.preempts(ask) ? this.#considerPreempting(w, true) : undefined;
      // a tenant within its nominal takes back what its cohort lent (SPEC Q3)
      const reclaiming = overQuota && s.quotas.cohortOf(ask.owner) !== undefined ? this.#considerReclaim(w) : undefined;
      const info = this.#demand.queuedInfo(w, again ? s.queue.positionOf(w) : s.queue.positionAt(w.prio));
      if (overQuota) info.detail = `held by quota: ${overQuota}`;
      if (again) info.detail = `${again.why}; waiting again at its place: ${info.detail}`;
      if (preempting) info.detail += `; ${preempting}`;
      if (reclaiming) info.detail += `; ${reclaiming}`;
      info.detail += comingBackDetail(this.machines, ask, amount);
      const until = this.#grace.comingBackUntil(ask);
      if (until)
        info.detail +=
          `: waiting for workers labelled '${ask.label}' to come back (reconnect grace, ` +
          `${Math.ceil((until - Date.now()) / 1000)} s left)`;
      s.events.emit({
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
      if (again && !overQuota) this.#settleRequeued(w, info.detail);
      this.#demand.plan();
    });
  }

  /**
   * Requeued waiter `w` (requeue.ts) is looked at in queue order first: granted at its place if some machine holds it
   * behind the waiters ahead of it. Only if it still waits does it look to preempt (SPEC Q2: only an ask that cannot
   * be placed), telling a fresh Queued (`detail` and what it did) when it took victims.
   */
  #settleRequeued(w: Waiter, detail: string): void {
    const s = this.#s;
    s.woken.add(w.cls);
    this.#settler.settle();
    if (!s.queue.isWaiting(w) || !s.priorities.preempts(w.ask)) return;
    const did = this.#considerPreempting(w, true);
    if (!s.queue.isWaiting(w) || !w.cls.pinned || !w.notify) return; // pinned: it told victims (preempt.ts)
    const info = this.#demand.queuedInfo(w, s.queue.positionOf(w));
    info.detail = `${detail}; ${did}`;
    w.notify(info);
  }

  /**
   * Preempts for waiter `w` (preempt.ts); the reservation it leaves may serve others. Returns what it did. `first`:
   * it just arrived, and is looked at again while it waits if nothing was taken (preempt-retry.ts).
   */
  #considerPreempting(w: Waiter, first: boolean): string {
    const old = w.cls.target;
    const did = this.#preempt.consider(w);
    if (first && did.again) this.#preemptAgain.add(w);
    if (old && old !== w.cls.target) this.#s.touched.add(old);
    this.#settler.settle();
    return did.detail;
  }

  /**
   * Takes back for waiter `w` what its cohort lent (preempt.ts `reclaim`); it is looked at again while it waits if
   * nothing was taken. Returns what it did.
   */
  #considerReclaim(w: Waiter): string {
    const did = this.#preempt.reclaim(w);
    if (did.again) this.#preemptAgain.add(w);
    else this.#settler.settle(); // what it reserved holds the borrowers' waiters now
    return did.detail;
  }

  /** A look again at preempting waiter `w`: true when done with it; tells it a fresh Queued when it preempted. */
  #preemptAgainFor(w: Waiter): boolean {
    const s = this.#s;
    if (s.frozen) return false;
    if (!s.queue.isWaiting(w) || w.cls.pinned || w.reclaiming) return true;
    const held = w.cls.quotaHeld;
    if (held !== undefined && s.quotas.cohortOf(w.ask.owner) === undefined) return false; // nothing to take back
    if (held === undefined && !s.priorities.preempts(w.ask)) return true; // looked at for reclaim, no longer held
    const target = w.cls.target;
    const did = held === undefined ? this.#preempt.consider(w) : this.#preempt.reclaim(w);
    if (did.again) return false;
    if (target && target !== w.cls.target) s.touched.add(target);
    const info = this.#demand.queuedInfo(w, s.queue.positionAt(w.prio));
    if (held !== undefined) info.detail = `held by quota: ${held}`;
    info.detail += `; ${did.detail}`;
    w.notify?.(info);
    this.#settler.settle();
    return true;
  }

  /**
   * Set by the server: tells a preempted claim's holder (SPEC Q2). The claim is released with ABORTED when
   * `notice.graceMs` runs out, unless its holder gave it back first.
   */
  set onPreempting(fn: ((notice: PreemptionNotice) => void) | undefined) {
    this.#preempt.notify = fn;
  }

  /**
   * A Claim stream's claim `claimId` waits again at its place once preempted and given back (SPEC Q2, requeue.ts),
   * unless its ask says `on_preempt: cancel` or the stream calls `stop()` first. `granted` resolves with the new
   * Grant (a new claim id) or rejects as `claim` does.
   */
  requeueOnPreempt(claimId: string, watch: RequeueWatch): Requeued {
    return this.#requeues.watch(claimId, watch);
  }

  /**
   * The holder of preempted claim `claimId` gives it back before the grace ends (Release with requeue, SPEC Q2): it
   * is released as the grace's end would, and waits again if its stream watches it (`requeueOnPreempt`).
   * @throws BerthError INVALID_ARGUMENT naming release.requeue when the claim has heard no Preempting (or its grace
   *   already ran out).
   */
  makeRoom(claimId: string): void {
    const why = this.#preempt.yielded(claimId);
    if (why === undefined)
      throw new BerthError(
        'invalid_argument',
        `release.requeue: claim ${claimId} is not being preempted; only a claim that heard Preempting waits again`,
      );
    this.#preempted(claimId, why);
  }

  /**
   * True when a Release with requeue for held claim `claimId` is stale: the claim waited again after a preemption
   * and no notice has come for this grant, so it was meant for the grant before (SPEC Q2: a no-op, not an error).
   */
  staleMakeRoom(claimId: string): boolean {
    const h = this.#s.held.get(claimId);
    return h?.grant.ask.requeuedFrom !== undefined && this.#preempt.notice(claimId) === undefined;
  }

  /** Files preempted claim `h` again at its place (requeue.ts): a new claim id, the same work for damping. */
  #fileAgain(h: Held, watch: RequeueWatch, why: string): Grant | Promise<Grant> {
    const first = h.grant.ask;
    const ask: NormalizedAsk = { ...first, requeuedFrom: first.requeuedFrom ?? h.grant.claimId };
    return this.claimOrWait(ask, { signal: watch.signal, onQueued: watch.onQueued, requeue: { seq: h.seq, why } });
  }

  /**
   * True when some priority class may preempt (SPEC Q2) or some tenant is in a cohort (a lent share is taken back,
   * Q3): a held claim may then be told to make room.
   */
  get preemption(): boolean {
    return this.#s.priorities.anyPreempts || this.#s.quotas.cohorts; // a cohort's lent share is taken back (Q3)
  }

  /**
   * The control plane stops without draining (SPEC S5): from now on nothing is released or detached, so the streams
   * that end as the server goes down neither stop the work inside their claims nor give anything back — the work
   * keeps running and a restarted server restores the books from its journal. Pending preemptions (SPEC Q2) are
   * dropped: their victims keep their claims. Irreversible.
   */
  freeze(): void {
    this.#s.frozen = true;
    this.#preempt.close(); // pending preemptions are not journaled: the victims keep their claims (SPEC Q2)
    this.#preemptAgain.close();
  }

  /**
   * Gives a claim back (SPEC P8, R5). Its lease ends now: `lost` aborts with CANCELLED "claim <id>
   * released (<why>)" and runs inside it are stopped; its books are given back (waking waiters it
   * could serve) once `releaseGate` says their processes are gone. `keepRuns` (a drain, SPEC R3):
   * the runs keep their grace and the books come back when they end. Idempotent: false when the id
   * holds nothing.
   */
  release(claimId: string, why = 'released', opts: { keepRuns?: boolean } = {}): boolean {
    if (this.#s.held.get(claimId)?.group) return false; // a member goes only with its group (rule G1)
    return this.#claims.release(claimId, why, opts.keepRuns ?? false, this.releaseGate);
  }

  /**
   * Takes back a claim read from the journal (SPEC S4): exactly `c.allocation` on `c.machine`, not
   * through the queue, and returns its Grant. Emits node_placed ("restored from the journal").
   * @throws BerthError FAILED_PRECONDITION when the machine is not in the books or those resources
   *   are not free; the books are unchanged then.
   */
  restoreClaim(c: RestoredClaim): Grant {
    return this.#claims.restore({ ...c, ask: splitPools(this.#s, c.ask) });
  }

  /**
   * Pool `name` now holds `units` (units of 1e-4; a config reload), see pool-resize.ts: shrinking never revokes a
   * claim, only blocks new grants; waiters asking more than the new total fail FAILED_PRECONDITION.
   * @throws BerthError INVALID_ARGUMENT naming `pools.<name>` for an unknown pool or a bad total.
   */
  resizePool(name: string, units: number): void {
    resizePool(this.#s, this.#settler, name, units);
  }

  /**
   * Replaces the priority classes (a config reload, SPEC Q1): asks from now on resolve against `classes`; claims
   * already waiting or held keep the priority they were given.
   */
  setPriorityClasses(classes: PriorityClasses): void {
    this.#s.priorities.set(classes);
  }

  /**
   * Replaces the tenant quotas (config `tenants:`, SPEC Q3; a reload is all or nothing): each tenant's use is recounted
   * from the held claims, and every waiting class is held or freed against the new quotas. Shrinking a quota never
   * revokes a held claim; it only holds new grants until the tenant is back under it.
   */
  setTenantQuotas(quotas: TenantQuotas): void {
    const s = this.#s;
    s.quotas.set(quotas, s.held.usages());
    s.fair.set(weightsOf(quotas), s.held.usages()); // fair sharing turns on or off with the weights (SPEC Q1)
    s.sharesAt = -1;
    for (const cls of s.queue.classes()) if (cls.ask.owner !== undefined) s.quotaDirty.add(cls.ask.owner);
    this.#settler.settle();
  }

  /** Each tenant's use against its quota (SPEC Q3) and, with fair sharing on, its weight and share (Q1), by name. */
  tenantViews(): TenantView[] {
    const { quotas, fair } = this.#s;
    syncShares(this.#s);
    const views = quotas.views();
    if (!fair.active) return views;
    return views.map((v) => ({ ...v, fair: { weight: fair.weightOf(v.tenant), share: fair.shareOf(v.tenant) } }));
  }

  /** The priority classes asks resolve against now. */
  get priorityClasses(): Readonly<PriorityClasses> {
    return this.#s.priorities.classes;
  }

  /** The held claim `claimId`, if any (not one being released). */
  get(claimId: string): Grant | undefined {
    const h = this.#s.held.get(claimId);
    return h && !h.releasing && !h.group ? h.grant : undefined; // a group member is no claim to run in (yet)
  }

  /**
   * Claims every member of `asks` at once as one lease (rules G1–G5, groups.ts): the grant now, or a promise of it
   * after `onQueued` heard which member blocks it and why. Rejects with FAILED_PRECONDITION naming `members[i]` and
   * the dimension when no set of machines could ever hold the group; with the signal's reason when it aborts.
   */
  claimGroup(
    asks: NormalizedAsk[],
    strategy: GroupStrategy,
    opts: GroupClaimOptions,
  ): GroupGrant | Promise<GroupGrant> {
    try {
      const p = this.#s.priorities.pick(opts.priority, opts.priorityClass, '', asks[0]?.owner);
      const own = (a: NormalizedAsk) => (p.priority === undefined ? a : { ...a, ...p }); // members record it (Q1)
      return this.#groups.claim(
        asks.map((a) => splitPools(this.#s, own(a))),
        strategy,
        { ...opts, priority: p.priority },
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The held group `groupId`, if any. */
  heldGroup(groupId: string): GroupGrant | undefined {
    return this.#groups.held.get(groupId)?.grant;
  }

  /**
   * Takes back group `r` as the journal kept it, every member with exactly its allocation, or none (rule G7).
   * @throws BerthError FAILED_PRECONDITION "group <id> cannot be restored: …" (a machine or resources gone).
   */
  restoreGroup(r: RestoredGroup): GroupGrant {
    return this.#groups.restore(r);
  }

  /** Gives every member of group `groupId` back in one step (rule G1, SPEC P8). Idempotent: false when none held. */
  releaseGroup(groupId: string, why = 'released'): boolean {
    return this.#groups.release(groupId, why);
  }

  /**
   * Abandons the waiting claims of `runId` (Cancel); returns how many. With `owner` given, only
   * claims whose ask has that owner (SPEC R7).
   */
  cancelRun(runId: string, owner?: string): number {
    const mine = this.#s.queue.inRun(runId).filter((w) => owner === undefined || w.ask.owner === owner);
    for (const w of mine) this.#settler.abandon(w, new BerthError('cancelled', `run ${runId} cancelled`));
    return mine.length;
  }

  /**
   * Satisfiable's structured answer (issue 13, see oversize.ts): runs_now, waits,
   * waits_for_provisioner (with wait_for), clamped or impossible (with clamped_to and limiting).
   * A required label no machine carries, none is coming back (P3 grace) and no provisioner covers is
   * impossible with limiting "label" (issue 23 item 7): a verdict, where a Claim fails FAILED_PRECONDITION.
   */
  verdict(asked: NormalizedAsk): AskVerdict {
    const s = this.#s;
    const ask = splitPools(s, withDefaultRam(s.priorities.resolve(asked), this.#ramPerCpu));
    const prio = priorityOf(ask);
    if (this.#grace.labelMissing(ask) && this.#grace.until(ask.label) < Date.now())
      return { verdict: 'impossible', waitFor: '', limiting: 'label' };
    if (this.#grace.coresNowhere(ask)) return { verdict: 'impossible', waitFor: '', limiting: 'cpus' };
    const named = this.#grace.namedError(ask)?.message.match(/^ask\.(resources\.[^:]+|gpu_type):/);
    if (named) return { verdict: 'impossible', waitFor: '', limiting: named[1] };
    const pools = poolsFitNew(s, ask);
    return askVerdict(
      this.machines,
      (a) => s.prov?.covers(a) ?? false,
      ask,
      (m, amount) => pools && placeable(m) && fitsNew(s, m, amount, prio, ask.owner),
    );
  }

  /**
   * What ClaimGroup would meet with `asks` by `strategy` now, changing nothing (Satisfiable, rule G8; see
   * group-verdict.ts). @throws BerthError INVALID_ARGUMENT for a member taking a cluster-wide pool.
   */
  groupVerdict(asks: NormalizedAsk[], strategy: GroupStrategy): GroupVerdict {
    return groupVerdict(
      this.#groups,
      asks.map((a) => splitPools(this.#s, a)),
      strategy,
    );
  }

  /** The books, waiting claims (with where each holds back resources) and held claims. */
  snapshot(): PlacerSnapshot {
    const s = this.#s;
    const snap = placerSnapshot(
      this.machines,
      s.queue.inOrder(s.fair.active),
      [...s.held.values()].filter((h) => !h.group),
      (id) => s.prov?.reason(id),
      s.prov?.statuses() ?? [],
      s.pools.views(),
      // a preemptor's room is held for it on its victims' machine (SPEC Q2)
      (w) =>
        w.cls.quotaHeld
          ? `; held by quota: ${w.cls.quotaHeld}${w.reclaiming ? '; reclaiming what its cohort lent' : ''}`
          : lackingDetail(s, w.ask, w.cls.amount, w) +
            (w.cls.pinned ? `; preempting on ${w.cls.target?.spec.name}` : ''),
      (id) => this.#preempt.notice(id),
    );
    snap.groups = groupViews(this.#groups, (id) => this.#preempt.notice(id));
    if (s.quotas.active) snap.tenants = this.tenantViews();
    return snap;
  }

  /**
   * Checks every machine's books, that held claims match them, and the waiting classes and their
   * reservations (P8). @throws BooksError or Error naming what broke.
   */
  checkInvariants(): void {
    const s = this.#s;
    let claims = 0;
    for (const m of this.machines.all()) {
      m.books.check(m.spec.name);
      claims += m.books.claims;
    }
    if (claims !== s.held.size) throw new Error(`books hold ${claims} claims, placer ${s.held.size}`);
    s.pools.check();
    for (const w of s.queue.waiters())
      if (s.held.has(w.claimId)) throw new Error(`claim ${w.claimId} both waiting and held`);
    s.queue.check((m) => this.machines.has(m));
    checkGroups(s, this.#groups);
  }
}
