/**
 * Where the members of a group go (rules G2, G3): a small backtracking search over machines, not greedy first-fit.
 * Members are placed largest first; at each step the candidate machines are tried in the strategy's order and a
 * machine whose remaining room (and shape) equals one already tried at that step is skipped, since it leads to the
 * same subtree — so many identical machines or members cost one branch, not a factorial. A step budget bounds the
 * search; past it the answer is "no fit found". Pure: it reads plain room vectors, never the books.
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
}

/** One member: its amount and which bins it may use at all (a required label, SPEC P3). */
export interface FitMember {
  amount: Amount;
  eligible(bin: number): boolean;
}

/** A fit: bin index per member (in member order). A miss: the member no step could place and the dimension short. */
export type FitResult = { at: number[] } | { member: number; dimension: string; detail: string };

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
 * `bins[i].room` is not changed. PACK and STRICT_PACK prefer machines already used; SPREAD prefers unused ones;
 * STRICT_SPREAD never uses a machine twice; STRICT_PACK uses one machine for all. Cost: at most `budget` steps,
 * each walking the candidate bins of one member.
 */
export function fitGroup(
  members: readonly FitMember[],
  bins: readonly Bin[],
  strategy: GroupStrategy,
  budget = FIT_BUDGET,
): FitResult {
  if (strategy === 'strict_pack') return packOne(members, bins);
  // Rooms are copied when first changed: a fit found early touches a few machines, not all of them.
  const room: Room[] = bins.map((b) => b.room);
  const own = new Uint8Array(bins.length);
  const mine = (b: number) => {
    if (!own[b]) {
      own[b] = 1;
      room[b] = { ...room[b], res: room[b].res && { ...room[b].res } };
    }
    return room[b];
  };
  const used = new Array<number>(bins.length).fill(0);
  const order = members.map((_, i) => i).sort((x, y) => bigger(members[x].amount, members[y].amount) || x - y);
  const at = new Array<number>(members.length).fill(-1);
  let steps = 0;
  let deepest = -1;
  const byRank = bins.map((_, i) => i).sort((x, y) => bins[x].rank - bins[y].rank);
  const place = (k: number): boolean => {
    if (k === order.length) return true;
    const mi = order[k];
    const m = members[mi];
    const seen = new Set<string>();
    const firstUsed = strategy === 'pack';
    for (const pass of [0, 1]) {
      for (const b of byRank) {
        const isUsed = used[b] > 0;
        if (strategy === 'strict_spread' ? isUsed || pass === 1 : isUsed !== (firstUsed ? pass === 0 : pass === 1))
          continue;
        if (!m.eligible(b) || !fits(m.amount, room[b])) continue;
        const key = `${bins[b].shape}|${isUsed}|${roomKey(room[b])}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (++steps > budget) return false;
        sub(mine(b), m.amount, 1);
        used[b]++;
        at[mi] = b;
        if (place(k + 1)) return true;
        sub(room[b], m.amount, -1);
        used[b]--;
        at[mi] = -1;
        if (steps > budget) return false;
      }
    }
    if (k > deepest) deepest = k;
    return false;
  };
  if (place(0)) return { at };
  const mi = order[Math.max(deepest, 0)];
  return miss(mi, members[mi], bins, strategy, steps > budget);
}

/** STRICT_PACK: the lowest-ranked eligible bin holding every member together. */
function packOne(members: readonly FitMember[], bins: readonly Bin[]): FitResult {
  const total = sumOf(members);
  let best = -1;
  for (let b = 0; b < bins.length; b++) {
    if (!members.every((m) => m.eligible(b)) || !fits(total, bins[b].room)) continue;
    if (best < 0 || bins[b].rank < bins[best].rank) best = b;
  }
  if (best >= 0) return { at: members.map(() => best) };
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
