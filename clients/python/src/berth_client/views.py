"""Read-only views shared by the sync and asyncio classes: a held claim's grant fields, and a run
stream's outcome (one definition each, mixed into ClaimLease / AsyncClaimLease and RunStream /
AsyncRunStream)."""

from __future__ import annotations

from typing import Any

from .decode import RunDecoder
from .values import Allocation, Grant, Result, Started


class GrantFields:
    """`claim_id`, `machine`, `remote`, `allocation`, `clamped` of the granted claim (`grant`);
    RuntimeError before the grant."""

    grant: Grant | None

    def _held(self) -> Grant:
        if self.grant is None:
            raise RuntimeError("the claim is not granted (yet)")
        return self.grant

    @property
    def claim_id(self) -> str:
        """The granted claim's id."""
        return self._held().claim_id

    @property
    def machine(self) -> str:
        """The machine the claim is on."""
        return self._held().machine

    @property
    def remote(self) -> bool:
        """True when the machine is a worker (not the engine host)."""
        return self._held().remote

    @property
    def allocation(self) -> Allocation:
        """What the claim holds (cpus, gpu_ids, ram_mb, env)."""
        return self._held().allocation

    @property
    def clamped(self) -> bool:
        """True when the ask was cut down to the best real machine (SPEC P5)."""
        return self._held().clamped


class RunOutcome:
    """`started`, `clamped` and `value` of a run stream."""

    _decoder: RunDecoder
    _result: Result | None

    @property
    def started(self) -> Started | None:
        """The call's Started (machine, allocation, clamped), once it arrived."""
        return self._decoder.started

    @property
    def clamped(self) -> bool:
        """True when the call's ask was cut down to the best real machine (SPEC P5)."""
        return self._decoder.started is not None and self._decoder.started.clamped

    @property
    def value(self) -> Any:
        """The node's value (after the stream ended with a Result)."""
        if self._result is None:
            raise RuntimeError("the call has not returned a value (iterate the stream to its end first)")
        return self._result.value
