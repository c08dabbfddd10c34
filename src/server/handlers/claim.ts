/**
 * Claim RPC handler. Not built yet: answers UNIMPLEMENTED (issue #3).
 */
import type { ClaimRequest, ClaimResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { bidiStream, type Sink } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the Claim handler. */
export function claimHandler(ctx: ServerContext) {
  return bidiStream<ClaimRequest, ClaimResponse>(ctx, 'Claim', async (_messages: AsyncIterable<ClaimRequest>, _sink: Sink<ClaimResponse>): Promise<void> => notBuilt('Claim', 'issue #3'));
}
