/**
 * The one mapper from errors to gRPC status. BerthError kinds map to their codes with their
 * messages; anything else becomes UNKNOWN with a generic message (internals are logged, not sent).
 */
import { status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { BerthError, type ErrorKind } from '../errors.js';
import type { Logger } from '../log/logger.js';

const CODES: Record<ErrorKind, status> = {
  invalid_argument: status.INVALID_ARGUMENT,
  failed_precondition: status.FAILED_PRECONDITION,
  not_found: status.NOT_FOUND,
  unavailable: status.UNAVAILABLE,
  deadline_exceeded: status.DEADLINE_EXCEEDED,
  cancelled: status.CANCELLED,
  aborted: status.ABORTED,
  unauthenticated: status.UNAUTHENTICATED,
  permission_denied: status.PERMISSION_DENIED,
  resource_exhausted: status.RESOURCE_EXHAUSTED,
  unimplemented: status.UNIMPLEMENTED,
};

/** A grpc-js ServiceError-shaped object for `callback(err)` / `call.destroy(err)`. */
export type StatusObject = Partial<ServiceError> & { code: status; details: string };

/**
 * Maps any thrown value to a status. Unexpected errors are logged with their stack under `rpc`
 * and become UNKNOWN "internal error".
 */
export function toStatus(err: unknown, log?: Logger, rpc?: string): StatusObject {
  if (err instanceof BerthError) {
    const details = cap(err.message);
    return { code: CODES[err.kind], details, message: details, metadata: new Metadata() };
  }
  log?.error({ err, rpc }, 'unexpected error in handler');
  return { code: status.UNKNOWN, details: 'internal error', message: 'internal error', metadata: new Metadata() };
}

/** Longest status message sent: grpc-js drops a status whose trailers are too large, silently. */
export const MAX_DETAILS = 2000;

/** Cuts `message` to MAX_DETAILS characters, saying how much was cut. */
function cap(message: string): string {
  return message.length <= MAX_DETAILS
    ? message
    : `${message.slice(0, MAX_DETAILS)}… (${message.length - MAX_DETAILS} more characters)`;
}
