/**
 * Where an ask goes: the pure decision functions of the placer (SPEC P2–P5).
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

/** True when the machine may host the ask at all: `require` + label → only labelled machines. */
export function eligible(m: MachineEntry, ask: NormalizedAsk): boolean {
  return !(ask.policy === 'require' && ask.label !== '') || m.spec.labels.includes(ask.label);
}

/** Leftover after placing `a` on `m`, GPUs first: smaller is a better fit. */
function leftover(m: MachineEntry, a: Amount): [number, number, number] {
  const f = m.books.free;
  return [f.gpus - a.gpus, f.cpus - a.cpus, f.ramMb === undefined ? Number.MAX_SAFE_INTEGER : f.ramMb - (a.ramMb ?? 0)];
}

function better(x: [number, number, number], y: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
}

/**
 * Picks a machine that can grant `amount` now, respecting reservations (SPEC P2, P4):
 * the engine when it may host the ask and it fits; else a preferred-label machine, best fit;
 * else (prefer only) any machine, best fit — then `fellBack` is true when a label was preferred.
 */
export function chooseNow(
  machines: MachineSet,
  ask: NormalizedAsk,
  amount: Amount,
  reserved: Reservations,
): { machine: MachineEntry; fellBack: boolean } | undefined {
  const fits = (m: MachineEntry) => eligible(m, ask) && m.books.fitsNow(amount, reserved.get(m));
  const labelled = ask.label !== '';
  const engine = machines.engine;
  if (!labelled && engine && fits(engine)) return { machine: engine, fellBack: false };
  let best: MachineEntry | undefined;
  let bestLabelled: MachineEntry | undefined;
  for (const m of machines.withFreeGpus(amount.gpus)) {
    if (!fits(m)) continue;
    if (labelled && m.spec.labels.includes(ask.label)) {
      if (!bestLabelled || better(leftover(m, amount), leftover(bestLabelled, amount))) bestLabelled = m;
    } else if (!best || better(leftover(m, amount), leftover(best, amount))) best = m;
  }
  if (bestLabelled) return { machine: bestLabelled, fellBack: false };
  if (!best) return undefined;
  if (labelled && engine && best !== engine && fits(engine)) return { machine: engine, fellBack: true };
  return { machine: best, fellBack: labelled };
}

/**
 * Clamping (SPEC P5): the best real machine for an ask none can ever hold — by granted GPUs,
 * then CPUs, then RAM, per machine — and the amount cut to it. Undefined with no eligible machine.
 */
export function clampTarget(machines: MachineSet, ask: NormalizedAsk): { machine: MachineEntry; amount: Amount } | undefined {
  let best: { machine: MachineEntry; amount: Amount } | undefined;
  const key = (a: Amount): [number, number, number] => [a.gpus, a.cpus, a.ramMb ?? 0];
  for (const m of machines.all()) {
    if (!eligible(m, ask)) continue;
    const t = m.books.total;
    const amount: Amount = {
      cpus: Math.min(ask.cpus, t.cpus),
      gpus: Math.min(ask.gpus, t.gpuIds.length),
      ramMb: ask.ramMb === undefined ? undefined : t.ramMb === undefined ? ask.ramMb : Math.min(ask.ramMb, t.ramMb),
    };
    if (!best || better(neg(key(amount)), neg(key(best.amount)))) {
      best = { machine: m, amount };
    }
  }
  return best;
}

function neg(k: [number, number, number]): [number, number, number] {
  return [-k[0], -k[1], -k[2]];
}

/** True when some eligible machine could hold `amount` if it were idle. */
export function anyCanEverHold(machines: MachineSet, ask: NormalizedAsk, amount: Amount): boolean {
  for (const m of machines.all()) if (eligible(m, ask) && m.books.canEverHold(amount)) return true;
  return false;
}
