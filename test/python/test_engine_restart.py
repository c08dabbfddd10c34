"""An engine-host command lives through a `berth serve` SIGKILL and restart (issue 19 item 5): it runs in the engine
keeper, the restarted server re-adopts it, and `client.run(...)` resumes by itself — every line once, then the value,
without code changes. Real `berth serve` processes on one port and one state directory."""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from berth_client import Client, LogLine
from processes import BerthProcess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(address: str, state: str) -> BerthProcess:
    server = BerthProcess(["serve", "--listen", address, "--state-dir", state, "--cpus", "2", "--gpus", ""])
    server.wait_for_line('"msg":"berth serving"')
    return server


def keeper_pid(state: str) -> int | None:
    try:
        return int(json.loads((Path(state) / "engine-keeper" / "pid").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture
def state() -> Iterator[str]:
    """The servers' state directory; the keeper it records is ended afterwards (its calls' groups with it)."""
    d = tempfile.mkdtemp(prefix="berth-engine-restart-")
    yield d
    pid = keeper_pid(d)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_through_a_restart(state: str, go: str, **run: object) -> tuple[object, list[str]]:
    """`client.run(**run, on_event=...)` on a server that is SIGKILLed after the third line and started again on the
    same port and state directory (the file `go` is made in between); returns the value and the lines seen."""
    address = f"127.0.0.1:{free_port()}"
    lines: list[str] = []
    three = threading.Event()
    servers = [serve(address, state)]

    def on_event(e: object) -> None:
        if isinstance(e, LogLine):
            lines.append(e.line)
            if len(lines) == 3:
                three.set()

    def crash_and_restart() -> None:
        assert three.wait(30), "the first three lines never came"
        servers[0].kill()  # SIGKILL to the server's group: the keeper runs in its own session
        open(go, "w").close()  # lines 4..6 come while no server runs
        time.sleep(0.5)
        servers.append(serve(address, state))

    try:
        with Client(address) as client:
            threading.Thread(target=crash_and_restart, daemon=True).start()
            return client.run(on_event=on_event, **run), lines  # type: ignore[arg-type]
    finally:
        for s in servers:
            s.stop()


def test_an_engine_host_command_lives_through_a_server_sigkill_and_the_run_resumes_by_itself(state: str) -> None:
    scratch = tempfile.mkdtemp(prefix="berth-engine-call-")
    go, ran = os.path.join(scratch, "go"), os.path.join(scratch, "ran")
    script = (
        f"echo x >> '{ran}'; for i in 1 2 3; do echo $i; done; "
        f"while [ ! -f '{go}' ]; do sleep 0.02; done; for i in 4 5 6; do echo $i; done"
    )
    value, lines = run_through_a_restart(state, go, command=["sh", "-c", script])
    assert value == {"exit_code": 0}
    assert lines == ["1", "2", "3", "4", "5", "6"]
    assert Path(ran).read_text() == "x\n"  # one call id, one execution


SOURCE = """
import os, time
def process(go, ran):
    open(ran, "a").write("x\\n")
    for i in (1, 2, 3):
        print(i, flush=True)
    while not os.path.exists(go):
        time.sleep(0.02)
    for i in (4, 5, 6):
        print(i, flush=True)
    return "done"
"""


def test_engine_host_python_with_a_disconnect_grace_lives_through_a_server_sigkill_too(state: str) -> None:
    """Python source runs in the server's warm pools, unless its Run asks a disconnect grace: then in the keeper."""
    scratch = tempfile.mkdtemp(prefix="berth-engine-call-")
    go, ran = os.path.join(scratch, "go"), os.path.join(scratch, "ran")
    value, lines = run_through_a_restart(state, go, source=SOURCE, kwargs={"go": go, "ran": ran}, disconnect_grace=60)
    assert value == "done"
    assert lines == ["1", "2", "3", "4", "5", "6"]
    assert Path(ran).read_text() == "x\n"
