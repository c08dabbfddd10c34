/**
 * Packing demand into machine shapes (SPEC V2), the way Ray's autoscaler bin-packs pending demand:
 * biggest asks first, each into the first machine (starting or planned) with room, and a new
 * machine only when none has room — of the shape that would hold the most of what is left.
 * Pure functions; units: cores, GPU count, MB.
 */
import { namedFit, type Amount } from '../resources/books.js';
import type { Shape, Unmet } from '../placement/provisioner.js';

/**
 * True when a machine of `shape` could ever hold `u`: size (a GPU share needs a GPU), the GPU type when the ask
 * names one, and the label when the ask requires one.
 */
export function shapeHolds(shape: Shape, u: Pick<Unmet, 'ask' | 'amount'>): boolean {
  if (u.ask.policy === 'require' && u.ask.label !== '' && !shape.labels.includes(u.ask.label)) return false;
  const a = u.amount;
  return (
    a.cpus <= shape.cpus &&
    a.gpus <= shape.gpus &&
    (a.ramMb ?? 0) <= (shape.ramMb ?? Infinity) &&
    (!a.share || shape.gpus > 0) &&
    (!a.gpuType || a.gpuType === shape.gpuType) &&
    (!a.res || namedFit(a.res, shape.resources))
  );
}

interface Room {
  shape: Shape;
  free: { cpus: number; gpus: number; ramMb: number; res: Record<string, number> };
}

const roomOf = (shape: Shape): Room => ({
  shape,
  free: { cpus: shape.cpus, gpus: shape.gpus, ramMb: shape.ramMb ?? Infinity, res: { ...shape.resources } },
});

function take(r: Room, u: Unmet): boolean {
  const a: Amount = u.amount;
  if (!shapeHolds(r.shape, u)) return false;
  if (a.cpus > r.free.cpus || a.gpus > r.free.gpus || (a.ramMb ?? 0) > r.free.ramMb) return false;
  if (a.res && !namedFit(a.res, r.free.res)) return false; // a planned machine's named room counts too (issue 23)
  for (const k in a.res ?? {}) r.free.res[k] -= a.res?.[k] ?? 0;
  r.free.cpus -= a.cpus;
  r.free.gpus -= a.gpus;
  r.free.ramMb -= a.ramMb ?? 0;
  return true;
}

type Size = [number, number, number];
const size = (s: { gpus: number; cpus: number; ramMb?: number }): Size => [s.gpus, s.cpus, s.ramMb ?? 0];
const cmp = (x: Size, y: Size) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2];

/** Where each unmet claim goes: index into `[...starting, ...planned]`, or absent when capped. */
export interface Packing {
  assigned: Map<string, number>;
  /** Shapes of the new machines to start, in order. */
  planned: Shape[];
}

/**
 * Packs `unmet` into the machines already `starting` (their shapes) and at most `maxNew` new
 * machines chosen from `shapes`. Claims no shape holds stay unassigned.
 */
export function pack(
  unmet: readonly Unmet[],
  starting: readonly Shape[],
  shapes: readonly Shape[],
  maxNew: number,
): Packing {
  const rooms = starting.map(roomOf);
  const planned: Shape[] = [];
  const assigned = new Map<string, number>();
  const order = [...unmet].sort((a, b) => cmp(size(b.amount), size(a.amount)));
  for (const [i, u] of order.entries()) {
    const at = rooms.findIndex((r) => take(r, u));
    if (at >= 0) {
      assigned.set(u.claimId, at);
      continue;
    }
    if (planned.length >= maxNew) continue;
    const best = bestShape(
      order.slice(i),
      shapes.filter((s) => shapeHolds(s, u)),
    );
    if (!best) continue;
    const r = roomOf(best);
    take(r, u);
    rooms.push(r);
    planned.push(best);
    assigned.set(u.claimId, rooms.length - 1);
  }
  return { assigned, planned };
}

/** The shape that would hold the most of `rest` (the first item always fits); the smaller on a tie. */
function bestShape(rest: readonly Unmet[], candidates: readonly Shape[]): Shape | undefined {
  let best: Shape | undefined;
  let bestCount = -1;
  for (const s of candidates) {
    const r = roomOf(s);
    let n = 0;
    for (const u of rest) if (take(r, u)) n++;
    if (n > bestCount || (n === bestCount && best && cmp(size(s), size(best)) < 0)) {
      best = s;
      bestCount = n;
    }
  }
  return best;
}
