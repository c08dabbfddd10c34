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
  unauthenticated: status.UNAUTHENTICATED,
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
    return { code: CODES[err.kind], details: err.message, message: err.message, metadata: new Metadata() };
  }
  log?.error({ err, rpc }, 'unexpected error in handler');
  return { code: status.UNKNOWN, details: 'internal error', message: 'internal error', metadata: new Metadata() };
}
