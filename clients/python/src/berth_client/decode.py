"""Reading a Run stream, shared by both clients: RunResponse messages in, events and the outcome out
(SPEC W2: events in order, then exactly one Result or Failure). Clamping is never silent (SPEC P11):
a Started that says clamped warns `Clamped`."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

from google.protobuf import struct_pb2

from ._proto.berth.v1 import calls_pb2, placement_pb2
from .errors import BerthError, Clamped
from .failures import exception_from_failure
from .values import Amount, Preempting, Result, Retrying, RunEvent, Started, WorkerLink, run_events


def value_of(msg: struct_pb2.Value) -> Any:
    """The Python value of a google.protobuf.Value, as `json.loads` would give it: whole numbers
    within 2**53 come back as int (JSON has one number type), others as float."""
    kind = msg.WhichOneof("kind")
    if kind == "number_value":
        n = msg.number_value
        return int(n) if n.is_integer() and abs(n) <= 2**53 else n
    if kind == "struct_value":
        return {k: value_of(v) for k, v in msg.struct_value.fields.items()}
    if kind == "list_value":
        return [value_of(v) for v in msg.list_value.values]
    if kind == "string_value":
        return msg.string_value
    if kind == "bool_value":
        return msg.bool_value
    return None


def warn_clamped(what: str, started: Any) -> None:
    """Warns Clamped for a Grant or Started that says clamped (asked → granted)."""
    alloc = started.allocation
    granted = Amount(alloc.cpus, len(alloc.gpu_ids), alloc.ram_mb)
    asked = f"asked {started.asked}, " if started.asked is not None else ""
    message = f"{what} was clamped to the best real machine {started.machine}: {asked}granted {granted}"
    warnings.warn(Clamped(message, started.asked, granted), stacklevel=_user_stacklevel())


def tell_preempted(hook: Callable[[Any], object] | None, notice: Any) -> None:
    """Calls a lease's `on_preempted(notice)` (SPEC Q2); what it raises must not end the lease: it is warned instead."""
    if hook is None:
        return
    try:
        hook(notice)
    except Exception as err:  # noqa: BLE001 - a user's callback; the lease goes on
        warnings.warn(f"a lease's on_preempted callback raised {type(err).__name__}: {err}", stacklevel=2)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel() -> int:
    """The warnings stacklevel, as seen from warn_clamped's caller's warnings.warn, of the first frame outside
    berth_client: the user's line, whichever path (claim, run, stream_run, sync or asyncio) led here."""
    level = 1
    frame = sys._getframe(1)  # warn_clamped's frame: stacklevel 1 names the line that calls warnings.warn
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


class RunDecoder:
    """Folds one Run stream, and the streams that follow the same call again after a break (SPEC S3).
    `feed(msg)` returns the events to hand on, in order (one message may carry several; a second Started, from a
    stream that follows the call again, is not handed on twice; a Retrying, SPEC S8, starts the next attempt's);
    `result()` returns the Result, raises the node's exception, or BerthError when the stream ended without an
    outcome. `resume_request()` is the RunRequest that picks the call up again after its stream broke."""

    def __init__(self, req: placement_pb2.RunRequest) -> None:
        self._req = req
        self.started: Started | None = None
        self._outcome: Result | BaseException | None = None
        self.last_seq = 0
        """Sequence number of the newest event seen (SPEC S1)."""

    @property
    def call_id(self) -> str:
        """The call's id "<run_id>:<flow>.<node>"."""
        return f"{self._req.run_id}:{self._req.flow}.{self._req.node}"

    def resume_request(self) -> placement_pb2.RunRequest:
        """The request that picks this call up again after its stream broke: a follow from the last event seen
        once the call started (exactly once, SPEC S3), else the original request (one call id is one execution:
        the server joins the call if it is already placed)."""
        if self.started is None:
            return self._req
        req = placement_pb2.RunRequest(flow=self._req.flow, node=self._req.node, run_id=self._req.run_id)
        req.follow.call_id = self.started.call_id
        req.follow.after_seq = self.last_seq
        return req

    @property
    def has_outcome(self) -> bool:
        """True once a Result or Failure arrived."""
        return self._outcome is not None

    def feed(self, msg: placement_pb2.RunResponse) -> list[RunEvent]:
        """The events `msg` carries (Started, Metric, LogLine, WorkerLink, Retrying, Preempting), in order; none for a
        result, a failure or a kind this client does not know."""
        kind = msg.WhichOneof("kind")
        if kind == "started":
            if self.started is not None:
                return []  # the call followed again after a break: its Started was handed on already
            self.started = Started.from_proto(msg.started)
            if self.started.clamped:
                warn_clamped(f"call {self.started.call_id}", self.started)
            return [self.started]
        if kind == "event":
            if msg.event.seq and msg.event.seq <= self.last_seq:
                return []  # already seen (never sent twice by the server; a guard all the same)
            self.last_seq = max(self.last_seq, msg.event.seq)
            return list(run_events(msg.event))  # a batch of lines: one LogLine each, in order
        if kind == "link":
            return [WorkerLink.from_proto(msg.link)]
        if kind == "preempting":
            return [
                Preempting.from_proto(msg.preempting)
            ]  # the Run's own claim is preempted (SPEC Q2)  # the worker's link went down or came back (SPEC S2)
        if kind == "retrying":
            # the attempt ended and the call is placed again (SPEC S8): its Started and events (numbered from 1)
            # follow, and a broken stream follows the new attempt's call id from then on
            self.started = None
            self.last_seq = 0
            return [Retrying.from_proto(msg.retrying)]
        if kind == "result" and self._outcome is None:
            self._outcome = Result(msg.result.call_id, value_of(msg.result.value))
        elif kind == "failure" and self._outcome is None:
            f: calls_pb2.Failure = msg.failure
            self._outcome = exception_from_failure(f.type, f.message, f.traceback, f.call_id)
        return []

    def result(self) -> Result:
        """The call's Result; raises the node's exception when it failed."""
        if self._outcome is None:
            raise BerthError(f"Run stream for {self._req.flow}.{self._req.node} ended without a result")
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome
