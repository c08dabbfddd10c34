/**
 * Loud clamping (SPEC P5, P11; issue 13): which dimension no machine can hold, the
 * FAILED_PRECONDITION an `on_oversize: fail` ask gets, and Satisfiable's structured verdict.
 * Pure functions over the machine set; the placer calls them at its clamp decision.
 * Units: cpus in cores, gpus as a count, ramMb in MB.
 */
import { BerthError } from '../errors.js';
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, anyCanEverHold, chooseNow, clampTarget, requires } from './choose.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { NormalizedAsk } from './types.js';

/** Satisfiable's answer (mirrors berth.v1.Verdict without the prefix). */
export type VerdictKind = 'runs_now' | 'waits' | 'waits_for_provisioner' | 'clamped' | 'impossible';

/** What an ask would meet now: the verdict, what it would be cut to, and the first dimension cut. */
export interface AskVerdict {
  verdict: VerdictKind;
  /** Non-empty only for waits_for_provisioner: the amount a provisioner must start a machine for. */
  waitFor: string;
  /** What the ask would be cut to (clamped, impossible). */
  clampedTo?: Amount;
  /** "cpus", "gpus" or "ram_mb" (clamped, impossible), "label" (a required label no machine carries); '' else. */
  limiting: string;
}

/** The dimension cut first by clamping `asked` to `to`: GPUs, then CPUs, then RAM (SPEC P5 order); '' if none. */
export function limitingDimension(asked: Amount, to: Amount): string {
  if (to.gpus < asked.gpus) return 'gpus';
  if (to.cpus < asked.cpus) return 'cpus';
  if (asked.ramMb !== undefined && (to.ramMb ?? 0) < asked.ramMb) return 'ram_mb';
  return '';
}

const UNIT: Record<string, (a: Amount) => string> = {
  gpus: (a) => `${a.gpus} gpu(s)`,
  cpus: (a) => `${a.cpus} cpu(s)`,
  ram_mb: (a) => `${a.ramMb ?? 0} MB`,
};

/**
 * The error for an `on_oversize: fail` ask no machine can ever hold: FAILED_PRECONDITION naming
 * the dimension, what was asked and the largest machine, e.g. "ask.gpus: asked 4 gpu(s) but the
 * largest machine, engine, has 0 gpu(s) (2 cpu(s)); on_oversize is fail".
 */
export function oversizeError(
  asked: Amount,
  target: { machine: MachineEntry; amount: Amount } | undefined,
): BerthError {
  if (!target)
    return new BerthError(
      'failed_precondition',
      `ask: no machine can hold ${describeAmount(asked)}; on_oversize is fail`,
    );
  const dim = limitingDimension(asked, target.amount) || 'cpus';
  const t = target.machine.books.total;
  const has: Amount = { cpus: t.cpus, gpus: t.gpuIds.length, ramMb: t.ramMb };
  const rest = Object.keys(UNIT)
    .filter((k) => k !== dim && (k !== 'ram_mb' || has.ramMb !== undefined))
    .map((k) => UNIT[k](has));
  return new BerthError(
    'failed_precondition',
    `ask.${dim}: asked ${UNIT[dim](asked)} but the largest machine, ${target.machine.spec.name}, ` +
      `has ${UNIT[dim](has)} (${rest.join(', ')}); on_oversize is fail`,
  );
}

/**
 * True when `ask` needs cores and the eligible machines (there are some) have none at all — e.g.
 * `serve --cpus 0` with no worker attached (issue 23 item 7). Such an ask is clamped nowhere: it waits
 * for a provisioner that covers it, or within the restart grace, else fails (see noCoresError).
 */
export function noCores(machines: MachineSet, ask: NormalizedAsk): boolean {
  if (ask.cpus === 0) return false;
  let any = false;
  for (const cls of machines.classes(requires(ask) ? ask.label : undefined)) {
    if (cls.cpus > 0) return false;
    any = true;
  }
  return any;
}

/** FAILED_PRECONDITION for an ask `noCores` holds for, naming ask.cpus and the machines (at most 3 named). */
export function noCoresError(machines: MachineSet, ask: NormalizedAsk): BerthError {
  const names = [...machines.all()].filter((m) => !requires(ask) || m.spec.labels.includes(ask.label));
  const shown = names.slice(0, 3).map((m) => m.spec.name);
  const which = `${shown.join(', ')}${names.length > 3 ? ` and ${names.length - 3} more` : ''}`;
  return new BerthError(
    'failed_precondition',
    `ask.cpus: asked ${ask.cpus} cpu(s) but no machine has cores (${which}: 0) and no provisioner can start ` +
      `one: attach a worker with cores (berth worker --cpus N) or give the engine some (berth serve --cpus N)`,
  );
}

/**
 * Satisfiable's structured verdict for a validated ask (issue 13): runs_now when a machine can
 * grant it now (`fitsNow`: free capacity behind the waiters' reservations), waits when an attached machine can hold it
 * but is busy (or, for a required label, its machine left within the reconnect grace, P3), waits_for_provisioner when
 * only a provisioner covers it (SPEC P10), clamped when it would be cut to the best machine (P5), impossible when it
 * would be clamped but asks `on_oversize: fail`.
 */
export function askVerdict(
  machines: MachineSet,
  covers: (ask: NormalizedAsk) => boolean,
  ask: NormalizedAsk,
  fitsNow: (m: MachineEntry, amount: Amount) => boolean,
): AskVerdict {
  const amount = amountOf(ask);
  if (anyCanEverHold(machines, ask, amount)) {
    return {
      verdict: chooseNow(machines, ask, amount, (m) => fitsNow(m, amount)) ? 'runs_now' : 'waits',
      waitFor: '',
      limiting: '',
    };
  }
  if (covers(ask)) return { verdict: 'waits_for_provisioner', waitFor: describeAmount(amount), limiting: '' };
  const t = clampTarget(machines, ask);
  // a required label's machine is coming back (P3 grace)
  if (!t) return { verdict: 'waits', waitFor: '', limiting: '' };
  const limiting = limitingDimension(amount, t.amount);
  return { verdict: ask.onOversize === 'fail' ? 'impossible' : 'clamped', waitFor: '', clampedTo: t.amount, limiting };
}
