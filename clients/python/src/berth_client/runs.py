"""One call of a node on a worker (the Run RPC): build the request, stream events, return the value.

Events (Started, then Metric / LogLine in order) reach `on_event` before the value returns
(SPEC W2). A node's Failure is re-raised as its own exception class (see failures.py).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc
from google.protobuf import struct_pb2

from ._proto.berth.v1 import calls_pb2, placement_pb2, placement_pb2_grpc, resources_pb2
from .errors import BerthError, InvalidAsk, from_rpc_error
from .failures import exception_from_failure
from .values import Allocation, Grant, RunEvent, Started, run_events


def build_run_request(
    *,
    source: str | None,
    command: Sequence[str] | None,
    kwargs: Mapping[str, Any] | None,
    cwd: str | None,
    flow: str,
    node: str,
    run_id: str,
    claim: Grant | str | None,
    ask: resources_pb2.Ask | None,
    timeout: float | None,
) -> placement_pb2.RunRequest:
    """A RunRequest: exactly one of `source` / `command`; `claim` (a Grant or claim id) or `ask`.

    Raises InvalidAsk naming the argument when both or neither payload is given, or kwargs are not JSON-like.
    """
    if (source is None) == (command is None):
        raise InvalidAsk("payload: give exactly one of source= or command=", field="payload")
    req = placement_pb2.RunRequest(flow=flow, node=node, run_id=run_id)
    if timeout is not None:
        if timeout <= 0:
            raise InvalidAsk(f"timeout: must be > 0 seconds (got {timeout!r})", field="timeout")
        req.timeout_ms = max(1, round(timeout * 1000))
    if source is not None:
        req.source.source = source
        try:
            req.source.kwargs.update(dict(kwargs or {}))
        except (ValueError, TypeError) as err:
            raise InvalidAsk(f"kwargs: must be JSON-like ({err})", field="kwargs") from None
    else:
        req.command.argv.extend(command or [])
        if cwd:
            req.command.cwd = cwd
    if claim is not None:
        req.claim_id = claim.claim_id if isinstance(claim, Grant) else claim
    elif ask is not None:
        req.ask.CopyFrom(ask)
    return req


def _value(msg: struct_pb2.Value) -> Any:
    """The Python value of a google.protobuf.Value, as `json.loads` would give it: whole numbers
    within 2**53 come back as int (JSON has one number type), others as float."""
    kind = msg.WhichOneof("kind")
    if kind == "number_value":
        n = msg.number_value
        return int(n) if n.is_integer() and abs(n) <= 2**53 else n
    if kind == "struct_value":
        return {k: _value(v) for k, v in msg.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(v) for v in msg.list_value.values]
    if kind == "string_value":
        return msg.string_value
    if kind == "bool_value":
        return msg.bool_value
    return None


def execute(
    stub: placement_pb2_grpc.PlacementServiceStub,
    req: placement_pb2.RunRequest,
    metadata: Sequence[tuple[str, str]],
    on_event: Callable[[RunEvent], object] | None,
    label: str = "",
) -> Any:
    """Runs `req` and returns the node's value; raises the node's exception or a mapped BerthError."""
    call = stub.Run(req, metadata=tuple(metadata))
    outcome: tuple[str, Any] | None = None
    try:
        for msg in call:
            kind = msg.WhichOneof("kind")
            if kind == "started":
                s = msg.started
                if on_event is not None:
                    on_event(Started(s.call_id, s.machine, Allocation.from_proto(s.allocation)))
            elif kind == "event" and on_event is not None:
                for event in run_events(msg.event):  # a batch of lines: one LogLine each, in order
                    on_event(event)
            elif kind == "result" and outcome is None:
                outcome = ("result", _value(msg.result.value))
            elif kind == "failure" and outcome is None:
                f: calls_pb2.Failure = msg.failure
                outcome = ("failure", exception_from_failure(f.type, f.message, f.traceback, f.call_id))
    except grpc.RpcError as err:
        if outcome is None:
            raise from_rpc_error(err, label=label) from None
    finally:
        call.cancel()  # no-op once the stream ended; stops the call if on_event raised
    if outcome is None:
        raise BerthError(f"Run stream for {req.flow}.{req.node} ended without a result")
    if outcome[0] == "failure":
        raise outcome[1]
    return outcome[1]
