"""Plain, typed values the client hands to engines (built from the berth.v1 messages)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Union

from ._proto.berth.v1 import calls_pb2, placement_pb2, resources_pb2


@dataclass(frozen=True)
class Allocation:
    """What a claim holds on its machine (SPEC P9): cores, exact GPU ids, MB (None = not asked), env."""

    cpus: int
    gpu_ids: tuple[int, ...]
    ram_mb: int | None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_proto(cls, msg: resources_pb2.Allocation) -> Allocation:
        """Builds an Allocation from its message."""
        ram = msg.ram_mb if msg.HasField("ram_mb") else None
        return cls(msg.cpus, tuple(msg.gpu_ids), ram, dict(msg.env))


@dataclass(frozen=True)
class Grant:
    """A granted claim: where (`machine`, `remote`), what (`allocation`), and how (`clamped`, `fell_back`)."""

    claim_id: str
    machine: str
    remote: bool
    allocation: Allocation
    clamped: bool
    fell_back: bool

    @classmethod
    def from_proto(cls, msg: placement_pb2.Granted) -> Grant:
        """Builds a Grant from its message."""
        return cls(msg.claim_id, msg.machine, msg.remote, Allocation.from_proto(msg.allocation), msg.clamped, msg.fell_back)


@dataclass(frozen=True)
class Queued:
    """Why a claim waits (SPEC P6); `str()` is the short detail, e.g. "2 cpu(s)"."""

    detail: str
    claim_id: str
    position: int
    best_machine: str
    machines_able: int

    @classmethod
    def from_proto(cls, msg: placement_pb2.Queued) -> Queued:
        """Builds a Queued from its message."""
        return cls(msg.detail, msg.claim_id, msg.position, msg.best_machine, msg.machines_able)

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class Started:
    """A call was placed: its id, the machine running it and what it holds."""

    call_id: str
    machine: str
    allocation: Allocation


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


RunEvent = Union[Started, Metric, LogLine]
"""What `Client.run(on_event=...)` receives, in order, before the call's value."""


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
