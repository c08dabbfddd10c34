"""A claim as a context manager: the lease lives exactly as long as its Claim stream (SPEC P8).

`__enter__` sends the Ask and blocks until Granted, calling `on_queued(Queued)` for each Queued;
`__exit__` sends Release and waits for Released, on every exit of the block, exceptions included.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType

import grpc

from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc, resources_pb2
from .errors import BerthError, NodeTimeout, from_rpc_error
from .values import Grant, Queued

_END = None  # sentinel closing the request stream (half-close)


class ClaimLease:
    """One claim; use as `with client.claim(...) as grant:`. Not reusable."""

    def __init__(
        self,
        stub: placement_pb2_grpc.PlacementServiceStub,
        ask: resources_pb2.Ask,
        metadata: Sequence[tuple[str, str]],
        on_queued: Callable[[Queued], object] | None = None,
        timeout: float | None = None,
    ) -> None:
        """`timeout` (s) bounds the wait for the grant, not the lease; None waits for ever."""
        self._stub = stub
        self._ask = ask
        self._metadata = tuple(metadata)
        self._on_queued = on_queued
        self._timeout = timeout
        self._requests: queue.Queue[placement_pb2.ClaimRequest | None] = queue.Queue()
        self._call: grpc.Call | None = None
        self._responses: Iterator[placement_pb2.ClaimResponse] = iter(())
        self._expired = threading.Event()
        self._lock = threading.Lock()  # orders the grant against the timeout (never both)
        self.grant: Grant | None = None
        self._done = False

    def _request_stream(self) -> Iterator[placement_pb2.ClaimRequest]:
        while True:
            msg = self._requests.get()
            if msg is _END:
                return
            yield msg

    def _expire(self) -> None:
        with self._lock:
            if self.grant is not None:
                return
            self._expired.set()
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> Grant:
        """Blocks until granted. Raises NoWorker, InvalidAsk, NodeTimeout (timeout), Unavailable…"""
        if self._call is not None:
            raise RuntimeError("a ClaimLease is entered once; call client.claim() again for a new claim")
        self._requests.put(placement_pb2.ClaimRequest(ask=self._ask))
        call = self._stub.Claim(self._request_stream(), metadata=self._metadata)
        self._call, self._responses = call, call
        timer = threading.Timer(self._timeout, self._expire) if self._timeout is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            grant = self._await_grant()
            with self._lock:
                if not self._expired.is_set():
                    self.grant = grant
                    return grant
            raise self._timed_out()
        except grpc.RpcError as err:
            if self._expired.is_set():
                raise self._timed_out() from None
            raise from_rpc_error(err, label=self._ask.label) from None
        finally:
            if timer is not None:
                timer.cancel()
            if self.grant is None:
                self._abandon()

    def _timed_out(self) -> NodeTimeout:
        return NodeTimeout(f"claim for {self._ask.node or 'node'} not granted within {self._timeout} s")

    def _await_grant(self) -> Grant:
        for msg in self._responses:
            kind = msg.WhichOneof("kind")
            if kind == "queued":
                if self._on_queued is not None:
                    self._on_queued(Queued.from_proto(msg.queued))
            elif kind == "granted":
                return Grant.from_proto(msg.granted)
            else:
                raise BerthError(f"claim stream: unexpected {kind!r} before the grant")
        raise BerthError("claim stream ended before a grant")

    def _abandon(self) -> None:
        """Cancels the stream: the server gives back whatever it held (SPEC P8)."""
        self._done = True
        if self._call is not None:
            self._call.cancel()
        self._requests.put(_END)

    def release(self) -> None:
        """Sends Release and waits for Released. Idempotent.

        Raises the mapped BerthError (e.g. WorkerGone) when the lease was already lost; the
        server has given the allocation back either way.
        """
        if self._done:
            return
        self._done = True
        self._requests.put(placement_pb2.ClaimRequest(release=placement_pb2.Release()))
        try:
            for msg in self._responses:
                if msg.WhichOneof("kind") == "released":
                    self._requests.put(_END)
                    self._finish_quietly()
                    return
            raise BerthError("claim stream ended without acknowledging the release")
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=self._ask.label) from None
        finally:
            self._requests.put(_END)

    def _finish_quietly(self) -> None:
        """Reads to the end of the stream the server closes after Released; the release is done."""
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError:
            pass

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.release()
            return
        try:
            self.release()
        except BerthError:
            pass  # the block's own exception matters more; the server released on its side
        except BaseException:
            self._abandon()
            raise
