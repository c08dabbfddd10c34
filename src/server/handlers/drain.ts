/**
 * Drain RPC (SPEC R3, S5): drains the server — no new claims, workers told, in-flight work given the grace, then
 * cancelled — and answers once the drain is over, just before the server stops. A plain SIGTERM does not drain
 * (SPEC S5); this RPC and `berth drain` do. Errors: INVALID_ARGUMENT for a grace over a day; UNAUTHENTICATED
 * without the token; PERMISSION_DENIED for a client identity (`--client-tokens`, mutual TLS certificate names)
 * other than the shared token: draining stops everyone's work.
 */
import type { DrainRequest, DrainResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Longest grace a Drain may ask for, in ms (a day). */
export const MAX_DRAIN_GRACE_MS = 86_400_000;

/** Builds the Drain handler. */
export function drainHandler(ctx: ServerContext) {
  return unary<DrainRequest, DrainResponse>(ctx, 'Drain', async (req, _signal, caller) => {
    if (!(req.graceMs >= 0 && req.graceMs <= MAX_DRAIN_GRACE_MS)) {
      throw new BerthError(
        'invalid_argument',
        `grace_ms: at most ${MAX_DRAIN_GRACE_MS} (a day), 0 = the server's --grace (got ${req.graceMs})`,
      );
    }
    if (caller.scoped && caller.name !== '') {
      throw new BerthError(
        'permission_denied',
        `client ${caller.name} may not drain the server: drain with the shared --token`,
      );
    }
    if (!ctx.drain) throw new BerthError('unavailable', 'this server cannot be drained');
    const graceMs = req.graceMs || ctx.options.grace * 1000;
    ctx.log.info({ graceMs, by: caller.name || 'shared token' }, 'drain requested');
    return ctx.drain(graceMs);
  });
}
