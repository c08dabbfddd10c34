"""berth_client: Python engines on berth's contract (berth.v1), blocking or asyncio.

    from berth_client.aio import AsyncClient

    async with AsyncClient("127.0.0.1:50051") as client:
        async with client.claim(cpus=2, gpus=1, node="study.fit") as grant:
            print(grant.machine, grant.allocation.gpu_ids)
        value = await client.run(source="def process(x):\\n    return x + 1", kwargs={"x": 1})

`berth_client.Client` is the same surface without `async`/`await`.
"""

from .claims import ClaimLease
from .client import Client
from .errors import (
    BerthError,
    Cancelled,
    ClaimLost,
    Clamped,
    InvalidAsk,
    NodeExited,
    NodeTimeout,
    NotFound,
    NoWorker,
    Oversize,
    Preempted,
    RemoteError,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    WorkerGone,
)
from .events import EventStream
from .groups import GroupGrant, GroupLease, GroupMember, GroupQueued
from .history import HistoryEntry
from .runs import RunStream
from .snapshots import (
    CallInFlight,
    Compiled,
    Event,
    HeldClaim,
    Inventory,
    Machine,
    Provisioner,
    Satisfiability,
    Snapshot,
    Verdict,
    WaitingClaim,
)
from .values import (
    Allocation,
    Amount,
    CancelCounts,
    Grant,
    LogLine,
    Metric,
    Preempting,
    Queued,
    Result,
    Retrying,
    RunEvent,
    Started,
    WorkerLink,
)

__all__ = [
    "Allocation",
    "Amount",
    "BerthError",
    "CallInFlight",
    "CancelCounts",
    "Cancelled",
    "Preempted",
    "ClaimLease",
    "ClaimLost",
    "Clamped",
    "Client",
    "Compiled",
    "Event",
    "EventStream",
    "Grant",
    "GroupGrant",
    "GroupLease",
    "GroupMember",
    "GroupQueued",
    "HeldClaim",
    "HistoryEntry",
    "InvalidAsk",
    "Inventory",
    "LogLine",
    "Machine",
    "Metric",
    "NoWorker",
    "NodeExited",
    "NodeTimeout",
    "NotFound",
    "Oversize",
    "Provisioner",
    "Preempting",
    "Queued",
    "RemoteError",
    "ResourceExhausted",
    "Result",
    "Retrying",
    "RunEvent",
    "RunStream",
    "Satisfiability",
    "Snapshot",
    "Started",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Verdict",
    "WaitingClaim",
    "WorkerGone",
    "WorkerLink",
]
__version__ = "0.1.0"
