"""AsyncClient: the asyncio twin of `berth_client.Client` on grpc.aio — the same methods, arguments
(checked by the same code, prepare.py) and errors (the same mapper, errors.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import grpc

from .. import prepare
from .._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from ..channels import CHANNEL_OPTIONS, Pem, connection
from ..errors import from_rpc_error
from ..events import Reopen
from ..groups import GroupQueued, group_request, resume_group_request
from ..history import HistoryEntry, history_request
from ..servers import Servers
from ..snapshots import Compiled, Satisfiability, Snapshot
from ..values import CancelCounts, Preempting, Queued, RunEvent
from .claims import AsyncClaimLease
from .groups import AsyncGroupLease
from .resumable import AsyncResumableClaimLease
from .runs import AsyncRunStream, execute
from .streams import AsyncEventStream


class AsyncClient:
    """A connection to berth for asyncio engines: `async with AsyncClient(address) as client:`, or
    `await client.close()`. Create it inside the event loop that uses it.

    `address` is host:port, or the members of an HA cluster comma-separated ("a:50051,b:50051": the leader a
    standby names is followed, the next address tried when one is gone; servers.py, SPEC S7); `token` (default:
    $BERTH_TOKEN) is sent as `authorization: Bearer`. TLS: `root_certificates` (the CA to trust), and for mutual
    TLS `certificate_chain` and `private_key`, each PEM bytes or a file path; any of them turns TLS on. A wrong
    type raises TypeError naming the argument.
    """

    def __init__(
        self,
        address: str = "127.0.0.1:50051",
        token: str | None = None,
        root_certificates: Pem | None = None,
        certificate_chain: Pem | None = None,
        private_key: Pem | None = None,
    ) -> None:
        conn = connection(address, token, root_certificates, certificate_chain, private_key)
        self.address = conn.address
        self._metadata = conn.metadata
        creds = conn.credentials

        def channel(address: str) -> Any:
            if creds is not None:
                return grpc.aio.secure_channel(address, creds, options=CHANNEL_OPTIONS)
            return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)

        self._servers = Servers(conn.address, channel, aio=True)
        self._stub = cast(placement_pb2_grpc.PlacementServiceStub, self._servers)

    async def close(self) -> None:
        """Closes the channel; calls in flight are cancelled and open claims end (the server releases them)."""
        for channel in self._servers.channels():
            await channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def claim(
        self,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        node: str = "",
        run_id: str | None = None,
        env: Mapping[str, str] | None = None,
        on_queued: Callable[[Queued], object] | None = None,
        timeout: float | None = None,
        on_oversize: str = "clamp",
        hold: float | None = None,
        resources: Mapping[str, float] | None = None,
        gpu_type: str | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
        on_preempt: str = "requeue",
        on_preempted: Callable[[Preempting], object] | None = None,
    ) -> AsyncClaimLease:
        """`async with client.claim(...) as grant:` — see `Client.claim`; leaving the block awaits the
        release's acknowledgement, cancelling the task ends the claim at once (with `hold`, its stream:
        the server then holds the claim for the hold, as for any broken stream)."""
        spec = prepare.claim_spec(
            cpus=cpus,
            gpus=gpus,
            ram_mb=ram_mb,
            label=label,
            policy=policy,
            node=node,
            run_id=run_id,
            env=env,
            on_oversize=on_oversize,
            on_queued=on_queued,
            timeout=timeout,
            hold=hold,
            resources=resources,
            gpu_type=gpu_type,
            priority=priority,
            priority_class=priority_class,
            on_preempt=on_preempt,
            on_preempted=on_preempted,
        )
        if spec.ask.hold_ms:
            return AsyncResumableClaimLease(self._stub, spec, self._metadata)
        return AsyncClaimLease(self._stub, spec, self._metadata)

    async def acquire(
        self,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        node: str = "",
        run_id: str | None = None,
        env: Mapping[str, str] | None = None,
        on_queued: Callable[[Queued], object] | None = None,
        timeout: float | None = None,
        on_oversize: str = "clamp",
        hold: float | None = None,
        resources: Mapping[str, float] | None = None,
        gpu_type: str | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
        on_preempt: str = "requeue",
        on_preempted: Callable[[Preempting], object] | None = None,
    ) -> AsyncClaimLease:
        """`lease = await client.acquire(...)`: the granted lease; `await lease.release()` gives it back."""
        lease = self.claim(
            cpus,
            gpus,
            ram_mb,
            label,
            policy,
            node,
            run_id,
            env,
            on_queued,
            timeout,
            on_oversize,
            hold,
            resources,
            gpu_type,
            priority,
            priority_class,
            on_preempt,
            on_preempted,
        )
        await lease.acquire()
        return lease

    def claim_group(
        self,
        members: Sequence[Mapping[str, Any]],
        strategy: str = "PACK",
        on_queued: Callable[[GroupQueued], object] | None = None,
        timeout: float | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> AsyncGroupLease:
        """`async with client.claim_group(members=[...], strategy="STRICT_SPREAD") as group:` — see
        `Client.claim_group`; leaving the block awaits the release's acknowledgement."""
        return AsyncGroupLease(
            self._stub, group_request(members, strategy, priority, priority_class), self._metadata, on_queued, timeout
        )

    async def acquire_group(
        self,
        members: Sequence[Mapping[str, Any]],
        strategy: str = "PACK",
        on_queued: Callable[[GroupQueued], object] | None = None,
        timeout: float | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> AsyncGroupLease:
        """`lease = await client.acquire_group(...)`: the granted group; `await lease.release()` gives it back."""
        lease = self.claim_group(members, strategy, on_queued, timeout, priority, priority_class)
        await lease.acquire()
        return lease

    async def resume_group(self, group_id: str, resume_token: str) -> AsyncGroupLease:
        """`lease = await client.resume_group(group_id, resume_token)`: a group restored after a server restart,
        taken back — see `Client.resume_group`."""
        lease = AsyncGroupLease(self._stub, resume_group_request(group_id, resume_token), self._metadata)
        await lease.acquire()
        return lease

    async def run(
        self,
        source: str | None = None,
        command: Sequence[str] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        flow: str = "flow",
        node: str = "node",
        run_id: str | None = None,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        env: Mapping[str, str] | None = None,
        claim: object = None,
        cwd: str | None = None,
        timeout: float | None = None,
        on_event: Callable[[RunEvent], object] | None = None,
        on_oversize: str = "clamp",
        disconnect_grace: float | None = None,
        max_retries: int = 0,
        retry_on_failure: bool = False,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> Any:
        """`value = await client.run(...)` — see `Client.run`. Cancelling the awaiting task cancels the call."""
        spec = prepare.run_spec(
            source=source,
            command=command,
            kwargs=kwargs,
            flow=flow,
            node=node,
            run_id=run_id,
            cpus=cpus,
            gpus=gpus,
            ram_mb=ram_mb,
            label=label,
            policy=policy,
            env=env,
            claim=claim,
            cwd=cwd,
            timeout=timeout,
            on_event=on_event,
            on_oversize=on_oversize,
            disconnect_grace=disconnect_grace,
            max_retries=max_retries,
            retry_on_failure=retry_on_failure,
            priority=priority,
            priority_class=priority_class,
        )
        return await execute(self._stub, spec, self._metadata)

    def stream_run(
        self,
        source: str | None = None,
        command: Sequence[str] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        flow: str = "flow",
        node: str = "node",
        run_id: str | None = None,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        env: Mapping[str, str] | None = None,
        claim: object = None,
        cwd: str | None = None,
        timeout: float | None = None,
        on_oversize: str = "clamp",
        disconnect_grace: float | None = None,
        max_retries: int = 0,
        retry_on_failure: bool = False,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> AsyncRunStream:
        """`async for item in client.stream_run(...)`: Started, Metric and LogLine events in order, then
        one Result (`.value`); the node's exception is raised by the iteration. The call starts at the
        first iteration; `close()` cancels it."""
        spec = prepare.run_spec(
            source=source,
            command=command,
            kwargs=kwargs,
            flow=flow,
            node=node,
            run_id=run_id,
            cpus=cpus,
            gpus=gpus,
            ram_mb=ram_mb,
            label=label,
            policy=policy,
            env=env,
            claim=claim,
            cwd=cwd,
            timeout=timeout,
            on_event=None,
            on_oversize=on_oversize,
            disconnect_grace=disconnect_grace,
            max_retries=max_retries,
            retry_on_failure=retry_on_failure,
            priority=priority,
            priority_class=priority_class,
        )
        return AsyncRunStream(self._stub, spec, self._metadata)

    async def cancel(self, run_id: str) -> CancelCounts:
        """Cancels run `run_id` — see `Client.cancel`."""
        req = prepare.cancel_request(run_id)
        try:
            res = await self._stub.Cancel(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return CancelCounts(res.calls, res.claims)

    async def satisfiable(
        self,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        on_oversize: str = "clamp",
    ) -> Satisfiability:
        """What the ask would do now — see `Client.satisfiable`."""
        req = prepare.satisfiable_request(
            cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy, on_oversize=on_oversize
        )
        try:
            res = await self._stub.Satisfiable(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=label or "") from None
        return Satisfiability.from_proto(res)

    async def compile(self, source: str, label: str, flow: str = "flow", node: str = "node") -> Compiled:
        """Compiles a node's source on a worker carrying `label` — see `Client.compile`."""
        req = prepare.compile_request(source=source, label=label, flow=flow, node=node)
        try:
            res = await self._stub.Compile(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=label) from None
        return Compiled.from_proto(res)

    async def snapshot(self) -> Snapshot:
        """The books — see `Client.snapshot`."""
        try:
            res = await self._stub.GetSnapshot(placement_pb2.GetSnapshotRequest(), metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Snapshot.from_proto(res)

    async def history(
        self,
        run_id: str | None = None,
        state: str | None = None,
        machine: str | None = None,
        kind: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[HistoryEntry]:
        """Finished calls and ended claims, newest first — see `Client.history`."""
        req = history_request(run_id, state, machine, kind, since, limit)
        try:
            res = await self._stub.History(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return [HistoryEntry.from_proto(e) for e in res.entries]

    def events(self) -> AsyncEventStream:
        """`async for event in client.events()`: placement and worker events as they happen."""

        def open_events() -> Any:
            return self._stub.WatchEvents(placement_pb2.WatchEventsRequest(), metadata=self._metadata)

        return AsyncEventStream(open_events(), Reopen(self._servers.retry_elsewhere, open_events))
