#!/usr/bin/env python3
"""A small asyncio engine on berth: a four-node flow whose two middle nodes run at the same time,
each inside its own claim, wherever berth places it (the engine host or a worker).

    make run ARGS="--cpus 1 --gpus ''"                            # the engine host: 1 core, no GPU
    node bin/berth.js worker --name w1 --cpus 2 --gpus 0-0        # a worker with GPU 0
    .venv/bin/python examples/engine_async.py                     # or: pip install ./clients/python

Options: --address HOST:PORT (default 127.0.0.1:50051); BERTH_TOKEN is sent when set.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

from berth_client.aio import AsyncClient

LOAD = """
def process(n):
    return [float(i) for i in range(1, n + 1)]
"""

FIT = """
import os

def process(xs):
    report("loss", 0.0)
    return {"mean": sum(xs) / len(xs), "device": os.environ["CUDA_VISIBLE_DEVICES"]}
"""

SPREAD = """
def process(xs):
    return max(xs) - min(xs)
"""

SUMMARIZE = """
def process(fit, spread):
    return f"mean {fit['mean']:.2f} on GPU {fit['device']}, spread {spread:.1f}"
"""


async def node(client: AsyncClient, run_id: str, name: str, source: str, kwargs: dict[str, Any], **ask: Any) -> Any:
    """Claims what the node asks for, runs it inside the claim, says where, returns its value."""
    async with client.claim(
        **ask, node=f"study.{name}", run_id=run_id, on_queued=lambda reason: print(f"  study.{name} waits for {reason}")
    ) as grant:
        value = await client.run(
            source=source, kwargs=kwargs, claim=grant, flow="study", node=name, run_id=run_id, timeout=60
        )
    where = "remote worker" if grant.remote else "engine host"
    alloc = grant.allocation
    print(f"study.{name}: ran on {grant.machine} ({where}) with cpus={alloc.cpus} gpu_ids={list(alloc.gpu_ids)}")
    return value


async def main(address: str) -> None:
    run_id = f"example-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(address) as client:
        xs = await node(client, run_id, "load", LOAD, {"n": 5}, cpus=1)
        fit, spread = await asyncio.gather(  # two nodes at once, each in its own claim
            node(client, run_id, "fit", FIT, {"xs": xs}, cpus=1, gpus=1),
            node(client, run_id, "spread", SPREAD, {"xs": xs}, cpus=1),
        )
        print("result:", await node(client, run_id, "summarize", SUMMARIZE, {"fit": fit, "spread": spread}, cpus=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="127.0.0.1:50051")
    asyncio.run(main(parser.parse_args().address))
