"""Finished calls and ended claims (SPEC S9, the History RPC), shared by both clients: the request from checked
arguments and the entries as frozen dataclasses. Times are seconds since the Unix epoch (float), like time.time()."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ._proto.berth.v1 import history_pb2
from .errors import InvalidAsk

STATES = ("succeeded", "failed", "cancelled", "lost", "released")
"""How work ends: calls succeeded / failed / cancelled / lost; claims released / lost."""


@dataclass(frozen=True)
class HistoryEntry:
    """One finished call or ended claim: `kind` "call" or "claim", `id` (the call id, "#<k>" for a retry's attempt,
    or the claim id), `state` (one of STATES), `started` / `ended` (s since the epoch), `attempt` (a call's, 0 for a
    claim), `failure_type` (a failed call's), `outcome` (how a claim was given back)."""

    kind: str
    id: str
    run_id: str
    node: str
    machine: str
    state: str
    detail: str
    failure_type: str
    outcome: str
    started: float
    ended: float
    attempt: int

    @classmethod
    def from_proto(cls, e: history_pb2.HistoryEntry) -> HistoryEntry:
        """Builds a HistoryEntry from its message."""
        return cls(
            e.kind,
            e.id,
            e.run_id,
            e.node,
            e.machine,
            e.state,
            e.detail,
            e.failure_type,
            e.outcome,
            e.started_ms / 1000,
            e.ended_ms / 1000,
            e.attempt,
        )


def history_request(
    run_id: str | None, state: str | None, machine: str | None, kind: str | None, since: float | None, limit: int
) -> history_pb2.HistoryRequest:
    """The HistoryRequest of `history()`'s arguments: `since` is how far back, in s. Raises InvalidAsk naming
    `state`, `kind`, `since` or `limit` when out of range, TypeError for a text argument that is not a str."""
    for name, value in (("run_id", run_id), ("state", state), ("machine", machine), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name}: expected a str or None (got {type(value).__name__})")
    if state is not None and state not in STATES:
        raise InvalidAsk(f"state: must be one of {', '.join(STATES)} (got {state!r})", field="state")
    if kind is not None and kind not in ("call", "claim"):
        raise InvalidAsk(f"kind: must be 'call' or 'claim' (got {kind!r})", field="kind")
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float)) or not since > 0):
        raise InvalidAsk(f"since: must be a number of seconds > 0, or None (got {since!r})", field="since")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise InvalidAsk(f"limit: must be an int from 1 to 10000 (got {limit!r})", field="limit")
    since_ms = 0 if since is None or not math.isfinite(since) else max(0, int((time.time() - since) * 1000))
    return history_pb2.HistoryRequest(
        run_id=run_id or "", state=state or "", machine=machine or "", kind=kind or "", since_ms=since_ms, limit=limit
    )
