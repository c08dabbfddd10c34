"""Runs from Python on a real `berth worker` (SPEC W2, W3, W6; issue #4). Skipped, saying why,
while the server answers Run with UNIMPLEMENTED or the worker agent is not built."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from berth_client import (
    Cancelled,
    Client,
    LogLine,
    Metric,
    NodeTimeout,
    NoWorker,
    RemoteError,
    Started,
    WorkerGone,
    WorkerLink,
)
from conftest import Connect, wait_until
from processes import BerthProcess

REPORTS_A_METRIC = """
def process(x):
    report("loss", 0.5)
    return {"out": x + 1}
"""

RAISES = """
def process(message):
    raise ValueError(message)
"""

RAISES_OWN_TYPE = """
class FitError(Exception):
    pass

def process():
    raise FitError("did not converge")
"""

# Waits (bounded) until the file named by `release` exists, then returns `tag`.
WAITS_FOR_FILE = """
import os, time

def process(release, tag):
    for _ in range(600):
        if os.path.exists(release):
            return tag
        time.sleep(0.05)
    raise TimeoutError("release file never appeared")
"""

SLEEPS = """
import time

def process():
    time.sleep(60)
"""


def test_run_returns_the_value_with_metrics_delivered_before_it_returns(run_client: Client) -> None:
    events: list[object] = []
    value = run_client.run(
        source=REPORTS_A_METRIC,
        kwargs={"x": 1},
        flow="study",
        node="fit",
        run_id="r-value",
        on_event=events.append,
        timeout=30,
    )
    assert value == {"out": 2}
    started = [e for e in events if isinstance(e, Started)]
    metrics = [e for e in events if isinstance(e, Metric)]
    assert started and started[0].machine == "w1" and started[0].call_id == "r-value:study.fit"
    assert [(m.name, m.value) for m in metrics] == [("loss", 0.5)]
    assert events.index(started[0]) < events.index(metrics[0])


def test_a_value_error_keeps_its_class_and_message(run_client: Client) -> None:
    with pytest.raises(ValueError) as caught:
        run_client.run(source=RAISES, kwargs={"message": "bad input"}, node="check", timeout=30)
    err = caught.value
    assert type(err) is ValueError and str(err) == "bad input"
    assert "raise ValueError(message)" in err.remote_traceback  # type: ignore[attr-defined]
    assert any("remote traceback" in note for note in getattr(err, "__notes__", []))


def test_a_key_error_keeps_its_key_without_repr_quotes(run_client: Client) -> None:
    with pytest.raises(KeyError) as caught:
        run_client.run(source="def process(key):\n    return {}[key]", kwargs={"key": "x"}, node="lookup", timeout=30)
    assert type(caught.value) is KeyError and caught.value.args == ("x",)


def test_the_nodes_own_class_named_like_a_builtin_comes_back_as_the_builtin(run_client: Client) -> None:
    source = "class TimeoutError(Exception):\n    pass\n\ndef process():\n    raise TimeoutError('mine')"
    with pytest.raises(TimeoutError) as caught:
        run_client.run(source=source, node="own", timeout=30)
    assert type(caught.value) is TimeoutError and str(caught.value) == "mine"


def test_an_exception_of_the_nodes_own_type_is_a_remote_error_named_after_it(run_client: Client) -> None:
    with pytest.raises(RemoteError, match="did not converge") as caught:
        run_client.run(source=RAISES_OWN_TYPE, node="fit", timeout=30)
    assert type(caught.value).__name__ == "FitError"


def test_a_command_streams_its_output_and_a_non_zero_exit_raises_exit_code(run_client: Client) -> None:
    lines: list[str] = []

    def on_event(e: object) -> None:
        if isinstance(e, LogLine):
            lines.append(e.line)

    assert run_client.run(command=["sh", "-c", "echo hello"], node="echo", on_event=on_event, timeout=30) == {
        "exit_code": 0
    }
    assert lines == ["hello"]
    with pytest.raises(RemoteError) as caught:
        run_client.run(command=["sh", "-c", "exit 3"], node="fail", timeout=30)
    assert type(caught.value).__name__ == "ExitCode" and "3" in str(caught.value)


def test_a_call_silent_past_its_timeout_raises_node_timeout(run_client: Client) -> None:
    with pytest.raises(NodeTimeout):
        run_client.run(source=SLEEPS, node="sleep", timeout=1)
    wait_until(run_client, lambda snap: not snap.calls and not snap.held)


def test_a_run_inside_a_claim_uses_its_allocation(run_client: Client) -> None:
    source = 'import os\ndef process():\n    return os.environ["CUDA_VISIBLE_DEVICES"]\n'
    with run_client.claim(cpus=1, gpus=1, node="study.gpu") as grant:
        assert grant.machine == "w1" and grant.remote
        assert run_client.run(source=source, claim=grant, node="gpu", timeout=30) == "0"


def test_cancel_stops_only_its_run(run_client: Client, tmp_path: Path) -> None:
    release = tmp_path / "release"
    started = {"r-cancel": threading.Event(), "r-keep": threading.Event()}
    outcomes: dict[str, object] = {}

    def call(run_id: str) -> None:
        def on_event(event: object) -> None:
            if isinstance(event, Started):
                started[run_id].set()

        try:
            outcomes[run_id] = run_client.run(
                source=WAITS_FOR_FILE,
                kwargs={"release": str(release), "tag": run_id},
                node="wait",
                run_id=run_id,
                on_event=on_event,
                timeout=60,
            )
        except BaseException as err:
            outcomes[run_id] = err

    threads = [threading.Thread(target=call, args=(r,)) for r in started]
    for t in threads:
        t.start()
    for run_id, event in started.items():
        assert event.wait(30), f"{run_id} never started: {outcomes}"
    assert run_client.cancel("r-cancel") == (1, 0)
    threads[0].join(30)
    assert isinstance(outcomes.get("r-cancel"), Cancelled), outcomes
    assert "r-keep" not in outcomes
    release.touch()
    threads[1].join(30)
    assert outcomes["r-keep"] == "r-keep"


def test_a_worker_killed_mid_call_raises_worker_gone_well_before_the_deadline(
    run_ready: str, doomed_worker: BerthProcess, connect: Connect
) -> None:
    with connect(run_ready) as client:
        started = threading.Event()
        killer = threading.Thread(target=lambda: started.wait(30) and doomed_worker.kill())
        killer.start()
        began = time.monotonic()
        with pytest.raises(RemoteError, match="went away") as caught:  # as in the seed: except RemoteError
            client.run(
                source=SLEEPS,
                node="sleep",
                label="doomed",
                policy="require",
                timeout=60,
                on_event=lambda e: isinstance(e, Started) and started.set(),
            )
        assert isinstance(caught.value, WorkerGone) and isinstance(caught.value, ConnectionError)
        assert started.is_set()
        assert time.monotonic() - began < 20  # the deadline was 60 s
        killer.join(30)
        wait_until(client, lambda snap: all(m.name != "doomed" for m in snap.machines))


def test_a_killed_worker_is_reported_disconnected_at_once_then_gone_when_its_hold_runs_out(
    run_ready: str, doomed_worker: BerthProcess, connect: Connect
) -> None:
    """SPEC S2: the caller sees a WorkerLink("disconnected", hold left) event at once, then WorkerGone."""
    with connect(run_ready) as client:
        started = threading.Event()
        events: list[object] = []

        def on_event(e: object) -> None:
            events.append(e)
            if isinstance(e, Started):
                started.set()

        killer = threading.Thread(target=lambda: started.wait(30) and doomed_worker.kill())
        killer.start()
        with pytest.raises(WorkerGone, match="hold of 2000 ms ran out"):
            client.run(source=SLEEPS, node="sleep", label="doomed", policy="require", timeout=60, on_event=on_event)
        killer.join(30)
        links = [e for e in events if isinstance(e, WorkerLink)]
        assert [(x.machine, x.state, x.hold_left_ms) for x in links] == [("doomed", "disconnected", 2000)]


def test_a_claim_whose_worker_leaves_raises_worker_gone_when_the_block_ends(
    run_ready: str, doomed_worker: BerthProcess, connect: Connect
) -> None:
    with connect(run_ready) as client:
        with pytest.raises(WorkerGone, match="doomed"):
            with client.claim(cpus=1, label="doomed", policy="require", node="study.lost") as grant:
                assert grant.machine == "doomed"
                doomed_worker.kill()
                wait_until(client, lambda snap: all(m.name != "doomed" for m in snap.machines))
        assert not client.snapshot().held


def test_a_run_requiring_an_unknown_label_raises_no_worker_naming_it(run_client: Client) -> None:
    with pytest.raises(NoWorker, match="tpu") as caught:
        run_client.run(source=RAISES, kwargs={"message": "never"}, label="tpu", policy="require", timeout=30)
    assert caught.value.label == "tpu"
