"""A streaming call's responses that are never waited on forever (issue 14 item 6).

grpcio (1.85) can block for ever in a response iterator when the call already ended, e.g. with
UNAVAILABLE while the server drains: the receive operation it waits for is never completed. So the
responses are read by a daemon thread into a small buffer (at most BUFFER messages ahead, so a
caller that lags still holds the server back), and the caller's thread waits on that buffer and
on the call's end (`add_done_callback`): once the call is done, `settle` seconds without a message
end the iteration from the call's own status (StopIteration for OK, else the call — a
grpc.RpcError — is raised).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import grpc

T = TypeVar("T")
SETTLE_S = 2.0  # s to wait for messages still in flight once the call is done
BUFFER = 64  # messages read ahead of the caller
_MSG, _END, _ERR = range(3)


class Watched(Generic[T]):
    """Iterator over a grpc streaming call's responses (sync API) with the watchdog above;
    `close()` stops the reader (call it after cancelling the call)."""

    def __init__(self, call: Any, settle: float = SETTLE_S) -> None:
        self._call = call
        self._settle = settle
        self._cond = threading.Condition()
        self._items: deque[tuple[int, Any]] = deque()
        self._done = False  # the call has its status
        self._closed = False
        self._started = False
        self._ended: BaseException | None = None

    def _on_done(self, _call: object) -> None:
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def _push(self, kind: int, item: Any) -> bool:
        with self._cond:
            self._cond.wait_for(lambda: len(self._items) < BUFFER or self._closed)
            if self._closed:
                return False
            self._items.append((kind, item))
            self._cond.notify_all()
            return True

    def _read(self) -> None:
        try:
            for msg in self._call:
                if not self._push(_MSG, msg):
                    return
            self._push(_END, None)
        except BaseException as err:  # grpc.RpcError, or anything the iterator raised: handed over
            self._push(_ERR, err)

    def _start(self) -> None:
        with self._cond:
            if self._started:
                return
            self._started = True
        self._call.add_done_callback(self._on_done)
        threading.Thread(target=self._read, name="berth-stream-reader", daemon=True).start()

    def close(self) -> None:
        """Stops the reader thread waiting for room (the call itself is cancelled by its owner)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._ended is not None:
            raise self._ended
        self._start()
        with self._cond:
            while not self._items:
                if self._done:
                    if not self._cond.wait_for(lambda: bool(self._items), self._settle):
                        # done, yet the iterator neither ended nor delivered: grpcio's hang
                        ok = self._call.code() == grpc.StatusCode.OK
                        self._ended = StopIteration() if ok else self._call
                        raise self._ended
                else:
                    self._cond.wait()
            kind, item = self._items.popleft()
            self._cond.notify_all()
        if kind == _MSG:
            msg: T = item
            return msg
        self._ended = StopIteration() if kind == _END else item
        raise self._ended
