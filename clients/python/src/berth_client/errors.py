"""Errors raised by berth_client: one small hierarchy under BerthError, mapped from gRPC codes.

A node's own exception is not a BerthError: `Client.run` re-raises it as the builtin class
(ValueError stays ValueError) or as a RemoteError subclass named after its type (see failures.py).
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


class Unavailable(BerthError, ConnectionError):
    """UNAVAILABLE: the server cannot be reached or is draining."""

    code = grpc.StatusCode.UNAVAILABLE


class WorkerGone(Unavailable):
    """UNAVAILABLE "went away": the worker running the call (or holding the claim) left (SPEC W3)."""


class NodeTimeout(BerthError, TimeoutError):
    """DEADLINE_EXCEEDED: the call was silent past its timeout, or a claim was not granted in time."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Cancelled(BerthError):
    """CANCELLED: the call was cancelled, e.g. by `Client.cancel(run_id)`."""

    code = grpc.StatusCode.CANCELLED


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
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}

_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]]*):")


def _field_of(message: str) -> str:
    """The field a server message names first ("ask.cpus: must be ..." → "ask.cpus"), else ""."""
    match = _FIELD.match(message)
    return match.group(1) if match else ""


def from_rpc_error(err: grpc.RpcError, label: str = "") -> BerthError:
    """Maps a failed RPC to the BerthError for its status code; `label` is the ask's label, if any."""
    code: grpc.StatusCode = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
    details: str = (err.details() if isinstance(err, grpc.Call) else str(err)) or code.name
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidAsk(details)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NoWorker(details, label=label)
    if code == grpc.StatusCode.UNAVAILABLE and "went away" in details:
        return WorkerGone(details)
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(details)
    return BerthError(f"{code.name}: {details}", code)
