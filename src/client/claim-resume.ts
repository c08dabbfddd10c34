/**
 * Taking back a claim whose Claim stream broke (SPEC S3), for a lease asked with `holdMs`: new streams
 * whose first message is a Resume (claim id + the Granted's resume token), with backoff and jitter, until
 * one is granted again (same claim id, same allocation) or the hold runs out — as the Python client's
 * resumable.py. The server keeps such a claim for its hold while it runs, and for `--claim-hold` after a
 * restart.
 */
import type { Granted } from '../../generated/ts/berth/v1/placement.js';
import { type OpenClaim, openClaim } from './claim-open.js';
import type { Connection } from './connection.js';
import { BerthError, ClaimLost, type ErrorContext, NotFound } from './errors.js';
import { backoffMs, CLAIM_BACKOFF, claimWorthResuming, pause } from './resume.js';

/** The error for a claim that could not be taken back, naming it and why. */
export function claimLost(claimId: string, why: string): ClaimLost {
  return new ClaimLost(`claim ${claimId} could not be resumed: ${why}`, claimId);
}

/**
 * Opens streams resuming `grant` until one is granted, for up to `holdMs` from now; resolves with it.
 * @throws ClaimLost when the server answers NOT_FOUND (it no longer holds the claim) or the hold runs out
 *   while no server takes it back; another mapped BerthError (e.g. Unauthenticated, Unimplemented) as it comes.
 */
export async function takeBack(
  conn: Connection,
  grant: Granted,
  holdMs: number,
  ctx: ErrorContext,
): Promise<OpenClaim> {
  const deadline = performance.now() + holdMs;
  const first = {
    kind: { $case: 'resume' as const, value: { claimId: grant.claimId, resumeToken: grant.resumeToken } },
  };
  const what = `resume of claim ${grant.claimId}`;
  for (let attempt = 0; ; attempt++) {
    let why: string;
    try {
      const open = await openClaim(conn, first, {}, ctx, what);
      if (!open.grant.resumed || open.grant.claimId !== grant.claimId) {
        open.call.cancel();
        throw new BerthError(`${what}: answered by another grant (${open.grant.claimId})`);
      }
      return open;
    } catch (e) {
      if (e instanceof NotFound) throw claimLost(grant.claimId, `the server no longer holds it (${e.message})`);
      const endedEarly = e instanceof BerthError && e.code === undefined && e.message.endsWith('before a grant');
      if (!claimWorthResuming(e) && !endedEarly) throw e;
      why = (e as Error).message;
    }
    const wait = backoffMs(attempt, CLAIM_BACKOFF);
    if (performance.now() + wait > deadline)
      throw claimLost(grant.claimId, `its hold of ${holdMs} ms ran out (${why})`);
    await pause(wait);
  }
}
