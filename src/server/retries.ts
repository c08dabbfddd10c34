/**
 * Retries (SPEC S8, issue 19 item 9): a Run may ask to be placed again when its machine is lost, as Ray's
 * `max_retries` does. What counts as lost, how attempts are named, and the request's checks. Attempt 1 runs under
 * the Run's call id `<run_id>:<flow>.<node>`; attempt k >= 2 under `<call id>#<k>`, so each attempt is one
 * execution with its own events (numbered from 1) and can be followed by its own id (SPEC S3).
 */
import type { RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../errors.js';

/** Most `max_retries` a Run may ask for. */
export const MAX_RETRIES = 10;

/** The call id of `attempt` (1-based) of call `callId`. */
export function attemptCallId(callId: string, attempt: number): string {
  return attempt <= 1 ? callId : `${callId}#${attempt}`;
}

/** The attempt number a call id names: k for `…#k`, else 1. */
export function attemptOf(callId: string): number {
  const m = /#(\d{1,2})$/.exec(callId);
  return m ? Number(m[1]) : 1;
}

/**
 * True when `err` ended an attempt because its machine was lost: UNAVAILABLE "worker … went away" (its stream
 * ended for good, its link's hold ran out, its agent stopped or restarted without the call, its claim was lost with
 * the machine). Never a drain, a stopping server, a cancel, a deadline or the node's own failure.
 */
export function machineLost(err: unknown): err is BerthError {
  return err instanceof BerthError && err.kind === 'unavailable' && / went away/.test(err.message);
}

/**
 * True when `err` ended an attempt because a higher-priority claim preempted its claim (SPEC Q2): ABORTED "claim …
 * released (preempted by …)". A Run with retries left is placed again: it waits in the queue like a new claim.
 */
export function preempted(err: unknown): err is BerthError {
  return err instanceof BerthError && err.kind === 'aborted' && / \(preempted by /.test(err.message);
}

/**
 * Checks the retry fields of `req`.
 * @throws BerthError invalid_argument naming max_retries when above MAX_RETRIES, or when given with a claim_id
 *   (a Run inside a claim is not retried: the claim's machine is gone with its call).
 */
export function checkRetries(req: RunRequest): void {
  if (!(Number.isInteger(req.maxRetries) && req.maxRetries >= 0 && req.maxRetries <= MAX_RETRIES)) {
    throw new BerthError('invalid_argument', `max_retries: at most ${MAX_RETRIES} (got ${req.maxRetries})`);
  }
  if (req.maxRetries > 0 && req.placement?.$case === 'claimId') {
    throw new BerthError(
      'invalid_argument',
      `max_retries: a Run inside a claim (claim_id) is not retried, its claim's machine is gone with it; ` +
        `give an ask instead (got max_retries ${req.maxRetries})`,
    );
  }
  if (req.retryOnFailure && req.maxRetries === 0) {
    throw new BerthError('invalid_argument', 'retry_on_failure: needs max_retries of 1 or more (got 0)');
  }
}
