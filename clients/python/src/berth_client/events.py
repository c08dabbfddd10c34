"""The WatchEvents stream for the sync client: an iterator of typed Events, closable from any thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2
from .errors import Unavailable, from_rpc_error
from .snapshots import Event
from .watchdog import Watched

ENDED_BY_SERVER = "event stream ended by the server (draining or stopped); call events() again once it is back"


class EventStream:
    """Iterator over WatchEvents as `Event`s; `close()` (or leaving `with`) ends it, from any thread.

    Iteration ends quietly (StopIteration) only after `close()`. When the server ends the stream
    (draining, stopped, connection lost) `next()` raises Unavailable, or the BerthError for the
    status the server sent.
    """

    def __init__(self, call: Any) -> None:
        self._call = call
        self._responses: Watched[placement_pb2.WatchEventsResponse] = Watched(call)
        self._closed = False

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._closed:
            raise StopIteration
        try:
            return Event.from_proto(next(self._responses))
        except StopIteration:
            if self._closed:
                raise
            raise Unavailable(ENDED_BY_SERVER) from None
        except grpc.RpcError as err:
            if self._closed:
                raise StopIteration from None
            raise from_rpc_error(err) from None

    def close(self) -> None:
        """Ends the stream; a pending `next()` stops iteration."""
        self._closed = True
        self._call.cancel()
        self._responses.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
