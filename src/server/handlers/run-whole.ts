/**
 * RunWhole RPC (issue 24 item 9): Run answered in one message. The call goes through the same domain function as
 * Run (runCall: validation, placement, the call record, events, the drain, the timeout, the caller's grace), with
 * a sink that collects the messages; the answer carries them in order (Started, events, one Result or Failure).
 * Errors: Run's, and INVALID_ARGUMENT "run: required" when the request carries no RunRequest.
 */
import type { RunResponse, RunWholeRequest, RunWholeResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { collected } from '../edge.js';
import { runCall } from './run.js';

/** Builds the RunWhole handler. */
export function runWholeHandler(ctx: ServerContext) {
  const run = runCall(ctx);
  return collected<RunWholeRequest, RunResponse, RunWholeResponse>(
    ctx,
    'RunWhole',
    (req, sink, signal, scope, caller) => {
      if (!req.run) throw new BerthError('invalid_argument', 'run: required (the RunRequest to run)');
      return run(req.run, sink, signal, scope, caller);
    },
    (messages) => ({ messages }),
  );
}
