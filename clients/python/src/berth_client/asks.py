"""Building the berth.v1 Ask from keyword arguments, refusing what cannot be encoded.

The server validates every ask (SPEC R1) and names the field; here only what protobuf cannot
carry is refused (negative or non-integer numbers, an unknown policy), with the same shape of
message: `ask.cpus: must be a whole number >= 0 (got -1)`.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import checks
from ._proto.berth.v1 import resources_pb2
from .errors import InvalidAsk

POLICIES = {"prefer": resources_pb2.POLICY_PREFER, "require": resources_pb2.POLICY_REQUIRE}
ON_OVERSIZE = ("clamp", "fail")
_UINT32_MAX = 2**32 - 1


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise checks.wrong_type(name, "a whole number >= 0", value)
    if value < 0:
        raise InvalidAsk(f"ask.{name}: must be a whole number >= 0 (got {value!r})", field=f"ask.{name}")
    if value > _UINT32_MAX:
        raise InvalidAsk(f"ask.{name}: at most {_UINT32_MAX} (got {value!r})", field=f"ask.{name}")
    return value


MAX_PRIORITY = 1_000_000_000
"""Largest priority an ask may name, either way (SPEC Q1)."""


def check_priority(priority: object, field: str) -> None:
    """Raises TypeError unless `priority` is None or an int, InvalidAsk naming `field` outside ±MAX_PRIORITY."""
    if priority is None:
        return
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int (got {type(priority).__name__})")
    if abs(priority) > MAX_PRIORITY:
        raise InvalidAsk(f"{field}: a whole number in ±{MAX_PRIORITY} (got {priority})", field=field)


def build_ask(
    *,
    cpus: int | None = None,
    gpus: float = 0,
    ram_mb: int | None = None,
    label: str | None = None,
    policy: str = "prefer",
    node: str = "",
    run_id: str | None = None,
    env: Mapping[str, str] | None = None,
    on_oversize: str = "clamp",
    resources: Mapping[str, float] | None = None,
    gpu_type: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    into: resources_pb2.Ask | None = None,
) -> resources_pb2.Ask:
    """An Ask: `cpus` in cores (None = server default of 1, 0 = no cores), `gpus` a count or a
    share of one GPU in (0, 1) in steps of 0.0001 (`gpus=0.5`, sent as `gpu_share`; SPEC P14),
    `ram_mb` in MB (None = not asked), `policy` "prefer" or "require" (SPEC P3, P4), `on_oversize`
    "clamp" (cut to the best real machine, SPEC P5) or "fail" (refused with Oversize, SPEC P11).
    `resources`: named resources and pools, name → quantity, each a multiple of 0.0001 (issue 23).
    `gpu_type`: the GPU type the machine must report (`"a100"`, a MIG profile; issue 23 item 4); None = any.
    `priority`: queue order, higher first (an int in ±1,000,000,000; SPEC Q1); `priority_class`: a class of the
    server's config (`priority_classes:`) whose value the ask takes; None = the server's default class, else 0.
    `into`: an empty Ask to fill (e.g. a request's own `ask` field, so nothing is copied) instead of a new one.

    Raises InvalidAsk naming the field when a value cannot be encoded, TypeError naming it when a
    value has the wrong type (label, policy, node, run_id must be str; env a str → str mapping).
    """
    label = checks.optional_str("label", label)
    run_id = checks.optional_str("run_id", run_id)
    gpu_type = checks.optional_str("gpu_type", gpu_type)
    priority_class = checks.optional_str("priority_class", priority_class)
    check_priority(priority, "ask.priority")
    node = checks.text("node", node)
    env = checks.env("env", env)
    checks.text("policy", policy)
    if policy not in POLICIES:
        raise InvalidAsk(f"ask.policy: must be 'prefer' or 'require' (got {policy!r})", field="ask.policy")
    checks.text("on_oversize", on_oversize)
    if on_oversize not in ON_OVERSIZE:
        raise InvalidAsk(f"ask.on_oversize: must be 'clamp' or 'fail' (got {on_oversize!r})", field="ask.on_oversize")
    share = _share(gpus)
    gpus = 0 if share else _count("gpus", gpus)
    cpus = None if cpus is None else _count("cpus", cpus)
    ram_mb = None if ram_mb is None else _count("ram_mb", ram_mb)
    # only what differs from proto3's defaults is set (the same message, built with fewer field writes)
    ask = resources_pb2.Ask() if into is None else into
    ask.SetInParent()  # `into` a request's ask: the request asks, even with every field at its default
    ask.policy = POLICIES[policy]
    if gpus:
        ask.gpus = gpus
    if share:
        ask.gpu_share = share
    if gpu_type:
        ask.gpu_type = gpu_type
    if priority is not None:
        ask.priority = priority
    if priority_class:
        ask.priority_class = priority_class
    if label:
        ask.label = label
    if node:
        ask.node = node
    if run_id:
        ask.run_id = run_id
    if env:
        ask.env.update(env)
    if cpus is not None:
        ask.cpus = cpus
    if ram_mb is not None:
        ask.ram_mb = ram_mb
    if on_oversize == "fail":
        ask.on_oversize = resources_pb2.ON_OVERSIZE_FAIL
    if resources is not None:
        ask.resources.update(_named(resources))
    return ask


def _share(gpus: object) -> float:
    """The GPU share `gpus` asks (a float in (0, 1) in steps of 0.0001), 0.0 for a whole count.

    Raises InvalidAsk naming ask.gpus for a fraction above 1 (1.5) or finer than 0.0001 (Ray's rule).
    """
    if isinstance(gpus, bool) or not isinstance(gpus, float):
        return 0.0
    if gpus == int(gpus) and gpus >= 0:
        return 0.0  # 2.0 is a whole count; _count refuses the float type with a clear message
    units = round(gpus * 10_000)
    if not 0 < gpus < 1 or abs(units - gpus * 10_000) > 1e-6 * max(1, units):
        raise InvalidAsk(
            f"ask.gpus: a fraction in (0, 1) in steps of 0.0001 or a whole number >= 0 (got {gpus!r})",
            field="ask.gpus",
        )
    return float(gpus)


def _named(resources: Mapping[str, float] | None) -> dict[str, float]:
    """Checks named quantities: str names, numbers >= 0 in steps of 0.0001 (the server keeps 1e-4 units)."""
    if resources is None:
        return {}
    if not isinstance(resources, Mapping):
        raise TypeError(f"resources: must be a mapping of name to quantity (got {type(resources).__name__})")
    out: dict[str, float] = {}
    for name, q in resources.items():
        if not isinstance(name, str):
            raise TypeError(f"resources: names must be str (got {name!r})")
        field_name = f"ask.resources.{name}"
        if isinstance(q, bool) or not isinstance(q, (int, float)) or q != q or q < 0 or q > 1e9:
            raise InvalidAsk(f"{field_name}: a number from 0 to 1000000000 (got {q!r})", field=field_name)
        units = round(q * 10_000)
        if abs(units - q * 10_000) > 1e-6 * max(1, units):
            raise InvalidAsk(f"{field_name}: in steps of 0.0001 (got {q!r})", field=field_name)
        out[name] = float(q)
    return out
