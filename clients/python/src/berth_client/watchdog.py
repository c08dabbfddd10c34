"""A streaming call's responses that are never waited on forever (issue 14 item 6).

grpcio (1.85) can block for ever in a response iterator when the call already ended, e.g. with
UNAVAILABLE while the server drains: the receive operation it waits for is never completed. So the
responses are read by a daemon thread into a queue, and the caller's thread waits on that queue
and on `call.done()`: once the call is done, `settle` seconds without a message end the iteration
from the call's own status (StopIteration for OK, else the call — a grpc.RpcError — is raised).
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import grpc

T = TypeVar("T")
SETTLE_S = 2.0  # s to wait for messages still in flight once the call is done
_MSG, _END, _ERR, _DONE = range(4)


class Watched(Generic[T]):
    """Iterator over a grpc streaming call's responses (sync API) with the watchdog above."""

    def __init__(self, call: Any, settle: float = SETTLE_S) -> None:
        self._call = call
        self._settle = settle
        self._queue: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self._done = threading.Event()
        self._ended: BaseException | None = None
        self._started = False
        self._lock = threading.Lock()

    def _on_done(self, _call: object) -> None:
        self._done.set()
        self._queue.put((_DONE, None))

    def _read(self) -> None:
        try:
            for msg in self._call:
                self._queue.put((_MSG, msg))
            self._queue.put((_END, None))
        except BaseException as err:  # grpc.RpcError, or anything the iterator raised: handed over
            self._queue.put((_ERR, err))

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._call.add_done_callback(self._on_done)
        threading.Thread(target=self._read, name="berth-stream-reader", daemon=True).start()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._ended is not None:
            raise self._ended
        self._start()
        while True:
            try:
                kind, item = self._queue.get(timeout=self._settle if self._done.is_set() else None)
            except queue.Empty:  # done, yet the iterator neither ended nor delivered: grpcio's hang
                self._ended = StopIteration() if self._call.code() == grpc.StatusCode.OK else self._call
                raise self._ended from None
            if kind == _MSG:
                msg: T = item
                return msg
            if kind == _END:
                self._ended = StopIteration()
                raise self._ended
            if kind == _ERR:
                self._ended = item
                raise item
