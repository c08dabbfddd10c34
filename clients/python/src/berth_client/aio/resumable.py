"""An asyncio claim asked with `hold=S` (SPEC S3): when its Claim stream breaks (UNAVAILABLE: a server
restart, a cut link) the lease takes the claim back by itself, with backoff and jitter, for up to S
seconds; the claim keeps its id and allocation, so an `async with client.claim(..., hold=S)` block lives
through it. The same design as the sync `ResumableClaimLease`, with a task watching the stream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import grpc

from .._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from ..claim_resume import backoff, claim_lost, code_of, resume_request, worth_resuming
from ..errors import BerthError, ClaimLost, from_rpc_error
from ..prepare import ClaimSpec
from ..values import Grant
from .claims import AsyncClaimLease
from .streams import Reader, send

_RELEASE = placement_pb2.ClaimRequest(release=placement_pb2.Release())


class AsyncResumableClaimLease(AsyncClaimLease):
    """An AsyncClaimLease whose claim outlives a broken stream for its hold. `resumes` counts the times
    it was taken back; `await release()` raises ClaimLost when it could not be."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: ClaimSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        super().__init__(stub, spec, metadata)
        self._hold_s = spec.ask.hold_ms / 1000
        self._releasing = False
        self._watcher: asyncio.Task[BerthError | None] | None = None
        self.resumes = 0

    async def acquire(self) -> Grant:
        """Waits until granted (as AsyncClaimLease.acquire), then watches the stream to resume it."""
        grant = await super().acquire()
        self._watcher = asyncio.create_task(self._watch_to_end())
        return grant

    async def _watch_to_end(self) -> BerthError | None:
        """`_watch`, then the lease holds nothing (`wait_granted` returns None from then on)."""
        try:
            return await self._watch()
        finally:
            self._holding = False
            self._settled.set()
            self._stream_over.set()

    def _after_grant(self) -> None:
        """This lease reads its stream with its own watcher (which also resumes it), not the plain lease's."""

    async def _watch(self) -> BerthError | None:
        """Reads the stream to its end, resuming it when it breaks: None once Released, else the error."""
        while True:
            assert self._reader is not None
            try:
                while (msg := await self._reader.read()) is not None:
                    if self._hear(msg) == "released":
                        return None
                return None if self._releasing else BerthError("claim stream ended without a release")
            except grpc.RpcError as err:
                released_before = self._releasing  # Release sent before the break: it may have been done
                code, details = code_of(err)
                if not worth_resuming(code, details):
                    return from_rpc_error(err, label=self._spec.ask.label)
                try:
                    await self._resume(time.monotonic() + self._hold_s)
                except ClaimLost as lost:
                    # Release sent, then the break: the claim may be given back already, which is the point.
                    return None if released_before else lost
                except BerthError as failed:
                    return failed

    async def _resume(self, deadline: float) -> None:
        """Takes the claim back on a new stream, retrying until `deadline` (monotonic s)."""
        grant = self._held()
        attempt = 0
        while True:
            call: Any = self._stub.Claim(metadata=self._metadata)
            reader = Reader(call)
            try:
                await send(call, resume_request(grant))
                msg = await reader.read()
                if msg is None or msg.WhichOneof("kind") != "granted":
                    raise BerthError("claim stream: no Granted answering a resume")
                old, self._call, self._reader = self._call, call, reader
                old.cancel()
                if self._releasing:
                    await call.write(_RELEASE)
                self.resumes += 1
                return
            except (grpc.RpcError, asyncio.InvalidStateError, BerthError) as err:
                call.cancel()
                code, details = code_of(err)
                if code == grpc.StatusCode.NOT_FOUND:
                    raise claim_lost(grant, f"the server no longer holds it ({details})") from None
                if code is not None and not worth_resuming(code, details):
                    raise from_rpc_error(err, label=self._spec.ask.label) from None
                wait = backoff(attempt)
                attempt += 1
                if time.monotonic() + wait > deadline:
                    raise claim_lost(grant, f"its hold of {self._hold_s:g} s ran out ({details})") from None
                await asyncio.sleep(wait)

    async def release(self) -> None:
        """Sends Release on the current stream and waits for Released, through a resume if the stream
        breaks meanwhile. Idempotent. Raises ClaimLost when the claim could not be taken back after a
        break, or the mapped BerthError (e.g. WorkerGone) when the lease was lost."""
        if self._done or self._watcher is None:
            return
        self._done = True
        self._releasing = True
        with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
            await self._call.write(_RELEASE)  # a broken stream: the watcher sends it again once resumed
        outcome = await self._watcher
        with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
            await self._call.done_writing()
        self._call.cancel()
        if outcome is not None:
            raise outcome

    def _abandon(self) -> None:
        """Stops resuming and cancels the stream (after the grant the server then holds the claim for
        its hold, as for any broken stream)."""
        if self._watcher is not None:
            self._watcher.cancel()
        super()._abandon()
