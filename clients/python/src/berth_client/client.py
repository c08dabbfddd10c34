"""Client: one gRPC channel to a berth server and the calls an engine makes on it (blocking API;
`berth_client.aio.AsyncClient` is the same surface for asyncio)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import grpc

from . import prepare
from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from .channels import CHANNEL_OPTIONS, Pem, connection
from .claims import ClaimLease
from .errors import from_rpc_error
from .events import EventStream, Reopen
from .groups import GroupLease, GroupQueued, group_request, resume_group_request
from .history import HistoryEntry, history_request
from .resumable import ResumableClaimLease
from .runs import RunStream, execute
from .servers import Servers
from .snapshots import Compiled, Satisfiability, Snapshot
from .values import CancelCounts, Preempting, Queued, RunEvent


class Client:
    """A connection to berth. Use as a context manager, or call `close()`.

    `address` is host:port, or the members of an HA cluster comma-separated ("a:50051,b:50051": the leader a
    standby names is followed, the next address tried when one is gone; servers.py, SPEC S7); `token` (default:
    $BERTH_TOKEN) is sent as `authorization: Bearer <token>`. TLS: `root_certificates` (the CA to trust), and
    for mutual TLS `certificate_chain` and `private_key` (the client's certificate and key), each PEM bytes or a
    file path; any of them turns TLS on. A wrong type raises TypeError naming the argument.
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
                return grpc.secure_channel(address, creds, options=CHANNEL_OPTIONS)
            return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)

        self._servers = Servers(conn.address, channel)
        self._stub = cast(placement_pb2_grpc.PlacementServiceStub, self._servers)

    def close(self) -> None:
        """Closes the channel; open claims end (and are released by the server)."""
        for channel in self._servers.channels():
            channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

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
    ) -> ClaimLease:
        """A lease on cores (None = 1), `gpus` GPUs and `ram_mb` MB on one machine.

        `with client.claim(...) as grant:` blocks until granted, calling `on_queued(reason)` on each
        Queued; the claim is released (and the release acknowledged) on every exit of the block.
        `timeout` (s, > 0; None waits for ever) bounds the wait for the grant (NodeTimeout).
        `on_oversize`: "clamp" (an ask no machine can ever hold is cut to the best one and warns
        Clamped, SPEC P5) or "fail" (raises Oversize). Arguments are checked before anything is
        sent: TypeError (wrong type) or InvalidAsk (bad value), naming the argument. Raises NoWorker
        (a required label no machine carries), Unavailable.

        `hold` (s, 0 to 3600; None = 0): the server keeps the claim that long after its stream broke
        (SPEC S3), and the lease takes it back by itself (same claim id, same GPU ids) when the stream
        breaks with UNAVAILABLE (a server restart, a cut link), retrying with backoff for as long as the
        hold; leaving the block then raises ClaimLost if it could not. Without it the claim ends with
        its stream, as always. A process that dies holding such a claim leaves it held for the hold.

        `resources`: named resources to take with the cores (issue 23), per-machine ones a worker offers
        (`{"trainer": 1}`) or cluster-wide pools from the server's config (`{"license/matlab": 1}`), each a
        multiple of 0.0001 (else InvalidAsk naming `ask.resources.<name>`); a name nothing has raises
        FailedPrecondition from the server.

        `gpu_type` (e.g. "a100", a MIG profile): only a machine whose worker reports that type
        (`berth worker --gpu-type`) holds the claim; a type no machine has raises FailedPrecondition
        naming `ask.gpu_type` (issue 23 item 4, docs/resources.md).

        `priority` (an int, higher first) or `priority_class` (a class of the server's config) order the
        queue (SPEC Q1, docs/priorities.md); an unknown class raises InvalidAsk naming `ask.priority_class`.

        `on_preempt` (SPEC Q2): "requeue" (default) — once a higher-priority claim preempts this one and it is
        given back (`lease.make_room()` after `lease.wait_preempted()`, or at the grace's end), it waits again at
        its place on the same lease: `lease.requeued` is its Queued until `lease.wait_granted()` returns the new
        grant (a new claim id and allocation); "cancel" — it ends, and leaving the block raises Preempted.
        `on_preempted(notice)` is called with the notice when it comes (from the lease's reader thread; asyncio: in
        the event loop), as `lease.preempted` and `wait_preempted()` also give it.
        """
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
            return ResumableClaimLease(self._stub, spec, self._metadata)
        return ClaimLease(self._stub, spec, self._metadata)

    def acquire(
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
    ) -> ClaimLease:
        """Like `claim()` without the block: blocks until granted and returns the held lease
        (`lease.grant`, `lease.allocation`, …); `lease.release()` gives it back (from any thread).
        Hold several at once; a lease not released ends with the client's channel."""
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
        lease.acquire()
        return lease

    def claim_group(
        self,
        members: Sequence[Mapping[str, Any]],
        strategy: str = "PACK",
        on_queued: Callable[[GroupQueued], object] | None = None,
        timeout: float | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> GroupLease:
        """A gang claim: every member of `members` (each a dict of `claim()`'s ask arguments: cpus, gpus, ram_mb,
        label, policy, node, run_id, env, resources) held at once as one lease, or none (docs/groups.md, rule G1).
        `strategy`: "PACK" (few machines), "SPREAD" (many), "STRICT_PACK" (one), "STRICT_SPREAD" (one each).

        `with client.claim_group(...) as group:` blocks until granted (`group.members[i].machine`,
        `.allocation.gpu_ids`, …), calling `on_queued(GroupQueued)` while it waits; every member is given back on
        every exit of the block. Raises InvalidAsk naming `members[i].<field>`, FailedPrecondition naming the
        member and dimension when no machines could ever hold the group (rule G5), NodeTimeout after `timeout` s.
        `priority` / `priority_class`: the whole group's place in the queue (SPEC Q1; members take no own).
        """
        return GroupLease(
            self._stub, group_request(members, strategy, priority, priority_class), self._metadata, on_queued, timeout
        )

    def acquire_group(
        self,
        members: Sequence[Mapping[str, Any]],
        strategy: str = "PACK",
        on_queued: Callable[[GroupQueued], object] | None = None,
        timeout: float | None = None,
        priority: int | None = None,
        priority_class: str | None = None,
    ) -> GroupLease:
        """Like `claim_group()` without the block: blocks until granted and returns the held lease (`lease.grant`,
        `lease.members`); `lease.release()` gives every member back."""
        lease = self.claim_group(members, strategy, on_queued, timeout, priority, priority_class)
        lease.acquire()
        return lease

    def resume_group(self, group_id: str, resume_token: str) -> GroupLease:
        """Takes back a group the server restored after a restart (rule G7) with the `group_id` and `resume_token`
        of its GroupGrant: returns the held lease, same members, machines and allocations (`lease.grant.resumed`).
        Raises NotFound when no group of that id and token awaits its holder (wrong token, its hold ran out)."""
        lease = GroupLease(self._stub, resume_group_request(group_id, resume_token), self._metadata)
        lease.acquire()
        return lease

    def run(
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
        """Runs one call on a worker and returns the node's value (JSON-like).

        Payload: Python `source` defining `process(**kwargs)`, or a `command` argv (value
        `{"exit_code": 0}`). Placement: inside `claim` (a Grant, a held lease or a claim id), else
        placed, run and released by this call with the ask cpus/gpus/ram_mb/label/policy/env/on_oversize.
        `run_id` groups calls for `cancel()`; None makes a fresh one ("py-" and 12 hex digits).
        `timeout` (s): the call's deadline. `on_event` gets Started, then Metric/LogLine events in
        order, before the value. A clamped call warns Clamped (Started.clamped says so too).
        `disconnect_grace` (s, at most 3600): how long the call outlives a lost link — to its worker, or this
        client's own broken stream — before it fails or stops (SPEC S2, S3); None: the server's worker hold, and a
        broken stream stops the call. A stream that breaks (server restart, cut link) is followed again from the
        last event seen for up to a minute, so the caller sees every event once.
        `max_retries` (0 to 10): how many times the call is placed again when its machine is lost (its worker went
        away, its link's hold ran out; SPEC S8), as Ray's max_retries; `on_event` gets a Retrying saying why, then the
        new attempt's Started. Not with `claim` (InvalidAsk). `retry_on_failure`: also retry the node's own failure
        (an exception, a non-zero exit); without it a node's failure is raised at once. `priority` / `priority_class`
        order the call's ask in the queue as for claim() (SPEC Q1; a class that may preempt does, SPEC Q2; a call whose
        claim is preempted is retried when `max_retries` is left). Not with `claim` (InvalidAsk).

        Raises the node's own exception (builtin class kept, else a RemoteError subclass named after
        its type, `remote_traceback` attached; `sys.exit` as NodeExited); NodeTimeout; WorkerGone;
        NoWorker naming the label; Oversize; Cancelled; InvalidAsk; NotFound (claim no longer held).
        Arguments are checked before anything is sent: TypeError or InvalidAsk, naming the argument.
        """
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
        return execute(self._stub, spec, self._metadata)

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
    ) -> RunStream:
        """Like `run()`, as an iterator: Started, Metric and LogLine events in order, then one Result
        (`.value`); the node's exception is raised by the iteration. `close()` cancels the call."""
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
        return RunStream(self._stub, spec, self._metadata)

    def cancel(self, run_id: str) -> CancelCounts:
        """Cancels run `run_id`: its in-flight calls get a cancel, its waiting claims are abandoned.
        Raises TypeError / InvalidAsk naming `run_id` when it is not a non-empty str."""
        req = prepare.cancel_request(run_id)
        try:
            res = self._stub.Cancel(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return CancelCounts(res.calls, res.claims)

    def satisfiable(
        self,
        cpus: int | None = None,
        gpus: float = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        on_oversize: str = "clamp",
    ) -> Satisfiability:
        """What the ask would do now: `verdict` (RUNS_NOW, WAITS, WAITS_FOR_PROVISIONER, CLAMPED,
        IMPOSSIBLE), `clamped_to`, `limiting`, `wait_for` (what a provisioner must start, e.g.
        "1 gpu(s) and 1 cpu(s)"; "" otherwise)."""
        req = prepare.satisfiable_request(
            cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy, on_oversize=on_oversize
        )
        try:
            res = self._stub.Satisfiable(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=label or "") from None
        return Satisfiability.from_proto(res)

    def compile(self, source: str, label: str, flow: str = "flow", node: str = "node") -> Compiled:
        """Compiles a node's `source` on a worker carrying `label` without running it (SPEC W5):
        `ok`, or `error` (e.g. the SyntaxError); `checked` is False when no such worker is attached."""
        req = prepare.compile_request(source=source, label=label, flow=flow, node=node)
        try:
            res = self._stub.Compile(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=label) from None
        return Compiled.from_proto(res)

    def snapshot(self) -> Snapshot:
        """The books: machines (engine first), waiting and held claims, calls in flight, provisioners."""
        try:
            res = self._stub.GetSnapshot(placement_pb2.GetSnapshotRequest(), metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Snapshot.from_proto(res)

    def history(
        self,
        run_id: str | None = None,
        state: str | None = None,
        machine: str | None = None,
        kind: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[HistoryEntry]:
        """Finished calls and ended claims the server keeps (SPEC S9, like `berth history`), newest first: only
        `run_id`, `state` ("succeeded", "failed", "cancelled", "lost", "released"), `machine`, `kind` ("call" or
        "claim"), ended within `since` seconds; at most `limit` (1 to 10,000). InvalidAsk names a bad argument."""
        req = history_request(run_id, state, machine, kind, since, limit)
        try:
            res = self._stub.History(req, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return [HistoryEntry.from_proto(e) for e in res.entries]

    def events(self) -> EventStream:
        """Placement and worker events as they happen (node_queued, node_placed, claim_released, …)."""

        def open_events() -> Any:
            return self._stub.WatchEvents(placement_pb2.WatchEventsRequest(), metadata=self._metadata)

        return EventStream(open_events(), Reopen(self._servers.retry_elsewhere, open_events))
