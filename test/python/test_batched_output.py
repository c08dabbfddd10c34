"""Batched output through the Python client (issue 11): a node printing thousands of lines on a
real `berth worker` — sent as `logs` batches — reaches `on_event` one LogLine per line, in order,
with stderr lines and metrics in their places."""

from __future__ import annotations

from berth_client import Client, LogLine, Metric

CHATTY = """
import sys

def process(n):
    for i in range(n):
        print(i)
        if i % 1000 == 999:
            print("err", i, file=sys.stderr)
        if i % 2500 == 2499:
            report("progress", i)
    return "done"
"""


def test_thousands_of_batched_lines_arrive_one_by_one_in_order(run_client: Client) -> None:
    seen: list[str] = []

    def on_event(e: object) -> None:
        if isinstance(e, LogLine):
            seen.append(f"{e.stream}:{e.line}")
        elif isinstance(e, Metric):
            seen.append(f"metric:{int(e.value)}")

    n = 10_000
    value = run_client.run(
        source=CHATTY, kwargs={"n": n}, node="chatty", run_id="batched", on_event=on_event, timeout=60
    )
    assert value == "done"
    expected: list[str] = []
    for i in range(n):
        expected.append(f"stdout:{i}")
        if i % 1000 == 999:
            expected.append(f"stderr:err {i}")
        if i % 2500 == 2499:
            expected.append(f"metric:{i}")
    assert seen == expected
