/**
 * A group's books (rules G1, G2): the room vectors its search reads, committing every member in one step, and giving
 * every member back in one step. Members are ordinary held claims (books, invariants) marked with their group, so a
 * single-claim path never releases or loses one alone. One event per group step: no watcher sees a partial hold.
 */
import type { Place } from './order.js';
import { randomUUID } from 'node:crypto';
import type { Amount } from '../resources/books.js';
import { amountOf, eligible, requires } from './choose.js';
import { allocationEnv } from './env.js';
import type { Bin, FitMember, GroupStrategy, Room } from './group-fit.js';
import type { Requeue } from './groups.js';
import { Lease } from './lease.js';
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
  /** Set before `lost` aborts when the group waits again after the loss (rule G9): the promise of its next grant. */
  requeued?: Promise<GroupGrant>;
}

/** A group in the books. */
export interface HeldGroup {
  grant: GroupGrant;
  held: Held[];
  since: number;
  abort: AbortController;
  /** Set when losing a member's machine requeues the group (rule G9). */
  again?: Requeue;
}

/** A new group id: `g-` and 122 random bits (a claim id's strength, SPEC R7). */
export const newGroupId = (): string => `g-${randomUUID()}`;

/** The members of `asks` as the search sees them, eligible on `entries[b]` by their labels (SPEC P3). */
export function fitMembers(asks: readonly NormalizedAsk[], entries: readonly MachineEntry[]): FitMember[] {
  return asks.map((a) => ({ amount: amountOf(a), eligible: requires(a) ? (b) => eligible(entries[b], a) : anywhere }));
}

const anywhere = () => true;

/** The machines a group's search may use (group-fit.ts): bins, a machine of each bin, and the machine in a slot. */
export interface GroupBins {
  bins: Bin[];
  /** A machine of each bin: all of a bin's machines share its class (labels, SPEC P3). */
  entries: MachineEntry[];
  /** The machine in slot `slot` of bin `b`. Read it before any books change (the lists are the index's own). */
  machineAt(b: number, slot: number): MachineEntry;
}

/**
 * The machines a group's search may use, one bin per capacity bucket (capacity.ts) rather than per machine
 * (rule G2). `now`: placeable machines with their free room, a machine where waiters ahead of place `at` hold
 * something back (rule G4) in a bin of its own with what is left; else every machine at its total (could it ever
 * hold the group). A machine whose memory (or named resources) the members ask gets its own bin: memory is not in
 * the bucket key. `rank`: lower is tried first: tightest first for packing, roomiest first for spreading and
 * reserving. Cost: one look per machine, one object per bucket.
 */
export function binsOf(
  s: PlacerState,
  asks: readonly NormalizedAsk[],
  now: boolean,
  at: Place,
  roomiestFirst: boolean,
): GroupBins {
  const bins: Bin[] = [];
  const entries: MachineEntry[] = [];
  const lists: (readonly MachineEntry[])[] = [];
  const fromEnd: boolean[] = [];
  const ram = asks.some((a) => !!a.ramMb);
  const res = asks.some((a) => !!a.resources);
  let shapes = 0;
  const add = (room: Room, shape: string, rank: number, list: readonly MachineEntry[], reversed: boolean) => {
    bins.push({ room, shape, rank, count: list.length });
    entries.push(list[0]);
    lists.push(list);
    fromEnd.push(reversed);
  };
  for (const cls of s.machines.classes()) {
    const shape = String(shapes++);
    const named = res && cls.res !== undefined;
    cls.forEachBucket((gpus, cpus, list) => {
      const size = gpus * 1e6 + cpus;
      const rank = roomiestFirst ? -size : size;
      let plain: MachineEntry[] | undefined; // set once a machine of the bucket is not like the rest
      for (let i = list.length - 1; i >= 0; i--) {
        const m = list[i];
        const own = now ? ownRoomNow(s, m, at, ram, named) : ram && m.books.total.ramMb !== undefined;
        if (own === false) {
          plain?.push(m);
          continue;
        }
        plain ??= list.slice(i + 1).reverse();
        if (own !== null) add(own === true ? totalRoom(m) : own, shape, rank, [m], false);
      }
      const room: Room = now ? { cpus, gpus } : { cpus: cls.cpus, gpus: cls.gpus, res: cls.res && { ...cls.res } };
      if (!plain) add(room, shape, rank, list, true);
      else if (plain.length) add(room, shape, rank, plain, false);
    });
  }
  const machineAt = (b: number, slot: number) => (fromEnd[b] ? lists[b][lists[b].length - 1 - slot] : lists[b][slot]);
  return { bins, entries, machineAt };
}

/** `m`'s own room now if it needs a bin of its own; null: nothing new may go there; false: it is like its bucket. */
function ownRoomNow(s: PlacerState, m: MachineEntry, at: Place, ram: boolean, named: boolean): Room | null | false {
  if (!placeable(m)) return null;
  const held = s.queue.reserved.aheadOf(m, at);
  if (held && !isNothing(held)) return minus(m.books.free, held);
  if (named || (ram && m.books.total.ramMb !== undefined)) return m.books.free;
  return false;
}

const isNothing = (a: Amount) => !a.cpus && !a.gpus && !a.ramMb && !(a.res && Object.values(a.res).some((v) => v));

function totalRoom(m: MachineEntry): Room {
  const t = m.books.total;
  return { cpus: t.cpus, gpus: t.gpuIds.length, ramMb: t.ramMb, res: t.resources && { ...t.resources } };
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
 * `machines[i]`. The books were checked by the search; a BooksError here undoes what was taken and is rethrown.
 */
export function commitGroup(
  s: PlacerState,
  groupId: string,
  strategy: GroupStrategy,
  asks: readonly NormalizedAsk[],
  machines: readonly MachineEntry[],
): HeldGroup {
  const held: Held[] = [];
  const since = Date.now();
  try {
    for (let i = 0; i < asks.length; i++) {
      const entry = machines[i];
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
      held.push({ grant: lease, entry, since, group: groupId, prio: asks[i].priority ?? 0 });
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
