/**
 * WorkerStream RPC handler. Not built yet: answers UNIMPLEMENTED (issue #4).
 */
import type { WorkerStreamRequest, WorkerStreamResponse } from '../../../generated/ts/berth/v1/worker.js';
import type { ServerContext } from '../context.js';
import { bidiStream, type Sink } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the WorkerStream handler. */
export function workerStreamHandler(ctx: ServerContext) {
  return bidiStream<WorkerStreamRequest, WorkerStreamResponse>(ctx, 'WorkerStream', async (_messages: AsyncIterable<WorkerStreamRequest>, _sink: Sink<WorkerStreamResponse>): Promise<void> => notBuilt('WorkerStream', 'issue #4'));
}
