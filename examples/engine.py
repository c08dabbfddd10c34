#!/usr/bin/env python3
"""A tiny Python engine on berth: claims each node of a three-node flow, runs it inside its claim,
and prints where each ran.

    make run ARGS="--gpus 0-0"            # a berth server with one (virtual) GPU id
    .venv/bin/python examples/engine.py  # or: pip install ./clients/python; python examples/engine.py

Options: --address HOST:PORT (default 127.0.0.1:50051); BERTH_TOKEN is sent when set.
"""

from __future__ import annotations

import argparse
import uuid

from berth_client import Client, Metric, Queued

LOAD = """
def process(n):
    return [float(i) for i in range(1, n + 1)]
"""

FIT = """
import os

def process(xs):
    mean = sum(xs) / len(xs)
    report("loss", abs(mean - 3.0))
    return {"mean": mean, "device": os.environ["CUDA_VISIBLE_DEVICES"]}
"""

SUMMARIZE = """
def process(fit):
    return f"mean {fit['mean']:.2f} computed on GPU {fit['device']}"
"""

# (node, source, ask): the fit node needs a GPU id.
FLOW = [
    ("load", LOAD, {"cpus": 1}),
    ("fit", FIT, {"cpus": 1, "gpus": 1}),
    ("summarize", SUMMARIZE, {"cpus": 1}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="127.0.0.1:50051")
    args = parser.parse_args()
    run_id = f"example-{uuid.uuid4().hex[:8]}"
    value: object = 5
    kwarg = {"load": "n", "fit": "xs", "summarize": "fit"}
    with Client(args.address) as client:
        for node, source, ask in FLOW:

            def on_queued(reason: Queued, node: str = node) -> None:
                print(f"  study.{node} waits for {reason}")

            def on_event(event: object, node: str = node) -> None:
                if isinstance(event, Metric):
                    print(f"  study.{node} reported {event.name}={event.value}")

            with client.claim(**ask, node=f"study.{node}", run_id=run_id, on_queued=on_queued) as grant:
                value = client.run(
                    source=source,
                    kwargs={kwarg[node]: value},
                    claim=grant,
                    flow="study",
                    node=node,
                    run_id=run_id,
                    timeout=60,
                    on_event=on_event,
                )
                alloc = grant.allocation
                where = "remote worker" if grant.remote else "engine host"
                print(
                    f"study.{node}: ran on {grant.machine} ({where})"
                    f" with cpus={alloc.cpus} gpu_ids={list(alloc.gpu_ids)}" + (" [clamped]" if grant.clamped else "")
                )
        print(f"result: {value}")


if __name__ == "__main__":
    main()
