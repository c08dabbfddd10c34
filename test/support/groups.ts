/**
 * Test support: a ClaimGroup stream driven with the generated client. Resolves on messages, never on sleeps.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import {
  GroupStrategy,
  type ClaimGroupRequest,
  type ClaimGroupResponse,
  type GroupGranted,
  type GroupQueued,
} from '../../generated/ts/berth/v1/groups.js';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { ask } from './claims.js';

export { GroupStrategy };

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
}

/** Opens a ClaimGroup stream asking for `members` by `strategy`. */
export function claimGroup(
  client: PlacementServiceClient,
  members: Partial<Ask>[],
  strategy = GroupStrategy.GROUP_STRATEGY_UNSPECIFIED,
): GroupHandle {
  return openGroup(client, { kind: { $case: 'ask', value: { members: members.map((m) => ask(m)), strategy } } });
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
  call.on('data', (r: ClaimGroupResponse) => {
    if (r.kind?.$case === 'granted') onGranted(r.kind.value);
    if (r.kind?.$case === 'queued') onQueued(r.kind.value);
  });
  call.write(first);
  return {
    call,
    granted,
    queued,
    ended,
    async release() {
      call.write({ kind: { $case: 'release', value: {} } });
      call.end();
      const err = await ended;
      if (err) throw err;
    },
  };
}
