"""Client: one gRPC channel to a berth server and the calls an engine makes on it."""
from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import grpc

from ._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from . import checks
from .asks import build_ask
from .claims import ClaimLease
from .errors import InvalidAsk, from_rpc_error
from .events import EventStream
from .runs import build_run_request, execute
from .values import CancelCounts, Grant, Queued, RunEvent

# Long streams (a claim held for hours, a quiet call) keep their connection: ping every 20 s
# even without data, give up after 10 s without an answer (the server permits pings every 5 s).
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
)


class Client:
    """A connection to berth. Use as a context manager, or call `close()`.

    `address` is host:port; `token` (default: $BERTH_TOKEN) is sent as `authorization: Bearer
    <token>`; `root_certificates` (PEM bytes) turns on TLS. A wrong type raises TypeError naming
    the argument.
    """

    def __init__(self, address: str = "127.0.0.1:50051", token: str | None = None, root_certificates: bytes | None = None) -> None:
        self.address = checks.text("address", address)
        checks.optional_str("token", token)
        if root_certificates is not None and not isinstance(root_certificates, bytes):
            raise checks.wrong_type("root_certificates", "PEM bytes or None", root_certificates)
        token = token if token is not None else os.environ.get("BERTH_TOKEN") or None
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        if root_certificates is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, creds, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = placement_pb2_grpc.PlacementServiceStub(self._channel)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        """Closes the channel; open claims end (and are released by the server)."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def claim(
        self,
        cpus: int | None = None,
        gpus: int = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        node: str = "",
        run_id: str | None = None,
        env: Mapping[str, str] | None = None,
        on_queued: Callable[[Queued], object] | None = None,
        timeout: float | None = None,
    ) -> ClaimLease:
        """A lease on cores (None = 1), `gpus` GPUs and `ram_mb` MB on one machine.

        `with client.claim(...) as grant:` blocks until granted, calling `on_queued(reason)` on each
        Queued; the claim is released (and the release acknowledged) on every exit of the block.
        `timeout` (s, > 0; None waits for ever) bounds the wait for the grant (NodeTimeout).
        Arguments are checked before anything is sent: TypeError (wrong type) or InvalidAsk (bad
        value), naming the argument. Raises NoWorker (a required label no machine carries), Unavailable.
        """
        timeout = checks.timeout(timeout)
        checks.callback("on_queued", on_queued)
        ask = build_ask(cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy, node=node, run_id=run_id, env=env)
        return ClaimLease(self._stub, ask, self._metadata, on_queued=on_queued, timeout=timeout)

    def run(
        self,
        source: str | None = None,
        command: Sequence[str] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        flow: str = "flow",
        node: str = "node",
        run_id: str | None = None,
        cpus: int | None = None,
        gpus: int = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
        env: Mapping[str, str] | None = None,
        claim: Grant | str | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        on_event: Callable[[RunEvent], object] | None = None,
    ) -> Any:
        """Runs one call on a worker and returns the node's value (JSON-like).

        Payload: Python `source` defining `process(**kwargs)`, or a `command` argv (value
        `{"exit_code": 0}`). Placement: inside `claim` (a Grant or claim id), else placed, run and
        released by this call with the ask cpus/gpus/ram_mb/label/policy/env. `run_id` groups calls
        for `cancel()`; None makes a fresh one ("py-" and 12 hex digits). `timeout` (s): the
        call's deadline. `on_event` gets Started, then Metric/LogLine events in order, before the value.

        Raises the node's own exception (builtin class kept, else a RemoteError subclass named after
        its type, `remote_traceback` attached); NodeTimeout; WorkerGone; NoWorker naming the label;
        Cancelled; InvalidAsk; NotFound (claim no longer held). Arguments are checked before
        anything is sent: TypeError (wrong type) or InvalidAsk (bad value), naming the argument.
        """
        checks.optional_str("source", source)
        command = checks.argv(command)
        kwargs = checks.kwargs(kwargs)
        if kwargs and source is None:
            raise InvalidAsk("kwargs: only a source= payload takes kwargs (a command gets none)", field="kwargs")
        checks.text("flow", flow)
        checks.text("node", node)
        checks.optional_str("run_id", run_id)
        checks.optional_str("cwd", cwd)
        timeout = checks.timeout(timeout)
        checks.callback("on_event", on_event)
        if claim is not None and not isinstance(claim, (Grant, str)):
            raise checks.wrong_type("claim", "a Grant (from client.claim) or a claim id str, or None", claim)
        if claim == "":
            raise InvalidAsk("claim: must be a claim id (got '')", field="claim")
        run_id = run_id or f"py-{uuid.uuid4().hex[:12]}"
        ask = None
        if claim is not None:
            extra = [k for k, v in (("cpus", cpus), ("ram_mb", ram_mb), ("label", label), ("env", env)) if v is not None] + (["gpus"] if gpus else [])
            if extra:
                raise InvalidAsk(f"claim: runs with the claim's allocation; do not also pass {', '.join(extra)}", field="claim")
        else:
            ask = build_ask(cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy, node=f"{flow}.{node}", run_id=run_id, env=env)
        req = build_run_request(
            source=source, command=command, kwargs=kwargs, cwd=cwd, flow=flow, node=node,
            run_id=run_id, claim=claim, ask=ask, timeout=timeout,
        )
        return execute(self._stub, req, self._metadata, on_event, label=label or "")

    def cancel(self, run_id: str) -> CancelCounts:
        """Cancels run `run_id`: its in-flight calls get a cancel, its waiting claims are abandoned.
        Raises TypeError / InvalidAsk naming `run_id` when it is not a non-empty str."""
        checks.text("run_id", run_id)
        if not run_id:
            raise InvalidAsk("run_id: must name a run (got '')", field="run_id")
        try:
            res = self._stub.Cancel(placement_pb2.CancelRequest(run_id=run_id), metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return CancelCounts(res.calls, res.claims)

    def satisfiable(
        self,
        cpus: int | None = None,
        gpus: int = 0,
        ram_mb: int | None = None,
        label: str | None = None,
        policy: str = "prefer",
    ) -> str:
        """"" when the ask can run now or after clamping; else what a provisioner must start,
        e.g. "1 gpu(s) and 1 cpu(s)"."""
        ask = build_ask(cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy)
        try:
            res = self._stub.Satisfiable(placement_pb2.SatisfiableRequest(ask=ask), metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err, label=label or "") from None
        return str(res.wait_for)

    def snapshot(self) -> placement_pb2.GetSnapshotResponse:
        """The books: machines (engine first), waiting and held claims, calls in flight, provisioners."""
        try:
            res: placement_pb2.GetSnapshotResponse = self._stub.GetSnapshot(placement_pb2.GetSnapshotRequest(), metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return res

    def events(self) -> EventStream:
        """Placement and worker events as they happen (node_queued, node_placed, claim_released, …)."""
        call = self._stub.WatchEvents(placement_pb2.WatchEventsRequest(), metadata=self._metadata)
        return EventStream(call)
