"""berth_client: Python engines on berth's contract (berth.v1).

    from berth_client import Client

    with Client("127.0.0.1:50051") as client:
        with client.claim(cpus=2, gpus=1, node="study.fit") as grant:
            print(grant.machine, grant.allocation.gpu_ids)
        value = client.run(source="def process(x):\\n    return x + 1", kwargs={"x": 1})
"""
from .claims import ClaimLease
from .client import Client
from .events import EventStream
from .errors import (
    BerthError,
    Cancelled,
    InvalidAsk,
    NodeTimeout,
    NotFound,
    NoWorker,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    WorkerGone,
)
from .failures import RemoteError
from .values import Allocation, CancelCounts, Grant, LogLine, Metric, Queued, RunEvent, Started

__all__ = [
    "Allocation", "BerthError", "CancelCounts", "Cancelled", "ClaimLease", "Client", "EventStream",
    "Grant", "InvalidAsk", "LogLine", "Metric", "NoWorker", "NodeTimeout", "NotFound", "Queued",
    "RemoteError", "ResourceExhausted", "RunEvent", "Started", "Unauthenticated", "Unavailable", "Unimplemented", "WorkerGone",
]
__version__ = "0.1.0"
