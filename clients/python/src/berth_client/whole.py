"""A call that streams nothing to its caller, answered in one message (the RunWhole RPC, issue 24 item 9).

`run()` without `on_event` takes only the value, so it asks RunWhole: the server places, runs and records the call
exactly as for Run and answers Started, the events and the outcome at once; a unary call costs a Python caller far
less than a stream (no reader thread, one message). A RunWhole that breaks (UNAVAILABLE that is not "went away" or a
drain) is picked up again as a stream would be (SPEC S3): it follows the call by id from its start, and when the
server knows no such call (it never started) asks for it again as first sent (one call id is one execution). A
server without RunWhole (UNIMPLEMENTED) gets the Run stream instead. Shared by both clients.
"""

from __future__ import annotations

from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2
from .decode import RunDecoder, value_of
from .errors import NotFound, from_rpc_error
from .prepare import RunSpec
from .resume import Resumption
from .values import Result

STREAM_INSTEAD = object()
"""What `Attempts.failed` returns when the server has no RunWhole: run the call on the Run stream."""


class Attempts:
    """The RunWhole requests of one call: `request` is the next to send; `failed(err)` says what a failed one means
    (None: send `request` again after `delay()`; STREAM_INSTEAD; else the exception to raise); `value(res)` decodes
    the answer (warns Clamped, raises the node's exception)."""

    def __init__(self, spec: RunSpec) -> None:
        self._spec = spec
        self._decoder_made: RunDecoder | None = None
        self._resumption_made: Resumption | None = None
        self.request = self._first()
        self._following = False
        self.waited = 0.0

    def _first(self) -> placement_pb2.RunWholeRequest:
        """The call as first asked (the spec's own RunWholeRequest when it has one: nothing copied)."""
        return (
            self._spec.whole if self._spec.whole is not None else placement_pb2.RunWholeRequest(run=self._spec.request)
        )

    @property
    def _decoder(self) -> RunDecoder:
        """The call's decoder, made when first needed (an answer with just a Result needs none)."""
        if self._decoder_made is None:
            self._decoder_made = RunDecoder(self._spec.request)
        return self._decoder_made

    @property
    def _resumption(self) -> Resumption:
        """The retry state, made at the first failure."""
        if self._resumption_made is None:
            self._resumption_made = Resumption()
        return self._resumption_made

    def delay(self) -> float:
        """Seconds to wait before the next attempt (backoff with jitter)."""
        return self._resumption.delay()

    def failed(self, err: grpc.RpcError) -> object:
        """What a failed attempt means (see the class)."""
        if err.code() == grpc.StatusCode.UNIMPLEMENTED and not self._resumption.resumed():
            return STREAM_INSTEAD
        if self._resumption.should_retry(err):
            self._follow()
            return None
        mapped = from_rpc_error(err, label=self._spec.label, oversize_fails=self._spec.oversize_fails)
        if isinstance(mapped, NotFound) and self._following:
            # the server knows no such call: it never started, so it is asked for as first sent (if it is being
            # placed meanwhile, the server joins it: one call id, one execution)
            self._following = False
            self.request = self._first()
            return None
        return mapped

    def _follow(self) -> None:
        req = placement_pb2.RunRequest(flow=self._spec.request.flow, node=self._spec.request.node)
        req.run_id = self._spec.request.run_id
        req.follow.call_id = self._decoder.call_id
        req.follow.after_seq = 0
        self.request = placement_pb2.RunWholeRequest(run=req)
        self._following = True

    def value(self, res: placement_pb2.RunWholeResponse) -> Any:
        """The node's value from the answer; raises the node's exception (or BerthError without an outcome)."""
        for msg in res.messages:
            kind = msg.WhichOneof("kind")
            if kind == "result":  # the common case, read directly (no Started or Result objects built)
                return value_of(msg.result.value)
            if kind != "event" and (kind != "started" or msg.started.clamped):
                self._decoder.feed(msg)  # a clamped Started warns Clamped; a Failure becomes the node's exception
        result: Result = self._decoder.result()
        return result.value
