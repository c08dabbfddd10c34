"""When and how a broken Run stream is picked up again (SPEC S3), shared by both clients.

A Run stream that breaks with UNAVAILABLE before its outcome — the server restarted or stopped, the link was cut —
is followed again by call id from the last event seen, with exponential backoff and jitter, for up to
`RESUME_WINDOW_S` seconds: the caller sees every event exactly once and then the outcome, as if nothing happened.
What is not a broken stream is raised as before: the worker went away (the call's own ending), a drain, any other
status. The call itself outlives the break only where the server keeps it: after a server restart, and while the
server runs when the Run asked `disconnect_grace`.
"""

from __future__ import annotations

import random
import time

import grpc

from .errors import BerthError, Unavailable

RESUME_WINDOW_S = 60.0
"""How long a broken Run stream is retried, in seconds (the server's default restart hold)."""
_FIRST_DELAY_S = 0.1
_MAX_DELAY_S = 2.0


class Resumption:
    """The retry state of one Run: `should_retry(err)` says whether `err` broke the stream (and the window is
    open); `delay()` is the next backoff with jitter, in seconds; `lost(err)` the error for a call that could
    not be picked up again."""

    def __init__(self, window_s: float = RESUME_WINDOW_S) -> None:
        self._window_s = window_s
        self._first_break: float | None = None
        self._attempt = 0

    def should_retry(self, err: grpc.RpcError) -> bool:
        """True when `err` is a broken stream worth following again and the window has not run out."""
        code = err.code() if callable(getattr(err, "code", None)) else None
        details = str(err.details() or "") if callable(getattr(err, "details", None)) else ""
        if code != grpc.StatusCode.UNAVAILABLE or "went away" in details or "draining" in details:
            return False
        now = time.monotonic()
        if self._first_break is None:
            self._first_break = now
        return now - self._first_break < self._window_s

    def resumed(self) -> bool:
        """True once the stream broke at least once (a later NOT_FOUND means the call was lost)."""
        return self._first_break is not None

    def delay(self) -> float:
        """Seconds to wait before the next attempt: exponential from 0.1 s, capped at 2 s, with full jitter."""
        cap = min(_MAX_DELAY_S, _FIRST_DELAY_S * 2**self._attempt)
        self._attempt += 1
        return random.uniform(cap / 2, cap)

    def lost(self, call_id: str, err: BerthError) -> BerthError:
        """The error for a call that a resumed stream could not find again (the server no longer knows it)."""
        return Unavailable(f"call {call_id} was lost while its stream was broken: {err}")
