/**
 * A call's ending as its `ended/<id>` record keeps it (issue 19, SPEC S3), so that following the call by id after a
 * restart or a takeover answers with how it ended: its Result's value (kept up to RESULT_KEPT_BYTES of JSON, beyond
 * that only "result not kept"), its Failure, or for an error ending the record's failureType and detail; and its
 * newest events (up to EVENTS_KEPT_BYTES of JSON) with the seq of its last one, so that a caller who was away when
 * it ended gets the lines it had not seen, exactly once — or FAILED_PRECONDITION when they were not kept.
 */
import * as z from 'zod';
import { Event } from '../../generated/ts/berth/v1/calls.js';
import { BerthError, type ErrorKind } from '../errors.js';

/** Largest Result value kept in an ended record, in bytes of its JSON (records stay small: up to 100k are kept). */
export const RESULT_KEPT_BYTES = 16 * 1024;
/** Most bytes of JSON of a call's newest events kept in its ended record (the tail a caller away may lack). */
export const EVENTS_KEPT_BYTES = 16 * 1024;

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
  /** Seq of the call's newest event (0 or absent: none, or an older server's record). */
  lastSeq: z.number().int().nonnegative().optional(),
  /** The call's newest events (Event JSON without the call id), oldest first, up to EVENTS_KEPT_BYTES. */
  events: z.array(z.unknown()).optional(),
};

/** What a Run's follower saw last: a Result value or a Failure (the Terminal of src/workers/call-record.ts). */
type Ending =
  | { $case: 'result'; value: { value: unknown } }
  | { $case: 'failure'; value: { type: string; message: string; traceback: string } };

/**
 * The ending fields to journal for a call of `owner` that ended with `end` (undefined: an error ending), whose kept
 * events are `events` (seq order) and newest seq `lastSeq`.
 */
export function keptEnding({
  owner,
  end,
  events = [],
  lastSeq = 0,
}: {
  owner?: string;
  end?: Ending;
  events?: readonly Event[];
  lastSeq?: number;
}) {
  const output = lastSeq > 0 ? { lastSeq, events: newestEvents(events) } : {};
  if (end?.$case === 'failure') {
    const { type, message, traceback } = end.value;
    return { owner, failure: { type, message, traceback }, ...output };
  }
  if (end?.$case !== 'result') return { owner, ...output };
  const json = JSON.stringify(end.value.value ?? null);
  const bytes = Buffer.byteLength(json);
  return bytes <= RESULT_KEPT_BYTES
    ? { owner, result: JSON.parse(json), ...output }
    : { owner, resultNotKept: bytes, ...output };
}

/** The newest of `events` whose JSON (without the call id) fits in EVENTS_KEPT_BYTES, oldest first. */
function newestEvents(events: readonly Event[]): unknown[] {
  const kept: unknown[] = [];
  let bytes = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const json = Event.toJSON({ ...events[i], callId: '' });
    bytes += Buffer.byteLength(JSON.stringify(json)) + 1;
    if (bytes > EVENTS_KEPT_BYTES) break;
    kept.push(json);
  }
  return kept.reverse();
}

/** The events kept in an ended record of call `callId`, oldest first (records of older servers keep none). */
export function eventsOfRecord(r: { callId: string; events?: unknown[] }): Event[] {
  return (r.events ?? []).map((e) => ({ ...Event.fromJSON(e), callId: r.callId }));
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
