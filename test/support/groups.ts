/**
 * Test support: a ClaimGroup stream driven with the generated client. Resolves on messages, never on sleeps.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import {
  GroupStrategy,
  OnMemberLost,
  type ClaimGroupRequest,
  type ClaimGroupResponse,
  type GroupGranted,
  type GroupQueued,
} from '../../generated/ts/berth/v1/groups.js';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { ask } from './claims.js';

export { GroupStrategy, OnMemberLost };

/** One open ClaimGroup stream. */
export interface GroupHandle {
  call: ClientDuplexStream<ClaimGroupRequest, ClaimGroupResponse>;
  /** Resolves with GroupGranted (rejects when the stream ends first). */
  granted: Promise<GroupGranted>;
  /** Resolves with the first GroupQueued. */
  queued: Promise<GroupQueued>;
  /** Resolves when the stream ends: the error, or null on OK. */
  ended: Promise<ServiceError | null>;
  /** Sends GroupRelease and waits for GroupReleased and the end. */
  release(): Promise<void>;
  /** Every message the server sent so far, in order. */
  responses: ClaimGroupResponse[];
  /** Resolves with the first message (already sent or to come) that `pred` accepts. */
  next(pred: (r: ClaimGroupResponse) => boolean): Promise<ClaimGroupResponse>;
}

/** Opens a ClaimGroup stream asking for `members` by `strategy`. */
export function claimGroup(
  client: PlacementServiceClient,
  members: Partial<Ask>[],
  strategy = GroupStrategy.GROUP_STRATEGY_UNSPECIFIED,
  onMemberLost = OnMemberLost.ON_MEMBER_LOST_UNSPECIFIED,
  priority: { priority?: number; priorityClass?: string } = {},
): GroupHandle {
  const value = { members: members.map((m) => ask(m)), strategy, onMemberLost, ...priority };
  return openGroup(client, { kind: { $case: 'ask', value } });
}

/** Opens a ClaimGroup stream taking back restored group `groupId` with its resume token (rule G7). */
export function resumeGroup(client: PlacementServiceClient, groupId: string, resumeToken: string): GroupHandle {
  return openGroup(client, { kind: { $case: 'resume', value: { groupId, resumeToken } } });
}

/** Opens a ClaimGroup stream and sends `first`. */
function openGroup(client: PlacementServiceClient, first: ClaimGroupRequest): GroupHandle {
  const call = client.claimGroup();
  let onGranted!: (g: GroupGranted) => void;
  let failGranted!: (e: unknown) => void;
  let onQueued!: (q: GroupQueued) => void;
  const granted = new Promise<GroupGranted>((res, rej) => ((onGranted = res), (failGranted = rej)));
  granted.catch(() => {});
  const queued = new Promise<GroupQueued>((res) => (onQueued = res));
  const ended = new Promise<ServiceError | null>((resolve) => {
    call.on('error', (e: ServiceError) => {
      failGranted(e);
      resolve(e);
    });
    call.on('status', (s) => {
      if (s.code === 0) {
        failGranted(new Error('stream ended without a grant'));
        resolve(null);
      }
    });
  });
  const responses: ClaimGroupResponse[] = [];
  const waiters: { pred: (r: ClaimGroupResponse) => boolean; resolve: (r: ClaimGroupResponse) => void }[] = [];
  call.on('data', (r: ClaimGroupResponse) => {
    responses.push(r);
    for (const w of [...waiters])
      if (w.pred(r)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(r);
      }
    if (r.kind?.$case === 'granted') onGranted(r.kind.value);
    if (r.kind?.$case === 'queued') onQueued(r.kind.value);
  });
  call.write(first);
  return {
    call,
    granted,
    queued,
    ended,
    responses,
    next(pred) {
      const seen = responses.find(pred);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ pred, resolve }));
    },
    async release() {
      call.write({ kind: { $case: 'release', value: {} } });
      call.end();
      const err = await ended;
      if (err) throw err;
    },
  };
}
