/**
 * Where an ask goes: the pure decision functions of the placer (SPEC P2–P5). They walk the
 * machine indexes (best-fit order, labels, shapes) rather than every machine.
 */
import type { Amount } from '../resources/books.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { NormalizedAsk } from './types.js';

/** Resources held back per machine for older waiters (SPEC P7 no-starvation). */
export type Reservations = Map<MachineEntry, Amount>;

/** The amount part of an ask. */
export function amountOf(a: NormalizedAsk): Amount {
  return { cpus: a.cpus, gpus: a.gpus, ramMb: a.ramMb };
}

/** True when the ask must stay on machines carrying its label (SPEC P3). */
function requires(ask: NormalizedAsk): boolean {
  return ask.policy === 'require' && ask.label !== '';
}

/** True when the machine may host the ask at all: `require` + label → only labelled machines. */
export function eligible(m: MachineEntry, ask: NormalizedAsk): boolean {
  return !requires(ask) || m.spec.labels.includes(ask.label);
}

/** Leftover after placing `a` on `m`, GPUs first: smaller is a better fit. */
function leftover(m: MachineEntry, a: Amount): [number, number, number] {
  const f = m.books.free;
  return [f.gpus - a.gpus, f.cpus - a.cpus, f.ramMb === undefined ? Number.MAX_SAFE_INTEGER : f.ramMb - (a.ramMb ?? 0)];
}

function lexLess(x: [number, number, number], y: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
}

/**
 * Picks a machine that can grant `amount` now, respecting reservations (SPEC P2, P4):
 * an unlabelled ask stays on the engine when it fits there; a labelled ask takes the best-fitting
 * labelled machine; otherwise (never for `require`) the engine, else the best fit anywhere —
 * `fellBack` is true when a preferred label could not be honoured.
 */
export function chooseNow(
  machines: MachineSet,
  ask: NormalizedAsk,
  amount: Amount,
  reserved: Reservations,
): { machine: MachineEntry; fellBack: boolean } | undefined {
  const fits = (m: MachineEntry) => m.books.fitsNow(amount, reserved.get(m));
  const engine = machines.engine;
  if (ask.label === '') {
    if (engine && fits(engine)) return { machine: engine, fellBack: false };
  } else {
    let best: MachineEntry | undefined;
    for (const m of machines.withLabel(ask.label)) {
      if (fits(m) && (!best || lexLess(leftover(m, amount), leftover(best, amount)))) best = m;
    }
    if (best) return { machine: best, fellBack: false };
    if (requires(ask)) return undefined;
    if (engine && fits(engine)) return { machine: engine, fellBack: true };
  }
  for (const m of machines.bestFit(amount)) {
    if (m !== engine && fits(m)) return { machine: m, fellBack: ask.label !== '' };
  }
  return undefined;
}

/**
 * Clamping (SPEC P5): the best real machine for an ask none can ever hold — by granted GPUs,
 * then CPUs, then RAM, per machine — and the amount cut to it. Undefined with no eligible machine.
 * Runs only for asks nothing can hold, so it may look at every eligible machine.
 */
export function clampTarget(machines: MachineSet, ask: NormalizedAsk): { machine: MachineEntry; amount: Amount } | undefined {
  let best: { machine: MachineEntry; amount: Amount } | undefined;
  const key = (a: Amount): [number, number, number] => [-a.gpus, -a.cpus, -(a.ramMb ?? 0)];
  const pool = requires(ask) ? machines.withLabel(ask.label) : machines.all();
  for (const m of pool) {
    const t = m.books.total;
    const amount: Amount = {
      cpus: Math.min(ask.cpus, t.cpus),
      gpus: Math.min(ask.gpus, t.gpuIds.length),
      ramMb: ask.ramMb === undefined ? undefined : t.ramMb === undefined ? ask.ramMb : Math.min(ask.ramMb, t.ramMb),
    };
    if (!best || lexLess(key(amount), key(best.amount))) best = { machine: m, amount };
  }
  return best;
}

/** True when some eligible machine could hold `amount` if it were idle (by shape). */
export function anyCanEverHold(machines: MachineSet, ask: NormalizedAsk, amount: Amount): boolean {
  return machines.anyShapeHolds(amount, requires(ask) ? ask.label : undefined);
}
