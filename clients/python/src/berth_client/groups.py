"""Gang claims from the sync client (docs/groups.md, rules G1–G5): a set of asks held as one lease, every member
or none. `with client.claim_group(members=[dict(cpus=8, gpus=8), ...], strategy="STRICT_SPREAD") as group:` blocks
until every member is granted, calling `on_queued(GroupQueued)` while it waits; leaving the block (exceptions
included) gives every member back. `client.acquire_group(...)` returns the held lease; `lease.release()` ends it.
After a server restart, `client.resume_group(grant.group_id, grant.resume_token)` takes a restored group back.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc

from . import checks
from ._proto.berth.v1 import groups_pb2, placement_pb2_grpc
from .asks import build_ask, check_priority
from .errors import BerthError, InvalidAsk, NodeTimeout, from_rpc_error
from .values import Allocation

STRATEGIES = {
    "PACK": groups_pb2.GROUP_STRATEGY_PACK,
    "SPREAD": groups_pb2.GROUP_STRATEGY_SPREAD,
    "STRICT_PACK": groups_pb2.GROUP_STRATEGY_STRICT_PACK,
    "STRICT_SPREAD": groups_pb2.GROUP_STRATEGY_STRICT_SPREAD,
}
_NAMES = {v: k for k, v in STRATEGIES.items()}
_MEMBER_KEYS = ("cpus", "gpus", "ram_mb", "label", "policy", "node", "run_id", "env", "resources")


@dataclass(frozen=True)
class GroupMember:
    """One granted member: its index in the order asked, its claim id, machine and allocation (GPU ids, env)."""

    index: int
    claim_id: str
    machine: str
    remote: bool
    allocation: Allocation


@dataclass(frozen=True)
class GroupGrant:
    """A granted group: its id, the strategy ("PACK", …), every member in the order asked, and the resume token that
    takes it back after a server restart (`client.resume_group`, rule G7; never log it); `resumed` is True when it
    answers a resume."""

    group_id: str
    strategy: str
    members: tuple[GroupMember, ...]
    resume_token: str = ""
    resumed: bool = False

    @classmethod
    def from_proto(cls, msg: groups_pb2.GroupGranted) -> GroupGrant:
        """Builds a GroupGrant from its message."""
        members = tuple(
            GroupMember(m.index, m.claim_id, m.machine, m.remote, Allocation.from_proto(m.allocation))
            for m in msg.members
        )
        return cls(msg.group_id, _NAMES.get(msg.strategy, "PACK"), members, msg.resume_token, msg.resumed)


@dataclass(frozen=True)
class GroupQueued:
    """Why a group waits: the blocking member's index, the dimension it lacks ("gpus", "machines", …), a detail."""

    group_id: str
    member: int
    dimension: str
    detail: str
    position: int

    @classmethod
    def from_proto(cls, msg: groups_pb2.GroupQueued) -> GroupQueued:
        """Builds a GroupQueued from its message."""
        return cls(msg.group_id, msg.member, msg.dimension, msg.detail, msg.position)


def group_request(
    members: Sequence[Mapping[str, Any]],
    strategy: str,
    priority: int | None = None,
    priority_class: str | None = None,
) -> groups_pb2.ClaimGroupRequest:
    """The first ClaimGroup message. Each member is a dict of `claim()`'s ask arguments (cpus, gpus, ram_mb, label,
    policy, node, run_id, env, resources); `priority` / `priority_class` are the whole group's (SPEC Q1). Raises
    InvalidAsk naming `members[i].<field>`, `strategy` or `priority`, TypeError for a member that is not a mapping
    or a priority that is not an int."""
    if isinstance(strategy, str) and strategy.upper() in STRATEGIES:
        wire = STRATEGIES[strategy.upper()]
    else:
        raise InvalidAsk(f"strategy: one of {', '.join(STRATEGIES)} (got {strategy!r})", field="strategy")
    req = groups_pb2.ClaimGroupRequest()
    req.ask.strategy = wire
    check_priority(priority, "priority")
    if priority is not None:
        req.ask.priority = priority
    named = checks.optional_str("priority_class", priority_class)
    if named:
        req.ask.priority_class = named
    if isinstance(members, (str, bytes)) or not isinstance(members, Sequence) or not members:
        raise InvalidAsk(f"members: a non-empty list of asks (got {members!r})", field="members")
    for i, m in enumerate(members):
        if not isinstance(m, Mapping):
            raise TypeError(f"members[{i}]: must be a dict of ask arguments (got {type(m).__name__})")
        unknown = sorted(set(m) - set(_MEMBER_KEYS))
        if unknown:
            raise InvalidAsk(f"members[{i}].{unknown[0]}: not an ask argument", field=f"members[{i}].{unknown[0]}")
        try:
            build_ask(**m, into=req.ask.members.add())
        except InvalidAsk as err:
            field = (err.field or "ask").replace("ask", f"members[{i}]", 1)
            raise InvalidAsk(str(err).replace("ask.", f"members[{i}].", 1), field=field) from None
    return req


def resume_group_request(group_id: str, resume_token: str) -> groups_pb2.ClaimGroupRequest:
    """The first ClaimGroup message taking back a group restored after a server restart (rule G7). Raises InvalidAsk
    naming `group_id` or `resume_token` when one is empty or not a str."""
    for field, value in (("group_id", group_id), ("resume_token", resume_token)):
        if not isinstance(value, str) or not value:
            raise InvalidAsk(f"{field}: a non-empty str (got {value!r})", field=field)
    return groups_pb2.ClaimGroupRequest(resume=groups_pb2.GroupResume(group_id=group_id, resume_token=resume_token))


def _drain(requests: queue.SimpleQueue[groups_pb2.ClaimGroupRequest | None]) -> Iterator[groups_pb2.ClaimGroupRequest]:
    while (msg := requests.get()) is not None:
        yield msg


class GroupLease:
    """One group lease: `with client.claim_group(...) as group:` or `lease = client.acquire_group(...)`, then
    `lease.release()` (idempotent, from any thread). `grant` is the GroupGrant once granted."""

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
        self._requests: queue.SimpleQueue[groups_pb2.ClaimGroupRequest | None] = queue.SimpleQueue()
        self._call: Any = None
        self._expired = threading.Event()
        self._lock = threading.Lock()
        self._done = False
        self.grant: GroupGrant | None = None

    @property
    def members(self) -> tuple[GroupMember, ...]:
        """The granted members, in the order asked (empty before the grant)."""
        return self.grant.members if self.grant else ()

    def acquire(self) -> GroupGrant:
        """Blocks until every member is granted. Raises InvalidAsk, FailedPrecondition (a group no machines could
        ever hold, naming members[i] and the dimension), NodeTimeout (timeout), Unavailable…"""
        if self._call is not None:
            raise RuntimeError("a group is acquired once; call client.claim_group() again for a new one")
        timer = threading.Timer(self._timeout, self._expire) if self._timeout is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            self._requests.put(self._request)
            self._call = self._stub.ClaimGroup(_drain(self._requests), metadata=self._metadata)
            for msg in self._call:
                kind = msg.WhichOneof("kind")
                if kind == "queued":
                    if self._on_queued is not None:
                        self._on_queued(GroupQueued.from_proto(msg.queued))
                    continue
                if kind != "granted":
                    raise BerthError(f"group stream: unexpected {kind!r} before the grant")
                with self._lock:
                    if self._expired.is_set():
                        break
                    self.grant = GroupGrant.from_proto(msg.granted)
                    return self.grant
            if self._expired.is_set():
                raise NodeTimeout(f"group not granted within {self._timeout} s")
            raise BerthError("group stream ended before a grant")
        except grpc.RpcError as err:
            if self._expired.is_set():
                raise NodeTimeout(f"group not granted within {self._timeout} s") from None
            raise from_rpc_error(err) from None
        finally:
            if timer is not None:
                timer.cancel()
            if self.grant is None:
                self._abandon()

    def _expire(self) -> None:
        with self._lock:
            if self.grant is not None:
                return
            self._expired.set()
        if self._call is not None:
            self._call.cancel()

    def _abandon(self) -> None:
        self._done = True
        if self._call is not None:
            self._call.cancel()
        self._requests.put(None)

    def release(self) -> None:
        """Sends GroupRelease and waits for GroupReleased: every member is given back. Raises the mapped BerthError
        (e.g. Unavailable naming the member whose machine went away) when the lease was already lost."""
        with self._lock:
            if self._done or self._call is None:
                return
            self._done = True
        self._requests.put(groups_pb2.ClaimGroupRequest(release=groups_pb2.GroupRelease()))
        try:
            for msg in self._call:
                if msg.WhichOneof("kind") == "released":
                    self._requests.put(None)
                    for _ in self._call:
                        pass
                    return
            raise BerthError("group stream ended without acknowledging the release")
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.OK:
                return
            raise from_rpc_error(err) from None
        finally:
            self._requests.put(None)

    def __enter__(self) -> GroupGrant:
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
            pass
        except BaseException:
            self._abandon()
            raise
