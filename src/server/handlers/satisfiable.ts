/**
 * Satisfiable RPC: empty `wait_for` when the ask can run now or after clamping; the amount a
 * provisioner must start a machine for otherwise (SPEC P10).
 * Errors: INVALID_ARGUMENT naming the field; FAILED_PRECONDITION for a required label no machine carries.
 */
import { type SatisfiableRequest, type SatisfiableResponse, Verdict } from '../../../generated/ts/berth/v1/placement.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Builds the Satisfiable handler. */
export function satisfiableHandler(ctx: ServerContext) {
  return unary<SatisfiableRequest, SatisfiableResponse>(ctx, 'Satisfiable', (req) => {
    const waitFor = ctx.placer.satisfiable(normalizeAsk(req.ask ?? { gpus: 0, label: '', policy: 0, node: '', runId: '', env: {} }, 'ask'));
    return { waitFor, verdict: waitFor ? Verdict.VERDICT_WAITS_FOR_PROVISIONER : Verdict.VERDICT_RUNS_NOW, clampedTo: undefined, limiting: '' };
  });
}
