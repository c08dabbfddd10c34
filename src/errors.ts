/**
 * The one error type of berth. Domain code throws BerthError with a kind; the server edge maps
 * kinds to gRPC status codes (src/server/status.ts). Any other error is unexpected.
 */

/** Kinds of failure, named after the gRPC status each maps to (SPEC "Errors map to gRPC status codes"). */
export type ErrorKind =
  | 'invalid_argument' // bad request; the message names the field and value
  | 'failed_precondition' // e.g. a required label no machine carries
  | 'not_found' // e.g. an unknown claim id
  | 'unavailable' // a worker went away, or the server is draining
  | 'deadline_exceeded' // silence past the deadline
  | 'cancelled' // the caller or Cancel(run_id) cancelled
  | 'aborted' // a held claim was preempted by a higher-priority claim (SPEC Q2)
  | 'unauthenticated' // missing or wrong token
  | 'permission_denied' // a credential that does not allow this (SPEC R7)
  | 'resource_exhausted' // a bounded queue is full
  | 'unimplemented'; // an RPC not built yet

/**
 * An expected failure with a message fit for the caller. It captures no stack trace: BerthErrors
 * are normal endings (every call close, cancel and drain makes one), the message says what
 * happened, and capturing a stack on each was ~5% of the server's time per claim (issue 9).
 * `stack` is just the name and message.
 */
export class BerthError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.kind = kind;
  }
}
BerthError.prototype.name = 'BerthError';

/** Shorthand for a BerthError('invalid_argument') naming the field and the value. */
export function invalidArgument(field: string, value: unknown, why: string): BerthError {
  return new BerthError('invalid_argument', `${field}: ${why} (got ${JSON.stringify(value)})`);
}

/** The value at `path` inside `root` (a zod issue's path, for an error message); undefined where it leads nowhere. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}
