"""Taking back a claim whose Claim stream broke (SPEC S3), shared by the sync and asyncio leases: which
stream endings are worth a resume, the backoff between attempts, the request, and the error when the
claim cannot be taken back. A claim asked with `hold=S` is held by the server for S seconds after its
stream broke; the lease keeps trying to resume it for as long."""

from __future__ import annotations

import random

import grpc

from ._proto.berth.v1 import placement_pb2
from .errors import ClaimLost
from .values import Grant

FIRST_DELAY_S = 0.05  # first wait between resume attempts
MAX_DELAY_S = 1.0  # longest wait between attempts (a hold may be a few seconds only)
LIVE_STREAM = "held by a live stream"  # the server has not seen the old stream end yet: retry


def worth_resuming(code: grpc.StatusCode | None, details: str) -> bool:
    """True when a stream ended this way may come back: the link or the server went away
    (UNAVAILABLE, but not the claim's worker "went away"), or the server still sees the old stream."""
    if code == grpc.StatusCode.UNAVAILABLE:
        return "went away" not in details
    return code == grpc.StatusCode.FAILED_PRECONDITION and LIVE_STREAM in details


def backoff(attempt: int) -> float:
    """Seconds to wait before resume attempt `attempt` (0-based): doubling from FIRST_DELAY_S up to
    MAX_DELAY_S, with jitter (50-100 % of it) so that many clients do not come back in step."""
    delay: float = min(MAX_DELAY_S, FIRST_DELAY_S * 2.0**attempt)
    return delay * random.uniform(0.5, 1.0)


def resume_request(grant: Grant) -> placement_pb2.ClaimRequest:
    """The first message of a stream that takes `grant` back."""
    return placement_pb2.ClaimRequest(
        resume=placement_pb2.Resume(claim_id=grant.claim_id, resume_token=grant.resume_token)
    )


def claim_lost(grant: Grant, why: str) -> ClaimLost:
    """The error for a claim that could not be taken back, naming it and why."""
    return ClaimLost(f"claim {grant.claim_id} could not be resumed: {why}", claim_id=grant.claim_id)


def code_of(err: object) -> tuple[grpc.StatusCode | None, str]:
    """The status code and details of a failed call (sync or asyncio), (None, str) if it has none."""
    code_fn, details_fn = getattr(err, "code", None), getattr(err, "details", None)
    code = code_fn() if callable(code_fn) else None
    details = details_fn() if callable(details_fn) else str(err)
    return (code if isinstance(code, grpc.StatusCode) else None), (details if isinstance(details, str) else "")
