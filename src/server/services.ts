/**
 * Maps each RPC of berth.v1 to its handler (one file per RPC under handlers/).
 */
import type { PlacementServiceServer } from '../../generated/ts/berth/v1/placement.js';
import type { WorkerServiceServer } from '../../generated/ts/berth/v1/worker.js';
import type { ServerContext } from './context.js';
import { cancelHandler } from './handlers/cancel.js';
import { claimHandler } from './handlers/claim.js';
import { claimGroupHandler } from './handlers/claim-group.js';
import { compileHandler } from './handlers/compile.js';
import { drainHandler } from './handlers/drain.js';
import { getSnapshotHandler } from './handlers/get-snapshot.js';
import { historyHandler } from './handlers/history.js';
import { runHandler } from './handlers/run.js';
import { runWholeHandler } from './handlers/run-whole.js';
import { satisfiableHandler } from './handlers/satisfiable.js';
import { watchEventsHandler } from './handlers/watch-events.js';
import { workerStreamHandler } from './handlers/worker-stream.js';

/** The PlacementService implementation. */
export function placementService(ctx: ServerContext): PlacementServiceServer {
  return {
    claim: claimHandler(ctx),
    run: runHandler(ctx),
    cancel: cancelHandler(ctx),
    compile: compileHandler(ctx),
    satisfiable: satisfiableHandler(ctx),
    getSnapshot: getSnapshotHandler(ctx),
    watchEvents: watchEventsHandler(ctx),
    drain: drainHandler(ctx),
    runWhole: runWholeHandler(ctx),
    history: historyHandler(ctx),
    claimGroup: claimGroupHandler(ctx),
  };
}

/** The WorkerService implementation. */
export function workerService(ctx: ServerContext): WorkerServiceServer {
  return { workerStream: workerStreamHandler(ctx) };
}
