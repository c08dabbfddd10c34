/**
 * Bounded preemption (SPEC Q2, docs/priorities.md): a claim of a class that may preempt, which has to wait, looks for
 * the one machine where giving back strictly lower-priority claims makes it fit behind the waiters ahead of it (never
 * one where even all of them would not: no eviction that cannot help). It takes the fewest victims, then those of the
 * lowest priority, then the youngest; never a claim of its own priority or higher, a group member, a GPU share or a
 * claim already told. Each victim's holder is told (`Preempting`, with the grace); berth releases the victim when the
 * grace runs out, if its holder has not (its runs stop with it, SPEC R5). Meanwhile the preemptor's reservation is
 * pinned on that machine (waiting.ts `isolate`), so no lower claim takes the room freed; if the preemptor stops
 * waiting, its reservation goes at once. A notice is final: a victim is preempted once, as its claim then ends.
 * Cost: the held claims, once per preempting ask that has to wait.
 */
import type { Amount } from '../resources/books.js';
import { eligible } from './choose.js';
import type { MachineEntry } from './machines.js';
import type { Held, PlacerState } from './state.js';
import { placeable } from './state.js';
import type { Waiter } from './waiting.js';

/** What a victim's holder is told (ClaimResponse.preempting). `graceMs`: until berth releases the victim. */
export interface PreemptionNotice {
  victim: string;
  by: string;
  byPriority: number;
  machine: string;
  graceMs: number;
  detail: string;
}

/** A held claim that may be given up. */
interface Candidate {
  id: string;
  h: Held;
  prio: number;
}

/** Victims on one machine. */
interface Choice {
  m: MachineEntry;
  victims: Candidate[];
}

const prioOf = (h: Held) => h.grant.ask.priority ?? 0;
const highest = (c: Choice) => c.victims.reduce((p, v) => Math.max(p, v.prio), Number.NEGATIVE_INFINITY);
const oldest = (c: Choice) => c.victims.reduce((t, v) => Math.min(t, v.h.since), Number.POSITIVE_INFINITY);

/** True when `a` is the better choice (fewest victims, then the lowest priority among them, then the youngest). */
function better(a: Choice, b: Choice | undefined): boolean {
  if (!b) return true;
  if (a.victims.length !== b.victims.length) return a.victims.length < b.victims.length;
  if (highest(a) !== highest(b)) return highest(a) < highest(b);
  return oldest(a) > oldest(b);
}

/** Finds and starts preemptions; the placer calls `consider` for a preempting ask that had to wait. */
export class Preemptions {
  /** Victims told, whose grace runs. */
  readonly #told = new Map<string, NodeJS.Timeout>();
  /** Set by the server: tells a victim's holder on its Claim stream. */
  notify?: (n: PreemptionNotice) => void;

  /**
   * @param graceMs how long a victim's holder has to give it back
   * @param release releases a victim with ABORTED `reason` (its runs stop); false when it holds nothing any more
   */
  constructor(
    readonly s: PlacerState,
    readonly graceMs: number,
    readonly release: (claimId: string, why: string) => boolean,
  ) {}

  /** Number of victims whose grace runs. */
  get pending(): number {
    return this.#told.size;
  }

  /**
   * Preempts for waiter `w` if some machine would hold it once strictly lower claims went (see the header).
   * Returns the detail for its Queued (`preempting 1 lower-priority claim on w3 (grace 30 s)`) or why none.
   */
  consider(w: Waiter): string {
    const amount = w.cls.amount;
    if (amount.share || w.ask.pools) return 'no preemption for a GPU share or a pool';
    const byMachine = new Map<MachineEntry, Candidate[]>();
    for (const [id, h] of this.s.held) {
      const prio = prioOf(h);
      if (prio >= w.prio || h.group || h.releasing || h.grant.allocation.gpuShare || this.#told.has(id)) continue;
      let list = byMachine.get(h.entry);
      if (!list) byMachine.set(h.entry, (list = []));
      list.push({ id, h, prio });
    }
    let best: Choice | undefined;
    for (const [m, list] of byMachine) {
      if (!placeable(m) || !eligible(m, w.ask)) continue;
      const victims = fewest(m, list, w, this.s.queue.reserved.aheadOf(m, w));
      if (victims && better({ m, victims }, best)) best = { m, victims };
    }
    if (!best) return 'preempting nothing: on no machine would giving back lower-priority claims make room';
    this.s.queue.isolate(w, best.m);
    const name = best.m.spec.name;
    for (const v of best.victims) this.#tell(v, w, name);
    const n = best.victims.length;
    return `preempting ${n} lower-priority claim${n === 1 ? '' : 's'} on ${name} (grace ${seconds(this.graceMs)})`;
  }

  /** Ends the grace timers (the server stops); victims told keep their claims. */
  close(): void {
    for (const t of this.#told.values()) clearTimeout(t);
    this.#told.clear();
  }

  #tell(v: Candidate, w: Waiter, machine: string): void {
    const why = `preempted by claim ${w.claimId} of priority ${w.prio}`;
    const detail = `claim ${v.id} (priority ${v.prio}) on ${machine} ${why}; grace ${seconds(this.graceMs)}`;
    const timer = setTimeout(() => {
      this.#told.delete(v.id);
      this.release(v.id, why);
    }, this.graceMs);
    timer.unref();
    this.#told.set(v.id, timer);
    const a = v.h.grant.allocation;
    this.s.events.emit({
      kind: 'claim_preempted',
      claimId: v.id,
      machine,
      node: v.h.grant.ask.node,
      runId: v.h.grant.ask.runId,
      detail,
      granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
      preemptor: w.claimId,
    });
    this.notify?.({ victim: v.id, by: w.claimId, byPriority: w.prio, machine, graceMs: this.graceMs, detail });
  }
}

/** `ms` for people: `30 s`, `500 ms`. */
const seconds = (ms: number) => (ms >= 1000 ? `${Math.ceil(ms / 1000)} s` : `${ms} ms`);

/**
 * The fewest of `list` (claims on `m`) whose going makes `w` fit on `m` behind `held` (what waiters ahead of it hold
 * back there); undefined when even all of them would not. Exact for one or two victims; beyond that a set from which
 * none can be spared.
 */
function fewest(m: MachineEntry, list: Candidate[], w: Waiter, held: Amount | undefined): Candidate[] | undefined {
  const fitsWithout = (vs: Candidate[]) => m.books.fitsNow(w.cls.amount, minus(held, vs));
  if (!fitsWithout(list)) return undefined; // even all of them would not make room (kueue#5243)
  list.sort((x, y) => x.prio - y.prio || y.h.since - x.h.since); // lowest priority, then youngest, first
  for (const v of list) if (fitsWithout([v])) return [v];
  for (let i = 0; i < list.length; i++)
    for (let j = i + 1; j < list.length; j++) if (fitsWithout([list[i], list[j]])) return [list[i], list[j]];
  const taken: Candidate[] = [];
  for (const v of list) {
    taken.push(v);
    if (fitsWithout(taken)) break;
  }
  // spare any victim the others make room without, the highest priority first
  for (let i = taken.length - 1; i >= 0; i--) {
    const rest = taken.filter((_, k) => k !== i);
    if (fitsWithout(rest)) taken.splice(i, 1);
  }
  return taken;
}

/** `held` less what `victims` hold: a negative reservation, the room their going frees. */
function minus(held: Amount | undefined, victims: Candidate[]): Amount {
  const r = { cpus: held?.cpus ?? 0, gpus: held?.gpus ?? 0, ramMb: held?.ramMb ?? 0, res: { ...held?.res } };
  for (const v of victims) {
    const a = v.h.grant.allocation;
    r.cpus -= a.cpus;
    r.gpus -= a.gpuIds.length;
    r.ramMb -= a.ramMb ?? 0;
    for (const k in a.resources ?? {}) r.res[k] = (r.res[k] ?? 0) - (a.resources?.[k] ?? 0);
  }
  return r;
}
