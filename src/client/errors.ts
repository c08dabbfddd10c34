/**
 * The errors of the TypeScript client: one family under BerthError, named as the Python client's
 * (clients/python/src/berth_client/errors.py), and the one mapper from a gRPC status to it
 * (`fromServiceError`). A node's own exception is not an RPC error: it arrives as the call's Failure
 * and is thrown as a RemoteError keeping its class name and traceback (failures.ts).
 *
 * An AbortSignal that aborts a call rejects it with the signal's own reason (as fetch does), not with
 * a BerthError: the caller chose to stop.
 */
import { status, type ServiceError } from '@grpc/grpc-js';

/** Base of every error berth reports; `code` is the gRPC status (undefined when found by the client itself). */
export class BerthError extends Error {
  readonly code: status | undefined;
  constructor(message: string, code?: status) {
    super(message);
    this.code = code;
  }
}

/** INVALID_ARGUMENT: a bad ask or request; `field` is the field named (e.g. "ask.cpus", "payload"). */
export class InvalidAsk extends BerthError {
  readonly field: string;
  constructor(message: string, field = '') {
    super(message, status.INVALID_ARGUMENT);
    this.field = field || fieldOf(message);
  }
}

/** FAILED_PRECONDITION: no attached machine carries the required `label` and none can be started (SPEC P3, W5). */
export class NoWorker extends BerthError {
  readonly label: string;
  constructor(message: string, label = '') {
    super(message, status.FAILED_PRECONDITION);
    this.label = label;
  }
}

/** FAILED_PRECONDITION for an ask with `onOversize: 'fail'` no machine can ever hold (SPEC P11). */
export class Oversize extends NoWorker {}

/** NOT_FOUND: e.g. a run naming a claim that is no longer held. */
export class NotFound extends BerthError {
  constructor(message: string) {
    super(message, status.NOT_FOUND);
  }
}

/**
 * NOT_FOUND for a lease asked with `holdMs` whose stream broke and that could not be taken back (SPEC S3):
 * the server no longer holds it (its hold ran out, or a restarted server knows nothing of it), or the hold
 * ran out before any server answered. `claimId` names it; its allocation is no longer held.
 */
export class ClaimLost extends NotFound {
  readonly claimId: string;
  constructor(message: string, claimId: string) {
    super(message);
    this.claimId = claimId;
  }
}

/** UNAVAILABLE: no server address could be reached, or the server is draining. */
export class Unavailable extends BerthError {
  constructor(message: string) {
    super(message, status.UNAVAILABLE);
  }
}

/**
 * A call failed on its machine: the node raised (`remoteType` is its exception class name, e.g.
 * "ValueError", "FitError"; "ExitCode" for a command that exited non-zero), the node exited
 * (NodeExited), or its worker went away (WorkerGone, which `instanceof RemoteError` also accepts,
 * as Python's WorkerGone is both). `remoteTraceback` is the node's formatted traceback ("" when none).
 */
export class RemoteError extends BerthError {
  readonly remoteType: string;
  readonly remoteTraceback: string;
  readonly callId: string;
  constructor(message: string, remoteType: string, remoteTraceback = '', callId = '') {
    super(message);
    this.remoteType = remoteType;
    this.remoteTraceback = remoteTraceback;
    this.callId = callId;
  }
}

/** The node called `sys.exit(code)`: `exitCode` is the number given (0 for `sys.exit()`) or the message string. */
export class NodeExited extends RemoteError {
  readonly exitCode: number | string;
  constructor(exitCode: number | string, remoteTraceback = '', callId = '') {
    const what = typeof exitCode === 'string' ? `with ${JSON.stringify(exitCode)}` : `with code ${exitCode}`;
    super(`the node exited ${what}`, 'SystemExit', remoteTraceback, callId);
    this.exitCode = exitCode;
  }
}

/** UNAVAILABLE "went away": the worker running the call (or holding the claim) left (SPEC W3). */
export class WorkerGone extends Unavailable {
  readonly remoteType = 'WorkerGone';
  readonly remoteTraceback = '';
  readonly callId = '';
}

// `x instanceof RemoteError` also holds for a WorkerGone (Python's WorkerGone is both); subclasses test as usual.
Object.defineProperty(RemoteError, Symbol.hasInstance, {
  value(this: unknown, value: unknown): boolean {
    return (
      Function.prototype[Symbol.hasInstance].call(this, value) || (this === RemoteError && value instanceof WorkerGone)
    );
  },
});

/** DEADLINE_EXCEEDED: the call was silent past its timeout, or a claim was not granted in time. */
export class NodeTimeout extends BerthError {
  constructor(message: string) {
    super(message, status.DEADLINE_EXCEEDED);
  }
}

/** CANCELLED: the call or waiting claim was cancelled, e.g. by `client.cancel(runId)`. */
export class Cancelled extends BerthError {
  constructor(message: string) {
    super(message, status.CANCELLED);
  }
}

/**
 * ABORTED: a higher-priority claim preempted this claim and its grace ran out before it was released; berth released
 * it and stopped its runs (SPEC Q2, docs/priorities.md).
 */
export class Preempted extends BerthError {
  constructor(message: string) {
    super(message, status.ABORTED);
  }
}

/** UNAUTHENTICATED: missing or wrong token (option `token`, or BERTH_TOKEN). */
export class Unauthenticated extends BerthError {
  constructor(message: string) {
    super(message, status.UNAUTHENTICATED);
  }
}

/** UNIMPLEMENTED: the server does not offer this RPC (yet). */
export class Unimplemented extends BerthError {
  constructor(message: string) {
    super(message, status.UNIMPLEMENTED);
  }
}

/** RESOURCE_EXHAUSTED: a limit was hit, e.g. a request over the server's 16 MiB message limit. */
export class ResourceExhausted extends BerthError {
  constructor(message: string) {
    super(message, status.RESOURCE_EXHAUSTED);
  }
}

for (const cls of [
  BerthError,
  InvalidAsk,
  NoWorker,
  Oversize,
  NotFound,
  ClaimLost,
  Unavailable,
  RemoteError,
  NodeExited,
  WorkerGone,
  NodeTimeout,
  Cancelled,
  Preempted,
  Unauthenticated,
  Unimplemented,
  ResourceExhausted,
])
  cls.prototype.name = cls.name;

const BY_CODE: Partial<Record<status, new (message: string) => BerthError>> = {
  [status.NOT_FOUND]: NotFound,
  [status.UNAVAILABLE]: Unavailable,
  [status.DEADLINE_EXCEEDED]: NodeTimeout,
  [status.CANCELLED]: Cancelled,
  [status.ABORTED]: Preempted,
  [status.UNAUTHENTICATED]: Unauthenticated,
  [status.UNIMPLEMENTED]: Unimplemented,
  [status.RESOURCE_EXHAUSTED]: ResourceExhausted,
};

const FIELD = /^([A-Za-z_][\w.[\]]*):/;

/** The field a server message names first ("ask.cpus: must be ..." → "ask.cpus"), else "". */
function fieldOf(message: string): string {
  return FIELD.exec(message)?.[1] ?? '';
}

/** What the mapper needs to know of the request: the ask's label, and whether it said onOversize 'fail'. */
export interface ErrorContext {
  label?: string;
  oversizeFails?: boolean;
}

/** True for a grpc-js ServiceError (a status code and details). */
export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number' && 'details' in e;
}

/** True when `e` is UNAVAILABLE for want of a server (unreachable, draining), not a worker that went away. */
export function serverUnavailable(e: unknown): boolean {
  return isServiceError(e) && e.code === status.UNAVAILABLE && !e.details.includes('went away');
}

/** The BerthError for a gRPC status code and its details (SPEC "Errors map to gRPC status codes"). */
export function fromStatus(code: status, details: string, ctx: ErrorContext = {}): BerthError {
  const text = details || status[code];
  const label = ctx.label ?? '';
  if (code === status.INVALID_ARGUMENT) return new InvalidAsk(text);
  if (code === status.FAILED_PRECONDITION) {
    if (ctx.oversizeFails && !(label && text.includes(label))) return new Oversize(text, label);
    return new NoWorker(text, label);
  }
  if (code === status.UNAVAILABLE && text.includes('went away')) return new WorkerGone(text);
  const cls = BY_CODE[code];
  return cls ? new cls(text) : new BerthError(`${status[code]}: ${text}`, code);
}

/** The BerthError for a failed call (a ServiceError); any other error is returned as it is. */
export function fromServiceError(e: unknown, ctx: ErrorContext = {}): unknown {
  return isServiceError(e) ? fromStatus(e.code, e.details, ctx) : e;
}
