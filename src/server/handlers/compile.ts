/**
 * Compile RPC handler. Not built yet: answers UNIMPLEMENTED (issue #4).
 */
import type { CompileRequest, CompileResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the Compile handler. */
export function compileHandler(ctx: ServerContext) {
  return unary<CompileRequest, CompileResponse>(ctx, 'Compile', async (_req: CompileRequest): Promise<CompileResponse> => notBuilt('Compile', 'issue #4'));
}
