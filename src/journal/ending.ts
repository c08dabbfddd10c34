/**
 * A call's ending as its `ended/<id>` record keeps it (issue 19, SPEC S3), so that following the call by id after a
 * restart answers with how it ended: its Result's value (kept up to RESULT_KEPT_BYTES of JSON, beyond that only
 * "result not kept"), its Failure, or for an error ending the record's failureType and detail. Its events are not
 * kept: a follow of an ended call after a restart gets Started and the ending, no events.
 */
import * as z from 'zod';
import { BerthError, type ErrorKind } from '../errors.js';

/** Largest Result value kept in an ended record, in bytes of its JSON (records stay small: up to 100k are kept). */
export const RESULT_KEPT_BYTES = 16 * 1024;

/** The ending fields of an ended record; all optional (records of older servers, and error endings, lack them). */
export const endingFields = {
  /** The identity that ran the call (SPEC R7): only it may follow the call. */
  owner: z.string().optional(),
  /** The Result's value (JSON), when it fit in RESULT_KEPT_BYTES. */
  result: z.unknown().optional(),
  /** The Result's value was larger than RESULT_KEPT_BYTES: its size in bytes of JSON, the value not kept. */
  resultNotKept: z.number().int().nonnegative().optional(),
  /** The call's Failure (its own exception). */
  failure: z.object({ type: z.string(), message: z.string(), traceback: z.string() }).optional(),
};

/** What a Run's follower saw last: a Result value or a Failure (the Terminal of src/workers/call-record.ts). */
type Ending =
  | { $case: 'result'; value: { value: unknown } }
  | { $case: 'failure'; value: { type: string; message: string; traceback: string } };

/** The ending fields to journal for a call of `owner` that ended with `end` (undefined: an error ending). */
export function keptEnding({ owner, end }: { owner?: string; end?: Ending }) {
  if (end?.$case === 'failure') {
    const { type, message, traceback } = end.value;
    return { owner, failure: { type, message, traceback } };
  }
  if (end?.$case !== 'result') return { owner };
  const json = JSON.stringify(end.value.value ?? null);
  const bytes = Buffer.byteLength(json);
  return bytes <= RESULT_KEPT_BYTES ? { owner, result: JSON.parse(json) } : { owner, resultNotKept: bytes };
}

/** How a restored call ended, as a follower is told: its Result, its Failure, or a BerthError (gRPC status). */
export type RestoredEnding =
  | { $case: 'result'; value: { callId: string; value: unknown } }
  | { $case: 'failure'; value: { callId: string; type: string; message: string; traceback: string } }
  | BerthError;

const KINDS = new Set<string>(['failed_precondition', 'unavailable', 'deadline_exceeded', 'cancelled']);

/**
 * The ending kept in ended record `r`: a Result with its value; FAILED_PRECONDITION "result not kept" for a
 * success whose value was too large (or written by an older server); its Failure; else its error, by the
 * record's failureType when it names a status kind (UNAVAILABLE otherwise) with its detail.
 */
export function endingOfRecord(r: z.infer<z.ZodObject<typeof endingFields>> & EndedFacts): RestoredEnding {
  const callId = r.callId;
  if (r.failure) return { $case: 'failure', value: { callId, ...r.failure } };
  if (r.outcome === 'result') {
    if (r.result !== undefined) return { $case: 'result', value: { callId, value: r.result } };
    const size = r.resultNotKept === undefined ? '' : ` (${r.resultNotKept} bytes of JSON)`;
    return new BerthError(
      'failed_precondition',
      `call ${callId} succeeded, but its result${size} was not kept across the server's restart: result not kept ` +
        `(up to ${RESULT_KEPT_BYTES} bytes are)`,
    );
  }
  const kind = r.failureType && KINDS.has(r.failureType) ? (r.failureType as ErrorKind) : 'unavailable';
  return new BerthError(kind, r.detail || `call ${callId} ended: ${r.outcome}`);
}

/** The facts of an ended record endingOfRecord reads. */
interface EndedFacts {
  callId: string;
  outcome: string;
  failureType?: string;
  detail?: string;
}
