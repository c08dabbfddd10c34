/**
 * Where the members of a group go (rules G2, G3): a small backtracking search, not greedy first-fit, over capacity
 * buckets — bins that each stand for the machines of one shape and the same free room — not over every machine.
 * Members are placed largest first; at each step the candidates (machines opened so far, then the bins) are tried in
 * the strategy's order and one whose remaining room (and shape) equals one already tried at that step is skipped,
 * since it leads to the same subtree — so many identical machines or members cost one branch, not a factorial. A
 * step budget bounds the search; past it the answer is "no fit found". Pure: it reads plain room vectors only.
 */
import { namedFit, type Amount } from '../resources/books.js';
import type { Named } from '../resources/quantity.js';

/** How a group spreads over machines (rule G3). */
export type GroupStrategy = 'pack' | 'spread' | 'strict_pack' | 'strict_spread';

/** Room on one machine: cores, GPUs, memory (undefined = not limited) and named resources (units). */
export interface Room {
  cpus: number;
  gpus: number;
  ramMb?: number;
  res?: Named;
}

/** A machine the search may use: its room, its shape key (same key = interchangeable) and a rank (lower first). */
export interface Bin {
  room: Room;
  shape: string;
  rank: number;
  /** How many interchangeable machines with this room the bin stands for (a capacity bucket); absent = 1. */
  count?: number;
}

/** One member: its amount and which bins it may use at all (a required label, SPEC P3). */
export interface FitMember {
  amount: Amount;
  eligible(bin: number): boolean;
}

/**
 * A fit: per member (in member order) its bin and which of the bin's machines (slot 0 … count-1). A miss: the member
 * no step could place and the dimension it is short of.
 */
export type FitResult = { at: number[]; slot: number[] } | { member: number; dimension: string; detail: string };

/** Steps the search may take before it gives up (each step tries one member on one machine). */
export const FIT_BUDGET = 20_000;

/** True when `a` fits in `r`. */
export function fits(a: Amount, r: Room): boolean {
  return (
    (a.cpus === 0 || a.cpus <= r.cpus) &&
    (a.gpus === 0 || a.gpus <= r.gpus) &&
    (!a.ramMb || r.ramMb === undefined || a.ramMb <= r.ramMb) &&
    (!a.res || namedFit(a.res, r.res))
  );
}

function sub(r: Room, a: Amount, sign: 1 | -1): void {
  r.cpus -= sign * a.cpus;
  r.gpus -= sign * a.gpus;
  if (r.ramMb !== undefined && a.ramMb) r.ramMb -= sign * a.ramMb;
  if (a.res) for (const k in a.res) r.res![k] = (r.res?.[k] ?? 0) - sign * a.res[k];
}

const sumOf = (ms: readonly FitMember[]): Amount => {
  const s: Amount = { cpus: 0, gpus: 0, ramMb: 0 };
  for (const m of ms) {
    s.cpus += m.amount.cpus;
    s.gpus += m.amount.gpus;
    s.ramMb = (s.ramMb ?? 0) + (m.amount.ramMb ?? 0);
    if (m.amount.res) for (const k in m.amount.res) (s.res ??= {})[k] = (s.res[k] ?? 0) + m.amount.res[k];
  }
  return s;
};

/** The first dimension `a` exceeds `r` in ("gpus", "cpus", "ram_mb", "resources.<name>"), or ''. */
export function shortOf(a: Amount, r: Room): string {
  if (a.gpus > r.gpus) return 'gpus';
  if (a.cpus > r.cpus) return 'cpus';
  if (a.ramMb && r.ramMb !== undefined && a.ramMb > r.ramMb) return 'ram_mb';
  for (const k in a.res ?? {}) if ((a.res?.[k] ?? 0) > (r.res?.[k] ?? 0)) return `resources.${k}`;
  return '';
}

const roomKey = (r: Room) =>
  `${r.cpus}/${r.gpus}/${r.ramMb ?? '-'}${r.res ? `/${Object.entries(r.res).sort().join(';')}` : ''}`;

/**
 * Places every member of `members` on `bins` by `strategy`, or says which member could not be placed and why.
 * A bin stands for `count` interchangeable machines (one capacity bucket, rule G2); a member placed on a bin opens
 * one of them (slot 0, 1, … in opening order), which from then on is a machine of its own, "used". `bins` are not
 * changed. PACK and STRICT_PACK prefer machines already used; SPREAD prefers unused ones; STRICT_SPREAD never uses a
 * machine twice; STRICT_PACK uses one machine for all. Cost: at most `budget` steps, each walking the machines
 * opened so far and the bins, never every machine.
 */
export function fitGroup(
  members: readonly FitMember[],
  bins: readonly Bin[],
  strategy: GroupStrategy,
  budget = FIT_BUDGET,
): FitResult {
  if (strategy === 'strict_pack') return packOne(members, bins);
  const left = bins.map((b) => b.count ?? 1);
  /** Machines opened so far, in the order of their bin's rank, then slot. */
  const open: Opened[] = [];
  const order = members.map((_, i) => i).sort((x, y) => bigger(members[x].amount, members[y].amount) || x - y);
  const at = new Array<number>(members.length).fill(-1);
  const slot = new Array<number>(members.length).fill(-1);
  let steps = 0;
  let deepest = -1;
  const byRank = bins.map((_, i) => i).sort((x, y) => bins[x].rank - bins[y].rank);
  const place = (k: number): boolean => {
    if (k === order.length) return true;
    const mi = order[k];
    const m = members[mi];
    const seen = new Set<string>();
    const usedFirst = strategy === 'pack';
    for (const pass of [0, 1]) {
      if (strategy === 'strict_spread' && pass === 1) break; // never a used machine
      const used = strategy !== 'strict_spread' && usedFirst === (pass === 0);
      if (used) {
        for (let o = 0; o < open.length; o++) {
          const u = open[o];
          if (!m.eligible(u.bin) || !fits(m.amount, u.room)) continue;
          const key = `${bins[u.bin].shape}|u|${roomKey(u.room)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          if (++steps > budget) return false;
          sub(u.room, m.amount, 1);
          u.members++;
          at[mi] = u.bin;
          slot[mi] = u.slot;
          if (place(k + 1)) return true;
          sub(u.room, m.amount, -1);
          u.members--;
          if (steps > budget) return false;
        }
        continue;
      }
      for (const b of byRank) {
        if (left[b] === 0 || !m.eligible(b) || !fits(m.amount, bins[b].room)) continue;
        const key = `${bins[b].shape}|${roomKey(bins[b].room)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (++steps > budget) return false;
        const u: Opened = { bin: b, slot: (bins[b].count ?? 1) - left[b], room: copyRoom(bins[b].room), members: 1 };
        sub(u.room, m.amount, 1);
        left[b]--;
        const o = insertAt(open, u, bins);
        at[mi] = b;
        slot[mi] = u.slot;
        if (place(k + 1)) return true;
        open.splice(o, 1);
        left[b]++;
        if (steps > budget) return false;
      }
    }
    if (k > deepest) deepest = k;
    return false;
  };
  if (place(0)) return { at, slot };
  const mi = order[Math.max(deepest, 0)];
  return miss(mi, members[mi], bins, strategy, steps > budget);
}

/** A machine the search opened: its bin, its slot there, its room left and how many members it has. */
interface Opened {
  bin: number;
  slot: number;
  room: Room;
  members: number;
}

/** Files `u` among `open` by its bin's rank, then slot; returns where. */
function insertAt(open: Opened[], u: Opened, bins: readonly Bin[]): number {
  let i = open.length;
  const r = bins[u.bin].rank;
  while (i > 0 && (bins[open[i - 1].bin].rank > r || (open[i - 1].bin === u.bin && open[i - 1].slot > u.slot))) i--;
  open.splice(i, 0, u);
  return i;
}

const copyRoom = (r: Room): Room => {
  const c: Room = { cpus: r.cpus, gpus: r.gpus };
  if (r.ramMb !== undefined) c.ramMb = r.ramMb;
  if (r.res) c.res = { ...r.res };
  return c;
};

/** STRICT_PACK: the lowest-ranked eligible bin holding every member together. */
function packOne(members: readonly FitMember[], bins: readonly Bin[]): FitResult {
  const total = sumOf(members);
  let best = -1;
  for (let b = 0; b < bins.length; b++) {
    if (!members.every((m) => m.eligible(b)) || !fits(total, bins[b].room)) continue;
    if (best < 0 || bins[b].rank < bins[best].rank) best = b;
  }
  if (best >= 0) return { at: members.map(() => best), slot: members.map(() => 0) };
  const whole = { member: 0, amount: total, eligible: (b: number) => members.every((m) => m.eligible(b)) };
  const r = miss(0, whole, bins, 'strict_pack', false);
  return 'at' in r ? r : { ...r, detail: `all ${members.length} members on one machine: ${r.detail}` };
}

/** Why member `mi` found no place: the dimension it is short of on the roomiest eligible machine. */
function miss(mi: number, m: FitMember, bins: readonly Bin[], strategy: GroupStrategy, outOfSteps: boolean) {
  let best: Room | undefined;
  for (let b = 0; b < bins.length; b++) {
    if (!m.eligible(b)) continue;
    const r = bins[b].room;
    if (!best || r.gpus > best.gpus || (r.gpus === best.gpus && r.cpus > best.cpus)) best = r;
  }
  const want = describe(m.amount);
  if (!best) return { member: mi, dimension: 'label', detail: `${want}: no eligible machine` };
  const dim = shortOf(m.amount, best);
  if (dim) return { member: mi, dimension: dim, detail: `${want}: the roomiest machine has ${describe(best)}` };
  const why = outOfSteps
    ? 'the search ran out of steps'
    : strategy === 'strict_spread'
      ? 'too few machines for one member each'
      : 'the others take the room it needs';
  return { member: mi, dimension: 'machines', detail: `${want}: ${why}` };
}

/** e.g. "8 gpu(s), 2 cpu(s)". */
function describe(a: Room): string {
  const parts = [`${a.gpus} gpu(s)`, `${a.cpus} cpu(s)`];
  if (a.ramMb) parts.push(`${a.ramMb} MB`);
  for (const k in a.res ?? {}) parts.push(`${(a.res?.[k] ?? 0) / 1e4} ${k}`);
  return parts.join(', ');
}

/** Negative when `x` is the larger amount (GPUs, then cores, then memory): the order members are placed in. */
function bigger(x: Amount, y: Amount): number {
  return y.gpus - x.gpus || y.cpus - x.cpus || (y.ramMb ?? 0) - (x.ramMb ?? 0);
}
