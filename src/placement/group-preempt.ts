/**
 * Preemption for a group (SPEC Q2, rule G1): a waiting group of a class that may preempt looks for a set of machines
 * that would hold every member by its strategy once strictly lower claims there went. The search is the group's own
 * (group-fit.ts) over one bin per placeable machine whose room is its free room, less what waiters ahead of the group
 * hold back, plus what its candidate victims hold; machines that need no victim rank first, so the members go where
 * nothing has to be evicted when they can. Then, on each machine the fit uses, the fewest victims whose going makes
 * room for the members placed there (preempt-choice.ts). Fewest victims is exact per machine, not over the whole set.
 * Cost: one look per placeable machine and per candidate, plus the search's bounded steps.
 */
import { amountOf, eligible } from './choose.js';
import { type Bin, fitGroup } from './group-fit.js';
import { fitMembers } from './group-books.js';
import type { MachineEntry } from './machines.js';
import { type Candidate, chooseVictims, fitsWithout, type Option } from './preempt-choice.js';
import { placeable, type PlacerState } from './state.js';
import type { Amount } from '../resources/books.js';
import type { Place } from './order.js';
import type { GroupStrategy } from './group-fit.js';
import type { NormalizedAsk } from './types.js';

/** Where each member would go and whom to evict for it: `machines[i]` holds member i; `victims` by machine. */
export interface GroupPreemption {
  machines: MachineEntry[];
  victims: Map<MachineEntry, Candidate[]>;
}

/** What a group needs looked at: its members, its strategy and its place in the queue. */
export interface GroupAsk extends Place {
  asks: readonly NormalizedAsk[];
  strategy: GroupStrategy;
}

/**
 * The machines and victims that would let group `g` in (see the header), or undefined when no set of machines would
 * hold it even once every candidate went (or it would fit with no victim at all: nothing to do).
 * `byMachine`: the candidates, strictly lower claims that may be victims now, by machine.
 */
export function groupVictims(
  s: PlacerState,
  g: GroupAsk,
  byMachine: ReadonlyMap<MachineEntry, Candidate[]>,
): GroupPreemption | undefined {
  const bins: Bin[] = [];
  const entries: MachineEntry[] = [];
  for (const m of s.machines.all()) {
    if (!placeable(m) || !g.asks.some((a) => eligible(m, a))) continue;
    const list = byMachine.get(m);
    const ahead = s.queue.reserved.aheadOf(m, g);
    const room = roomOf(m.books.free, ahead, list);
    if (room.cpus < 0 || room.gpus < 0) continue;
    const t = m.books.total;
    const own = list ? entries.length : ''; // a machine with candidates is like no other
    const shape = `${m.spec.labels.join(',')}/${t.gpuType ?? ''}/${JSON.stringify(t.resources ?? {})}/${own}`;
    bins.push({ room, shape, rank: list ? 1 + list.length : 0 });
    entries.push(m);
  }
  const r = fitGroup(fitMembers(g.asks, entries), bins, g.strategy);
  if (!('at' in r)) return undefined;
  const machines = r.at.map((b) => entries[b]);
  const sums = new Map<MachineEntry, Amount>();
  for (let i = 0; i < g.asks.length; i++) sums.set(machines[i], plus(sums.get(machines[i]), amountOf(g.asks[i])));
  const victims = new Map<MachineEntry, Candidate[]>();
  for (const [m, amount] of sums) {
    const list = byMachine.get(m);
    const o: Option = { m, list: list ?? [], held: s.queue.reserved.aheadOf(m, g), amount };
    if (fitsWithout(o, [])) continue; // fits there as it is
    const best = list && chooseVictims([o]);
    if (!best) return undefined;
    victims.set(m, best.victims);
  }
  return victims.size ? { machines, victims } : undefined;
}

/** Free room less what is held back ahead, plus what `victims` hold: the room a machine would have once they went. */
function roomOf(
  free: { cpus: number; gpus: number; ramMb?: number; res?: Record<string, number> },
  ahead: Amount | undefined,
  victims: readonly Candidate[] | undefined,
) {
  const room = {
    cpus: free.cpus - (ahead?.cpus ?? 0),
    gpus: free.gpus - (ahead?.gpus ?? 0),
    ramMb: free.ramMb === undefined ? undefined : free.ramMb - (ahead?.ramMb ?? 0),
    res: free.res && { ...free.res },
  };
  for (const k in ahead?.res ?? {}) if (room.res) room.res[k] = (room.res[k] ?? 0) - (ahead?.res?.[k] ?? 0);
  for (const v of victims ?? []) {
    const a = v.grant.allocation;
    room.cpus += a.cpus;
    room.gpus += a.gpuIds.length;
    if (room.ramMb !== undefined) room.ramMb += a.ramMb ?? 0;
    for (const k in a.resources ?? {}) if (room.res) room.res[k] = (room.res[k] ?? 0) + (a.resources?.[k] ?? 0);
  }
  return room;
}

function plus(a: Amount | undefined, b: Amount): Amount {
  if (!a) return { ...b, res: b.res && { ...b.res } };
  const r: Amount = { cpus: a.cpus + b.cpus, gpus: a.gpus + b.gpus, ramMb: (a.ramMb ?? 0) + (b.ramMb ?? 0) };
  if (a.res || b.res) {
    r.res = { ...a.res };
    for (const k in b.res ?? {}) r.res[k] = (r.res[k] ?? 0) + (b.res?.[k] ?? 0);
  }
  return r;
}
