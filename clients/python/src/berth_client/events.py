"""The WatchEvents stream for the sync client: an iterator of typed Events, closable from any thread."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2
from .errors import Unavailable, from_rpc_error
from .snapshots import Event
from .watchdog import Watched

ENDED_BY_SERVER = "event stream ended by the server (draining or stopped); call events() again once it is back"


class Reopen:
    """How an event stream that never reached a leader (a standby's answer, a refused connection; servers.py,
    SPEC S7) is opened again: `retry(call, err, attempt)` the wait in seconds or None, `open()` the new call."""

    def __init__(self, retry: Callable[[Any, object, int], float | None], open: Callable[[], Any]) -> None:
        self.retry, self.open = retry, open


class EventStream:
    """Iterator over WatchEvents as `Event`s; `close()` (or leaving `with`) ends it, from any thread.

    Iteration ends quietly (StopIteration) only after `close()`. When the server ends the stream
    (draining, stopped, connection lost) `next()` raises Unavailable, or the BerthError for the
    status the server sent.
    """

    def __init__(self, call: Any, reopen: Reopen | None = None) -> None:
        self._call = call
        self._responses: Watched[placement_pb2.WatchEventsResponse] = Watched(call)
        self._closed = False
        self._reopen = reopen
        self._got = False
        self._attempt = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._closed:
            raise StopIteration
        while True:
            try:
                event = Event.from_proto(next(self._responses))
                self._got = True
                return event
            except StopIteration:
                if self._closed:
                    raise
                raise Unavailable(ENDED_BY_SERVER) from None
            except grpc.RpcError as err:
                if self._closed:
                    raise StopIteration from None
                wait = None if self._got or self._reopen is None else self._reopen.retry(self._call, err, self._attempt)
                if wait is None:
                    raise from_rpc_error(err) from None
            self._responses.close()
            time.sleep(wait)
            self._attempt += 1
            assert self._reopen is not None  # wait is None without it
            self._call = self._reopen.open()
            self._responses = Watched(self._call)

    def close(self) -> None:
        """Ends the stream; a pending `next()` stops iteration."""
        self._closed = True
        self._call.cancel()
        self._responses.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
