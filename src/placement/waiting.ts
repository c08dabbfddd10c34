/**
 * Waiting claims (SPEC P6, P7): arrival order, why each waits, and the per-machine reservations
 * that keep a large waiter from being overtaken forever.
 */
import { describeAmount, type Amount } from '../resources/books.js';
import { eligible, type Reservations } from './choose.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { Grant, NormalizedAsk, QueuedInfo } from './types.js';

/** A claim that fits some machine, or will, but not right now. */
export interface Waiter {
  claimId: string;
  ask: NormalizedAsk;
  /** What it waits for: the ask, or the ask clamped to the best machine. */
  amount: Amount;
  clamped: boolean;
  since: number;
  signal: AbortSignal;
  resolve(g: Grant): void;
  reject(err: unknown): void;
  /** Removes the abort listener. */
  detach(): void;
  /** Hears a fresh Queued when why it waits changes (a provisioner's reason, SPEC V4). */
  notify?: (q: QueuedInfo) => void;
}

/** The eligible machine the waiter is closest to fitting on, among those that could ever hold it. */
export function reservationTarget(machines: MachineSet, w: Waiter): MachineEntry | undefined {
  let best: MachineEntry | undefined;
  let bestDeficit: [number, number, number] | undefined;
  for (const m of machines.all()) {
    if (!eligible(m, w.ask) || !m.books.canEverHold(w.amount)) continue;
    const f = m.books.free;
    const d: [number, number, number] = [
      Math.max(0, w.amount.gpus - f.gpus),
      Math.max(0, w.amount.cpus - f.cpus),
      f.ramMb === undefined ? 0 : Math.max(0, (w.amount.ramMb ?? 0) - f.ramMb),
    ];
    if (!bestDeficit || d[0] < bestDeficit[0] || (d[0] === bestDeficit[0] && (d[1] < bestDeficit[1] || (d[1] === bestDeficit[1] && d[2] < bestDeficit[2])))) {
      best = m;
      bestDeficit = d;
    }
  }
  return best;
}

/** Adds `a` to the reservation of `m`; only the dimensions the waiter asks are held back. */
export function reserve(r: Reservations, m: MachineEntry, a: Amount): void {
  const cur = r.get(m) ?? { cpus: 0, gpus: 0, ramMb: 0 };
  r.set(m, { cpus: cur.cpus + a.cpus, gpus: cur.gpus + a.gpus, ramMb: (cur.ramMb ?? 0) + (a.ramMb ?? 0) });
}

/** Why `w` waits, as berth.v1.Queued carries it. `position` is 1-based. */
export function queuedInfo(machines: MachineSet, w: Waiter, position: number): QueuedInfo {
  let able = 0;
  let best: MachineEntry | undefined;
  for (const m of machines.all()) {
    if (!eligible(m, w.ask) || !m.books.canEverHold(w.amount)) continue;
    able++;
    const f = m.books.free;
    if (!best || f.gpus > best.books.free.gpus || (f.gpus === best.books.free.gpus && f.cpus > best.books.free.cpus)) best = m;
  }
  const bf = best?.books.free;
  return {
    claimId: w.claimId,
    detail: describeAmount(w.amount),
    wanted: { ...w.amount },
    bestMachine: best?.spec.name ?? '',
    bestFree: bf ? { cpus: bf.cpus, gpus: bf.gpus, ramMb: bf.ramMb } : { cpus: 0, gpus: 0 },
    machinesAble: able,
    position,
  };
}
