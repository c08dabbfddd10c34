/**
 * Where an ask goes: the pure decision functions of the placer (SPEC P2–P5, P7). They walk machine
 * classes and their free-capacity buckets (capacity.ts), never every machine (SPEC P12).
 */
import type { Amount } from '../resources/books.js';
import { UNIT } from '../resources/quantity.js';
import { closer, distance, tighter, tightness, type Distance, type MachineClass } from './capacity.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { NormalizedAsk } from './types.js';

/** The amount part of an ask: cores, GPUs, memory and named per-machine resources (pools apart, pools.ts). */
export function amountOf(a: NormalizedAsk): Amount {
  const amount: Amount = a.resources
    ? { cpus: a.cpus, gpus: a.gpus, ramMb: a.ramMb, res: a.resources }
    : { cpus: a.cpus, gpus: a.gpus, ramMb: a.ramMb };
  if (a.gpuShare) amount.share = a.gpuShare;
  if (a.gpuType) amount.gpuType = a.gpuType;
  return amount;
}

/** True when the ask must stay on machines carrying its label (SPEC P3). */
export function requires(ask: NormalizedAsk): boolean {
  return ask.policy === 'require' && ask.label !== '';
}

/** True when the machine may host the ask at all: `require` + label → only labelled machines. */
export function eligible(m: MachineEntry, ask: NormalizedAsk): boolean {
  return !requires(ask) || m.cls.labels.includes(ask.label);
}

/**
 * The best-fitting machine among `classes` holding `a` that passes `ok`, but `skip`: fewest free GPUs, then cores;
 * for an ask with memory, the tightest fit (issue 23 item 2, capacity.ts `tightness`).
 */
function bestAmong(
  classes: Iterable<MachineClass>,
  a: Amount,
  ok: (m: MachineEntry) => boolean,
  skip?: MachineEntry,
): MachineEntry | undefined {
  let best: MachineEntry | undefined;
  let score: number[] = [];
  for (const cls of classes) {
    if (a.cpus > cls.cpus || a.gpus > cls.gpus || ((a.res || a.share || a.gpuType) && !cls.holdsEver(a))) continue;
    const m = cls.bestFit(a, ok, skip);
    if (!m) continue;
    if (a.ramMb || a.share) {
      const t = tightness(m, a);
      if (!best || tighter(t, score)) {
        best = m;
        score = t;
      }
      continue;
    }
    const g = m.books.freeGpus;
    if (!best || g < best.books.freeGpus || (g === best.books.freeGpus && m.books.freeCpus < best.books.freeCpus))
      best = m;
  }
  return best;
}

/**
 * Picks a machine that can grant `amount` now (SPEC P2, P4); `ok(m)` says whether `amount` fits
 * `m`'s free capacity minus what older waiters hold back there (P7). An unlabelled ask stays on
 * the engine when it fits there; a labelled ask takes the best-fitting labelled machine; otherwise
 * (never for `require`) the engine, else the best fit anywhere — `fellBack` is true when a
 * preferred label could not be honoured.
 */
export function chooseNow(
  machines: MachineSet,
  ask: NormalizedAsk,
  amount: Amount,
  ok: (m: MachineEntry) => boolean,
): { machine: MachineEntry; fellBack: boolean } | undefined {
  const engine = machines.engine;
  if (ask.label === '') {
    if (engine && ok(engine)) return { machine: engine, fellBack: false };
  } else {
    const best = bestAmong(machines.classes(ask.label), amount, ok);
    if (best) return { machine: best, fellBack: false };
    if (requires(ask)) return undefined;
    if (engine && ok(engine)) return { machine: engine, fellBack: true };
  }
  const m = bestAmong(machines.classes(), amount, ok, engine);
  return m ? { machine: m, fellBack: ask.label !== '' } : undefined;
}

/**
 * The eligible machine a blocked waiter reserves on (SPEC P7): among machines that could ever hold
 * `amount`, the one closest to holding it now (fewest missing GPUs, then cores; ties to the
 * tighter fit). `keep`, when still eligible and as close as the best, is kept, so a reservation
 * moves only when it must. Undefined when no attached machine could ever hold it.
 */
export function reservationTarget(
  machines: MachineSet,
  ask: NormalizedAsk,
  amount: Amount,
  keep?: MachineEntry,
): MachineEntry | undefined {
  let best: { machine: MachineEntry; distance: Distance } | undefined;
  for (const cls of machines.classes(requires(ask) ? ask.label : undefined)) {
    if (!cls.holdsEver(amount)) continue;
    const c = cls.closest(amount);
    if (c && (!best || closer(c.distance, best.distance))) best = c;
  }
  const keepable = keep && machines.has(keep) && eligible(keep, ask) && keep.books.canEverHold(amount);
  if (best && keep && keepable && keep !== best.machine) {
    const d = distance(keep, amount);
    if (d[0] === best.distance[0] && d[1] === best.distance[1]) return keep;
  }
  return best?.machine;
}

/**
 * Clamping (SPEC P5): the best real machine for an ask none can ever hold — by granted GPUs,
 * then CPUs, then RAM, per machine — and the amount cut to it. Undefined with no eligible machine,
 * or when the ask needs cores and no eligible machine has any.
 * Walks classes (one machine per class is enough: a class shares cores and GPUs).
 */
export function clampTarget(
  machines: MachineSet,
  ask: NormalizedAsk,
): { machine: MachineEntry; amount: Amount } | undefined {
  let best: { machine: MachineEntry; amount: Amount } | undefined;
  // More GPUs, then more cores, then more memory, then more of the named resources is better (SPEC P5 order).
  const better = (x: Amount, y: Amount) =>
    x.gpus + (x.share ?? 0) / UNIT !== y.gpus + (y.share ?? 0) / UNIT
      ? x.gpus + (x.share ?? 0) / UNIT > y.gpus + (y.share ?? 0) / UNIT
      : x.cpus !== y.cpus
        ? x.cpus > y.cpus
        : (x.ramMb ?? 0) !== (y.ramMb ?? 0)
          ? (x.ramMb ?? 0) > (y.ramMb ?? 0)
          : namedSum(x.res) > namedSum(y.res);
  for (const cls of machines.classes(requires(ask) ? ask.label : undefined)) {
    // A machine with no cores is no clamping target for an ask that needs some (issue 23 item 7): a task
    // cut to 0 cores would run unbounded on a machine offering none (`serve --cpus 0`: workers do the work).
    if (ask.cpus > 0 && cls.cpus === 0) continue;
    if (ask.gpuType && cls.gpuType !== ask.gpuType) continue; // a type is never clamped away (grace.ts names it)
    const m = cls.roomiest(ask.ramMb);
    if (!m) continue;
    const t = m.books.total;
    const amount: Amount = {
      cpus: Math.min(ask.cpus, cls.cpus),
      gpus: Math.min(ask.gpus, cls.gpus),
      ramMb: ask.ramMb === undefined ? undefined : t.ramMb === undefined ? ask.ramMb : Math.min(ask.ramMb, t.ramMb),
    };
    if (ask.resources) amount.res = clampNamed(ask.resources, cls.res);
    if (ask.gpuShare && cls.gpus > 0) amount.share = ask.gpuShare; // a share is cut only to none
    if (ask.gpuType) amount.gpuType = ask.gpuType;
    if (!best || better(amount, best.amount)) best = { machine: m, amount };
  }
  return best;
}

/** True when some eligible machine could hold `amount` if it were idle (by class). */
export function anyCanEverHold(machines: MachineSet, ask: NormalizedAsk, amount: Amount): boolean {
  for (const cls of machines.classes(requires(ask) ? ask.label : undefined)) if (cls.holdsEver(amount)) return true;
  return false;
}

/** Each named quantity of `want` cut to what `have` has (units); a name `have` lacks is dropped (clamped to 0). */
function clampNamed(want: Record<string, number>, have: Readonly<Record<string, number>> | undefined) {
  const out: Record<string, number> = {};
  for (const k in want) {
    const n = Math.min(want[k], have?.[k] ?? 0);
    if (n > 0) out[k] = n;
  }
  return Object.keys(out).length ? out : undefined;
}

function namedSum(r: Record<string, number> | undefined): number {
  let n = 0;
  for (const k in r ?? {}) n += r?.[k] ?? 0;
  return n;
}
