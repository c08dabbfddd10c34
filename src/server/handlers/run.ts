/**
 * Run RPC handler. Not built yet: answers UNIMPLEMENTED (issue #4).
 */
import type { RunRequest, RunResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { serverStream, type Sink } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the Run handler. */
export function runHandler(ctx: ServerContext) {
  return serverStream<RunRequest, RunResponse>(ctx, 'Run', async (_req: RunRequest, _sink: Sink<RunResponse>): Promise<void> => notBuilt('Run', 'issue #4'));
}
