"""Gang claims from the asyncio client (docs/groups.md, rules G1–G5): `async with client.claim_group(...) as group:`
or `lease = await client.acquire_group(...)` … `await lease.release()`. One stream is one lease for every member;
cancelling the task that waits for (or holds) it cancels the stream, and the server gives every member back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import Any

import grpc

from .._proto.berth.v1 import groups_pb2, placement_pb2_grpc
from ..errors import BerthError, NodeTimeout, from_rpc_error, from_status
from ..groups import GroupGrant, GroupMember, GroupQueued
from .streams import Reader, send


class AsyncGroupLease:
    """One group lease (not reusable); `grant` is the GroupGrant once every member is granted."""

    def __init__(
        self,
        stub: placement_pb2_grpc.PlacementServiceStub,
        request: groups_pb2.ClaimGroupRequest,
        metadata: tuple[tuple[str, str], ...],
        on_queued: Callable[[GroupQueued], object] | None = None,
        timeout: float | None = None,
    ) -> None:
        self._stub, self._request, self._metadata = stub, request, metadata
        self._on_queued, self._timeout = on_queued, timeout
        self._call: Any = None
        self._reader: Reader | None = None
        self._done = False
        self.grant: GroupGrant | None = None

    @property
    def members(self) -> tuple[GroupMember, ...]:
        """The granted members, in the order asked (empty before the grant)."""
        return self.grant.members if self.grant else ()

    async def acquire(self) -> GroupGrant:
        """Waits until every member is granted. Raises InvalidAsk, FailedPrecondition (naming members[i] and the
        dimension), NodeTimeout (timeout), Unavailable…"""
        if self._call is not None:
            raise RuntimeError("a group is acquired once; call client.claim_group() again for a new one")
        try:
            if self._timeout is None:
                return await self._open()
            return await asyncio.wait_for(self._open(), self._timeout)
        except asyncio.TimeoutError:
            raise NodeTimeout(f"group not granted within {self._timeout} s") from None
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        except asyncio.InvalidStateError:  # the server ended the call before the ask was written
            call: Any = self._call
            raise from_status(await call.code(), await call.details()) from None
        finally:
            if self.grant is None:
                self._abandon()

    async def _open(self) -> GroupGrant:
        self._call = self._stub.ClaimGroup(metadata=self._metadata)
        self._reader = Reader(self._call)
        await send(self._call, self._request)
        while (msg := await self._reader.read()) is not None:
            kind = msg.WhichOneof("kind")
            if kind == "queued":
                if self._on_queued is not None:
                    self._on_queued(GroupQueued.from_proto(msg.queued))
            elif kind == "granted":
                self.grant = GroupGrant.from_proto(msg.granted)
                return self.grant
            else:
                raise BerthError(f"group stream: unexpected {kind!r} before the grant")
        raise BerthError("group stream ended before a grant")

    def _abandon(self) -> None:
        self._done = True
        if self._call is not None:
            self._call.cancel()

    async def release(self) -> None:
        """Sends GroupRelease and waits for GroupReleased; idempotent. Raises the mapped BerthError when the lease
        was already lost (a member's machine went away); every member is given back either way."""
        if self._done or self._reader is None:
            return
        self._done = True
        try:
            await self._call.write(groups_pb2.ClaimGroupRequest(release=groups_pb2.GroupRelease()))
            while (msg := await self._reader.read()) is not None:
                if msg.WhichOneof("kind") == "released":
                    await self._call.done_writing()
                    while await self._reader.read() is not None:
                        pass
                    return
            raise BerthError("group stream ended without acknowledging the release")
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        except asyncio.InvalidStateError:
            code, details = await self._call.code(), await self._call.details()
            if code == grpc.StatusCode.OK:
                return
            raise from_status(code, details) from None
        finally:
            self._call.cancel()

    async def __aenter__(self) -> GroupGrant:
        return await self.acquire()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self.release()
            return
        try:
            await self.release()
        except BerthError:
            pass
        except BaseException:
            self._abandon()
            raise
