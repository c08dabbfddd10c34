/**
 * grpc-js's own console lines (e.g. `E No address added out of total 1 resolved`) routed into
 * berth's log at debug level, so a failure berth reports itself is said once, in berth's words.
 * Left alone when the user asked grpc-js for its own output (GRPC_TRACE, GRPC_VERBOSITY).
 */
import { setLogger } from '@grpc/grpc-js';
import { format } from 'node:util';
import type { Logger } from '../log/logger.js';

/** Sends grpc-js's log lines to `log.debug` (process-wide; call once, from the CLI). */
export function routeGrpcLogs(log: Logger, env: NodeJS.ProcessEnv = process.env): void {
  if (env.GRPC_TRACE || env.GRPC_VERBOSITY || env.GRPC_NODE_TRACE || env.GRPC_NODE_VERBOSITY) return;
  const to = (...args: unknown[]) => log.debug({ grpc: format(...args) }, 'grpc-js');
  setLogger({ error: to, info: to, debug: to });
}
