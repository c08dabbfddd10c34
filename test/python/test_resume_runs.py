"""A Run lives through a cut of the client's link (SPEC S3, issue 19 item 3): the client follows the call again by
call id from the last event it saw, with backoff, and the caller sees every output line exactly once, then the
value — for both clients. Without `disconnect_grace` the broken stream stops the call, as before."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator

import pytest
from berth_client import BerthError, LogLine
from conftest import Connect
from processes import start_server
from tcp_proxy import CutProxy


@pytest.fixture(scope="module")
def server_address() -> Iterator[str]:
    server, address = start_server("--cpus", "2", "--gpus", "")
    yield address
    server.stop()


def gated_command(go: str) -> list[str]:
    """Prints 1..3, waits for the file `go`, prints 4..6, exits 0."""
    script = f"for i in 1 2 3; do echo $i; done; while [ ! -f '{go}' ]; do sleep 0.02; done; for i in 4 5 6; do echo $i; done"
    return ["sh", "-c", script]


def test_a_run_outlives_a_cut_link_and_sees_every_line_once(server_address: str, connect: Connect) -> None:
    proxy = CutProxy(server_address)
    go = os.path.join(tempfile.mkdtemp(prefix="berth-resume-"), "go")
    lines: list[str] = []
    three = threading.Event()

    def on_event(e: object) -> None:
        if isinstance(e, LogLine):
            lines.append(e.line)
            if len(lines) == 3:
                three.set()

    def cut_then_go() -> None:
        assert three.wait(30), "the first three lines never came"
        proxy.down()
        proxy.cut()
        open(go, "w").close()  # lines 4..6 are printed while the link is down
        threading.Timer(1.0, proxy.up).start()

    try:
        with connect(proxy.address) as client:
            threading.Thread(target=cut_then_go, daemon=True).start()
            value = client.run(command=gated_command(go), disconnect_grace=30, on_event=on_event)
        assert value == {"exit_code": 0}
        assert lines == ["1", "2", "3", "4", "5", "6"]
    finally:
        proxy.close()


def test_without_disconnect_grace_a_cut_link_stops_the_call(server_address: str, connect: Connect) -> None:
    proxy = CutProxy(server_address)
    go = os.path.join(tempfile.mkdtemp(prefix="berth-resume-"), "go")
    three = threading.Event()
    seen: list[str] = []

    def on_event(e: object) -> None:
        if isinstance(e, LogLine):
            seen.append(e.line)
            if len(seen) == 3:
                three.set()

    def cut() -> None:
        assert three.wait(30), "the first three lines never came"
        proxy.down()
        proxy.cut()
        threading.Timer(1.0, proxy.up).start()

    try:
        with connect(proxy.address) as client:
            threading.Thread(target=cut, daemon=True).start()
            with pytest.raises(BerthError, match="cancelled by its caller"):
                client.run(command=gated_command(go), on_event=on_event)
        assert seen == ["1", "2", "3"]
    finally:
        proxy.close()


def test_a_bad_disconnect_grace_is_refused_naming_it(server_address: str, connect: Connect) -> None:
    with connect(server_address) as client:
        with pytest.raises(BerthError, match="disconnect_grace"):
            client.run(command=["true"], disconnect_grace=7200)


def test_a_run_answered_whole_outlives_a_cut_link_and_runs_once(server_address: str, connect: Connect) -> None:
    """run() without on_event asks RunWhole (one answer, no stream): a cut link is picked up again by following the
    call id, so the call runs once and its value still comes back."""
    proxy = CutProxy(server_address)
    scratch = tempfile.mkdtemp(prefix="berth-resume-")
    go, ran = os.path.join(scratch, "go"), os.path.join(scratch, "ran")
    script = f"echo x >> '{ran}'; while [ ! -f '{go}' ]; do sleep 0.02; done; echo done"

    def cut_then_go() -> None:
        for _ in range(1500):  # the call started: its first act is to write `ran`
            if os.path.exists(ran):
                break
            threading.Event().wait(0.02)
        proxy.down()
        open(go, "w").close()  # the call ends while the link is down
        threading.Timer(1.0, proxy.up).start()

    try:
        with connect(proxy.address) as client:
            threading.Thread(target=cut_then_go, daemon=True).start()
            value = client.run(command=["sh", "-c", script], disconnect_grace=30)
        assert value == {"exit_code": 0}
        with open(ran) as f:
            assert f.read() == "x\n", "the call ran more than once"
    finally:
        proxy.close()
