"""Priorities from Python (SPEC Q1, issue 22), sync and asyncio (`connect` runs both): `priority=` and
`priority_class=` reach the real server (a config with `priority_classes:`), whose Queued carries the priority and
the position ahead of older waiters; an unknown class is InvalidAsk naming ask.priority_class; bad types and values
are refused before anything is sent, naming the parameter."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from berth_client import Client, InvalidAsk, NodeTimeout
from conftest import Connect
from processes import start_server


@pytest.fixture(scope="module")
def prio_server() -> Iterator[str]:
    """An engine of 1 cpu, with the classes urgent (100) and sweep (-10, the default)."""
    with tempfile.TemporaryDirectory() as d:
        config = Path(d) / "berth.yaml"
        config.write_text("priority_classes:\n  urgent: { value: 100 }\n  sweep: { value: -10, default: true }\n")
        server, address = start_server("--cpus", "1", "--config", str(config))
        yield address
        server.stop()


@pytest.fixture
def prio(prio_server: str, connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of prio_server."""
    with connect(prio_server) as c:
        yield c


def test_a_class_and_a_number_order_the_queue_and_queued_says_so(prio: Client) -> None:
    held = prio.acquire(cpus=1)
    try:
        seen: list[object] = []
        for kwargs in ({"priority_class": "urgent"}, {"priority": 7}, {}):
            with pytest.raises(NodeTimeout):
                prio.acquire(cpus=1, on_queued=seen.append, timeout=0.5, **kwargs)
        assert [getattr(q, "priority", None) for q in seen] == [100, 7, -10]
        assert all(getattr(q, "position", None) == 1 for q in seen)  # each waited alone, ahead of nobody
    finally:
        held.release()


def test_an_unknown_class_is_named_by_the_server(prio: Client) -> None:
    with pytest.raises(InvalidAsk, match=r'ask\.priority_class: unknown class "urgnet" \(known: urgent, sweep\)'):
        prio.acquire(cpus=1, priority_class="urgnet", timeout=5)


def test_bad_priorities_are_refused_before_anything_is_sent(prio: Client) -> None:
    for bad in ("3", 1.5, True):
        with pytest.raises(TypeError, match="priority must be an int"):
            prio.acquire(cpus=1, priority=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidAsk, match=r"ask\.priority: a whole number in ±1000000000 \(got 2000000000\)") as e:
        prio.acquire(cpus=1, priority=2_000_000_000)
    assert e.value.field == "ask.priority"
    with pytest.raises(TypeError, match="priority_class"):
        prio.acquire(cpus=1, priority_class=5)  # type: ignore[arg-type]


def test_a_group_carries_its_priority_to_the_server(prio: Client) -> None:
    with pytest.raises(InvalidAsk, match=r'priority_class: unknown class "urgnet" \(known: urgent, sweep\)'):
        prio.acquire_group([{"cpus": 1}], priority_class="urgnet", timeout=5)
    with pytest.raises(InvalidAsk, match=r"priority: a whole number in ±1000000000 \(got -2000000000\)"):
        prio.acquire_group([{"cpus": 1}], priority=-2_000_000_000)
    with prio.claim_group([{"cpus": 1}], priority_class="urgent", timeout=10) as group:
        assert group.members[0].machine == "engine"
