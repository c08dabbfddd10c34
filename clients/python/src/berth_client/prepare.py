"""The requests both clients send, built and checked in one place (`Client` and `aio.AsyncClient` call
these): every argument is checked before anything is sent — TypeError for a wrong type, InvalidAsk (a
ValueError) for a wrong value, both naming the argument and the value."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import checks
from ._proto.berth.v1 import placement_pb2, resources_pb2
from .asks import build_ask
from .errors import InvalidAsk
from .values import Grant, Preempting, Queued, RunEvent


@dataclass(frozen=True)
class ClaimSpec:
    """A checked claim: the Ask, `on_queued`, `timeout` (s for the grant; None = for ever), `on_preempted` (called with
    the preemption notice, SPEC Q2)."""

    ask: resources_pb2.Ask
    on_queued: Callable[[Queued], object] | None
    timeout: float | None
    on_preempted: Callable[[Preempting], object] | None = None

    @property
    def oversize_fails(self) -> bool:
        """True when the ask said on_oversize="fail"."""
        return self.ask.HasField("on_oversize") and self.ask.on_oversize == resources_pb2.ON_OVERSIZE_FAIL


@dataclass(frozen=True)
class RunSpec:
    """A checked run: the RunRequest, the ask's `label` (for NoWorker) and `on_event`; `whole`, when set, is the
    RunWholeRequest whose `run` is `request` itself (built in place, so asking RunWhole copies nothing)."""

    request: placement_pb2.RunRequest
    label: str
    on_event: Callable[[RunEvent], object] | None
    oversize_fails: bool
    whole: placement_pb2.RunWholeRequest | None = None


def claim_spec(
    *,
    cpus: int | None,
    gpus: float,
    ram_mb: int | None,
    label: str | None,
    policy: str,
    node: str,
    run_id: str | None,
    env: Mapping[str, str] | None,
    on_oversize: str,
    on_queued: Callable[[Queued], object] | None,
    timeout: float | None,
    hold: float | None = None,
    resources: Mapping[str, float] | None = None,
    gpu_type: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    on_preempt: str = "requeue",
    on_preempted: Callable[[Preempting], object] | None = None,
) -> ClaimSpec:
    """The ClaimSpec for `claim()` / `acquire()` arguments (see Client.claim); `hold` (s) becomes the
    Ask's hold_ms; `resources` the Ask's named resources; `gpu_type` its required GPU type; `on_preempt`
    "requeue" or "cancel" its on_preempt (SPEC Q2), else InvalidAsk naming ask.on_preempt."""
    timeout = checks.timeout(timeout)
    hold_ms = checks.hold(hold)
    checks.callback("on_queued", on_queued)
    checks.callback("on_preempted", on_preempted)
    ask = build_ask(
        cpus=cpus,
        gpus=gpus,
        ram_mb=ram_mb,
        label=label,
        policy=policy,
        node=node,
        run_id=run_id,
        env=env,
        on_oversize=on_oversize,
        resources=resources,
        gpu_type=gpu_type,
        priority=priority,
        priority_class=priority_class,
    )
    ask.hold_ms = hold_ms
    checks.text("on_preempt", on_preempt)
    if on_preempt not in ("requeue", "cancel"):
        raise InvalidAsk(f"ask.on_preempt: must be 'requeue' or 'cancel' (got {on_preempt!r})", field="ask.on_preempt")
    if on_preempt == "cancel":
        ask.on_preempt = resources_pb2.ON_PREEMPT_CANCEL
    return ClaimSpec(ask, on_queued, timeout, on_preempted)


def claim_id_of(claim: object) -> str | None:
    """The claim id `run(claim=...)` names: a Grant, anything with a `claim_id` str (a held claim
    lease), a claim id str, or None; else TypeError / InvalidAsk naming `claim`."""
    if claim is None:
        return None
    if isinstance(claim, str):
        if not claim:
            raise InvalidAsk("claim: must be a claim id (got '')", field="claim")
        return claim
    claim_id = getattr(claim, "claim_id", None)
    if isinstance(claim, Grant) or (isinstance(claim_id, str) and claim_id):
        return str(claim_id)
    raise checks.wrong_type("claim", "a Grant or held claim (from claim/acquire) or a claim id str, or None", claim)


def run_spec(
    *,
    source: str | None,
    command: Sequence[str] | None,
    kwargs: Mapping[str, Any] | None,
    flow: str,
    node: str,
    run_id: str | None,
    cpus: int | None,
    gpus: float,
    ram_mb: int | None,
    label: str | None,
    policy: str,
    env: Mapping[str, str] | None,
    claim: object,
    cwd: str | None,
    timeout: float | None,
    on_event: Callable[[RunEvent], object] | None,
    on_oversize: str,
    disconnect_grace: float | None = None,
    max_retries: int = 0,
    retry_on_failure: bool = False,
    priority: int | None = None,
    priority_class: str | None = None,
) -> RunSpec:
    """The RunSpec for `run()` / `stream_run()` arguments (see Client.run); `run_id` None → "py-" and
    12 hex digits."""
    checks.optional_str("source", source)
    argv = checks.argv(command)
    kw = checks.kwargs(kwargs)
    if kw and source is None:
        raise InvalidAsk("kwargs: only a source= payload takes kwargs (a command gets none)", field="kwargs")
    checks.text("flow", flow)
    checks.text("node", node)
    checks.optional_str("run_id", run_id)
    checks.optional_str("cwd", cwd)
    timeout = checks.timeout(timeout)
    grace = checks.disconnect_grace(disconnect_grace)
    retries, on_failure = checks.retries(max_retries, retry_on_failure)
    checks.callback("on_event", on_event)
    claim_id = claim_id_of(claim)
    run_id = run_id or f"py-{uuid.uuid4().hex[:12]}"
    if claim_id is not None and retries:
        raise InvalidAsk(
            "max_retries: a run inside a claim is not retried (the claim's machine is gone with it); "
            "pass an ask (cpus, gpus, label) instead of claim",
            field="max_retries",
        )
    whole = placement_pb2.RunWholeRequest()
    req = whole.run  # the RunRequest is built inside the RunWholeRequest (a reference, not a copy)
    if claim_id is not None:
        given = (
            ("cpus", cpus),
            ("ram_mb", ram_mb),
            ("label", label),
            ("env", env),
            ("priority", priority),
            ("priority_class", priority_class),
        )
        extra = [k for k, v in given if v is not None] + (["gpus"] if gpus else [])
        if extra:
            raise InvalidAsk(
                f"claim: runs with the claim's allocation; do not also pass {', '.join(extra)}", field="claim"
            )
    else:
        build_ask(
            into=req.ask,
            cpus=cpus,
            gpus=gpus,
            ram_mb=ram_mb,
            label=label,
            policy=policy,
            node=f"{flow}.{node}",
            run_id=run_id,
            env=env,
            on_oversize=on_oversize,
            priority=priority,
            priority_class=priority_class,
        )
    build_run_request(
        into=req,
        source=source,
        command=argv,
        kwargs=kw,
        cwd=cwd,
        flow=flow,
        node=node,
        run_id=run_id,
        claim_id=claim_id,
        ask=None,
        timeout=timeout,
    )
    if grace is not None:
        req.disconnect_grace_ms = round(grace * 1000)
    req.max_retries = retries
    req.retry_on_failure = on_failure
    return RunSpec(req, label or "", on_event, on_oversize == "fail", whole)


def build_run_request(
    *,
    source: str | None,
    command: Sequence[str] | None,
    kwargs: Mapping[str, Any] | None,
    cwd: str | None,
    flow: str,
    node: str,
    run_id: str,
    claim_id: str | None,
    ask: resources_pb2.Ask | None,
    timeout: float | None,
    into: placement_pb2.RunRequest | None = None,
) -> placement_pb2.RunRequest:
    """A RunRequest: exactly one of `source` / `command`; `claim_id` or `ask`; `timeout` (s) as timeout_ms.
    `into`: a RunRequest to fill (its `ask` possibly filled already) instead of a new one.
    Raises InvalidAsk naming the argument when both or neither payload is given, or kwargs are not JSON-like."""
    if (source is None) == (command is None):
        raise InvalidAsk("payload: give exactly one of source= or command=", field="payload")
    req = placement_pb2.RunRequest() if into is None else into
    req.flow = flow
    req.node = node
    req.run_id = run_id
    if timeout is not None:
        req.timeout_ms = max(1, round(timeout * 1000))
    if source is not None:
        req.source.source = source
        try:
            if kwargs:
                req.source.kwargs.update(kwargs)
        except (ValueError, TypeError) as err:
            raise InvalidAsk(f"kwargs: must be JSON-like ({err})", field="kwargs") from None
    else:
        req.command.argv.extend(command or [])
        if cwd:
            req.command.cwd = cwd
    if claim_id is not None:
        req.claim_id = claim_id
    elif ask is not None:
        req.ask.CopyFrom(ask)
    return req


def cancel_request(run_id: object) -> placement_pb2.CancelRequest:
    """A CancelRequest; TypeError / InvalidAsk naming `run_id` when it is not a non-empty str."""
    checks.text("run_id", run_id)
    if not run_id:
        raise InvalidAsk("run_id: must name a run (got '')", field="run_id")
    return placement_pb2.CancelRequest(run_id=str(run_id))


def satisfiable_request(
    *,
    cpus: int | None,
    gpus: float,
    ram_mb: int | None,
    label: str | None,
    policy: str,
    on_oversize: str,
) -> placement_pb2.SatisfiableRequest:
    """A SatisfiableRequest for the ask (checked like claim's)."""
    ask = build_ask(cpus=cpus, gpus=gpus, ram_mb=ram_mb, label=label, policy=policy, on_oversize=on_oversize)
    return placement_pb2.SatisfiableRequest(ask=ask)


def compile_request(*, source: object, label: object, flow: object, node: object) -> placement_pb2.CompileRequest:
    """A CompileRequest: `source` (Python defining process) to compile on a worker carrying `label`."""
    return placement_pb2.CompileRequest(
        source=checks.text("source", source),
        label=checks.text("label", label),
        flow=checks.text("flow", flow),
        node=checks.text("node", node),
    )
