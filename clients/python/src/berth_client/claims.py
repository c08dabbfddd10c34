"""A claim from the sync client: the lease lives exactly as long as its Claim stream (SPEC P8).

`with client.claim(...) as grant:` or `lease = client.acquire(...)` sends the Ask and blocks until
Granted, calling `on_queued(Queued)` for each Queued; `release()` (or leaving the block, exceptions
included) sends Release and waits for Released. `release()` may be called from any thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from .decode import warn_clamped
from .errors import BerthError, NodeTimeout, from_rpc_error
from .preempt_state import heard, tell
from .prepare import ClaimSpec
from .values import Grant, Preempting, Queued
from .views import GrantFields
from .watchdog import Watched

_END = None  # sentinel closing the request stream (half-close)
_RELEASED = object()  # the lease watcher saw Released
_PENDING = object()  # the lease watcher has not seen the end yet


def _drain(requests: queue.SimpleQueue[placement_pb2.ClaimRequest | None]) -> Iterator[placement_pb2.ClaimRequest]:
    """The request stream of one call, read from its own queue until _END (half-close)."""
    while (msg := requests.get()) is not _END:
        yield msg


class ClaimLease(GrantFields):
    """One claim. Use as `with client.claim(...) as grant:`, or `lease = client.acquire(...)` then
    `lease.release()`. Once granted, `grant` and its fields (`claim_id`, `machine`, `remote`,
    `allocation`, `clamped`) are readable here too, and the lease can be passed as `run(claim=lease)`."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: ClaimSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        self._stub = stub
        self._spec = spec
        self._metadata = metadata
        self._requests: queue.SimpleQueue[placement_pb2.ClaimRequest | None] = queue.SimpleQueue()
        self._call: Any = None
        self._responses: Watched[placement_pb2.ClaimResponse] | None = None
        self._expired = threading.Event()
        self._lock = threading.Lock()  # orders the grant against the timeout, and releases
        self.grant: Grant | None = None
        self._done = False
        self._answered = False  # the current stream got a message (it reached the leader)
        self.preempted: Preempting | None = None
        """The notice, once a higher-priority claim preempts this one (SPEC Q2); None until then."""
        self._told = threading.Event()
        self.requeued: Queued | None = None
        """While a preempted claim waits again at its place (SPEC Q2, on_preempt "requeue"): its Queued; else None."""
        self._holding = threading.Event()  # set while the lease holds a grant
        self._settled = threading.Event()  # set while it holds a grant, and once its stream ended
        self._outcome: object = _PENDING  # what the watcher saw end the held lease
        self._watched = threading.Event()

    def _after_grant(self) -> None:
        """Starts reading the held lease's stream (a subclass with its own reader overrides this)."""
        threading.Thread(target=self._watch_lease, name="berth-lease-watch", daemon=True).start()

    def _hear(self, msg: placement_pb2.ClaimResponse) -> str | None:
        """Keeps a Preempting notice (SPEC Q2) of a held lease's stream; returns the message's kind."""
        kind, change = heard(self, msg)
        if change in ("doomed", "requeued"):  # the grant is going: wait_granted() waits for the next one (or the end)
            self._holding.clear()
            self._settled.clear()
        elif change == "regranted":
            self._told.clear()
            self._holding.set()
            self._settled.set()
        tell(self, change, self._spec)  # the hooks see the lease as it now is
        if change == "doomed":
            self._told.set()  # wait_preempted() returns once on_preempted has run
        return kind

    def wait_preempted(self, timeout: float | None = None) -> Preempting | None:
        """Blocks until the preemption notice (SPEC Q2), the lease's end or `timeout` s; returns it, or None without
        one. Checkpoint, then `make_room()` (the claim waits again at its place, on_preempt "requeue") or `release()`
        within its `grace_ms`."""
        self._told.wait(timeout)
        return self.preempted

    def make_room(self) -> None:
        """After the preemption notice (SPEC Q2): gives the room back now, not at the grace's end, and waits again at
        the claim's place (`requeued`, then `wait_granted()`). The server refuses it (InvalidAsk naming
        release.requeue; the lease is lost) when no notice came or the claim asked on_preempt "cancel"."""
        self._requests.put(placement_pb2.ClaimRequest(release=placement_pb2.Release(requeue=True)))

    def wait_granted(self, timeout: float | None = None) -> Grant | None:
        """Returns the grant the lease holds: at once while it holds one no preemption notice has doomed; after a
        notice (SPEC Q2), the next grant once the claim was given back and granted again, or None after `timeout` s
        or when the lease ended meanwhile (released, or preempted with on_preempt "cancel")."""
        self._settled.wait(timeout)
        return self.grant if self._holding.is_set() else None

    def _watch_lease(self) -> None:
        """Reads the held lease's stream in its own thread: keeps a Preempting notice; ends at Released
        (_RELEASED), an OK end (None) or the grpc.RpcError the stream ended with."""
        assert self._responses is not None
        outcome: object = None
        try:
            for msg in self._responses:
                if self._hear(msg) == "released":
                    outcome = _RELEASED
                    break
        except grpc.RpcError as err:
            outcome = err
        self._outcome = outcome
        self._holding.clear()
        self._settled.set()
        self._told.set()  # wait_preempted() returns (None without a notice): the lease ended
        self._watched.set()

    def _request_stream(self) -> Iterator[placement_pb2.ClaimRequest]:
        return _drain(self._requests)  # bound to this stream's queue: a stream opened again gets a new one

    def _expire(self) -> None:
        with self._lock:
            if self.grant is not None:
                return
            self._expired.set()
        if self._call is not None:
            self._call.cancel()

    def acquire(self) -> Grant:
        """Blocks until granted. Raises NoWorker, Oversize, InvalidAsk, NodeTimeout (timeout), Unavailable…"""
        if self._call is not None:
            raise RuntimeError("a claim is acquired once; call client.claim() or acquire() again for a new claim")
        ask = self._spec.ask
        timeout = self._spec.timeout
        timer = threading.Timer(timeout, self._expire) if timeout is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            grant = self._open_until_reached()
            with self._lock:
                if not self._expired.is_set():
                    self.grant = grant
                    self._holding.set()
                    self._settled.set()
                    if grant.clamped:
                        warn_clamped(f"claim {ask.node or grant.claim_id}", grant)
                    self._after_grant()
                    return grant
            raise self._timed_out()
        except grpc.RpcError as err:
            if self._expired.is_set():
                raise self._timed_out() from None
            raise from_rpc_error(err, label=ask.label, oversize_fails=self._spec.oversize_fails) from None
        finally:
            if timer is not None:
                timer.cancel()
            if self.grant is None:
                self._abandon()

    def _open_until_reached(self) -> Grant:
        """Opens the Claim stream and waits for the grant; a stream that never reached a leader (a standby's
        answer, a refused connection; servers.py, SPEC S7) is opened again where the client's Servers say."""
        attempt = 0
        while True:
            self._requests.put(placement_pb2.ClaimRequest(ask=self._spec.ask))
            self._call = self._stub.Claim(self._request_stream(), metadata=self._metadata)
            self._responses = Watched(self._call)
            self._answered = False
            try:
                return self._await_grant()
            except grpc.RpcError as err:
                retry = getattr(self._stub, "retry_elsewhere", None)
                wait = None if self._answered or retry is None else retry(self._call, err, attempt)
                if wait is None or self._expired.is_set():
                    raise
            self._call.cancel()
            self._responses.close()
            self._requests.put(_END)
            self._requests = queue.SimpleQueue()
            time.sleep(wait)
            attempt += 1

    def _timed_out(self) -> NodeTimeout:
        what = f"claim for {self._spec.ask.node}" if self._spec.ask.node else "claim"
        return NodeTimeout(f"{what} not granted within {self._spec.timeout} s")

    def _await_grant(self) -> Grant:
        assert self._responses is not None
        for msg in self._responses:
            self._answered = True
            kind = msg.WhichOneof("kind")
            if kind == "queued":
                if self._spec.on_queued is not None:
                    self._spec.on_queued(Queued.from_proto(msg.queued))
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
        if self._responses is not None:
            self._responses.close()
        self._requests.put(_END)

    def release(self) -> None:
        """Sends Release and waits for Released; idempotent, callable from any thread.

        Raises the mapped BerthError (e.g. WorkerGone, or Preempted when berth released it at the end of a
        preemption's grace) when the lease was already lost; the server has given the allocation back either way.
        """
        with self._lock:
            if self._done or self._responses is None:
                return
            self._done = True
        self._requests.put(placement_pb2.ClaimRequest(release=placement_pb2.Release()))
        try:
            self._watched.wait()
            if self._outcome is _RELEASED:
                self._requests.put(_END)
                self._finish_quietly()
                return
            if isinstance(self._outcome, grpc.RpcError):
                raise from_rpc_error(self._outcome, label=self._spec.ask.label) from None
            if self.requeued is not None:
                return  # released while waiting again (SPEC Q2): nothing was held, the server just ends the stream
            raise BerthError("claim stream ended without acknowledging the release")
        finally:
            self._requests.put(_END)

    def _finish_quietly(self) -> None:
        """Reads to the end of the stream the server closes after Released; the release is done."""
        assert self._responses is not None
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError:
            pass

    def __enter__(self) -> Grant:
        return self.acquire()

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
