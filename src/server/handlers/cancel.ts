/**
 * Cancel RPC: cancels a run's in-flight calls (a Cancel frame reaches each worker; those Runs end
 * CANCELLED) and abandons its waiting claims; other runs are untouched. Returns both counts.
 * When client identities are configured only the caller's own calls and claims (SPEC R7).
 * Errors: INVALID_ARGUMENT naming run_id when it is empty, longer than 128 characters or holds anything
 * but letters, digits and _ . : - (control characters included; the rule of an ask's run_id, SPEC R1).
 */
import type { CancelRequest, CancelResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { MAX_RUN_ID, RUN_ID } from '../../placement/ask.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Builds the Cancel handler. */
export function cancelHandler(ctx: ServerContext) {
  return unary<CancelRequest, CancelResponse>(ctx, 'Cancel', (req, _signal, caller) => {
    if (!req.runId || req.runId.length > MAX_RUN_ID || !RUN_ID.test(req.runId))
      throw new BerthError(
        'invalid_argument',
        `run_id: required, at most ${MAX_RUN_ID} characters, only letters, digits and _ . : - ` +
          `(got ${JSON.stringify(req.runId.slice(0, 140))})`,
      );
    const owner = caller.scoped ? caller.name : undefined; // another identity's run counts 0 (SPEC R7)
    const calls = ctx.hub.cancelRun(req.runId, owner);
    const claims = ctx.placer.cancelRun(req.runId, owner);
    ctx.log.info({ runId: req.runId, calls, claims }, 'run cancelled');
    return { calls, claims };
  });
}
