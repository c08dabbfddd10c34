/**
 * Cancel RPC handler. Not built yet: answers UNIMPLEMENTED (issue #4).
 */
import type { CancelRequest, CancelResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the Cancel handler. */
export function cancelHandler(ctx: ServerContext) {
  return unary<CancelRequest, CancelResponse>(ctx, 'Cancel', async (_req: CancelRequest): Promise<CancelResponse> => notBuilt('Cancel', 'issue #4'));
}
