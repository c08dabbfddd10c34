"""No call is waited on forever (issue 14 item 6): SIGTERM a real `berth serve` (with `--on-stop drain` it drains,
SPEC R3; by default it stops the control plane, SPEC S5) while 20 calls with no deadline start; every one returns or
raises within a bound, for both clients and both stop modes.
grpcio 1.85 alone leaves some of them blocked for ever in its response iterator."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from berth_client import BerthError, Started
from conftest import Connect
from processes import start_server

SHORT = "import time\ndef process():\n    time.sleep(0.3)\n    return 1"
BOUND_S = 15.0  # the server's --grace (1 s) + the client's settle (2 s) + room for a busy machine


@pytest.mark.parametrize("on_stop", ["drain", "stop"])
def test_calls_starting_while_the_server_drains_all_end_within_a_bound(connect: Connect, on_stop: str) -> None:
    server, address = start_server("--cpus", "2", "--gpus", "", "--on-stop", on_stop)
    try:
        with connect(address) as client:
            client.snapshot()  # connected before the calls start
            outcomes: dict[int, object] = {}
            started = threading.Event()

            def call(i: int) -> None:
                try:
                    outcomes[i] = client.run(
                        source=SHORT,
                        node=f"n{i}",
                        cpus=1,
                        timeout=None,
                        on_event=lambda e: isinstance(e, Started) and started.set(),
                    )
                except BaseException as err:  # judged below
                    outcomes[i] = err

            threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(20)]
            for t in threads[:2]:
                t.start()
            assert started.wait(30), "no call started before the drain"
            os.killpg(server.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + BOUND_S
            for i, t in enumerate(threads[2:]):
                t.start()
                time.sleep(0.005 * (i % 4))  # spread the starts over the drain, not a wait for an outcome
            for t in threads:
                t.join(max(0.0, deadline - time.monotonic()))
            stuck = [i for i, t in enumerate(threads) if t.is_alive()]
            assert not stuck, f"calls {stuck} still waiting {BOUND_S} s after SIGTERM; others: {outcomes}"
            odd = {i: o for i, o in outcomes.items() if o != 1 and not isinstance(o, BerthError)}
            assert not odd, odd
    finally:
        server.stop()
