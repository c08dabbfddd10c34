"""Satisfiable, GetSnapshot and WatchEvents from Python (issue #3 acceptance 15, 7)."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from berth_client import Client, Unauthenticated
from processes import start_server


@pytest.fixture(scope="module")
def four_cpu_server() -> Iterator[str]:
    """Engine 4 cpus, no GPU, no provisioner."""
    server, address = start_server("--cpus", "4", "--gpus", "")
    yield address
    server.stop()


def test_satisfiable_answers_empty_when_the_ask_runs_now_or_after_clamping(four_cpu_server: str) -> None:
    with Client(four_cpu_server) as client:
        assert client.satisfiable() == ""
        assert client.satisfiable(cpus=2) == ""
        assert client.satisfiable(cpus=1, gpus=1) == ""  # clamped to the engine: no provisioner to wait for


def test_snapshot_lists_the_engine_with_its_inventory(four_cpu_server: str) -> None:
    with Client(four_cpu_server) as client:
        snap = client.snapshot()
    engine = snap.machines[0]
    assert (engine.name, engine.remote, engine.total.cpus, list(engine.total.gpu_ids)) == ("engine", False, 4, [])
    assert engine.free.cpus == 4


def test_events_report_a_claim_placed_then_released(four_cpu_server: str) -> None:
    with Client(four_cpu_server) as client, client.events() as events:
        client.snapshot()  # the stream is open before the claim below
        guard = threading.Timer(20, events.close)  # bounds the wait: ends the iteration below
        guard.start()
        with client.claim(cpus=1, node="study.watched") as grant:
            pass
        kinds: list[str] = []
        for event in events:
            if event.claim_id == grant.claim_id:
                kinds.append(event.kind)
            if "claim_released" in kinds:
                break
        guard.cancel()
    assert kinds[0] == "node_placed" and kinds[-1] == "claim_released"


def test_a_token_protected_server_refuses_a_client_without_the_token() -> None:
    server, address = start_server("--cpus", "1", "--token", "s3cret")
    try:
        with Client(address, token="") as anonymous:
            with pytest.raises(Unauthenticated):
                anonymous.snapshot()
        with Client(address, token="s3cret") as client:
            assert client.snapshot().machines[0].name == "engine"
    finally:
        server.stop()
