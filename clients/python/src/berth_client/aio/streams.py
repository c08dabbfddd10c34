"""Reading a grpc.aio streaming call so that a call the server ended is never waited on forever
(issue 14 item 6), and the WatchEvents stream as an async iterator of typed Events.

Each read races the call's own end (`add_done_callback`): once the call is done, a read that has not
delivered within `settle` seconds is abandoned and the call's status ends the stream.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

import grpc

from .._proto.berth.v1 import placement_pb2
from ..errors import Unavailable, from_rpc_error
from ..events import ENDED_BY_SERVER, Reopen
from ..snapshots import Event
from ..watchdog import SETTLE_S


class CallEnded(grpc.RpcError):
    """A call's final status, raised where grpc.aio would have raised (or hung): `code()`, `details()`."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        """The status code."""
        return self._code

    def details(self) -> str:
        """The status message."""
        return self._details


_CORE_STAND_IN = "Internal error from Core"  # grpc.aio's status for a write that core could not send
NOT_SENT = "the message was not sent: the server had ended the stream"
"""The details of `send`'s UNAVAILABLE (servers.py counts it as a call that never reached a leader)."""


async def send(call: Any, message: Any) -> None:
    """Writes `message` on the grpc.aio stream `call`. When the server ends the call while the write is under way
    (a standby refusing a Claim at once, SPEC S7), grpc.aio sets the call's status to INTERNAL "Internal error from
    Core" in place of the server's: core did not send the message. That is raised as CallEnded(UNAVAILABLE,
    NOT_SENT), so a claim or a resume is opened again (where servers.py says) instead of failing as INTERNAL."""
    try:
        await call.write(message)
    except grpc.RpcError as err:
        code, details = err.code(), err.details()
        if code == grpc.StatusCode.INTERNAL and details == _CORE_STAND_IN:
            raise CallEnded(grpc.StatusCode.UNAVAILABLE, f"{NOT_SENT} (grpc: {details})") from None
        raise


class Reader:
    """Messages of a grpc.aio streaming call: `await read()` gives the next message, None at the end
    (status OK), or raises a grpc.RpcError (CallEnded(CANCELLED) once the call was cancelled)."""

    def __init__(self, call: Any, settle: float = SETTLE_S) -> None:
        self._call = call
        self._settle = settle
        loop = asyncio.get_running_loop()
        self._done: asyncio.Future[None] = loop.create_future()

        def mark_done() -> None:
            if not self._done.done():
                self._done.set_result(None)

        def on_done(_call: object) -> None:
            try:
                loop.call_soon_threadsafe(mark_done)
            except RuntimeError:  # the loop is closed: nobody reads any more
                pass

        call.add_done_callback(on_done)

    async def read(self) -> Any:
        """The next message, or None when the call ended with OK."""
        task = asyncio.ensure_future(self._call.read())
        try:
            if not self._done.done():
                await asyncio.wait({task, self._done}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                await asyncio.wait({task}, timeout=self._settle)
        except BaseException:  # this task was cancelled: stop the read (the caller cancels the call)
            task.cancel()
            raise
        if not task.done():  # the call is done, yet the read neither ended nor delivered
            task.cancel()
            code = await self._call.code()
            if code == grpc.StatusCode.OK:
                return None
            raise CallEnded(code, await self._call.details())
        if task.cancelled():
            raise CallEnded(grpc.StatusCode.CANCELLED, "cancelled")
        msg = task.result()
        return None if msg is grpc.aio.EOF else msg


class AsyncEventStream:
    """`async for event in client.events()`: WatchEvents as `Event`s. `close()` (or leaving
    `async with`) ends it quietly; when the server ends it (draining, stopped, connection lost) the
    iteration raises Unavailable, or the BerthError for the status the server sent."""

    def __init__(self, call: Any, reopen: Reopen | None = None) -> None:
        self._call = call
        self._reader = Reader(call)
        self._closed = False
        self._reopen = reopen
        self._got = False
        self._attempt = 0

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> Event:
        if self._closed:
            raise StopAsyncIteration
        while True:
            try:
                msg: placement_pb2.WatchEventsResponse | None = await self._reader.read()
                break
            except grpc.RpcError as err:
                if self._closed:
                    raise StopAsyncIteration from None
                wait = None if self._got or self._reopen is None else self._reopen.retry(self._call, err, self._attempt)
                if wait is None:
                    raise from_rpc_error(err) from None
            await asyncio.sleep(wait)
            self._attempt += 1
            assert self._reopen is not None  # wait is None without it
            self._call = self._reopen.open()
            self._reader = Reader(self._call)
        self._got = True
        if msg is None:
            if self._closed:
                raise StopAsyncIteration
            raise Unavailable(ENDED_BY_SERVER)
        return Event.from_proto(msg)

    def close(self) -> None:
        """Ends the stream; a pending iteration stops."""
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
