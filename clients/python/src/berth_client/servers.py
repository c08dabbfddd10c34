"""Several servers behind one client: the members of an HA cluster (SPEC S7, issue 20), shared by both clients.

`Client("a:50051,b:50051")` opens one channel per address (when first used) and calls the one that answered last.
A standby answers every call UNAVAILABLE `standby of cluster <name>: the leader is at <addr>` with the trailer
`leader: <addr>`: the next call goes to that leader. Any other UNAVAILABLE that is not the call's own ending (a
worker that "went away", a drain) moves the next call on to the next address in turn. A unary call that never
reached a leader (a standby's answer, a refused connection) is tried again at once on the next address, for two
rounds of the list with a short backoff between them; streams are picked up again by their own resume logic
(resumable.py, resume.py), which then dials the address chosen here.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2_grpc

STREAMS = frozenset({"Claim", "ClaimGroup", "Run", "WatchEvents"})
"""The PlacementService methods that stream (their errors come while reading)."""
_NOT_REACHED = (
    "standby of cluster",
    "failed to connect",
    "connection refused",
    "dns resolution failed",
    "message was not sent",  # aio/streams.py NOT_SENT: a write that the server's ending of the stream beat
)
_IN_DETAILS = re.compile(r"the leader is at (\S+?)[.,;)]?$")
_ROUNDS = 2  # rounds of the address list a unary call tries
_FIRST_DELAY_S = 0.1  # backoff before the second round; doubles, jittered


def split_addresses(address: str) -> tuple[str, ...]:
    """The addresses of "a:1,b:2" (blanks dropped); a single address as it is. ValueError when none is left."""
    found = tuple(a.strip() for a in address.split(",") if a.strip())
    if not found:
        raise ValueError(f"address: must name a server, e.g. 127.0.0.1:50051 (got {address!r})")
    return found


def _code_details(err: object) -> tuple[grpc.StatusCode | None, str]:
    code = err.code() if callable(getattr(err, "code", None)) else None  # type: ignore[attr-defined]
    details = err.details() if callable(getattr(err, "details", None)) else ""  # type: ignore[attr-defined]
    return (code if isinstance(code, grpc.StatusCode) else None), (details if isinstance(details, str) else "")


def leader_hint(err: object, trailers: Any = None) -> str | None:
    """The leader a standby's UNAVAILABLE names: its `leader` trailer, else its details; None for any other error."""
    code, details = _code_details(err)
    if code != grpc.StatusCode.UNAVAILABLE:
        return None
    if trailers is None and callable(getattr(err, "trailing_metadata", None)):
        trailers = err.trailing_metadata()  # type: ignore[attr-defined]
    for key, value in trailers or ():
        if key == "leader" and isinstance(value, str) and value:
            return value
    found = _IN_DETAILS.search(details)
    return found.group(1) if found else None


def never_reached(err: object) -> bool:
    """True when a failed call cannot have done anything: a standby refused it, or no connection was made."""
    code, details = _code_details(err)
    return code == grpc.StatusCode.UNAVAILABLE and any(p in details.lower() for p in _NOT_REACHED)


def _moves_on(err: object) -> bool:
    """True for an UNAVAILABLE that says the server is not there (not a worker that went away, not a drain)."""
    code, details = _code_details(err)
    return code == grpc.StatusCode.UNAVAILABLE and "went away" not in details and "draining" not in details


class _Status:
    """A finished grpc.aio call's status, read: `code()` and `details()` as a sync error has them."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class Servers:
    """The stubs of one client, one per address, used in place of a PlacementServiceStub: `servers.GetSnapshot(…)`
    calls the current server (see the module). `make_channel(address)` opens a channel (sync or grpc.aio)."""

    def __init__(self, address: str, make_channel: Callable[[str], Any], aio: bool = False) -> None:
        self.addresses = split_addresses(address)
        self._make_channel = make_channel
        self._aio = aio
        self._channels: dict[str, Any] = {}
        self._stubs: dict[str, placement_pb2_grpc.PlacementServiceStub] = {}
        self._lock = threading.Lock()
        self.current = self.addresses[0]
        """The address the next call goes to: the one that answered last, or the leader a standby named."""

    def _stub(self) -> tuple[str, placement_pb2_grpc.PlacementServiceStub]:
        with self._lock:
            address = self.current
            if address not in self._stubs:
                channel = self._channels[address] = self._make_channel(address)
                stub = placement_pb2_grpc.PlacementServiceStub(channel)  # type: ignore[no-untyped-call]
                self._stubs[address] = stub
            return address, self._stubs[address]

    def failed(self, address: str, err: object, trailers: Any = None) -> None:
        """A call to `address` failed with `err`: a standby's hint becomes the current server; another UNAVAILABLE
        for want of a server moves on to the next address (once, however many calls failed there)."""
        if not _moves_on(err):
            return
        hint = leader_hint(err, trailers)
        with self._lock:
            if hint:
                self.current = hint
            elif self.current == address:
                i = self.addresses.index(address) if address in self.addresses else -1
                self.current = self.addresses[(i + 1) % len(self.addresses)]

    def retry_elsewhere(self, call: Any, err: object, attempt: int) -> float | None:
        """Seconds to wait before opening attempt `attempt + 1` of a stream `call` (opened here) that failed with
        `err` before its first message, or None when it is not worth another try: it may have reached a leader,
        there is one address and no hint, or two rounds are done. The next attempt goes where `failed` says."""
        self.failed(getattr(call, "berth_address", self.current), err)
        return self._wait(err, attempt)

    def _wait(self, err: object, attempt: int) -> float | None:
        if not never_reached(err) or attempt + 1 >= _ROUNDS * len(self.addresses):
            return None
        if len(self.addresses) == 1 and leader_hint(err) is None:
            return None
        rounds = (attempt + 1) // len(self.addresses)
        return 0.0 if (attempt + 1) % len(self.addresses) else _FIRST_DELAY_S * 2**rounds * random.uniform(0.5, 1)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in STREAMS:
            return lambda *args, **kwargs: self._open(name, args, kwargs)
        if self._aio:
            return lambda *args, **kwargs: self._unary_aio(name, args, kwargs)
        return lambda *args, **kwargs: self._unary(name, args, kwargs)

    def _open(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        address, stub = self._stub()
        call = getattr(stub, name)(*args, **kwargs)
        call.add_done_callback(lambda c: self._ended(address, c))
        try:
            call.berth_address = address
        except AttributeError:  # a call type without a __dict__: retry_elsewhere falls back to `current`
            pass
        return call

    def _ended(self, address: str, call: Any) -> None:
        if not self._aio:
            self.failed(address, call)
            return

        async def observe() -> None:  # grpc.aio: the status and trailers are read by awaiting
            code, details, trailers = await call.code(), await call.details(), await call.trailing_metadata()
            self.failed(address, _Status(code, details), trailers)

        try:
            asyncio.ensure_future(observe())
        except RuntimeError:  # no event loop (it closed): nothing will call again
            pass

    def _unary(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            address, stub = self._stub()
            try:
                return getattr(stub, name)(*args, **kwargs)
            except grpc.RpcError as err:
                self.failed(address, err)
                wait = self._wait(err, attempt)
                if wait is None:
                    raise
                time.sleep(wait)
                attempt += 1

    async def _unary_aio(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            address, stub = self._stub()
            try:
                call: Awaitable[Any] = getattr(stub, name)(*args, **kwargs)
                return await call
            except grpc.RpcError as err:
                self.failed(address, err)
                wait = self._wait(err, attempt)
                if wait is None:
                    raise
                await asyncio.sleep(wait)
                attempt += 1

    def channels(self) -> list[Any]:
        """The channels opened so far (to close them)."""
        with self._lock:
            return list(self._channels.values())
