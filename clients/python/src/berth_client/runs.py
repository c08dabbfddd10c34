"""One call of a node on a worker from the sync client (the Run RPC): stream its events, then the value.

Events (Started, then Metric / LogLine in order) come before the value (SPEC W2). A node's Failure
is re-raised as its own exception class (failures.py); a failed RPC as the mapped BerthError. A stream that breaks
(server restart, cut link) is followed again from the last event seen (resume.py, SPEC S3).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from .decode import RunDecoder
from .errors import NotFound, from_rpc_error
from .prepare import RunSpec
from .resume import Resumption
from .values import Result, RunEvent
from .views import RunOutcome
from .watchdog import Watched
from .whole import STREAM_INSTEAD, Attempts


class RunStream(RunOutcome):
    """`Client.stream_run(...)`: iterate for the events (Started, Metric, LogLine) then one `Result`;
    the node's exception or a BerthError is raised by the iteration. `close()` (or leaving `with`)
    cancels the call. After the stream: `started`, `clamped`, `value`."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: RunSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        self._spec = spec
        self._stub = stub
        self._metadata = metadata
        self._decoder = RunDecoder(spec.request)
        self._resumption = Resumption()
        self._call: Any = stub.Run(spec.request, metadata=metadata)
        self._responses: Watched[placement_pb2.RunResponse] = Watched(self._call)
        self._result: Result | None = None
        self._pending: deque[RunEvent] = deque()
        self._finished = False

    def __iter__(self) -> Iterator[RunEvent | Result]:
        return self

    def __next__(self) -> RunEvent | Result:
        if self._pending:
            return self._pending.popleft()
        if self._finished:
            raise StopIteration
        while True:
            try:
                for msg in self._responses:
                    self._pending.extend(self._decoder.feed(msg))
                    if self._pending:
                        return self._pending.popleft()
                break
            except grpc.RpcError as err:
                if self._decoder.has_outcome:
                    break
                if self._resumption.should_retry(err):
                    time.sleep(self._resumption.delay())
                    self._reopen()
                    continue
                self.close()
                mapped = from_rpc_error(err, label=self._spec.label, oversize_fails=self._spec.oversize_fails)
                if isinstance(mapped, NotFound) and self._resumption.resumed():
                    mapped = self._resumption.lost(self._decoder.call_id, mapped)
                raise mapped from None
        self.close()
        self._result = self._decoder.result()
        return self._result

    def _reopen(self) -> None:
        """Follows the call again on a new stream (SPEC S3): from the last event seen, or the original request."""
        self._responses.close()
        self._call = self._stub.Run(self._decoder.resume_request(), metadata=self._metadata)
        self._responses = Watched(self._call)

    def close(self) -> None:
        """Ends the stream; cancels the call when it is still running (its claim is given back)."""
        self._finished = True
        self._call.cancel()
        self._responses.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def execute(stub: placement_pb2_grpc.PlacementServiceStub, spec: RunSpec, metadata: tuple[tuple[str, str], ...]) -> Any:
    """Runs the call and returns the node's value; `spec.on_event` gets the events before it returns (on the Run
    stream; without `on_event` the call is answered whole, whole.py)."""
    # a retried call (SPEC S8) is followed on the stream: a broken stream follows the attempt its last Started named
    if spec.on_event is None and not spec.request.max_retries:
        attempts = Attempts(spec)
        while True:
            try:
                # blocking: no thread per call (a future spins one); an interrupt (KeyboardInterrupt) leaves the
                # call, which grpc cancels as it drops it, and the server gives its claim back
                res = stub.RunWhole(attempts.request, metadata=metadata)
            except grpc.RpcError as err:
                what = attempts.failed(err)
                if what is STREAM_INSTEAD:
                    break
                if what is not None:
                    raise what from None  # type: ignore[misc]
                time.sleep(attempts.delay())
                continue
            return attempts.value(res)
    with RunStream(stub, spec, metadata) as stream:
        for item in stream:
            if isinstance(item, Result):
                return item.value
            if spec.on_event is not None:
                spec.on_event(item)
    raise AssertionError("unreachable: a RunStream ends with a Result or raises")
