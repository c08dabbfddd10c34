/**
 * Compile RPC: asks a worker carrying the label to compile a node's source without running it
 * (SPEC W5). With no such worker attached the answer is checked=false "not checked", not an error.
 * Errors: INVALID_ARGUMENT for a missing label or source; UNAVAILABLE when the worker goes away.
 */
import type { CompileRequest, CompileResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Builds the Compile handler. */
export function compileHandler(ctx: ServerContext) {
  return unary<CompileRequest, CompileResponse>(ctx, 'Compile', async (req, signal) => {
    if (!/^[A-Za-z0-9_.-]{1,63}$/.test(req.label))
      throw new BerthError(
        'invalid_argument',
        `label: a label of letters, digits and _ . - is required (got ${JSON.stringify(req.label.slice(0, 80))})`,
      );
    if (!req.source) throw new BerthError('invalid_argument', 'source: required');
    const answer = await ctx.hub.compile(req.label, req.flow, req.node, req.source, signal);
    if (!answer)
      return {
        checked: false,
        ok: false,
        failure: undefined,
        worker: '',
        detail: `not checked: no worker with label ${req.label} attached`,
      };
    return {
      checked: true,
      ok: !answer.failure,
      failure: answer.failure,
      worker: answer.worker,
      detail: answer.failure ? `${answer.failure.type} on ${answer.worker}` : `compiled on ${answer.worker}`,
    };
  });
}
