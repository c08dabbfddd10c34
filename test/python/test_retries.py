"""Retries (SPEC S8, issue 19 item 9) from Python, sync and asyncio, on real `berth worker` agents: a run with
max_retries=1 whose worker is SIGKILLed mid-call is placed on a second worker and returns, its on_event saw a
Retrying with the reason; a node's own exception is not retried unless retry_on_failure; bad arguments are named
before anything is sent; both attempts are in the history (client.history)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from berth_client import Client, InvalidAsk, LogLine, Retrying, Started
from conftest import Connect, has_machine, wait_until
from processes import BerthProcess, start_server, start_worker

# The first attempt marks the file and sleeps (its worker is killed); the second finds the mark and returns.
SLEEPS_ONCE = """
import os, time

def process(marker):
    if os.path.exists(marker):
        return "second attempt"
    open(marker, "w").close()
    print("marked", flush=True)
    time.sleep(60)
"""

RAISES_ONCE = """
import os

def process(marker):
    if os.path.exists(marker):
        return "fine now"
    open(marker, "w").close()
    raise ValueError("first attempt fails")
"""


@pytest.fixture
def retry_server() -> Iterator[str]:
    """A server with no engine cores (every call goes to a worker) and a short worker hold (0.3 s)."""
    server, address = start_server("--cpus", "0", "--gpus", "", "--worker-hold", "0.3")
    yield address
    server.stop()


def _worker(address: str, name: str) -> BerthProcess:
    proc = start_worker(address, name, "--labels", "rt", "--cpus", "1", "--gpus", "")
    with Client(address) as c:
        wait_until(c, has_machine(name))
    return proc


def test_a_run_whose_worker_is_killed_mid_call_is_retried_on_another_worker(
    retry_server: str, connect: Connect, tmp_path: Path
) -> None:
    first = _worker(retry_server, "rt1")
    second: list[BerthProcess] = []
    try:
        started = threading.Event()
        events: list[object] = []

        def on_event(e: object) -> None:
            events.append(e)
            if isinstance(e, LogLine) and e.line == "marked":  # the first attempt is under way, its mark made
                started.set()

        def kill_first() -> None:
            if started.wait(30):
                second.append(_worker(retry_server, "rt2"))
                first.kill()

        killer = threading.Thread(target=kill_first)
        killer.start()
        with connect(retry_server) as client:
            value = client.run(
                source=SLEEPS_ONCE,
                kwargs={"marker": str(tmp_path / "ran-once")},
                run_id="py-retry",
                label="rt",
                policy="require",
                max_retries=1,
                on_event=on_event,
            )
        killer.join(30)
        assert value == "second attempt"
        retries = [e for e in events if isinstance(e, Retrying)]
        assert [(r.attempt, r.machine, r.call_id) for r in retries] == [(2, "rt1", "py-retry:flow.node#2")]
        assert "worker rt1 went away" in retries[0].reason
        starts = [(e.call_id, e.machine) for e in events if isinstance(e, Started)]
        assert starts == [("py-retry:flow.node", "rt1"), ("py-retry:flow.node#2", "rt2")]
        with connect(retry_server) as client:  # both attempts are in the history (SPEC S9), newest first
            entries = client.history(run_id="py-retry", since=3600)
            assert [(e.id, e.state, e.machine, e.attempt) for e in entries] == [
                ("py-retry:flow.node#2", "succeeded", "rt2", 2),
                ("py-retry:flow.node", "lost", "rt1", 1),
            ]
            assert client.history(run_id="py-retry", state="failed") == []
    finally:
        first.kill()
        for w in second:
            w.stop()


def test_a_nodes_own_exception_is_retried_only_with_retry_on_failure(
    retry_server: str, connect: Connect, tmp_path: Path
) -> None:
    w = _worker(retry_server, "rt3")
    try:
        with connect(retry_server) as client:
            with pytest.raises(ValueError, match="first attempt fails"):
                client.run(
                    source=RAISES_ONCE,
                    kwargs={"marker": str(tmp_path / "a")},
                    label="rt",
                    policy="require",
                    max_retries=2,
                )
            seen: list[object] = []
            value = client.run(
                source=RAISES_ONCE,
                kwargs={"marker": str(tmp_path / "b")},
                label="rt",
                policy="require",
                max_retries=1,
                retry_on_failure=True,
                on_event=seen.append,
            )
            assert value == "fine now"
            retries = [e for e in seen if isinstance(e, Retrying)]
            assert len(retries) == 1 and retries[0].reason.startswith("ValueError: first attempt fails")
    finally:
        w.stop()


def test_retry_arguments_are_checked_before_anything_is_sent() -> None:
    with Client("127.0.0.1:1") as client:  # nothing listens: the checks come first
        with pytest.raises(InvalidAsk, match="max_retries: must be 0 to 10"):
            client.run(command=["true"], max_retries=11)
        with pytest.raises(TypeError, match="max_retries"):
            client.run(command=["true"], max_retries="1")  # type: ignore[arg-type]
        with pytest.raises(InvalidAsk, match="retry_on_failure: needs max_retries"):
            client.run(command=["true"], retry_on_failure=True)
        with pytest.raises(InvalidAsk, match="a run inside a claim is not retried"):
            client.run(command=["true"], claim="c-1", max_retries=1)
        with pytest.raises(InvalidAsk, match="state: must be one of succeeded"):
            client.history(state="exploded")
        with pytest.raises(InvalidAsk, match="since: must be a number of seconds > 0"):
            client.history(since=-1)
