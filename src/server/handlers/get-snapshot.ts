/**
 * GetSnapshot RPC: machines with their books (engine first), waiting claims in arrival order,
 * held claims, calls in flight, provisioners. When client identities are configured, other
 * identities' claims are shown without their ids (SPEC R7); a clustered server adds its cluster, role, leader and
 * epoch (SPEC S7). Never fails once authenticated.
 */
import type { GetSnapshotRequest, GetSnapshotResponse } from '../../../generated/ts/berth/v1/placement.js';
import { withHolds } from '../claim-holds.js';
import type { ServerContext } from '../context.js';
import { toClusterStatus, toSnapshot } from '../convert.js';
import { unary } from '../edge.js';

/** Builds the GetSnapshot handler. */
export function getSnapshotHandler(ctx: ServerContext) {
  return unary<GetSnapshotRequest, GetSnapshotResponse>(ctx, 'GetSnapshot', (_req, _signal, caller) => {
    const s = withHolds(ctx.placer.snapshot(), ctx.holds); // before hiding ids: awaiting claims are found by id
    if (caller.scoped) {
      // Others' claims are listed, their ids are not: a claim id lets its holder run in it (SPEC R7).
      const hide = <T extends { claimId: string; owner?: string }>(c: T): T =>
        c.owner === caller.name ? c : { ...c, claimId: '' };
      s.waiting = s.waiting.map(hide);
      s.held = s.held.map(hide);
      s.groups = s.groups?.map((g) =>
        g.owner === caller.name ? g : { ...g, groupId: '', members: g.members.map((m) => ({ ...m, claimId: '' })) },
      );
    }
    const snap = toSnapshot(s, ctx.hub.callsInFlight(), ctx.hub.runningByMachine());
    const pools = ctx.hub.warmPools(); // pool sizes and hits/misses per machine (issue 11)
    for (const m of snap.machines) m.warmPools = pools.get(m.name);
    snap.cluster = toClusterStatus(ctx.cluster?.());
    return snap;
  });
}
