"""Satisfiable, GetSnapshot and WatchEvents from Python (issue #3 acceptance 15, 7)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from berth_client import Event, ResourceExhausted, Unavailable, Verdict
from conftest import Connect
from processes import start_server


@pytest.fixture(scope="module")
def four_cpu_server() -> Iterator[str]:
    """Engine 4 cpus, no GPU, no provisioner."""
    server, address = start_server("--cpus", "4", "--gpus", "")
    yield address
    server.stop()


def test_satisfiable_waits_for_nothing_when_the_ask_runs_now_or_after_clamping(
    four_cpu_server: str, connect: Connect
) -> None:
    with connect(four_cpu_server) as client:
        assert client.satisfiable().wait_for == ""
        assert client.satisfiable(cpus=2).wait_for == ""
        assert client.satisfiable(cpus=1, gpus=1).wait_for == ""  # clamped to the engine: no provisioner to wait for


def test_snapshot_lists_the_engine_with_its_inventory(four_cpu_server: str, connect: Connect) -> None:
    with connect(four_cpu_server) as client:
        snap = client.snapshot()
    engine = snap.machines[0]
    assert (engine.name, engine.remote, engine.total.cpus, list(engine.total.gpu_ids)) == ("engine", False, 4, [])
    assert engine.free.cpus == 4


def test_events_report_a_claim_placed_then_released(four_cpu_server: str, connect: Connect) -> None:
    with connect(four_cpu_server) as client, client.events() as events:
        client.snapshot()  # the stream is open before the claim below
        guard = threading.Timer(20, events.close)  # bounds the wait: ends the iteration below
        guard.start()
        with client.claim(cpus=1, node="study.watched") as grant:
            pass
        kinds: list[str] = []
        for event in events:
            assert isinstance(event, Event)
            if event.claim_id == grant.claim_id:
                assert event.seq > 0 and event.time_ms > 0
                kinds.append(event.kind)
            if "claim_released" in kinds:
                break
        guard.cancel()
    assert kinds[0] == "node_placed" and kinds[-1] == "claim_released"


def test_satisfiable_of_a_required_label_no_machine_carries_answers_impossible_not_an_error(connect: Connect) -> None:
    """Issue 23 item 7: the verdict is IMPOSSIBLE limited by "label" (a claim of it still raises)."""
    server, address = start_server("--cpus", "1", "--gpus", "", "--reconnect-grace", "0")
    try:
        with connect(address) as client:
            answer = client.satisfiable(label="tpu", policy="require")
            assert (answer.verdict, answer.limiting, answer.clamped_to) == (Verdict.IMPOSSIBLE, "label", None)
            assert client.satisfiable(label="tpu", policy="prefer").verdict == Verdict.RUNS_NOW
    finally:
        server.stop()


def test_events_raise_unavailable_when_the_server_goes_away(connect: Connect) -> None:
    server, address = start_server("--cpus", "1", "--gpus", "")
    try:
        with connect(address) as client, client.events() as events:
            client.snapshot()  # the stream is open before the server stops
            guard = threading.Timer(30, events.close)  # bounds the wait should the stream hang
            guard.start()
            server.stop()
            with pytest.raises(Unavailable):
                for _ in events:
                    pass
            assert guard.is_alive(), "the stream hung until the guard closed it"
            guard.cancel()
    finally:
        server.stop()


def test_events_end_quietly_when_the_user_closes_them(four_cpu_server: str, connect: Connect) -> None:
    with connect(four_cpu_server) as client:
        events = client.events()
        closers: list[threading.Thread] = []
        for _event in events:  # ends without raising once closed
            if not closers:  # the first event (watch_started): close from another thread
                closers.append(threading.Thread(target=events.close))
                closers[0].start()
        closers[0].join()
        assert list(events) == []  # and stays ended


def test_a_request_over_the_size_limit_raises_resource_exhausted(four_cpu_server: str, connect: Connect) -> None:
    with connect(four_cpu_server) as client:
        with pytest.raises(ResourceExhausted):
            client.run(
                source="def process(blob):\n    return len(blob)", kwargs={"blob": "x" * (17 * 2**20)}, timeout=30
            )
