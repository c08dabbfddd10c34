"""A sync claim asked with `hold=S` (SPEC S3): when its Claim stream breaks (UNAVAILABLE: a server restart,
a cut link) the lease takes the claim back by itself, with backoff and jitter, for up to S seconds; the
claim keeps its id and allocation, so a `with client.claim(..., hold=S)` block lives through it.

After the grant a daemon thread watches the stream: Released ends it; a break worth resuming opens a new
stream whose first message is a Resume (claim id + resume token). `release()` sends Release on the
stream of the moment (again on the new one if the stream broke meanwhile) and waits for Released. A
resume answered NOT_FOUND, or a hold that ran out before the server answered, makes `release()` raise
ClaimLost (the allocation is gone).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from .claim_resume import backoff, claim_lost, code_of, resume_request, worth_resuming
from .claims import ClaimLease
from .errors import BerthError, ClaimLost, from_rpc_error
from .prepare import ClaimSpec
from .values import Grant
from .watchdog import Watched

Requests = queue.SimpleQueue[placement_pb2.ClaimRequest | None]


def _drain(requests: Requests) -> Iterator[placement_pb2.ClaimRequest]:
    """The request stream of one call, bound to its own queue (None half-closes)."""
    while (msg := requests.get()) is not None:
        yield msg


class ResumableClaimLease(ClaimLease):
    """A ClaimLease whose claim outlives a broken stream for its hold (see the module). `resumes` counts
    the times it was taken back."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: ClaimSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        super().__init__(stub, spec, metadata)
        self._hold_s = spec.ask.hold_ms / 1000
        self._releasing = False
        self._stopped = threading.Event()  # abandoned: stop resuming
        self._ended = threading.Event()  # the lease is over (released, lost, or abandoned)
        self._outcome: BerthError | None = None
        self.resumes = 0

    def _request_stream(self) -> Iterator[placement_pb2.ClaimRequest]:
        return _drain(self._requests)

    def acquire(self) -> Grant:
        """Blocks until granted (as ClaimLease.acquire), then watches the stream to resume it."""
        grant = super().acquire()
        threading.Thread(target=self._watch, name="berth-claim-holder", daemon=True).start()
        return grant

    def _after_grant(self) -> None:
        """This lease reads its stream with its own watcher (which also resumes it), not the plain lease's."""

    def _watch(self) -> None:
        while True:
            responses = self._responses
            assert responses is not None
            try:
                for msg in responses:
                    if self._hear(msg) == "released":
                        return self._finish(None)
                return self._finish(None if self._releasing else BerthError("claim stream ended without a release"))
            except grpc.RpcError as err:
                released_before = self._releasing  # Release sent before the break: it may have been done
                code, details = code_of(err)
                if self._stopped.is_set():
                    return self._finish(None)
                if not worth_resuming(code, details):
                    return self._finish(from_rpc_error(err, label=self._spec.ask.label))
                try:
                    self._resume(time.monotonic() + self._hold_s)
                except BerthError as lost:
                    # Release sent, then the break: the claim may be given back already, which is the point.
                    return self._finish(None if released_before and isinstance(lost, ClaimLost) else lost)

    def _resume(self, deadline: float) -> None:
        """Takes the claim back on a new stream, retrying until `deadline` (monotonic s)."""
        grant = self._held()
        attempt = 0
        while not self._stopped.is_set():
            requests: Requests = queue.SimpleQueue()
            requests.put(resume_request(grant))
            call: Any = self._stub.Claim(_drain(requests), metadata=self._metadata)
            responses: Watched[placement_pb2.ClaimResponse] = Watched(call)
            try:
                msg = next(responses)
                if msg.WhichOneof("kind") != "granted":
                    raise BerthError(f"claim stream: unexpected {msg.WhichOneof('kind')!r} answering a resume")
                with self._lock:
                    old = self._requests
                    self._requests, self._call, self._responses = requests, call, responses
                    if self._releasing:
                        requests.put(placement_pb2.ClaimRequest(release=placement_pb2.Release()))
                old.put(None)
                self.resumes += 1
                return
            except (grpc.RpcError, StopIteration) as err:
                call.cancel()
                responses.close()
                requests.put(None)
                code, details = code_of(err)
                if code == grpc.StatusCode.NOT_FOUND:
                    raise claim_lost(grant, f"the server no longer holds it ({details})") from None
                if not worth_resuming(code, details) and not isinstance(err, StopIteration):
                    raise from_rpc_error(err, label=self._spec.ask.label) from None
                wait = backoff(attempt)
                attempt += 1
                if time.monotonic() + wait > deadline:
                    raise claim_lost(grant, f"its hold of {self._hold_s:g} s ran out ({details})") from None
                self._stopped.wait(wait)

    def _finish(self, outcome: BerthError | None) -> None:
        self._outcome = outcome
        self._holding.clear()
        self._settled.set()
        self._told.set()  # wait_preempted() returns: the lease ended
        self._ended.set()

    def release(self) -> None:
        """Sends Release on the current stream and waits for Released, through a resume if the stream
        breaks meanwhile. Idempotent. Raises ClaimLost when the claim could not be taken back after a
        break, or the mapped BerthError (e.g. WorkerGone) when the lease was lost."""
        with self._lock:
            if self.grant is None or self._releasing:
                return
            self._releasing = True
            self._done = True
            self._requests.put(placement_pb2.ClaimRequest(release=placement_pb2.Release()))
        self._ended.wait()
        with self._lock:
            self._requests.put(None)
        if self._outcome is not None:
            raise self._outcome

    def _abandon(self) -> None:
        """Before the grant: as ClaimLease. After it: stops resuming and ends the stream (the server
        then holds the claim for its hold, as for any broken stream)."""
        self._stopped.set()
        super()._abandon()
