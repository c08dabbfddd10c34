/**
 * GetSnapshot RPC handler. Not built yet: answers UNIMPLEMENTED (issue #3).
 */
import type { GetSnapshotRequest, GetSnapshotResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the GetSnapshot handler. */
export function getSnapshotHandler(ctx: ServerContext) {
  return unary<GetSnapshotRequest, GetSnapshotResponse>(ctx, 'GetSnapshot', async (_req: GetSnapshotRequest): Promise<GetSnapshotResponse> => notBuilt('GetSnapshot', 'issue #3'));
}
