/**
 * Which claims to preempt (SPEC Q2): given the machines where giving back every lower candidate would make room for
 * the ask (`Option`s), the fewest victims, then the lowest highest-priority among them, then the youngest. One victim
 * anywhere beats two anywhere, so singles are tried across every machine first, allocating nothing per candidate;
 * pairs are exact; beyond two, a set from which none can be spared.
 */
import type { Amount } from '../resources/books.js';
import type { MachineEntry } from './machines.js';
import type { Held } from './state.js';

/** A held claim that may be given up (the Held itself: no object per candidate). */
export type Candidate = Held;

/** Victims on one machine. */
export interface Choice {
  m: MachineEntry;
  victims: Candidate[];
}

/** A candidate's priority (kept on Held: one hop). */
export const prioOf = (h: Held) => h.prio;
const highest = (c: Choice) => c.victims.reduce((p, v) => Math.max(p, prioOf(v)), Number.NEGATIVE_INFINITY);
const oldest = (c: Choice) => c.victims.reduce((t, v) => Math.min(t, v.since), Number.POSITIVE_INFINITY);

/** True when `a` is the better choice (fewest victims, then the lowest priority among them, then the youngest). */
function better(a: Choice, b: Choice | undefined): boolean {
  if (!b) return true;
  if (a.victims.length !== b.victims.length) return a.victims.length < b.victims.length;
  if (highest(a) !== highest(b)) return highest(a) < highest(b);
  return oldest(a) > oldest(b);
}

/** The best victims over `options`, or undefined when none would make room. */
export function chooseVictims(options: readonly Option[]): Choice | undefined {
  let single: { o: Option; v: Candidate } | undefined;
  for (const o of options) {
    for (const v of o.list) {
      const p = prioOf(v);
      const q = single ? prioOf(single.v) : 0;
      const beats = !single || p < q || (p === q && v.since > single.v.since);
      if (beats && fitsWithoutOne(o, v)) single = { o, v };
    }
  }
  if (single) return { m: single.o.m, victims: [single.v] };
  let best: Choice | undefined;
  for (const o of options) {
    const victims = fewest(o);
    if (victims && better({ m: o.m, victims }, best)) best = { m: o.m, victims };
  }
  return best;
}

/** A machine where preemption may help: its candidates, what waiters ahead hold back there, the amount asked. */
export interface Option {
  m: MachineEntry;
  list: Candidate[];
  held: Amount | undefined;
  amount: Amount;
}

/** Reused by `fitsWithoutOne`: the reservation less one victim's holding. */
const scratch: Amount & { ramMb: number } = { cpus: 0, gpus: 0, ramMb: 0 };

/** As `fitsWithout(o, [v])`, allocating nothing unless the ask has named resources. */
function fitsWithoutOne(o: Option, v: Candidate): boolean {
  return fitsWithoutOneOn(o.m, o.held, o.amount, v);
}

/**
 * True when `amount` fits machine `m` once candidate `v` (held there) went, behind `held` (what waiters ahead hold
 * back on `m`); allocates nothing unless the ask has named resources.
 */
export function fitsWithoutOneOn(m: MachineEntry, held: Amount | undefined, amount: Amount, v: Candidate): boolean {
  if (amount.res) return fitsWithout({ m, list: [], held, amount }, [v]);
  const a = v.grant.allocation;
  scratch.cpus = (held?.cpus ?? 0) - a.cpus;
  scratch.gpus = (held?.gpus ?? 0) - a.gpuIds.length;
  scratch.ramMb = (held?.ramMb ?? 0) - (a.ramMb ?? 0);
  return m.books.fitsNow(amount, scratch);
}

/** True when `o`'s amount fits its machine once `victims` went, behind what waiters ahead hold back. */
export const fitsWithout = (o: Option, victims: Candidate[]) => o.m.books.fitsNow(o.amount, minus(o.held, victims));

/**
 * The fewest of `o.list` (two or more: singles were tried first) whose going makes room; undefined when none do.
 * Exact for two; beyond that a set from which none can be spared, taking the lowest priority, then youngest, first.
 */
function fewest(o: Option): Candidate[] | undefined {
  const list = [...o.list].sort((x, y) => prioOf(x) - prioOf(y) || y.since - x.since);
  for (let i = 0; i < list.length; i++)
    for (let j = i + 1; j < list.length; j++) if (fitsWithout(o, [list[i], list[j]])) return [list[i], list[j]];
  const taken: Candidate[] = [];
  for (const v of list) {
    taken.push(v);
    if (fitsWithout(o, taken)) break;
  }
  if (!fitsWithout(o, taken)) return undefined;
  // spare any victim the others make room without, the highest priority first
  for (let i = taken.length - 1; i >= 0; i--) {
    const rest = taken.filter((_, k) => k !== i);
    if (fitsWithout(o, rest)) taken.splice(i, 1);
  }
  return taken;
}

/** `held` less what `victims` hold: a negative reservation, the room their going frees. */
function minus(held: Amount | undefined, victims: Candidate[]): Amount {
  const r = { cpus: held?.cpus ?? 0, gpus: held?.gpus ?? 0, ramMb: held?.ramMb ?? 0, res: { ...held?.res } };
  for (const v of victims) {
    const a = v.grant.allocation;
    r.cpus -= a.cpus;
    r.gpus -= a.gpuIds.length;
    r.ramMb -= a.ramMb ?? 0;
    for (const k in a.resources ?? {}) r.res[k] = (r.res[k] ?? 0) - (a.resources?.[k] ?? 0);
  }
  return r;
}
