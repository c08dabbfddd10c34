"""Plain, typed values the client hands to engines (built from the berth.v1 messages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Union

from google.protobuf.message import Message

from ._proto.berth.v1 import calls_pb2, placement_pb2, resources_pb2


@dataclass(frozen=True)
class Amount:
    """An amount of one machine: `cpus` (cores), `gpus` (a count), `ram_mb` (MB; None = not limited
    or not asked). `str()` reads like the server's details: "2 cpu(s), 1 gpu(s)"."""

    cpus: int
    gpus: int
    ram_mb: int | None = None

    @classmethod
    def from_proto(cls, msg: resources_pb2.Resources) -> Amount:
        """Builds an Amount from a berth.v1 Resources message."""
        return cls(msg.cpus, msg.gpus, msg.ram_mb if msg.HasField("ram_mb") else None)

    def __str__(self) -> str:
        ram = [f"{self.ram_mb} MB"] if self.ram_mb is not None else []
        return ", ".join([f"{self.cpus} cpu(s)", f"{self.gpus} gpu(s)", *ram])


def optional_amount(msg: Message, name: str) -> Amount | None:
    """The Amount in Resources field `name` of `msg`, or None when it is not set."""
    if name not in msg.DESCRIPTOR.fields_by_name or not msg.HasField(name):
        return None
    resources: Any = getattr(msg, name)
    return Amount.from_proto(resources)


def flag(msg: Message, name: str) -> bool:
    """Bool field `name` of `msg` (False when this contract has no such field)."""
    return name in msg.DESCRIPTOR.fields_by_name and bool(getattr(msg, name))


@dataclass(frozen=True)
class Allocation:
    """What a claim holds on its machine (SPEC P9): cores, exact GPU ids, MB (None = not asked), env, named
    resources."""

    cpus: int
    gpu_ids: tuple[int, ...]
    ram_mb: int | None
    env: dict[str, str] = field(default_factory=dict)
    #: Named resources and pools held (issue 23), e.g. {"trainer": 1.0}; empty when none was asked.
    resources: dict[str, float] = field(default_factory=dict)
    #: The share held of the one GPU in `gpu_ids` (0.25 for `gpus=0.25`; SPEC P14); None for whole GPUs.
    gpu_share: float | None = None

    @classmethod
    def from_proto(cls, msg: resources_pb2.Allocation) -> Allocation:
        """Builds an Allocation from its message."""
        ram = msg.ram_mb if msg.HasField("ram_mb") else None
        share = msg.gpu_share if msg.gpu_share else None
        return cls(msg.cpus, tuple(msg.gpu_ids), ram, dict(msg.env), dict(msg.resources), share)


@dataclass(frozen=True)
class Grant:
    """A granted claim: where (`machine`, `remote`), what (`allocation`), and how (`clamped`, `fell_back`);
    `asked` is the ask before clamping (None when the server does not say). `resume_token` is the secret
    that takes the claim back after its stream broke (SPEC S3; not shown in repr, never log it);
    `resumed` is True on the Granted that answered such a resume."""

    claim_id: str
    machine: str
    remote: bool
    allocation: Allocation
    clamped: bool
    fell_back: bool
    asked: Amount | None = None
    resume_token: str = field(default="", repr=False)
    resumed: bool = False

    @classmethod
    def from_proto(cls, msg: placement_pb2.Granted) -> Grant:
        """Builds a Grant from its message."""
        alloc = Allocation.from_proto(msg.allocation)
        asked = optional_amount(msg, "asked")
        token = msg.resume_token if "resume_token" in msg.DESCRIPTOR.fields_by_name else ""
        resumed = flag(msg, "resumed")
        return cls(msg.claim_id, msg.machine, msg.remote, alloc, msg.clamped, msg.fell_back, asked, token, resumed)


@dataclass(frozen=True)
class Queued:
    """Why a claim waits (SPEC P6); `str()` is the short detail, e.g. "2 cpu(s)".

    `wanted`: what it waits for (after clamping); `best_machine` and `best_free`: the machine closest
    to holding it and what that machine has free now; `machines_able`: how many attached machines
    could ever hold it; `position` in the queue (1 = next; counting only the waiters ahead of it, SPEC Q1);
    `asked`: the ask before clamping; `priority`: its priority (0 when none); `requeued`: True when a preempted
    claim waits again at its place (SPEC Q2; `claim_id` is then its new id)."""

    detail: str
    claim_id: str
    position: int
    best_machine: str
    machines_able: int
    wanted: Amount | None = None
    best_free: Amount | None = None
    asked: Amount | None = None
    priority: int = 0
    requeued: bool = False

    @classmethod
    def from_proto(cls, msg: placement_pb2.Queued) -> Queued:
        """Builds a Queued from its message."""
        return cls(
            msg.detail,
            msg.claim_id,
            msg.position,
            msg.best_machine,
            msg.machines_able,
            optional_amount(msg, "wanted"),
            optional_amount(msg, "best_free"),
            optional_amount(msg, "asked"),
            msg.priority,
            msg.requeued,
        )

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class Preempting:
    """A higher-priority claim needs this claim's room (SPEC Q2): give the lease back within `grace_ms`, after which
    berth releases it and stops its runs (a lease asked with on_preempt="cancel" then raises Preempted from
    release(); by default it waits again). Also a `stream_run()` event when the Run's own claim is preempted: the
    call is stopped when the grace runs out. `by_claim_id` / `by_priority`: the preempting claim; `machine`: where;
    `str()` is the one-line detail."""

    detail: str
    by_claim_id: str
    by_priority: int
    grace_ms: int
    machine: str

    @classmethod
    def from_proto(cls, msg: placement_pb2.Preempting) -> Preempting:
        """Builds a Preempting from its message."""
        return cls(msg.detail, msg.by_claim_id, msg.by_priority, msg.grace_ms, msg.machine)

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class Started:
    """A call was placed: its id, the machine running it and what it holds; `clamped` when the ask
    was cut down to the best real machine (`asked`: before clamping)."""

    call_id: str
    machine: str
    allocation: Allocation
    clamped: bool = False
    asked: Amount | None = None

    @classmethod
    def from_proto(cls, msg: placement_pb2.CallStarted) -> Started:
        """Builds a Started from a CallStarted message."""
        alloc = Allocation.from_proto(msg.allocation)
        return cls(msg.call_id, msg.machine, alloc, flag(msg, "clamped"), optional_amount(msg, "asked"))


@dataclass(frozen=True)
class Metric:
    """A metric a node reported with report(name, value)."""

    call_id: str
    name: str
    value: float


@dataclass(frozen=True)
class LogLine:
    """One output line of a node; `stream` is "stdout" or "stderr"."""

    call_id: str
    stream: str
    line: str


@dataclass(frozen=True)
class Result:
    """The last item of `stream_run()`: the node's value (JSON-like)."""

    call_id: str
    value: Any


@dataclass(frozen=True)
class WorkerLink:
    """The link to the worker running a call went down or came back (SPEC S2): `state` is "disconnected"
    (the call is held for `hold_left_ms` more, then fails Unavailable "went away") or "reconnected"."""

    machine: str
    state: str
    hold_left_ms: int
    detail: str

    @classmethod
    def from_proto(cls, msg: placement_pb2.WorkerLink) -> WorkerLink:
        """Builds a WorkerLink from its message."""
        state = {1: "disconnected", 2: "reconnected"}.get(msg.state, "unknown")
        return cls(msg.machine, state, msg.hold_left_ms, msg.detail)


@dataclass(frozen=True)
class Retrying:
    """An attempt of the call ended and it is placed again (SPEC S8, `run(max_retries=...)`): `reason` says why
    (e.g. "worker w1 went away: ..."), `machine` where the last attempt ran; attempt `attempt` runs as `call_id`
    ("<run_id>:<flow>.<node>#<attempt>") and a new Started follows."""

    attempt: int
    reason: str
    machine: str
    call_id: str
    previous_call_id: str

    @classmethod
    def from_proto(cls, msg: placement_pb2.Retrying) -> Retrying:
        """Builds a Retrying from its message."""
        return cls(msg.attempt, msg.reason, msg.machine, msg.call_id, msg.previous_call_id)


RunEvent = Union[Started, Metric, LogLine, WorkerLink, Retrying, Preempting]
"""What `run(on_event=...)` receives, in order, before the call's value."""


def run_event(msg: calls_pb2.Event) -> Metric | LogLine | None:
    """The Metric or LogLine an Event carries (None for a kind this client does not know)."""
    kind = msg.WhichOneof("kind")
    if kind == "metric":
        return Metric(msg.call_id, msg.metric.name, msg.metric.value)
    if kind == "log":
        return LogLine(msg.call_id, msg.log.stream, msg.log.line)
    return None


def run_events(msg: calls_pb2.Event) -> list[Metric | LogLine]:
    """Every Metric or LogLine an Event carries, in order: a batch of lines (`logs`) becomes one
    LogLine per line; a single `log` line or a metric one item; a kind this client does not know none."""
    if msg.WhichOneof("kind") == "logs":
        return [LogLine(msg.call_id, msg.logs.stream, line) for line in msg.logs.lines]
    one = run_event(msg)
    return [] if one is None else [one]


class CancelCounts(NamedTuple):
    """What `Client.cancel(run_id)` stopped: in-flight calls and waiting claims."""

    calls: int
    claims: int
