/**
 * A group's books (rules G1, G2): the room vectors its search reads, committing every member in one step, and giving
 * every member back in one step. Members are ordinary held claims (books, invariants) marked with their group, so a
 * single-claim path never releases or loses one alone. One event per group step: no watcher sees a partial hold.
 */
import { randomUUID } from 'node:crypto';
import type { Amount } from '../resources/books.js';
import { amountOf, eligible } from './choose.js';
import { allocationEnv } from './env.js';
import type { Bin, FitMember, GroupStrategy, Room } from './group-fit.js';
import { Lease } from './lease.js';
import type { MachineClass } from './capacity.js';
import type { MachineEntry } from './machines.js';
import { placeable, type Held, type PlacerState } from './state.js';
import type { AllocationGrant, Grant, NormalizedAsk } from './types.js';

/** A granted group: one lease for every member (rule G1). `members[i]` is member i's grant. */
export interface GroupGrant {
  groupId: string;
  strategy: GroupStrategy;
  members: Grant[];
  /** Aborts when the group ends: released, or a member's machine lost (UNAVAILABLE naming member and machine). */
  lost: AbortSignal;
}

/** A group in the books. */
export interface HeldGroup {
  grant: GroupGrant;
  held: Held[];
  since: number;
  abort: AbortController;
}

/** A new group id: `g-` and 122 random bits (a claim id's strength, SPEC R7). */
export const newGroupId = (): string => `g-${randomUUID()}`;

/** The members of `asks` as the search sees them, eligible on `entries[b]` by their labels (SPEC P3). */
export function fitMembers(asks: readonly NormalizedAsk[], entries: readonly MachineEntry[]): FitMember[] {
  return asks.map((a) => ({ amount: amountOf(a), eligible: (b: number) => eligible(entries[b], a) }));
}

/**
 * The machines a group's search may use. `now`: placeable machines with their free room minus what waiters older
 * than arrival `seq` hold back there (rule G4); else every machine at its total (could it ever hold the group).
 * `rank`: lower is tried first: tightest first for packing, roomiest first for spreading and reserving.
 */
export function binsOf(
  s: PlacerState,
  now: boolean,
  seq: number,
  roomiestFirst: boolean,
): { bins: Bin[]; entries: MachineEntry[] } {
  const bins: Bin[] = [];
  const entries: MachineEntry[] = [];
  const shapes = new Map<MachineClass, string>();
  for (const m of s.machines.all()) {
    if (now && !placeable(m)) continue;
    const t = m.books.total;
    const room: Room = now
      ? minus(m.books.free, s.queue.reserved.olderThan(m, seq))
      : { cpus: t.cpus, gpus: t.gpuIds.length, ramMb: t.ramMb, res: t.resources && { ...t.resources } };
    let shape = shapes.get(m.cls);
    if (shape === undefined) shapes.set(m.cls, (shape = String(shapes.size)));
    const size = m.books.freeGpus * 1e6 + m.books.freeCpus;
    bins.push({ room, shape, rank: roomiestFirst ? -size : size });
    entries.push(m);
  }
  return { bins, entries };
}

function minus(free: Amount, held: Amount | undefined): Room {
  if (!held) return free;
  const r: Room = { cpus: free.cpus - held.cpus, gpus: free.gpus - held.gpus, ramMb: free.ramMb };
  if (r.ramMb !== undefined) r.ramMb -= held.ramMb ?? 0;
  if (free.res) {
    r.res = { ...free.res };
    for (const k in held.res ?? {}) r.res[k] = (r.res[k] ?? 0) - (held.res?.[k] ?? 0);
  }
  return r;
}

/**
 * Takes every member on its machine in one step and files the group (rule G1): member i of `asks` gets
 * `entries[at[i]]`. The books were checked by the search; a BooksError here undoes what was taken and is rethrown.
 */
export function commitGroup(
  s: PlacerState,
  groupId: string,
  strategy: GroupStrategy,
  asks: readonly NormalizedAsk[],
  entries: readonly MachineEntry[],
  at: readonly number[],
): HeldGroup {
  const held: Held[] = [];
  const since = Date.now();
  try {
    for (let i = 0; i < asks.length; i++) {
      const entry = entries[at[i]];
      const claimId = `${groupId}.${i}`;
      const h = s.machines.take(entry, claimId, amountOf(asks[i]));
      const allocation: AllocationGrant = {
        cpus: h.cpus,
        gpuIds: h.gpuIds,
        ramMb: h.ramMb,
        env: allocationEnv(h.cpus, h.gpuIds, asks[i].env),
      };
      if (h.res) allocation.resources = { ...h.res };
      const lease = new Lease(claimId, entry.spec.name, entry.spec.remote, allocation, false, false, asks[i]);
      held.push({ grant: lease, entry, since, group: groupId });
    }
  } catch (err) {
    for (const h of held) s.machines.give(h.entry, h.grant.claimId);
    throw err;
  }
  for (const h of held) {
    s.held.set(h.grant.claimId, h);
    s.changed.add(h.entry);
  }
  s.groupMembers += held.length;
  const abort = new AbortController();
  const grant = { groupId, strategy, members: held.map((h) => h.grant), lost: abort.signal };
  return { grant, held, since, abort };
}

/** Gives every member of `g` back in one step (rule G1); members on `gone` (a machine that left) go with it. */
export function giveGroup(s: PlacerState, g: HeldGroup, gone?: MachineEntry): void {
  for (const h of g.held) {
    if (s.held.get(h.grant.claimId) !== h) continue;
    s.held.delete(h.grant.claimId);
    s.groupMembers--;
    if (h.entry === gone) continue;
    s.machines.give(h.entry, h.grant.claimId);
    s.changed.add(h.entry);
    s.touched.add(h.entry);
  }
}

/** "member 0 on w1 (gpu 0,1), member 1 on w2": where each member of `g` is. */
export function whereDetail(g: HeldGroup): string {
  return g.held
    .map((h, i) => {
      const ids = h.grant.allocation.gpuIds;
      return `member ${i} on ${h.grant.machine}${ids.length ? ` (gpu ${ids.join(',')})` : ''}`;
    })
    .join(', ');
}
