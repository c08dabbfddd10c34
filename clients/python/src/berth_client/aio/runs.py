"""One call of a node on a worker from the asyncio client: `stream_run()` as an async iterator of
events then one Result, and `run()` on top of it. Cancelling the awaiting task cancels the call (the
server sends the worker a cancel and gives back the claim the call placed)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import grpc

from .._proto.berth.v1 import placement_pb2_grpc
from ..decode import RunDecoder
from ..errors import NotFound, from_rpc_error
from ..prepare import RunSpec
from ..resume import Resumption
from ..values import Result, RunEvent
from ..views import RunOutcome
from ..whole import STREAM_INSTEAD, Attempts
from .streams import Reader


class AsyncRunStream(RunOutcome):
    """`async for item in client.stream_run(...)`: Started, Metric, LogLine in order, then one Result;
    the node's exception or a BerthError is raised by the iteration. `close()` (or leaving
    `async with`) cancels the call. After the stream: `started`, `clamped`, `value`."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: RunSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        self._spec = spec
        self._stub = stub
        self._metadata = metadata
        self._decoder = RunDecoder(spec.request)
        self._resumption = Resumption()
        self._call: Any = None
        self._reader: Reader | None = None
        self._result: Result | None = None
        self._pending: deque[RunEvent] = deque()
        self._finished = False

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> RunEvent | Result:
        if self._pending:
            return self._pending.popleft()
        if self._finished:
            raise StopAsyncIteration
        if self._reader is None:  # the call starts on the first iteration, inside the caller's task
            self._call = self._stub.Run(self._spec.request, metadata=self._metadata)
            self._reader = Reader(self._call)
        while True:
            try:
                while (msg := await self._reader.read()) is not None:
                    self._pending.extend(self._decoder.feed(msg))
                    if self._pending:
                        return self._pending.popleft()
                break
            except grpc.RpcError as err:
                if self._decoder.has_outcome:
                    break
                if self._resumption.should_retry(err):
                    await asyncio.sleep(self._resumption.delay())
                    self._call = self._stub.Run(self._decoder.resume_request(), metadata=self._metadata)
                    self._reader = Reader(self._call)
                    continue
                self.close()
                mapped = from_rpc_error(err, label=self._spec.label, oversize_fails=self._spec.oversize_fails)
                if isinstance(mapped, NotFound) and self._resumption.resumed():
                    mapped = self._resumption.lost(self._decoder.call_id, mapped)
                raise mapped from None
            except BaseException:  # cancelled (or on_event raised): stop the call
                self.close()
                raise
        self.close()
        self._result = self._decoder.result()
        return self._result

    def close(self) -> None:
        """Ends the stream; cancels the call when it is still running."""
        self._finished = True
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> AsyncRunStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


async def execute(
    stub: placement_pb2_grpc.PlacementServiceStub, spec: RunSpec, metadata: tuple[tuple[str, str], ...]
) -> Any:
    """Runs the call and returns the node's value; `spec.on_event` gets the events before it returns (on the Run
    stream; without `on_event` the call is answered whole, whole.py). Cancelling the task cancels the call."""
    # a retried call (SPEC S8) is followed on the stream: a broken stream follows the attempt its last Started named
    if spec.on_event is None and not spec.request.max_retries:
        attempts = Attempts(spec)
        while True:
            try:
                res = await stub.RunWhole(attempts.request, metadata=metadata)
            except grpc.RpcError as err:
                what = attempts.failed(err)
                if what is STREAM_INSTEAD:
                    break
                if what is not None:
                    raise what from None  # type: ignore[misc]
                await asyncio.sleep(attempts.delay())
                continue
            return attempts.value(res)
    stream = AsyncRunStream(stub, spec, metadata)
    try:
        async for item in stream:
            if isinstance(item, Result):
                return item.value
            if spec.on_event is not None:
                spec.on_event(item)
    finally:
        stream.close()
    raise AssertionError("unreachable: a run stream ends with a Result or raises")
