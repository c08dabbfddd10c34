/**
 * Groups (docs/rules.md G1–G5) → berth.v1 messages, and the wire strategy → the placer's.
 */
import {
  GroupStrategy as Wire,
  OnMemberLost,
  type GroupGranted,
  type GroupQueued,
  type GroupView as WireView,
} from '../../generated/ts/berth/v1/groups.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import type { GroupGrant } from '../placement/group-books.js';
import type { GroupStrategy } from '../placement/group-fit.js';
import type { GroupView } from '../placement/group-views.js';
import { queuedDetail, type GroupQueuedInfo } from '../placement/groups.js';
import type { AllocationGrant } from '../placement/types.js';
import { namedPlain } from '../resources/quantity.js';
import { BerthError } from '../errors.js';

const TO_WIRE: Record<GroupStrategy, Wire> = {
  pack: Wire.GROUP_STRATEGY_PACK,
  spread: Wire.GROUP_STRATEGY_SPREAD,
  strict_pack: Wire.GROUP_STRATEGY_STRICT_PACK,
  strict_spread: Wire.GROUP_STRATEGY_STRICT_SPREAD,
};

/**
 * berth.v1.GroupStrategy → the placer's (unspecified = pack).
 * @throws BerthError INVALID_ARGUMENT for an unknown one.
 */
export function fromStrategy(w: Wire): GroupStrategy {
  if (w === Wire.GROUP_STRATEGY_UNSPECIFIED) return 'pack';
  const s = (Object.keys(TO_WIRE) as GroupStrategy[]).find((k) => TO_WIRE[k] === w);
  if (!s) throw new BerthError('invalid_argument', `strategy: unknown value ${w}`);
  return s;
}

function toAllocation(a: AllocationGrant): Allocation {
  return { cpus: a.cpus, gpuIds: a.gpuIds, ramMb: a.ramMb, env: a.env, resources: namedPlain(a.resources) };
}

/**
 * A granted group → berth.v1.GroupGranted, members in the order asked, with its resume token (rule G7) and whether
 * it answers a resume.
 */
export function toGroupGranted(g: GroupGrant, resumeToken: string, resumed = false): GroupGranted {
  return {
    groupId: g.groupId,
    resumeToken,
    resumed,
    strategy: TO_WIRE[g.strategy],
    members: g.members.map((m, index) => ({
      index,
      claimId: m.claimId,
      machine: m.machine,
      remote: m.remote,
      allocation: toAllocation(m.allocation),
    })),
  };
}

/** berth.v1.OnMemberLost → what losing a member's machine does (rule G9): unspecified is requeue. */
export function fromOnMemberLost(w: OnMemberLost): 'requeue' | 'fail' {
  if (w === OnMemberLost.ON_MEMBER_LOST_FAIL) return 'fail';
  if (w === OnMemberLost.ON_MEMBER_LOST_REQUEUE || w === OnMemberLost.ON_MEMBER_LOST_UNSPECIFIED) return 'requeue';
  throw new BerthError('invalid_argument', `on_member_lost: unknown value ${w}`);
}

/** Why a group waits → berth.v1.GroupQueued. */
export function toGroupQueued(q: GroupQueuedInfo): GroupQueued {
  return {
    groupId: q.groupId,
    member: q.member,
    dimension: q.dimension,
    detail: queuedDetail(q),
    position: q.position,
    requeued: q.requeued ?? false,
  };
}

/** A group of the snapshot → berth.v1.GroupView. */
export function toGroupView(v: GroupView): WireView {
  return {
    groupId: v.groupId,
    strategy: TO_WIRE[v.strategy],
    state: v.state,
    ms: Math.min(Math.max(0, Math.round(v.ms)), 0xffffffff),
    members: v.members.map((m) => ({
      index: m.index,
      claimId: m.claimId,
      machine: m.machine,
      wanted: { cpus: m.wanted.cpus, gpus: m.wanted.gpus, ramMb: m.wanted.ramMb, resources: namedPlain(m.wanted.res) },
      allocation: m.allocation && toAllocation(m.allocation),
    })),
    queued:
      v.state === 'waiting'
        ? {
            groupId: v.groupId,
            member: v.blockingMember,
            dimension: v.dimension,
            detail: v.detail,
            position: v.position,
            requeued: false,
          }
        : undefined,
    preemptedBy: v.preempted?.by ?? '',
    preemptLeftMs: Math.min(Math.round(v.preempted?.leftMs ?? 0), 0xffffffff),
  };
}
