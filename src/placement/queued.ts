/**
 * Why a claim waits, as berth.v1.Queued carries it (SPEC P6): what it wants, how many machines
 * could ever hold it and which of them has the most free now. Walks machine classes, not machines.
 */
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, requires } from './choose.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { NormalizedAsk, QueuedInfo } from './types.js';

/** The Queued detail for `claimId` waiting for `amount` of `ask` at 1-based `position`. */
export function queuedInfo(
  machines: MachineSet,
  claimId: string,
  ask: NormalizedAsk,
  amount: Amount,
  position: number,
): QueuedInfo {
  let able = 0;
  let best: MachineEntry | undefined;
  for (const cls of machines.classes(requires(ask) ? ask.label : undefined)) {
    const special = amount.res || amount.share || amount.gpuType;
    if (amount.cpus > cls.cpus || amount.gpus > cls.gpus || (special && !cls.holdsEver(amount))) continue;
    able += cls.machinesHolding(amount.ramMb);
    const m = cls.mostFree(amount.ramMb);
    if (!m) continue;
    const g = m.books.freeGpus;
    if (!best || g > best.books.freeGpus || (g === best.books.freeGpus && m.books.freeCpus > best.books.freeCpus))
      best = m;
  }
  return {
    claimId,
    detail: describeAmount(amount),
    wanted: { ...amount },
    bestMachine: best?.spec.name ?? '',
    bestFree: best ? best.books.free : { cpus: 0, gpus: 0 },
    machinesAble: able,
    position,
    asked: amountOf(ask), // before clamping (issue 13)
    ...(ask.priority ? { priority: ask.priority } : {}),
  };
}
