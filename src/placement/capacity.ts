/**
 * A class of machines: the same total cores, GPUs, labels and named resources (memory may differ). Its machines sit
 * in buckets keyed by (free GPUs, free cores), the bucket keys kept sorted, so "the best machine of
 * this class that can hold this" walks a handful of buckets, not every machine (SPEC P12).
 * Inside a bucket its machines are filed again by total and free memory, and the class files its machines by the units
 * held on their shared GPUs (levels.ts), so an ask with memory or a GPU share finds its tightest fit by a binary
 * search per bucket, not by a walk of every machine (issue 23 item 5).
 */
import { namedFit, type Amount } from '../resources/books.js';
import { UNIT, type Named } from '../resources/quantity.js';
import { Levels } from './levels.js';
import type { MachineEntry } from './machines.js';

/** How far a machine is from fitting an amount: [gpu deficit, cpu deficit, gpus left over, cpus left over]. */
export type Distance = [number, number, number, number];

/** Lexicographic `x < y`. */
export function closer(x: Distance, y: Distance): boolean {
  for (let i = 0; i < 4; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
}

/** The distance of `m` from holding `a` now (smaller is closer; ties go to the tighter fit). */
export function distance(m: MachineEntry, a: Amount): Distance {
  const g = m.books.freeGpus;
  const c = m.books.freeCpus;
  return [Math.max(0, a.gpus - g), Math.max(0, a.cpus - c), Math.max(0, g - a.gpus), Math.max(0, c - a.cpus)];
}

/**
 * How full `m` would be after granting `a` (issue 23 item 2): the share used of each dimension it has (cores, GPUs,
 * memory when limited and asked), most used first. A tighter fit is larger, compared with `tighter`.
 */
export function tightness(m: MachineEntry, a: Amount): number[] {
  const b = m.books;
  const t = b.total;
  const u: number[] = [];
  if (t.cpus > 0) u.push((t.cpus - b.freeCpus + a.cpus) / t.cpus);
  const g = t.gpuIds.length;
  if (g > 0 && !a.share) u.push((g - b.freeGpus + a.gpus) / g);
  const ram = b.freeRamMb;
  if (a.ramMb && t.ramMb && ram !== undefined) u.push((t.ramMb - ram + a.ramMb) / t.ramMb);
  u.sort((x, y) => y - x);
  // A share goes first to the GPU it fills most (best fit, SPEC P14): how full that GPU would be after it.
  if (a.share) u.unshift(shareFill(m, a.share));
  return u;
}

/** How full, from 0 to 1, the GPU a share of `units` would take on `m` is after it (0 when none has the room). */
function shareFill(m: MachineEntry, units: number): number {
  let best = 0;
  for (const [, used] of m.books.sharedGpus()) if (used + units <= UNIT) best = Math.max(best, used + units);
  return (best || (m.books.freeGpus > 0 ? units : 0)) / UNIT;
}

/** True when tightness `x` is the tighter fit: the larger most-used share, then the next, and so on. */
export function tighter(x: number[], y: number[]): boolean {
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] > y[i];
  return x.length > y.length;
}

/** True when `m`'s memory could ever hold `ramMb` (undefined or 0 = none asked). */
function ramEver(m: MachineEntry, ramMb: number | undefined): boolean {
  const t = m.books.total.ramMb;
  return !ramMb || t === undefined || ramMb <= t;
}

/** Machines of one shape (cores, GPUs, labels), indexed by free capacity. */
export class MachineClass {
  /** Bucket key → its machines; a machine knows its slot, so taking it out is a swap with the last. */
  readonly #buckets = new Map<number, MachineEntry[]>();
  /** Non-empty bucket keys, ascending: by free GPUs, then free cores. */
  readonly #keys: number[] = [];
  /** Total memory (-1 = not limited) → how many machines have it. */
  readonly #ram = new Map<number, number>();
  /** Bucket key → total memory (-1 = not limited) → its machines by free memory (0 when not limited). */
  readonly #byRam = new Map<number, Map<number, Levels<MachineEntry>>>();
  /** Machines by the units held on each of their GPUs held in part (1..UNIT-1; SPEC P14). */
  readonly #shares = new Levels<MachineEntry>();
  /** Per named resource of the class (in `#names` order), its machines by free units (the Queued detail). */
  readonly #byNamed: Levels<MachineEntry>[];
  readonly #names: string[];
  size = 0;

  constructor(
    readonly cpus: number,
    readonly gpus: number,
    readonly labels: readonly string[],
    /** Named per-machine resources every machine of the class has (units); absent = none. */
    readonly res?: Readonly<Named>,
    /** The type of the class's GPUs (issue 23 item 4); absent = untyped. */
    readonly gpuType?: string,
  ) {
    this.#names = Object.keys(res ?? {}).sort();
    this.#byNamed = this.#names.map(() => new Levels());
  }

  /** Adds `e` (indexed by its current free capacity). */
  add(e: MachineEntry): void {
    this.size++;
    const r = e.books.total.ramMb ?? -1;
    this.#ram.set(r, (this.#ram.get(r) ?? 0) + 1);
    this.index(e);
  }

  /** Removes `e`. */
  remove(e: MachineEntry): void {
    this.size--;
    const r = e.books.total.ramMb ?? -1;
    const n = this.#ram.get(r)! - 1;
    if (n) this.#ram.set(r, n);
    else this.#ram.delete(r);
    this.unindex(e);
  }

  /** Files `e` under its free capacity now. */
  index(e: MachineEntry): void {
    const k = e.books.freeGpus * (this.cpus + 1) + e.books.freeCpus;
    e.bucket = k;
    let list = this.#buckets.get(k);
    if (!list) {
      this.#buckets.set(k, (list = []));
      let lo = 0;
      let hi = this.#keys.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.#keys[mid] < k) lo = mid + 1;
        else hi = mid;
      }
      this.#keys.splice(lo, 0, k);
    }
    e.slot = list.length;
    list.push(e);
    const t = e.books.total.ramMb ?? -1;
    let byTotal = this.#byRam.get(k);
    if (!byTotal) this.#byRam.set(k, (byTotal = new Map()));
    let lv = byTotal.get(t);
    if (!lv) byTotal.set(t, (lv = new Levels()));
    e.ramFiled = e.books.freeRamMb ?? 0;
    lv.add(e.ramFiled, e);
    if (this.#names.length) {
      e.resFiled = this.#names.map((n) => e.books.freeOf(n));
      for (let i = 0; i < this.#names.length; i++) this.#byNamed[i].add(e.resFiled[i], e);
    }
    if (this.gpus === 0) return;
    e.sharesFiled = undefined;
    for (const used of e.books.sharedUnits()) {
      if (used >= UNIT) continue;
      this.#shares.add(used, e);
      (e.sharesFiled ??= []).push(used);
    }
  }

  /** Takes `e` out of the bucket it was filed under. @throws Error when the index is out of step (a bug). */
  unindex(e: MachineEntry): void {
    const list = this.#buckets.get(e.bucket);
    if (list?.[e.slot] !== e) throw new Error(`capacity index out of step for ${e.spec.name}`);
    const last = list.pop()!;
    if (last !== e) {
      list[e.slot] = last;
      last.slot = e.slot;
    }
    if (list.length === 0) {
      this.#buckets.delete(e.bucket);
      this.#keys.splice(this.#keys.indexOf(e.bucket), 1);
    }
    const byTotal = this.#byRam.get(e.bucket)!;
    const t = e.books.total.ramMb ?? -1;
    const lv = byTotal.get(t)!;
    lv.delete(e.ramFiled, e);
    if (lv.empty) byTotal.delete(t);
    if (byTotal.size === 0) this.#byRam.delete(e.bucket);
    for (const used of e.sharesFiled ?? []) this.#shares.delete(used, e);
    e.sharesFiled = undefined;
    for (let i = 0; i < this.#names.length; i++) this.#byNamed[i].delete(e.resFiled![i], e);
  }

  /**
   * True when some machine of the class, not held (SPEC S2), whose memory could ever hold `ramMb` has that much free
   * now (or is not limited). A binary search per bucket and total memory (lacking.ts).
   */
  ramFreeSomewhere(ramMb: number): boolean {
    for (const byTotal of this.#byRam.values()) {
      for (const [total, lv] of byTotal) {
        if (total !== -1 && total < ramMb) continue;
        for (const m of lv.upFrom(total === -1 ? 0 : ramMb)) if (m.hold === undefined) return true;
      }
    }
    return false;
  }

  /**
   * The most of named resource `name` free on one machine of the class, not held, whose memory could ever hold
   * `ramMb`, with that machine's total of it: [free, total] in units; undefined when none (lacking.ts).
   */
  mostFreeOf(name: string, ramMb: number | undefined): [number, number] | undefined {
    const i = this.#names.indexOf(name);
    if (i < 0) return undefined;
    for (const [free, m] of this.#byNamed[i].downFrom(Number.POSITIVE_INFINITY)) {
      if (m.hold === undefined && ramEver(m, ramMb)) return [free, this.res?.[name] ?? 0];
    }
    return undefined;
  }

  /**
   * Calls `f` with each non-empty bucket, fewest free GPUs then cores first: its free GPUs, free cores and machines
   * (the index's own list, the machine filed last at the end: read it, do not keep it past a change of books).
   */
  forEachBucket(f: (gpus: number, cpus: number, machines: readonly MachineEntry[]) => void): void {
    const width = this.cpus + 1;
    for (const k of this.#keys) f(Math.floor(k / width), k % width, this.#buckets.get(k)!);
  }

  /** True when some machine of the class could hold `a` if it were idle. */
  holdsEver(a: Amount): boolean {
    return (
      a.cpus <= this.cpus &&
      a.gpus <= this.gpus &&
      (!a.share || this.gpus > 0) &&
      (!a.gpuType || a.gpuType === this.gpuType) &&
      (!a.res || namedFit(a.res, this.res)) &&
      this.machinesHolding(a.ramMb) > 0
    );
  }

  /** How many machines of the class have the memory for `ramMb` (all when none asked). */
  machinesHolding(ramMb: number | undefined): number {
    if (!ramMb) return this.size;
    let n = 0;
    for (const [r, count] of this.#ram) if (r === -1 || r >= ramMb) n += count;
    return n;
  }

  /**
   * The first machine in best-fit order (fewest free GPUs, then fewest free cores) with at least
   * `a.gpus` and `a.cpus` free that passes `ok` (memory, reservations), `skip` and disconnected (held) machines
   * aside (SPEC S2). Within a bucket the machine filed last comes first: the one just released is reused, warm.
   */
  bestFit(a: Amount, ok: (m: MachineEntry) => boolean, skip?: MachineEntry): MachineEntry | undefined {
    if (a.ramMb || a.share) return this.#tightest(a, ok, skip);
    const width = this.cpus + 1;
    for (const k of this.#keys) {
      if (k < a.gpus * width || k % width < a.cpus) continue;
      const list = this.#buckets.get(k)!;
      for (let i = list.length - 1; i >= 0; i--) {
        const m = list[i];
        if (m !== skip && m.hold === undefined && ok(m)) return m;
      }
    }
    return undefined;
  }

  /**
   * Memory places (issue 23 item 2): among the machines with room for `a` that pass `ok`, the one it fits
   * tightest (see `tightness`), so a small ask does not take the memory-rich machine a large one needs. In each
   * bucket with enough free GPUs and cores, and for each total memory there, the machine with the least free memory
   * that holds `a` is the tightest (cores and GPUs are the bucket's): one binary search, then the first that passes.
   * A GPU share (SPEC P14) goes first to the GPU held in part it fills most (the highest level of `#shares` it
   * fits; between machines filling one equally, the first found), else as a one-GPU ask to a wholly free GPU.
   */
  #tightest(a: Amount, ok: (m: MachineEntry) => boolean, skip?: MachineEntry): MachineEntry | undefined {
    const fits = (m: MachineEntry) => m !== skip && m.hold === undefined && ok(m);
    if (a.share) {
      for (const [, m] of this.#shares.downFrom(UNIT - a.share)) if (m.books.freeCpus >= a.cpus && fits(m)) return m;
    }
    const width = this.cpus + 1;
    const gpus = a.share ? 1 : a.gpus;
    let best: MachineEntry | undefined;
    let score: number[] = [];
    for (const k of this.#keys) {
      if (k < gpus * width || k % width < a.cpus) continue;
      for (const [total, lv] of this.#byRam.get(k)!) {
        for (const m of lv.upFrom(total === -1 ? 0 : (a.ramMb ?? 0))) {
          if (!fits(m)) continue;
          const t = tightness(m, a);
          if (!best || tighter(t, score)) {
            best = m;
            score = t;
          }
          break;
        }
      }
    }
    return best;
  }

  /** The machine of the class closest to holding `a` (see `distance`) whose memory could ever hold it. */
  closest(a: Amount): { machine: MachineEntry; distance: Distance } | undefined {
    const width = this.cpus + 1;
    let best: { machine: MachineEntry; distance: Distance } | undefined;
    for (const k of this.#keys) {
      const g = Math.floor(k / width);
      const c = k % width;
      const d: Distance = [
        Math.max(0, a.gpus - g),
        Math.max(0, a.cpus - c),
        Math.max(0, g - a.gpus),
        Math.max(0, c - a.cpus),
      ];
      if (best && !closer(d, best.distance)) continue;
      for (const m of this.#buckets.get(k)!) {
        if (ramEver(m, a.ramMb)) {
          best = { machine: m, distance: d };
          break;
        }
      }
    }
    return best;
  }

  /**
   * The largest share of one GPU free on a machine of the class now, in units (UNIT when some GPU is wholly free,
   * 0 when none has room), for the Queued detail of a share's waiter (lacking.ts).
   */
  shareRoom(): number {
    const roomiest = this.mostFree(undefined);
    if (roomiest && roomiest.books.freeGpus > 0) return UNIT;
    for (const m of this.#shares.upFrom(0)) return m.books.shareRoom; // the GPU held in shares the least
    return 0;
  }

  /** The machine with the most free GPUs, then cores, whose memory could ever hold `ramMb`. */
  mostFree(ramMb: number | undefined): MachineEntry | undefined {
    for (let i = this.#keys.length - 1; i >= 0; i--) {
      for (const m of this.#buckets.get(this.#keys[i])!) if (ramEver(m, ramMb)) return m;
    }
    return undefined;
  }

  /**
   * A machine of the class with the most memory, when `ramMb` is asked; any machine otherwise
   * (for clamping, SPEC P5).
   */
  roomiest(ramMb: number | undefined): MachineEntry | undefined {
    let want = -1;
    if (ramMb && !this.#ram.has(-1)) for (const r of this.#ram.keys()) want = Math.max(want, r);
    for (const list of this.#buckets.values()) {
      for (const m of list) if (want === -1 || m.books.total.ramMb === want) return m;
    }
    return undefined;
  }
}
