/**
 * Restoring a group after a restart (rule G7, SPEC S4): every member takes back exactly the resources it held — the
 * same machine, cores and GPU ids — in one step, or none does and the group is not restored, so no restart ever
 * leaves part of a group held (rule G1) nor grants anything twice.
 */
import { BerthError } from '../errors.js';
import type { GroupStrategy } from './group-fit.js';
import type { HeldGroup } from './group-books.js';
import { restoreLease, type RestoredClaim } from './restore.js';
import type { Held, PlacerState } from './state.js';

/** A group as the journal kept it: what `Placer.restoreGroup` takes back. `at`: when it was granted (ms epoch). */
export interface RestoredGroup {
  groupId: string;
  strategy: GroupStrategy;
  members: RestoredClaim[];
  at: number;
}

/**
 * Takes every member of `r` back on its machine and files nothing else: the caller keeps the returned group.
 * @throws BerthError FAILED_PRECONDITION "group <id> cannot be restored: …" when a member's machine is not in the
 *   books, its resources are not free, its id is held already, or it asks a cluster-wide pool; nothing is taken then.
 */
export function restoreGroupBooks(s: PlacerState, r: RestoredGroup): HeldGroup {
  const held: Held[] = [];
  try {
    for (const m of r.members) {
      if (s.held.has(m.claimId)) throw new Error(`member ${m.claimId} is held already`);
      if (m.ask.pools) throw new Error(`member ${m.claimId} asks a cluster-wide pool`);
      const { lease, entry } = restoreLease(s.machines, m);
      held.push({ grant: lease, entry, since: r.at, group: r.groupId, prio: m.ask.priority ?? 0 });
    }
  } catch (err) {
    for (const h of held) s.machines.give(h.entry, h.grant.claimId);
    throw new BerthError('failed_precondition', `group ${r.groupId} cannot be restored: ${(err as Error).message}`);
  }
  for (const h of held) {
    s.held.set(h.grant.claimId, h);
    s.changed.add(h.entry);
  }
  s.groupMembers += held.length;
  const abort = new AbortController();
  const grant = { groupId: r.groupId, strategy: r.strategy, members: held.map((h) => h.grant), lost: abort.signal };
  return { grant, held, since: r.at, abort };
}
