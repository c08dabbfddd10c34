/**
 * GetSnapshot RPC: machines with their books (engine first), waiting claims in arrival order,
 * held claims, calls in flight, provisioners. Never fails once authenticated.
 */
import type { GetSnapshotRequest, GetSnapshotResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { toSnapshot } from '../convert.js';
import { unary } from '../edge.js';

/** Builds the GetSnapshot handler. */
export function getSnapshotHandler(ctx: ServerContext) {
  return unary<GetSnapshotRequest, GetSnapshotResponse>(ctx, 'GetSnapshot', () => {
    const snap = toSnapshot(ctx.placer.snapshot(), ctx.hub.callsInFlight(), ctx.hub.runningByMachine());
    const pools = ctx.hub.warmPools(); // pool sizes and hits/misses per machine (issue 11)
    for (const m of snap.machines) m.warmPools = pools.get(m.name);
    return snap;
  });
}
