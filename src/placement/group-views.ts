/**
 * Groups as GetSnapshot and `berth status` show them (rule G1): one entry per group with its members, waiting or
 * held; and the invariant check of the group books (no partial hold, no member double-booked).
 */
import type { Amount } from '../resources/books.js';
import { amountOf } from './choose.js';
import type { GroupStrategy } from './group-fit.js';
import { queuedDetail, type GroupBook } from './groups.js';
import type { PlacerState } from './state.js';
import type { AllocationGrant } from './types.js';

/** One member of a group: what it wants and, once held, where and what it holds. */
export interface GroupMemberView {
  index: number;
  claimId: string;
  wanted: Amount;
  /** '' while the group waits. */
  machine: string;
  allocation?: AllocationGrant;
}

/** One group; times in ms. `blockingMember` and `detail` say why a waiting group waits. */
export interface GroupView {
  groupId: string;
  strategy: GroupStrategy;
  state: 'waiting' | 'held';
  members: GroupMemberView[];
  /** Waited (waiting) or held (held), in ms. */
  ms: number;
  /** 1-based among waiting groups; 0 when held. */
  position: number;
  blockingMember: number;
  dimension: string;
  detail: string;
  owner?: string;
  /** While held and being preempted (SPEC Q2): by whom, and the ms left of the grace. */
  preempted?: { by: string; leftMs: number };
}

/**
 * Every held group, then the waiting ones in arrival order. `preempting(id)`: the preemption notice of held group `id`
 * (preempt.ts), if one runs.
 */
export function groupViews(
  book: GroupBook,
  preempting: (id: string) => { by: string; leftMs: number } | undefined = () => undefined,
): GroupView[] {
  const now = Date.now();
  const out: GroupView[] = [];
  for (const g of book.held.values()) {
    out.push({
      groupId: g.grant.groupId,
      strategy: g.grant.strategy,
      state: 'held',
      members: g.grant.members.map((m, index) => ({
        index,
        claimId: m.claimId,
        wanted: amountOf(m.ask),
        machine: m.machine,
        allocation: m.allocation,
      })),
      ms: now - g.since,
      position: 0,
      blockingMember: 0,
      dimension: '',
      detail: '',
      owner: g.grant.members[0]?.ask.owner,
      preempted: preempting(g.grant.groupId),
    });
  }
  book.waiting.forEach((w, i) => {
    out.push({
      groupId: w.id,
      strategy: w.strategy,
      state: 'waiting',
      members: w.asks.map((a, index) => ({ index, claimId: '', wanted: amountOf(a), machine: '' })),
      ms: now - w.since,
      position: i + 1,
      blockingMember: w.why.member,
      dimension: w.why.dimension,
      detail: queuedDetail(w.why),
      owner: w.asks[0]?.owner,
    });
  });
  return out;
}

/**
 * Checks that every held group holds all its members and only it holds them, and that no held claim claims a group
 * it is not in (rule G1). Cost: the members of held groups. @throws Error naming the group.
 */
export function checkGroups(s: PlacerState, book: GroupBook): void {
  let members = 0;
  for (const [id, g] of book.held) {
    for (const h of g.held) {
      if (s.held.get(h.grant.claimId) !== h || h.group !== id)
        throw new Error(`group ${id}: member ${h.grant.claimId} not held`);
      members++;
    }
  }
  const marked = s.groupMembers;
  if (marked !== members) throw new Error(`${marked} held claims are group members, groups hold ${members}`);
  for (const w of book.waiting) if (book.held.has(w.id)) throw new Error(`group ${w.id} both waiting and held`);
}
