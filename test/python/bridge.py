"""Test support: the blocking `Client` surface over a `berth_client.aio.AsyncClient`, so every
behaviour test runs against both clients unchanged (parametrised, not copied).

The AsyncClient lives on one event loop in a daemon thread; each method submits the coroutine
there and waits for it. Callbacks (on_queued, on_event) run on that loop's thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from berth_client.aio import AsyncClaimLease, AsyncClient, AsyncEventStream, AsyncRunStream

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="bridge-loop", daemon=True).start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs `coro` on the loop and returns (or raises) its outcome."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


_loop: LoopThread | None = None


def loop_thread() -> LoopThread:
    """The one bridge loop of this test session."""
    global _loop
    if _loop is None:
        _loop = LoopThread()
    return _loop


async def _make(address: str, kwargs: dict[str, Any]) -> AsyncClient:
    return AsyncClient(address, **kwargs)


async def _next(stream: Any) -> Any:
    return await stream.__anext__()


class BridgedIterator:
    """An async iterator (run stream, events) as a blocking iterator; `close()` from any thread."""

    def __init__(self, lt: LoopThread, stream: AsyncRunStream | AsyncEventStream) -> None:
        self._lt, self._stream = lt, stream

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return self._lt.call(_next(self._stream))
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        self._lt.loop.call_soon_threadsafe(self._stream.close)

    def __enter__(self) -> BridgedIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:  # started, clamped, value
        return getattr(self._stream, name)


class BridgedLease:
    """An AsyncClaimLease as a blocking lease: `with`, acquire(), release(), grant fields."""

    def __init__(self, lt: LoopThread, lease: AsyncClaimLease) -> None:
        self._lt, self._lease = lt, lease

    def __enter__(self) -> Any:
        return self._lt.call(self._lease.__aenter__())

    def __exit__(self, *exc: Any) -> None:
        self._lt.call(self._lease.__aexit__(*exc))

    def acquire(self) -> Any:
        return self._lt.call(self._lease.acquire())

    def release(self) -> None:
        self._lt.call(self._lease.release())

    def wait_preempted(self, timeout: float | None = None) -> Any:
        return self._lt.call(self._lease.wait_preempted(timeout))

    def make_room(self) -> None:
        self._lt.call(self._lease.make_room())

    def wait_granted(self, timeout: float | None = None) -> Any:
        return self._lt.call(self._lease.wait_granted(timeout))

    def __getattr__(self, name: str) -> Any:  # grant, claim_id, machine, allocation, …
        return getattr(self._lease, name)


class BridgedClient:
    """`Client`'s surface, served by an AsyncClient."""

    def __init__(self, address: str, **kwargs: Any) -> None:
        self._lt = loop_thread()
        self.aclient = self._lt.call(_make(address, kwargs))
        self.address = self.aclient.address

    def __enter__(self) -> BridgedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._lt.call(self.aclient.close())

    def claim(self, *args: Any, **kwargs: Any) -> BridgedLease:
        return BridgedLease(self._lt, self.aclient.claim(*args, **kwargs))

    def acquire(self, *args: Any, **kwargs: Any) -> BridgedLease:
        return BridgedLease(self._lt, self._lt.call(self.aclient.acquire(*args, **kwargs)))

    def claim_group(self, *args: Any, **kwargs: Any) -> BridgedLease:
        return BridgedLease(self._lt, self.aclient.claim_group(*args, **kwargs))  # type: ignore[arg-type]

    def acquire_group(self, *args: Any, **kwargs: Any) -> BridgedLease:
        return BridgedLease(self._lt, self._lt.call(self.aclient.acquire_group(*args, **kwargs)))  # type: ignore[arg-type]

    def resume_group(self, *args: Any, **kwargs: Any) -> BridgedLease:
        return BridgedLease(self._lt, self._lt.call(self.aclient.resume_group(*args, **kwargs)))  # type: ignore[arg-type]

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._lt.call(self.aclient.run(*args, **kwargs))

    def stream_run(self, *args: Any, **kwargs: Any) -> BridgedIterator:
        return BridgedIterator(self._lt, self.aclient.stream_run(*args, **kwargs))

    def events(self) -> BridgedIterator:
        async def open_events() -> AsyncEventStream:
            return self.aclient.events()

        return BridgedIterator(self._lt, self._lt.call(open_events()))

    def history(self, *args: Any, **kwargs: Any) -> Any:
        return self._lt.call(self.aclient.history(*args, **kwargs))

    def cancel(self, run_id: Any) -> Any:
        return self._lt.call(self.aclient.cancel(run_id))

    def satisfiable(self, *args: Any, **kwargs: Any) -> Any:
        return self._lt.call(self.aclient.satisfiable(*args, **kwargs))

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        return self._lt.call(self.aclient.compile(*args, **kwargs))

    def snapshot(self) -> Any:
        return self._lt.call(self.aclient.snapshot())
