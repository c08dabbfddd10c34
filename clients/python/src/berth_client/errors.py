"""Errors raised by berth_client: one small hierarchy under BerthError, and the one mapper from
gRPC status codes to it (`from_rpc_error`), shared by `Client` and `aio.AsyncClient`.

A node's own exception is not a BerthError: `run` re-raises it as the builtin class (ValueError
stays ValueError) or as a RemoteError subclass named after its type (see failures.py).
"""

from __future__ import annotations

import re

import grpc


class BerthError(Exception):
    """Base of every error berth itself reports; `code` is the gRPC status (None when local)."""

    code: grpc.StatusCode | None = None

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidAsk(BerthError, ValueError):
    """INVALID_ARGUMENT: a bad ask or request; `field` is the field the server named (e.g. "ask.cpus")."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field or _field_of(message)


class NoWorker(BerthError):
    """FAILED_PRECONDITION: no attached machine carries the required `label` and none can be started."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, message: str, label: str = "") -> None:
        super().__init__(message)
        self.label = label


class NotFound(BerthError, LookupError):
    """NOT_FOUND: e.g. Run(claim=...) naming a claim that is no longer held."""

    code = grpc.StatusCode.NOT_FOUND


class ClaimLost(NotFound):
    """A claim with a hold whose stream broke could not be taken back (SPEC S3): the server answered
    NOT_FOUND (its hold ran out, or the server restarted without it), or the hold ran out while the
    server could not be reached. `claim_id` names it; its allocation is no longer held."""

    def __init__(self, message: str, claim_id: str = "") -> None:
        super().__init__(message)
        self.claim_id = claim_id


class Unavailable(BerthError, ConnectionError):
    """UNAVAILABLE: the server cannot be reached or is draining."""

    code = grpc.StatusCode.UNAVAILABLE


class RemoteError(BerthError):
    """A call failed on its machine: the node raised a type that is not a Python builtin (subclasses
    are named after it), the node exited (NodeExited), or its worker went away (WorkerGone)."""

    remote_type: str = ""


class WorkerGone(Unavailable, RemoteError):
    """UNAVAILABLE "went away": the worker running the call (or holding the claim) left (SPEC W3).
    Both a RemoteError (the call failed remotely, as in the seed) and an Unavailable (a ConnectionError)."""

    remote_type = "WorkerGone"


class NodeExited(RemoteError):
    """The node called `sys.exit(code)` (SystemExit is never re-raised in the engine: it would stop
    it). `exit_code` is the int given (0 for `sys.exit()`), or the message str given to `sys.exit`."""

    remote_type = "SystemExit"

    def __init__(self, exit_code: int | str) -> None:
        what = f"with {exit_code!r}" if isinstance(exit_code, str) else f"with code {exit_code}"
        super().__init__(f"the node exited {what}")
        self.exit_code = exit_code
        self.args = (exit_code,)


class Oversize(NoWorker):
    """FAILED_PRECONDITION for an ask with `on_oversize="fail"` that no machine can ever hold (SPEC P11);
    the message names the dimension, what was asked and the largest machine."""


class Clamped(UserWarning):
    """Warned (warnings.warn) when an ask was cut down to the best real machine (SPEC P5, P11);
    `asked` and `granted` are the Amounts before and after. Pass `on_oversize="fail"` to refuse instead."""

    def __init__(self, message: str, asked: object = None, granted: object = None) -> None:
        super().__init__(message)
        self.asked = asked
        self.granted = granted


class NodeTimeout(BerthError, TimeoutError):
    """DEADLINE_EXCEEDED: the call was silent past its timeout, or a claim was not granted in time."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Cancelled(BerthError):
    """CANCELLED: the call was cancelled, e.g. by `Client.cancel(run_id)`."""

    code = grpc.StatusCode.CANCELLED


class Preempted(BerthError):
    """ABORTED: a higher-priority claim preempted this claim and its grace ran out before it was released;
    berth released it and stopped its runs (SPEC Q2, docs/priorities.md)."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(BerthError, PermissionError):
    """UNAUTHENTICATED: missing or wrong token (pass `token=` or set BERTH_TOKEN)."""

    code = grpc.StatusCode.UNAUTHENTICATED


class Unimplemented(BerthError, NotImplementedError):
    """UNIMPLEMENTED: the server does not offer this RPC (yet)."""

    code = grpc.StatusCode.UNIMPLEMENTED


class ResourceExhausted(BerthError):
    """RESOURCE_EXHAUSTED: a limit was hit, e.g. a request over the server's 16 MiB message limit,
    or an event follower that fell too far behind."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


_BY_CODE: dict[grpc.StatusCode, type[BerthError]] = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: NodeTimeout,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.ABORTED: Preempted,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}

_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]]*):")


def _field_of(message: str) -> str:
    """The field a server message names first ("ask.cpus: must be ..." → "ask.cpus"), else ""."""
    match = _FIELD.match(message)
    return match.group(1) if match else ""


def from_rpc_error(err: object, label: str = "", oversize_fails: bool = False) -> BerthError:
    """Maps a failed RPC (a grpc.RpcError of the sync API, or grpc.aio's AioRpcError) to the
    BerthError for its status code; `label` is the ask's label, if any; `oversize_fails` says the
    ask had on_oversize="fail" (FAILED_PRECONDITION is then Oversize, unless it names the label)."""
    code_of, details_of = getattr(err, "code", None), getattr(err, "details", None)
    code = code_of() if callable(code_of) else None
    details = details_of() if callable(details_of) else str(err)
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    return from_status(code, details if isinstance(details, str) else "", label, oversize_fails)


def from_status(code: grpc.StatusCode, details: str, label: str = "", oversize_fails: bool = False) -> BerthError:
    """The BerthError for a status code and its details (see from_rpc_error)."""
    details = details or code.name
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidAsk(details)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        if oversize_fails and not (label and label in details):
            return Oversize(details, label=label)
        return NoWorker(details, label=label)
    if code == grpc.StatusCode.UNAVAILABLE and "went away" in details:
        return WorkerGone(details)
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(details)
    return BerthError(f"{code.name}: {details}", code)
