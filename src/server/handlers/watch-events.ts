/**
 * WatchEvents RPC handler. Not built yet: answers UNIMPLEMENTED (issue #3).
 */
import type { WatchEventsRequest, WatchEventsResponse } from '../../../generated/ts/berth/v1/placement.js';
import type { ServerContext } from '../context.js';
import { serverStream, type Sink } from '../edge.js';
import { notBuilt } from './unimplemented.js';

/** Builds the WatchEvents handler. */
export function watchEventsHandler(ctx: ServerContext) {
  return serverStream<WatchEventsRequest, WatchEventsResponse>(ctx, 'WatchEvents', async (_req: WatchEventsRequest, _sink: Sink<WatchEventsResponse>): Promise<void> => notBuilt('WatchEvents', 'issue #3'));
}
