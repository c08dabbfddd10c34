"""What a held lease's stream says of preemption (SPEC Q2), shared by the sync and asyncio leases: the notice, the
claim waiting again at its place (requeue) and its new grant. Each lease maps the change onto its own events."""

from __future__ import annotations

from typing import Any, Literal

from ._proto.berth.v1 import placement_pb2
from .decode import tell_preempted
from .prepare import ClaimSpec
from .values import Grant, Preempting, Queued

Change = Literal["doomed", "requeued", "regranted"] | None


def heard(lease: Any, msg: placement_pb2.ClaimResponse) -> tuple[str | None, Change]:
    """Updates `lease.preempted`, `lease.requeued` and `lease.grant` from `msg`. Returns the message's kind and what
    changed: "doomed" (a notice: the grant is going), "requeued" (the claim waits again), "regranted" (it holds a new
    grant), or None. The lease updates its own waits, then calls `tell(lease, change, spec)`."""
    kind: str | None = msg.WhichOneof("kind")
    if kind == "preempting":
        lease.preempted = Preempting.from_proto(msg.preempting)
        return kind, "doomed"
    if kind == "queued" and msg.queued.requeued:  # preempted and given back: it waits again
        lease.requeued = Queued.from_proto(msg.queued)
        return kind, "requeued"
    if kind == "granted":  # the requeued claim is granted again: a new claim id and allocation
        lease.grant = Grant.from_proto(msg.granted)
        lease.requeued = None
        lease.preempted = None
        return kind, "regranted"
    return kind, None


def tell(lease: Any, change: Change, spec: ClaimSpec) -> None:
    """Calls the spec's hooks for `change` once the lease's state says it: `on_preempted(notice)` for a notice,
    `on_queued(queued)` for a claim waiting again."""
    if change == "doomed":
        tell_preempted(spec.on_preempted, lease.preempted)
    elif change == "requeued" and spec.on_queued is not None:
        spec.on_queued(lease.requeued)
