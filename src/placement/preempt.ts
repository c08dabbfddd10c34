/**
 * Bounded preemption (SPEC Q2, docs/priorities.md): a claim of a class that may preempt, which has to wait, looks for
 * the one machine where giving back strictly lower-priority claims makes it fit behind the waiters ahead of it (never
 * one where even all of them would not: no eviction that cannot help). It takes the fewest victims, then those of the
 * lowest priority, then the youngest; never a claim of its own priority or higher, a GPU share or a claim already
 * told. A group member is a victim only with its whole group (rule G1): the group's stream is told, and the group is
 * given back whole at the grace's end (ABORTED). Each victim's holder is told (`Preempting`, with the grace); berth
 * releases the victim when the grace runs out, if its holder has not (its runs stop with it, SPEC R5). Meanwhile the
 * preemptor's reservation is pinned on that machine (waiting.ts `isolate`), so no lower claim takes the room freed; if
 * the preemptor stops waiting, its reservation goes at once. A notice is final for that grant (a victim that
 * requeues is a new claim, requeue.ts). A waiting group preempts across a set of machines (`considerGroup`,
 * group-preempt.ts).
 * Cost: the held claims, once per preempting ask that has to wait.
 */
import { eligible } from './choose.js';
import { Damping } from './damping.js';
import type { MachineEntry } from './machines.js';
import type { Held, PlacerState } from './state.js';
import { placeable } from './state.js';
import type { Waiter } from './waiting.js';
import { askUsage, heldUsage } from './held.js';
import { type Candidate, chooseVictims, fitsWithout, fitsWithoutOneOn, type Option, prioOf } from './preempt-choice.js';
import type { Usage } from './quota.js';
import { reclaimVictims, sum } from './reclaim.js';
import { type GroupAsk, groupVictims } from './group-preempt.js';

/**
 * What a victim's holder is told (ClaimResponse.preempting; ClaimGroupResponse.preempting for a group, when `group`).
 * `graceMs`: until berth releases the victim. `victim`: the claim's id, or the group's.
 */
export interface PreemptionNotice {
  victim: string;
  group?: boolean;
  by: string;
  byPriority: number;
  machine: string;
  graceMs: number;
  detail: string;
}

const idOf = (h: Held) => h.grant.claimId;
/** What a victim's notice and release are for: its claim, or for a group member its whole group (rule G1). */
const unitOf = (h: Held) => h.group ?? h.grant.claimId;

/** Finds and starts preemptions; the placer calls `consider` for a preempting ask that had to wait. */
export class Preemptions {
  /**
   * Victims told, whose grace runs: the timer, the preemptor, when the grace ends (ms since the epoch) and, for a
   * reclaim (SPEC Q3), the tenant taking back what it lent.
   */
  readonly #told = new Map<string, { timer: NodeJS.Timeout; by: string; untilMs: number; why: string; for?: string }>();
  /** Set by the server: tells a victim's holder on its Claim (or, for a group, ClaimGroup) stream. */
  notify?: (n: PreemptionNotice) => void;
  /** Set by the placer: gives a preempted group back whole, its lease ABORTED (rule G1). */
  releaseGroup?: (groupId: string, why: string) => boolean;

  /**
   * @param graceMs how long a victim's holder has to give it back
   * @param release releases a victim with ABORTED `reason` (its runs stop); false when it holds nothing any more
   * @param damping how often one work may be preempted per window (damping.ts)
   */
  constructor(
    readonly s: PlacerState,
    readonly graceMs: number,
    readonly release: (claimId: string, why: string) => boolean,
    readonly minRuntimeMs = 0,
    readonly damping = new Damping(3, 600_000),
  ) {}

  /** Number of victims whose grace runs. */
  get pending(): number {
    return this.#told.size;
  }

  /** For a victim whose grace runs: its preemptor and the ms left (GetSnapshot, `berth status`); else undefined. */
  notice(claimId: string): { by: string; leftMs: number } | undefined {
    const t = this.#told.get(claimId);
    return t && { by: t.by, leftMs: Math.max(0, t.untilMs - Date.now()) };
  }

  /**
   * Preempts for waiter `w` if some machine would hold it once strictly lower claims went (see the header). Returns
   * the detail for its Queued (`preempting 1 lower-priority claim on w3 (grace 30 s)`) or why none, and `again`:
   * true when nothing was taken but a later look might (preempt-retry.ts). Claims held less than `minRuntimeMs`
   * are not victims yet.
   */
  consider(w: Waiter): { detail: string; again: boolean } {
    const amount = w.cls.amount;
    if (amount.share || w.ask.pools) return { detail: 'no preemption for a GPU share or a pool', again: false };
    const single = this.#bestSingle(w); // one victim anywhere beats two: found without building any list
    const best = single ? { m: single.entry, victims: [single] } : this.#bestSet(w);
    if (!best) {
      const { young, damped } = this.#candidates(w.prio);
      return { detail: this.#nothing(young, damped), again: true };
    }
    this.s.queue.isolate(w, best.m);
    const name = best.m.spec.name;
    for (const v of best.victims) this.#tell(v, w, name);
    const detail = `preempting ${victimsText(best.victims)} on ${name} (grace ${seconds(this.graceMs)})`;
    return { detail, again: false };
  }

  /**
   * Preempts for waiting group `g` (group-preempt.ts) if some set of machines would hold every member once strictly
   * lower claims there went: tells the victims, then `pin(machines)` holds each member's room on its machine during
   * the grace. Returns the detail for its GroupQueued and `again` (nothing taken: a later look might).
   */
  considerGroup(
    g: GroupAsk & { id: string },
    pin: (machines: MachineEntry[]) => void,
  ): { detail: string; again: boolean } {
    const { byMachine, young, damped } = this.#candidates(g.prio);
    const plan = byMachine.size ? groupVictims(this.s, g, byMachine) : undefined;
    if (!plan) return { detail: this.#nothing(young, damped), again: true };
    pin(plan.machines);
    const by = { claimId: g.id, prio: g.prio };
    const all: Candidate[] = [];
    for (const [m, victims] of plan.victims) {
      for (const v of victims) this.#tell(v, by, m.spec.name, `preempted by group ${g.id} of priority ${g.prio}`);
      all.push(...victims);
    }
    const on = [...plan.victims.keys()].map((m) => m.spec.name).join(', ');
    return { detail: `preempting ${victimsText(all)} on ${on} (grace ${seconds(this.graceMs)})`, again: false };
  }

  /**
   * The best single victim for `w` (the lowest priority, then the youngest) whose going alone makes room on its
   * machine behind the waiters ahead of `w`; undefined when none would. A claim alone beats a group member (whose
   * whole group would go: more than one victim). One pass over the held claims, allocating nothing; damping is read
   * only for a claim that would be the best so far.
   */
  #bestSingle(w: Waiter): Candidate | undefined {
    const youngSince = Date.now() - this.minRuntimeMs;
    const amount = w.cls.amount;
    let plain: Candidate | undefined;
    let member: Candidate | undefined;
    for (const h of this.s.held.values()) {
      if (h.prio >= w.prio || h.releasing || h.since > youngSince) continue;
      const best = h.group === undefined ? plain : member;
      if (best && (h.prio > best.prio || (h.prio === best.prio && h.since <= best.since))) continue;
      if (h.grant.allocation.gpuShare || (this.#told.size && this.#told.has(unitOf(h)))) continue;
      const m = h.entry;
      if (!placeable(m) || !eligible(m, w.ask)) continue;
      if (!fitsWithoutOneOn(m, this.s.queue.reserved.aheadOf(m, w), amount, h)) continue;
      if (this.damping.exhausted(h)) continue;
      if (h.group === undefined) plain = h;
      else member = h;
    }
    return plain ?? member;
  }

  /** The fewest victims (two or more) on one machine that make room for `w` (preempt-choice.ts), or undefined. */
  #bestSet(w: Waiter): { m: MachineEntry; victims: Candidate[] } | undefined {
    const { byMachine } = this.#candidates(w.prio);
    // machines where giving back every candidate would make room (else none there helps: kueue#5243)
    const options: Option[] = [];
    for (const [m, list] of byMachine) {
      if (!placeable(m) || !eligible(m, w.ask)) continue;
      const o = { m, list, held: this.s.queue.reserved.aheadOf(m, w), amount: w.cls.amount };
      if (fitsWithout(o, list)) options.push(o);
    }
    return chooseVictims(options);
  }

  /** Why nothing was preempted: young claims, damped ones, or no machine where it would help. */
  #nothing(young: number, damped: number): string {
    const d = this.damping;
    if (young)
      return (
        `preempting nothing yet: ${young} lower-priority claim(s) held less than the minimum runtime ` +
        `(${seconds(this.minRuntimeMs)})`
      );
    if (damped)
      return (
        `preempting nothing yet: ${damped} lower-priority claim(s) already preempted ${d.limit} times in ` +
        `${seconds(d.windowMs)}`
      );
    return 'preempting nothing: on no machine would giving back lower-priority claims make room';
  }

  /**
   * The held claims strictly below priority `prio` that may be victims now, by machine; and how many were spared as
   * younger than the minimum runtime or as preempted as often as damping allows. Cost: the held claims.
   */
  #candidates(prio: number): { byMachine: Map<MachineEntry, Candidate[]>; young: number; damped: number } {
    const byMachine = new Map<MachineEntry, Candidate[]>();
    const youngSince = Date.now() - this.minRuntimeMs;
    let young = 0;
    let damped = 0;
    for (const h of this.s.held.values()) {
      if (h.prio >= prio || h.releasing) continue;
      if (h.grant.allocation.gpuShare || (this.#told.size && this.#told.has(unitOf(h)))) continue;
      if (h.since > youngSince) {
        young++; // protected by the minimum runtime for now (Slurm's PreemptExemptTime)
        continue;
      }
      if (this.damping.exhausted(h)) {
        damped++; // preempted as often as the window allows (damping.ts)
        continue;
      }
      let list = byMachine.get(h.entry);
      if (!list) byMachine.set(h.entry, (list = []));
      list.push(h);
    }
    return { byMachine, young, damped };
  }

  /**
   * Takes back what waiter `w`'s cohort lent (SPEC Q3, reclaim.ts) when quota holds it though its tenant is within its
   * nominal: tells the victims as `consider` does. Returns the detail for its Queued and `again` (nothing taken yet).
   */
  reclaim(w: Waiter): { detail: string; again: boolean } {
    const owner = w.ask.owner!;
    if (w.cls.amount.share || w.ask.pools) return { detail: 'no reclaim for a GPU share or a pool', again: false };
    const u = askUsage(w.cls.amount, w.ask.pools);
    let pending: Usage = {}; // its tenant's waiters already reclaiming, and their victims: as if done
    for (const cls of this.s.queue.classesOf(owner))
      for (let o = cls.head; o; o = o.next) if (o.reclaiming && o !== w) pending = sum(pending, o.reclaiming);
    const mine = new Map<string, Usage>();
    const all = new Map<string, Usage>();
    for (const [id, t] of this.#told) {
      const h = t.for === undefined ? undefined : this.s.held.get(id);
      const b = h?.grant.ask.owner;
      if (b === undefined) continue;
      all.set(b, sum(all.get(b) ?? {}, heldUsage(h!.grant.allocation)));
      if (t.for === owner) mine.set(b, sum(mine.get(b) ?? {}, heldUsage(h!.grant.allocation)));
    }
    if (!this.s.quotas.withinNominal(owner, sum(u, pending)))
      return { detail: `reclaiming nothing: tenant ${owner} would be past its own nominal`, again: true };
    const spared = {
      told: (h: Held) => this.#told.has(idOf(h)) || this.damping.exhausted(h),
      youngSince: Date.now() - this.minRuntimeMs,
    };
    const best = reclaimVictims(this.s, w, u, pending, { mine, all }, spared);
    if (!best) return { detail: 'reclaiming nothing yet: no borrowed claims whose going makes room', again: true };
    w.reclaiming = u;
    this.s.quotas.reserve(owner, u, 1); // the borrowers may not take it again (settle.ts unreserves it)
    this.s.quotaDirty.add(owner);
    const name = best.m.spec.name;
    const why = `reclaimed by claim ${w.claimId} of tenant ${owner} (lent by cohort ${this.s.quotas.cohortOf(owner)})`;
    for (const v of best.victims) this.#tell(v, w, name, why, owner);
    const n = best.victims.length;
    const detail = `reclaiming ${n} borrowed claim${n === 1 ? '' : 's'} on ${name} (grace ${seconds(this.graceMs)})`;
    return { detail, again: false };
  }

  /**
   * Victim `claimId`'s holder gives it back before the grace ends (Release with requeue): stops its timer and returns
   * why it is preempted, for the release; undefined when it was not told (or its grace already ran out).
   */
  yielded(claimId: string): string | undefined {
    const t = this.#told.get(claimId);
    if (!t) return undefined;
    clearTimeout(t.timer);
    this.#told.delete(claimId);
    return t.why;
  }

  /** Ends the grace timers (the server stops); victims told keep their claims. */
  close(): void {
    for (const t of this.#told.values()) clearTimeout(t.timer);
    this.#told.clear();
  }

  #tell(
    v: Candidate,
    w: { claimId: string; prio: number },
    machine: string,
    why = `preempted by claim ${w.claimId} of priority ${w.prio}`,
    reclaim?: string,
  ): void {
    const id = unitOf(v);
    if (this.#told.has(id)) return; // a second member of a group told already: the group goes whole (rule G1)
    const what = v.group === undefined ? 'claim' : 'group';
    const detail = `${what} ${id} (priority ${prioOf(v)}) on ${machine} ${why}; grace ${seconds(this.graceMs)}`;
    const timer = setTimeout(() => {
      this.#told.delete(id);
      if (v.group === undefined) this.release(id, why);
      else this.releaseGroup?.(id, why);
    }, this.graceMs);
    timer.unref();
    this.#told.set(id, { timer, by: w.claimId, untilMs: Date.now() + this.graceMs, why, for: reclaim });
    this.damping.record(v);
    const a = v.grant.allocation;
    this.s.events.emit({
      kind: 'claim_preempted',
      claimId: id,
      machine,
      node: v.grant.ask.node,
      runId: v.grant.ask.runId,
      detail,
      granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
      preemptor: w.claimId,
      ...(reclaim === undefined ? {} : { reclaim: true }),
    });
    const notice = { victim: id, by: w.claimId, byPriority: w.prio, machine, graceMs: this.graceMs, detail };
    this.notify?.(v.group === undefined ? notice : { ...notice, group: true });
  }
}

/** `1 lower-priority claim`, `2 lower-priority claims and 1 group`: claims alone, and the groups that go whole. */
function victimsText(victims: readonly Candidate[]): string {
  const groups = new Set<string>();
  let claims = 0;
  for (const v of victims) {
    if (v.group === undefined) claims++;
    else groups.add(v.group);
  }
  const g = groups.size;
  const claimsText = `${claims} lower-priority claim${claims === 1 ? '' : 's'}`;
  const groupsText = `${g} lower-priority group${g === 1 ? '' : 's'} (whole)`;
  if (!g) return claimsText;
  if (!claims) return groupsText;
  return `${claimsText} and ${g} group${g === 1 ? '' : 's'} (whole)`;
}

/** `ms` for people: `30 s`, `500 ms`. */
const seconds = (ms: number) => (ms >= 1000 ? `${Math.ceil(ms / 1000)} s` : `${ms} ms`);
