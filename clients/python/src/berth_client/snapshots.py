"""Typed views of GetSnapshot, WatchEvents, Satisfiable and Compile answers (plain frozen dataclasses
built from the berth.v1 messages, so engines never handle protobuf objects)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ._proto.berth.v1 import placement_pb2, resources_pb2
from .failures import exception_from_failure
from .values import Allocation, Amount, Queued, flag, optional_amount


@dataclass(frozen=True)
class Inventory:
    """What a machine has: `cpus` (cores), exact `gpu_ids`, `ram_mb` (MB; None = not limited)."""

    cpus: int
    gpu_ids: tuple[int, ...]
    ram_mb: int | None

    @classmethod
    def from_proto(cls, msg: resources_pb2.Inventory) -> Inventory:
        """Builds an Inventory from its message."""
        return cls(msg.cpus, tuple(msg.gpu_ids), msg.ram_mb if msg.HasField("ram_mb") else None)


@dataclass(frozen=True)
class Machine:
    """One machine's books (SPEC P1): `total` inventory, what is `free` now (and which `free_gpu_ids`),
    how many `claims` it holds and `running_calls` (at most `max_parallel`; 0 = no limit)."""

    name: str
    labels: tuple[str, ...]
    remote: bool
    total: Inventory
    free: Amount
    free_gpu_ids: tuple[int, ...]
    claims: int
    running_calls: int
    max_parallel: int
    version: str


@dataclass(frozen=True)
class WaitingClaim:
    """A claim that waits (SPEC P6) with its full Queued `reason`; `waited_ms` so far."""

    claim_id: str
    node: str
    run_id: str
    label: str
    reason: Queued
    waited_ms: int


@dataclass(frozen=True)
class HeldClaim:
    """A granted claim: on which `machine`, its `allocation`, held for `held_ms`."""

    claim_id: str
    node: str
    run_id: str
    machine: str
    allocation: Allocation
    held_ms: int


@dataclass(frozen=True)
class CallInFlight:
    """A call running on `machine` for `elapsed_ms`; `call_id` is `<run_id>:<flow>.<node>`."""

    call_id: str
    run_id: str
    machine: str
    elapsed_ms: int


@dataclass(frozen=True)
class Provisioner:
    """A provisioner (SPEC P10): the machine `shapes` it can start and its `status` line."""

    name: str
    shapes: tuple[Inventory, ...]
    status: str


@dataclass(frozen=True)
class Snapshot:
    """The books at one instant: machines (engine first), waiting and held claims, calls, provisioners."""

    machines: tuple[Machine, ...]
    waiting: tuple[WaitingClaim, ...]
    held: tuple[HeldClaim, ...]
    calls: tuple[CallInFlight, ...]
    provisioners: tuple[Provisioner, ...]

    @classmethod
    def from_proto(cls, msg: placement_pb2.GetSnapshotResponse) -> Snapshot:
        """Builds a Snapshot from a GetSnapshotResponse."""
        machines = tuple(
            Machine(
                m.name,
                tuple(m.labels),
                m.remote,
                Inventory.from_proto(m.total),
                Amount.from_proto(m.free),
                tuple(m.free_gpu_ids),
                m.claims,
                m.running_calls,
                m.max_parallel,
                m.version,
            )
            for m in msg.machines
        )
        waiting = tuple(
            WaitingClaim(w.claim_id, w.node, w.run_id, w.label, Queued.from_proto(w.reason), w.waited_ms)
            for w in msg.waiting
        )
        held = tuple(
            HeldClaim(h.claim_id, h.node, h.run_id, h.machine, Allocation.from_proto(h.allocation), h.held_ms)
            for h in msg.held
        )
        calls = tuple(CallInFlight(c.call_id, c.run_id, c.machine, c.elapsed_ms) for c in msg.calls)
        provs = tuple(
            Provisioner(p.name, tuple(Inventory.from_proto(s) for s in p.shapes), p.status) for p in msg.provisioners
        )
        return cls(machines, waiting, held, calls, provs)

    def machine(self, name: str) -> Machine | None:
        """The machine called `name`, or None."""
        return next((m for m in self.machines if m.name == name), None)


@dataclass(frozen=True)
class Event:
    """One WatchEvents event: `kind` (node_queued, node_placed, claim_released, worker_attached, …),
    `detail`, the names it concerns, `seq` (since server start) and `time_ms` (epoch ms), and the typed
    fields the kind carries: `asked` / `granted` Amounts, `gpu_ids`, `fell_back`, `clamped`, `queued`
    (node_queued's full reason), `outcome`, `failure_type`, `duration_ms`, `limiting`."""

    kind: str
    detail: str
    machine: str
    node: str
    claim_id: str
    run_id: str
    call_id: str
    seq: int
    time_ms: int
    label: str = ""
    asked: Amount | None = None
    granted: Amount | None = None
    gpu_ids: tuple[int, ...] = ()
    fell_back: bool = False
    clamped: bool = False
    queued: Queued | None = None
    outcome: str = ""
    failure_type: str = ""
    duration_ms: int = 0
    limiting: str = ""

    @classmethod
    def from_proto(cls, msg: placement_pb2.WatchEventsResponse) -> Event:
        """Builds an Event from a WatchEventsResponse (fields this contract lacks keep their defaults)."""
        fields = msg.DESCRIPTOR.fields_by_name

        def text(name: str) -> str:
            return str(getattr(msg, name)) if name in fields else ""

        queued_msg = getattr(msg, "queued", None) if "queued" in fields and msg.HasField("queued") else None
        return cls(
            msg.kind,
            msg.detail,
            msg.machine,
            msg.node,
            msg.claim_id,
            msg.run_id,
            msg.call_id,
            int(msg.seq or 0),
            int(msg.time_ms or 0),
            text("label"),
            optional_amount(msg, "asked"),
            optional_amount(msg, "granted"),
            tuple(getattr(msg, "gpu_ids", ())),
            flag(msg, "fell_back"),
            flag(msg, "clamped"),
            Queued.from_proto(queued_msg) if queued_msg is not None else None,
            text("outcome"),
            text("failure_type"),
            int(getattr(msg, "duration_ms", 0)),
            text("limiting"),
        )


class Verdict(str, Enum):
    """Satisfiable's answer (SPEC P5, P6, P10)."""

    RUNS_NOW = "runs_now"
    WAITS = "waits"
    WAITS_FOR_PROVISIONER = "waits_for_provisioner"
    CLAMPED = "clamped"
    IMPOSSIBLE = "impossible"
    UNKNOWN = "unknown"  # a server that does not give a verdict


@dataclass(frozen=True)
class Satisfiability:
    """What an ask would do now: `verdict`; `clamped_to` (the Amount it would be cut to, for CLAMPED
    and IMPOSSIBLE); `limiting` ("cpus", "gpus" or "ram_mb"; "label" when IMPOSSIBLE because a required label
    is carried by no machine, none coming back; "" when not clamped); `wait_for` (what a
    provisioner must start, e.g. "1 gpu(s) and 1 cpu(s)"; "" otherwise)."""

    verdict: Verdict
    clamped_to: Amount | None
    limiting: str
    wait_for: str

    @classmethod
    def from_proto(cls, msg: placement_pb2.SatisfiableResponse) -> Satisfiability:
        """Builds a Satisfiability from a SatisfiableResponse."""
        number = int(getattr(msg, "verdict", 0))
        names = {
            1: Verdict.RUNS_NOW,
            2: Verdict.WAITS,
            3: Verdict.WAITS_FOR_PROVISIONER,
            4: Verdict.CLAMPED,
            5: Verdict.IMPOSSIBLE,
        }
        limiting = str(getattr(msg, "limiting", ""))
        return cls(names.get(number, Verdict.UNKNOWN), optional_amount(msg, "clamped_to"), limiting, msg.wait_for)


@dataclass(frozen=True)
class Compiled:
    """Compile's answer: `checked` (False when no worker with the label is attached: "not checked",
    SPEC W5), `ok`, the `worker` that checked it, `detail`, and `error`: the exception the source
    raises when compiled (e.g. SyntaxError), None when ok or not checked."""

    checked: bool
    ok: bool
    worker: str
    detail: str
    error: BaseException | None

    @classmethod
    def from_proto(cls, msg: placement_pb2.CompileResponse) -> Compiled:
        """Builds a Compiled from a CompileResponse."""
        f = msg.failure
        error = exception_from_failure(f.type, f.message, f.traceback, f.call_id) if msg.HasField("failure") else None
        return cls(msg.checked, msg.ok, msg.worker, msg.detail, error)
