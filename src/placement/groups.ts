/**
 * Gang claims (rules G1–G5): a set of asks granted all at once or not at all, as one lease. A group that fits now
 * (behind what older waiters hold back) is committed whole in one step; else it waits in arrival order among single
 * claims (the settle loop gives it its turn, settle.ts), and the oldest blocked group reserves the machines it is
 * closest to fitting on. A group no set of machines could ever hold fails at once. Releasing, or losing a member's
 * machine, ends every member in one step.
 */
import { ahead, type Place } from './order.js';
import { BerthError } from '../errors.js';
import { amountOf } from './choose.js';
import { fitGroup, type FitResult, type GroupStrategy } from './group-fit.js';
import {
  binsOf,
  commitGroup,
  fitMembers,
  giveGroup,
  newGroupId,
  whereDetail,
  type GroupGrant,
  type HeldGroup,
} from './group-books.js';
import type { LabelGrace } from './grace.js';
import { restoreGroupBooks, type RestoredGroup } from './group-restore.js';
import type { MachineEntry } from './machines.js';
import type { PlacerState } from './state.js';
import type { NormalizedAsk } from './types.js';
import { askUsage } from './held.js';
import type { Usage } from './quota.js';
import type { WaitClass } from './waiting.js';

/**
 * Why a group waits: the member that blocks it, the dimension and a human detail; 1-based position among groups;
 * `requeued` when it waits again after losing a member's machine (rule G9).
 */
export interface GroupQueuedInfo {
  groupId: string;
  member: number;
  dimension: string;
  detail: string;
  position: number;
  requeued?: boolean;
}

/** A group waiting for its turn, at its place in the queue (priority, then arrival: SPEC Q1). */
export interface WaitingGroup extends Place {
  id: string;
  seq: number;
  prio: number;
  since: number;
  asks: NormalizedAsk[];
  strategy: GroupStrategy;
  why: GroupQueuedInfo;
  resolve(g: GroupGrant): void;
  reject(err: unknown): void;
  detach(): void;
  notify?: (q: GroupQueuedInfo) => void;
  /** Set when the group waits again after losing a member's machine (rule G9): where it stands and its stream. */
  again?: Requeue;
  /**
   * Set while the victims its preemption told have their grace (SPEC Q2, group-preempt.ts): each member's room held
   * on the machine chosen for it, against every waiter behind the group, until it is granted or leaves.
   */
  preemptPins?: WaitClass[];
  /** When it last looked for claims to preempt (ms since the epoch): it looks again at most once a second. */
  lookedAt?: number;
}

/** How a group is claimed: its stream's signal, who hears GroupQueued, and what losing a member's machine does. */
export interface GroupClaimOptions {
  signal: AbortSignal;
  onQueued?: (q: GroupQueuedInfo) => void;
  /** 'requeue': released whole, then waits again at its arrival position (rule G9); 'fail' (default): ends it. */
  onMemberLost?: 'requeue' | 'fail';
  /** The group's priority (SPEC Q1) as asked, or a class of the config; the placer resolves them. Absent = 0. */
  priority?: number;
  priorityClass?: string;
}

/** What a group that waits again after a loss needs: its first place in the queue and its claim's options. */
export interface Requeue {
  at: Place;
  opts: GroupClaimOptions;
}

/** Groups held and waiting. */
export class GroupBook {
  readonly held = new Map<string, HeldGroup>();
  readonly waiting: WaitingGroup[] = [];
  /** The oldest blocked group's reservations (rule G4). */
  #pins: WaitClass[] = [];
  /** Set when room may have grown since the last pass. */
  dirty = false;
  /**
   * Set by the placer when some class may preempt (SPEC Q2): looks for claims to preempt for waiting group `w`, whose
   * asks say a preempting class, and holds its members' room with `pinFor` if it told victims. Returns what it did
   * (for the GroupQueued), or undefined when the group may not preempt.
   */
  preempt?: (w: WaitingGroup, pinFor: (machines: MachineEntry[]) => void) => string | undefined;
  /** Set by the placer: true while held group `id` is being preempted (SPEC Q2): a loss then ends it, no requeue. */
  preempted?: (id: string) => boolean;

  constructor(
    readonly s: PlacerState,
    readonly grace: LabelGrace,
    readonly settle: () => void,
  ) {}

  /**
   * Claims every member of `asks` at once (rule G1): the grant now, or a promise of it after `onQueued` heard why it
   * waits. @throws BerthError FAILED_PRECONDITION naming `members[i]` and the dimension when no machines could ever
   * hold the group (rule G5), or a member's label or named resource no machine has; INVALID_ARGUMENT for a pool.
   */
  claim(asks: NormalizedAsk[], strategy: GroupStrategy, opts: GroupClaimOptions): GroupGrant | Promise<GroupGrant> {
    const judge = this.checkMembers(asks);
    const id = newGroupId();
    // a group stands for its first member's tenant between tenants (SPEC Q1)
    const at: Place = { prio: opts.priority ?? 0, seq: this.s.queue.nextSeq(), fair: this.s.fair.of(asks[0]?.owner) };
    const again = opts.onMemberLost === 'requeue' ? { at, opts } : undefined;
    const older = this.waiting.length > 0 && ahead(this.waiting[0], at);
    const fit = older ? undefined : this.fitNow(asks, strategy, at);
    if (fit?.machines) return this.#commit(id, strategy, asks, fit.machines, undefined, again);
    const never = judge ? this.neverFits(asks, strategy) : undefined; // a group that fits now needs no such search
    if (never) throw new BerthError('failed_precondition', never);
    if (opts.signal.aborted) throw opts.signal.reason;
    const miss = fit && !('at' in fit.r) ? fit.r : { member: 0, dimension: '', detail: 'older groups wait first' };
    return this.#wait(id, at, Date.now(), asks, strategy, miss, opts);
  }

  /**
   * Files a waiting group (at its place `at`: a requeued group goes back where it first stood, rule G9)
   * and returns the promise of its grant; group_queued and `opts.onQueued` say why it waits, unless `quiet` (the
   * caller announces it).
   */
  #wait(
    id: string,
    place: Place,
    since: number,
    asks: NormalizedAsk[],
    strategy: GroupStrategy,
    miss: Omit<GroupQueuedInfo, 'groupId' | 'position'>,
    opts: GroupClaimOptions,
    quiet = false,
  ): Promise<GroupGrant> {
    return new Promise<GroupGrant>((resolve, reject) => {
      const onAbort = () => this.abandon(w, opts.signal.reason);
      let at = this.waiting.length;
      while (at > 0 && ahead(place, this.waiting[at - 1])) at--;
      const w: WaitingGroup = {
        id,
        seq: place.seq,
        prio: place.prio,
        fair: place.fair,
        since,
        asks,
        strategy,
        why: { groupId: id, ...miss, position: at + 1 },
        resolve,
        reject,
        detach: () => opts.signal.removeEventListener('abort', onAbort),
        notify: opts.onQueued,
        again: opts.onMemberLost === 'requeue' ? { at: place, opts } : undefined,
      };
      this.waiting.splice(at, 0, w);
      if (at === 0) this.unpinAll(); // a new oldest group reserves instead (rule G4)
      opts.signal.addEventListener('abort', onAbort, { once: true });
      const did = this.#lookToPreempt(w);
      if (did) w.why = { ...w.why, detail: `${w.why.detail}; ${did}` };
      if (!quiet) this.#announce(w);
      this.dirty = true;
      if (!quiet) this.settle();
    });
  }

  #announce(w: WaitingGroup): void {
    this.s.events.emit({ kind: 'group_queued', claimId: w.id, detail: queuedDetail(w.why) });
    w.notify?.(w.why);
  }

  /** The place of the first waiting group, if any (the settle loop gives groups their turn by it). */
  first(): Place | undefined {
    return this.waiting[0];
  }

  /**
   * One turn for the waiting groups, oldest first (rule G4): each that fits behind older waiters is committed; the
   * oldest still blocked reserves the machines it is closest to fitting on. Called by the settle loop.
   */
  pass(): void {
    const before = new Set(this.#pins.map((p) => p.target));
    for (const p of this.#pins) this.s.queue.unpin(p);
    this.#pins = [];
    let blocked: WaitingGroup | undefined;
    for (const w of [...this.waiting]) {
      const fit = this.fitNow(w.asks, w.strategy, w);
      if (fit.machines) {
        this.waiting.splice(this.waiting.indexOf(w), 1);
        w.detach();
        this.#unpinPreemption(w);
        w.resolve(this.#commit(w.id, w.strategy, w.asks, fit.machines, w.since, w.again));
        continue;
      }
      if (!w.preemptPins && Date.now() - (w.lookedAt ?? 0) >= 1000) {
        const did = this.#lookToPreempt(w); // room may have appeared where evicting would help (SPEC Q2)
        if (did && w.preemptPins) {
          w.why = { ...w.why, detail: `${w.why.detail}; ${did}` };
          this.#announce(w);
        }
      }
      if (!blocked) {
        blocked = w;
        if (!w.preemptPins) this.#reserve(w); // a preempting group's room is held by its preemption already
      }
    }
    // Room held back before and not now may serve a single claim; unchanged reservations touch nothing.
    for (const p of this.#pins) before.delete(p.target);
    for (const m of before) if (m && this.s.machines.has(m)) this.s.touched.add(m);
    this.dirty = false;
  }

  /** Looks for claims to preempt for `w` (the placer's `preempt`), noting when. Returns what it did, if it may. */
  #lookToPreempt(w: WaitingGroup): string | undefined {
    if (!this.preempt || this.#quotaBlocked(w.asks)) return undefined; // quota, not room, holds it: no eviction helps
    w.lookedAt = Date.now();
    return this.preempt(w, (machines) => {
      w.preemptPins = w.asks.map((a, i) => this.s.queue.pin(w.id, i, w, amountOf(a), machines[i]));
    });
  }

  /** Takes back what `w`'s preemption holds (it is granted, leaves, or a machine it holds room on left). */
  #unpinPreemption(w: WaitingGroup): void {
    for (const p of w.preemptPins ?? []) {
      this.s.queue.unpin(p);
      if (p.target && this.s.machines.has(p.target)) this.s.touched.add(p.target);
    }
    w.preemptPins = undefined;
  }

  /**
   * Takes back the oldest blocked group's reservations (it left, or a machine did); the next pass re-makes them. A
   * preempting group whose held room was on a machine that left lets go of all of it (it may look again).
   */
  unpinAll(): void {
    for (const w of this.waiting)
      if (w.preemptPins?.some((p) => !p.target || !this.s.machines.has(p.target))) this.#unpinPreemption(w);
    for (const p of this.#pins) {
      this.s.queue.unpin(p);
      if (p.target && this.s.machines.has(p.target)) this.s.touched.add(p.target);
    }
    this.#pins = [];
    this.dirty = true;
  }

  /** `w` stops waiting, rejected with `reason` (its stream ended): group_abandoned, then settle. */
  abandon(w: WaitingGroup, reason: unknown): void {
    const i = this.waiting.indexOf(w);
    if (i < 0) return;
    this.waiting.splice(i, 1);
    w.detach();
    this.#unpinPreemption(w); // a preemptor that leaves frees the room it held at once (SPEC Q2)
    if (i === 0) this.unpinAll();
    const detail = reason instanceof Error ? reason.message : 'abandoned';
    this.s.events.emit({ kind: 'group_abandoned', claimId: w.id, detail, durationMs: Date.now() - w.since });
    w.reject(reason);
    this.dirty = true;
    this.settle();
  }

  /**
   * Gives every member of group `id` back in one step (rule G1). Idempotent: false when it holds nothing.
   * `preempted` (SPEC Q2): its lease ends ABORTED "group <id> released (<why>)" and the outcome is `preempted`.
   */
  release(id: string, why: string, preempted = false): boolean {
    const g = this.held.get(id);
    if (!g || this.s.frozen) return false;
    this.held.delete(id);
    giveGroup(this.s, g);
    g.abort.abort(new BerthError(preempted ? 'aborted' : 'cancelled', `group ${id} released (${why})`));
    const outcome = preempted ? 'preempted' : why.toLowerCase().replace(/[^a-z0-9]+/g, '_');
    const durationMs = Date.now() - g.since;
    this.s.events.emit({ kind: 'group_released', claimId: id, detail: why, outcome, durationMs });
    this.dirty = true;
    this.settle();
    return true;
  }

  /**
   * Machine `entry` left (SPEC W3): every group with a member on it is released whole (rule G1), its lease lost with
   * UNAVAILABLE "<reason>: group <id> member <i> on <name> lost". Returns what announces it (group_lost), to be
   * called once the machine's single claims are gone too, so no event sees half the books. The caller settles.
   */
  loseOn(entry: MachineEntry, name: string, reason: string): () => void {
    const lost: { id: string; detail: string; again?: WaitingGroup }[] = [];
    for (const g of [...this.held.values()]) {
      const i = g.held.findIndex((h) => h.entry === entry);
      if (i < 0) continue;
      const id = g.grant.groupId;
      this.held.delete(id);
      giveGroup(this.s, g, entry);
      const detail = `${reason}: group ${id} member ${i} on ${name} lost`;
      let again: WaitingGroup | undefined;
      if (g.again && !g.again.opts.signal.aborted && !this.preempted?.(id)) {
        // Rule G9: the whole group waits again at its first arrival position, announced after group_lost.
        const miss = { member: i, dimension: 'machines', detail: `${detail}; waiting again`, requeued: true };
        const asks = g.grant.members.map((m) => m.ask);
        const next = this.#wait(id, g.again.at, Date.now(), asks, g.grant.strategy, miss, g.again.opts, true);
        next.catch(() => {}); // its stream's handler awaits it; nobody else must see a rejection as unhandled
        g.grant.requeued = next;
        again = this.waiting.find((w) => w.id === id);
      }
      lost.push({ id, detail, again });
      g.abort.abort(new BerthError('unavailable', detail));
      this.dirty = true;
    }
    return () => {
      for (const l of lost) {
        this.s.events.emit({ kind: 'group_lost', claimId: l.id, machine: name, detail: l.detail, outcome: 'lost' });
        if (l.again && this.waiting.includes(l.again)) this.#announce(l.again);
      }
    };
  }

  /**
   * Takes back group `r` as the journal kept it, whole (rule G7): group_placed says it was restored.
   * @throws BerthError FAILED_PRECONDITION naming the group when any member cannot be taken back (nothing is).
   */
  restore(r: RestoredGroup): GroupGrant {
    if (this.held.has(r.groupId))
      throw new BerthError('failed_precondition', `group ${r.groupId} cannot be restored: it is held already`);
    const g = restoreGroupBooks(this.s, r);
    this.held.set(r.groupId, g);
    this.s.events.emit({
      kind: 'group_placed',
      claimId: r.groupId,
      detail: `restored from the journal: ${r.members.length} member(s), ${r.strategy}: ${whereDetail(g)}`,
      durationMs: 0,
    });
    return g.grant;
  }

  #commit(
    id: string,
    strategy: GroupStrategy,
    asks: NormalizedAsk[],
    machines: MachineEntry[],
    since?: number,
    again?: Requeue,
  ): GroupGrant {
    const g = commitGroup(this.s, id, strategy, asks, machines);
    g.again = again;
    this.held.set(id, g);
    this.s.events.emit({
      kind: 'group_placed',
      claimId: id,
      detail: `${asks.length} member(s), ${strategy}: ${whereDetail(g)}`,
      durationMs: since === undefined ? 0 : Date.now() - since,
    });
    return g.grant;
  }

  /** The search against free room behind waiters ahead of `at`: the result, and each member's machine if it fits. */
  fitNow(asks: NormalizedAsk[], strategy: GroupStrategy, at: Place) {
    const overQuota = this.#quotaBlocked(asks); // counted whole, in the same step as placement (SPEC Q3)
    if (overQuota) return { r: { member: 0, dimension: 'quota', detail: overQuota } as FitResult, machines: undefined };
    const b = binsOf(this.s, asks, true, at, strategy === 'spread' || strategy === 'strict_spread');
    const r: FitResult = fitGroup(fitMembers(asks, b.entries), b.bins, strategy);
    return { r, machines: 'at' in r ? r.at.map((bin, i) => b.machineAt(bin, r.slot[i])) : undefined };
  }

  /** Why the group's tenant (its first member's owner) cannot take every member more now (SPEC Q3), or undefined. */
  #quotaBlocked(asks: NormalizedAsk[]): string | undefined {
    const q = this.s.quotas;
    const owner = asks[0]?.owner;
    if (!q.active || !q.quotaOf(owner)) return undefined;
    const sum: Usage = {};
    for (const a of asks) {
      const u = askUsage(amountOf(a), a.pools);
      for (const k in u) sum[k] = (sum[k] ?? 0) + u[k];
    }
    return q.blocked(owner, sum);
  }

  /** The oldest blocked group holds back each member's amount where it is closest to fitting (rule G4). */
  #reserve(w: WaitingGroup): void {
    const b = binsOf(this.s, w.asks, false, w, true);
    const r = fitGroup(fitMembers(w.asks, b.entries), b.bins, w.strategy);
    if (!('at' in r)) return;
    const machines = r.at.map((bin, i) => b.machineAt(bin, r.slot[i]));
    this.#pins = w.asks.map((a, i) => this.s.queue.pin(w.id, i, w, amountOf(a), machines[i]));
  }

  /**
   * Checks each member's label, named resources and pools. Returns false when the group is not to be judged for
   * ever fitting yet: a member's label is coming back (SPEC P3 grace), the restart grace runs, or a provisioner covers
   * it. @throws BerthError INVALID_ARGUMENT for a pool; FAILED_PRECONDITION naming `members[i]` (LabelGrace.check).
   */
  checkMembers(asks: NormalizedAsk[]): boolean {
    let judge = true;
    asks.forEach((a, i) => {
      if (a.pools)
        throw new BerthError(
          'invalid_argument',
          `members[${i}].resources.${Object.keys(a.pools)[0]}: a group member cannot take a cluster-wide pool`,
        );
      try {
        this.grace.check(a);
      } catch (err) {
        throw err instanceof BerthError ? new BerthError(err.kind, `members[${i}]: ${err.message}`) : err;
      }
      if (this.grace.comingBackUntil(a) || this.grace.restartUntil > Date.now() || this.s.prov?.covers(a))
        judge = false;
    });
    return judge;
  }

  /**
   * Why no set of attached machines, each counted empty, could ever hold the group by its strategy (rule G5): e.g.
   * "members[1].gpus: no set of machines could ever hold this pack group: …"; undefined when some set could (or the
   * search ran out of steps: not judged).
   */
  neverFits(asks: NormalizedAsk[], strategy: GroupStrategy): string | undefined {
    const b = binsOf(this.s, asks, false, { prio: 0, seq: 0 }, true);
    const r = fitGroup(fitMembers(asks, b.entries), b.bins, strategy);
    if ('at' in r || r.detail.includes('ran out of steps')) return undefined;
    const where = `members[${r.member}].${r.dimension}`;
    return `${where}: no set of machines could ever hold this ${strategy} group: ${r.detail}`;
  }
}

/** e.g. "member 2 (gpus): 8 gpu(s), 1 cpu(s): the roomiest machine has 4 gpu(s), 8 cpu(s)". */
export function queuedDetail(q: GroupQueuedInfo): string {
  return q.dimension ? `member ${q.member} (${q.dimension}): ${q.detail}` : q.detail;
}
