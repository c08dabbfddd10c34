/**
 * Satisfiable RPC handler. Not built yet: answers UNIMPLEMENTED (issue #3).
 */
import type { SatisfiableRequest, SatisfiableResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the Satisfiable handler. */
export function satisfiableHandler(ctx: ServerContext) {
  return unary<SatisfiableRequest, SatisfiableResponse>(ctx, 'Satisfiable', async (_req: SatisfiableRequest): Promise<SatisfiableResponse> => notBuilt('Satisfiable', 'issue #3'));
}
