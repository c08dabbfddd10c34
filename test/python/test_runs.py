"""Runs from Python on a real `berth worker` (SPEC W2, W3, W6; issue #4) that the shared case list
(test/cases/clients.json, run by test_cases.py) does not hold: Python's own exception classes, killed workers.
Skipped, saying why, while the server answers Run with UNIMPLEMENTED or the worker agent is not built."""

from __future__ import annotations

import threading
import time

import pytest
from berth_client import Client, RemoteError, Started, WorkerGone
from conftest import Connect, wait_until
from processes import BerthProcess

RAISES = """
def process(message):
    raise ValueError(message)
"""


SLEEPS = """
import time

def process():
    time.sleep(60)
"""


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
