/**
 * Drain RPC (SPEC R3, S5): placeholder until the stop-is-not-drain work lands; answers UNAVAILABLE.
 */
import type { DrainRequest, DrainResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Builds the Drain handler. */
export function drainHandler(ctx: ServerContext) {
  return unary<DrainRequest, DrainResponse>(ctx, 'Drain', () => {
    throw new BerthError('unavailable', 'Drain is not served by this server yet');
  });
}
