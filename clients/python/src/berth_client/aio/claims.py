"""A claim from the asyncio client: `async with client.claim(...) as grant:` or
`lease = await client.acquire(...)` … `await lease.release()`. The lease lives exactly as long as its
Claim stream (SPEC P8); cancelling the task that waits for (or holds) it cancels the stream, and the
server gives the allocation back."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

import grpc

from .._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from ..decode import warn_clamped
from ..errors import BerthError, NodeTimeout, from_rpc_error
from ..preempt_state import heard, tell
from ..prepare import ClaimSpec
from ..values import Grant, Preempting, Queued
from ..views import GrantFields
from .streams import CallEnded, Reader, send

_RELEASED = object()  # the watcher saw Released


async def _first_of(timeout: float | None, *events: asyncio.Event) -> None:
    """Returns once any of `events` is set, or after `timeout` s (None: no bound)."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


class AsyncClaimLease(GrantFields):
    """One claim (not reusable). Once granted, `grant` and its fields (`claim_id`, `machine`,
    `remote`, `allocation`, `clamped`) are readable here, and the lease can be passed as `run(claim=lease)`."""

    def __init__(
        self, stub: placement_pb2_grpc.PlacementServiceStub, spec: ClaimSpec, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        self._stub = stub
        self._spec = spec
        self._metadata = metadata
        self._call: Any = None
        self._reader: Reader | None = None
        self.grant: Grant | None = None
        self._done = False
        self._answered = False  # the current stream got a message (it reached the leader)
        self.preempted: Preempting | None = None
        """The notice, once a higher-priority claim preempts this one (SPEC Q2); None until then."""
        self._told = asyncio.Event()
        self.requeued: Queued | None = None
        """While a preempted claim waits again at its place (SPEC Q2, on_preempt "requeue"): its Queued; else None."""
        self._holding = False
        self._settled = asyncio.Event()  # set while it holds a grant, and once its stream ended
        self._stream_over = asyncio.Event()  # set once its stream ended
        self._lease_watch: asyncio.Future[object] | None = None

    def _hear(self, msg: placement_pb2.ClaimResponse) -> str | None:
        """Keeps a Preempting notice (SPEC Q2) of a held lease's stream; returns the message's kind."""
        kind, change = heard(self, msg)
        if change in ("doomed", "requeued"):  # the grant is going: wait_granted() waits for the next one (or the end)
            self._holding = False
            self._settled.clear()
        elif change == "regranted":
            self._told.clear()
            self._holding = True
            self._settled.set()
        tell(self, change, self._spec)  # the hooks see the lease as it now is
        if change == "doomed":
            self._told.set()  # wait_preempted() returns once on_preempted has run
        return kind

    async def wait_preempted(self, timeout: float | None = None) -> Preempting | None:
        """Waits for the preemption notice (SPEC Q2) and returns it; None after `timeout` s or once the lease ended
        without one. Checkpoint, then `make_room()` (the claim waits again at its place, on_preempt "requeue") or
        `release()` within its `grace_ms`."""
        await _first_of(timeout, self._told, self._stream_over)
        return self.preempted

    async def make_room(self) -> None:
        """After the preemption notice (SPEC Q2): gives the room back now, not at the grace's end, and waits again at
        the claim's place (`requeued`, then `wait_granted()`); a no-op once it waits again or the lease ended. The
        server refuses it (InvalidAsk naming release.requeue; the lease is lost) when no notice came or the claim
        asked on_preempt "cancel"."""
        try:
            await self._call.write(placement_pb2.ClaimRequest(release=placement_pb2.Release(requeue=True)))
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # the stream ended first: the lease's watcher hears how

    async def wait_granted(self, timeout: float | None = None) -> Grant | None:
        """Returns the grant the lease holds: at once while it holds one no preemption notice has doomed; after a
        notice (SPEC Q2), the next grant once the claim was given back and granted again, or None after `timeout` s
        or when the lease ended meanwhile."""
        await _first_of(timeout, self._settled)
        return self.grant if self._holding else None

    async def _watch_lease(self) -> object:
        """Reads the held lease's stream: keeps a Preempting notice; returns _RELEASED at Released, None at an OK
        end, or the grpc.RpcError it ended with."""
        assert self._reader is not None
        try:
            while (msg := await self._reader.read()) is not None:
                if self._hear(msg) == "released":
                    return _RELEASED
            return None
        except grpc.RpcError as err:
            return err
        finally:
            self._holding = False
            self._settled.set()
            self._stream_over.set()

    async def acquire(self) -> Grant:
        """Waits until granted. Raises NoWorker, Oversize, InvalidAsk, NodeTimeout (timeout), Unavailable…"""
        if self._call is not None:
            raise RuntimeError("a claim is acquired once; call client.claim() or acquire() again for a new claim")
        ask = self._spec.ask
        try:
            if self._spec.timeout is None:
                grant = await self._open_until_reached()
            else:
                grant = await asyncio.wait_for(self._open_until_reached(), self._spec.timeout)
        except asyncio.TimeoutError:
            what = f"claim for {ask.node}" if ask.node else "claim"
            raise NodeTimeout(f"{what} not granted within {self._spec.timeout} s") from None
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=ask.label, oversize_fails=self._spec.oversize_fails) from None
        finally:
            if self.grant is None:
                self._abandon()
        self._after_grant()
        return grant

    def _after_grant(self) -> None:
        """Starts reading the held lease's stream (a subclass with its own reader overrides this)."""
        self._lease_watch = asyncio.ensure_future(self._watch_lease())

    async def _open_until_reached(self) -> Grant:
        """Opens the Claim stream and waits for the grant; a stream that never reached a leader (a standby's
        answer, a refused connection; servers.py, SPEC S7) is opened again where the client's Servers say."""
        attempt = 0
        while True:
            self._call = self._stub.Claim(metadata=self._metadata)
            self._reader = Reader(self._call)
            self._answered = False
            try:
                await send(self._call, placement_pb2.ClaimRequest(ask=self._spec.ask))
                return await self._await_grant()
            except (grpc.RpcError, asyncio.InvalidStateError) as raised:
                # a write to a call the server already ended raises InvalidStateError: its status tells why
                err = raised if isinstance(raised, grpc.RpcError) else await self._ended()
                retry = getattr(self._stub, "retry_elsewhere", None)
                wait = None if self._answered or retry is None else retry(self._call, err, attempt)
                if wait is None:
                    raise err from None
            self._call.cancel()
            await asyncio.sleep(wait)
            attempt += 1

    async def _ended(self) -> grpc.RpcError:
        """The status of the current call, which has ended, as the error to raise."""
        return CallEnded(await self._call.code(), await self._call.details())

    async def _await_grant(self) -> Grant:
        assert self._reader is not None
        while (msg := await self._reader.read()) is not None:
            self._answered = True
            kind = msg.WhichOneof("kind")
            if kind == "queued":
                if self._spec.on_queued is not None:
                    self._spec.on_queued(Queued.from_proto(msg.queued))
            elif kind == "granted":
                self.grant = Grant.from_proto(msg.granted)
                self._holding = True
                self._settled.set()
                if self.grant.clamped:
                    warn_clamped(f"claim {self._spec.ask.node or self.grant.claim_id}", self.grant)
                return self.grant
            else:
                raise BerthError(f"claim stream: unexpected {kind!r} before the grant")
        raise BerthError("claim stream ended before a grant")

    def _abandon(self) -> None:
        """Cancels the stream: the server gives back whatever it held (SPEC P8)."""
        self._done = True
        if self._call is not None:
            self._call.cancel()

    async def release(self) -> None:
        """Sends Release and waits for Released; idempotent. Raises the mapped BerthError (e.g. WorkerGone, or
        Preempted when berth released it at the end of a preemption's grace) when the lease was already lost; the
        server has given it back either way."""
        if self._done or self._reader is None or self._lease_watch is None:
            return
        self._done = True
        try:
            # grpc.aio: a write to a stream whose end arrived unread turns its status into INTERNAL, so the watcher
            # gets one turn of the loop to take an end already here (a narrow race remains; docs/priorities.md)
            await asyncio.sleep(0)
            if not self._lease_watch.done():
                try:
                    await self._call.write(placement_pb2.ClaimRequest(release=placement_pb2.Release()))
                except (grpc.RpcError, asyncio.InvalidStateError):
                    pass  # the server ended the stream first: the watcher hears how
            outcome = await self._lease_watch
            if outcome is _RELEASED:
                await self._finish_quietly()
                return
            if isinstance(outcome, grpc.RpcError):
                raise from_rpc_error(outcome, label=self._spec.ask.label) from None
            if self.requeued is not None:
                return  # released while waiting again (SPEC Q2): nothing was held, the server just ends the stream
            raise BerthError("claim stream ended before the release")
        finally:
            self._call.cancel()  # no-op once the server closed the stream; else gives the claim back

    async def _finish_quietly(self) -> None:
        """Half-closes and reads to the end of the stream the server closes after Released."""
        assert self._reader is not None
        try:
            await self._call.done_writing()
            while await self._reader.read() is not None:
                pass
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass

    async def __aenter__(self) -> Grant:
        return await self.acquire()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self.release()
        elif isinstance(exc, Exception):
            try:
                await self.release()
            except BerthError:
                pass  # the block's own exception matters more; the server released on its side
        else:  # cancelled (or KeyboardInterrupt): end the stream at once, without awaiting
            self._abandon()
