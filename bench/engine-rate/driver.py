"""Bench child of bench/engine-rate.bench.ts: one warm caller that measures tiny tasks on command.

`driver.py KIND ADDRESS`, KIND one of:
  berth  the berth_client package (sync Client, asyncio AsyncClient)
  berth-stream  the same with an `on_event` callback, which keeps a call on the Run stream (the clients' only path
         before RunWhole: the "before" figure)
  grpc   a bare grpcio caller of the RPC the client uses (RunWhole: the value, no events as they happen) with the
         generated stubs (no checks, no decoding beyond finding the Result), the floor under the client
  grpc-stream  the same over the Run stream (what the client used before RunWhole), for reference
  ray    Ray (`ray.init(num_cpus=CPUS)` in this process; ADDRESS is ignored), the engine berth is compared with
Each stdin line is a command; each answer is one JSON line on stdout:
  sync SECONDS   tiny tasks `process(x) -> x + 1` one at a time for SECONDS: {"rate": tasks/s}
  aio N K        N tasks at once, K in flight (asyncio): {"rate": tasks/s}
Every value is checked (x + 1); a wrong one ends the driver with an error.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

SOURCE = "def process(x):\n    return x + 1\n"
CPUS = int(os.environ.get("BENCH_CPUS", "2"))


RUN_ID = f"bench-{os.getpid()}-0"


def run_id() -> str:
    """This command's run id: fresh per command, so no call id is ever reused (one call id, one execution)."""
    return RUN_ID


def check(i: int, value: Any) -> None:
    if value != i + 1:
        raise SystemExit(f"driver: task {i} returned {value!r}, not {i + 1}")


class Berth:
    on_event: Any = None

    def __init__(self, address: str) -> None:
        import berth_client
        from berth_client import aio

        self.client = berth_client.Client(address)
        self.aio = aio
        self.address = address

    def one(self, i: int) -> None:
        v = self.client.run(
            source=SOURCE, kwargs={"x": i}, cpus=1, run_id=run_id(), node=f"n{i}", on_event=self.on_event
        )
        check(i, v)

    async def many(self, n: int, k: int) -> None:
        async with self.aio.AsyncClient(self.address) as client:
            gate = asyncio.Semaphore(k)

            async def task(i: int) -> None:
                async with gate:
                    v = await client.run(
                        source=SOURCE, kwargs={"x": i}, cpus=1, run_id=run_id(), node=f"n{i}", on_event=self.on_event
                    )
                check(i, v)

            await asyncio.gather(*(task(i) for i in range(n)))


class BerthStream(Berth):
    on_event = staticmethod(lambda _event: None)


class Bare:
    whole = True

    def __init__(self, address: str) -> None:
        import grpc
        from berth_client._proto.berth.v1 import placement_pb2, placement_pb2_grpc

        self.grpc, self.pb, self.stubs = grpc, placement_pb2, placement_pb2_grpc
        self.address = address
        self.stub = placement_pb2_grpc.PlacementServiceStub(grpc.insecure_channel(address))

    def request(self, run_id: str, i: int) -> Any:
        req = self.pb.RunRequest(flow="flow", node=f"n{i}", run_id=run_id)
        req.ask.cpus = 1
        req.source.source = SOURCE
        req.source.kwargs["x"] = i
        return req

    def messages(self, stub: Any, req: Any) -> Any:
        return stub.RunWhole(self.pb.RunWholeRequest(run=req)).messages if self.whole else stub.Run(req)

    def one(self, i: int) -> None:
        value = None
        for msg in self.messages(self.stub, self.request(run_id(), i)):
            if msg.WhichOneof("kind") == "result":
                value = int(msg.result.value.number_value)
        check(i, value)

    async def many(self, n: int, k: int) -> None:
        async with self.grpc.aio.insecure_channel(self.address) as channel:
            stub = self.stubs.PlacementServiceStub(channel)
            gate = asyncio.Semaphore(k)

            async def task(i: int) -> None:
                value = None
                async with gate:
                    req = self.request(run_id(), i)
                    if self.whole:
                        msgs = (await stub.RunWhole(self.pb.RunWholeRequest(run=req))).messages
                    else:
                        msgs = [msg async for msg in stub.Run(req)]
                    for msg in msgs:
                        if msg.WhichOneof("kind") == "result":
                            value = int(msg.result.value.number_value)
                check(i, value)

            await asyncio.gather(*(task(i) for i in range(n)))


class BareStream(Bare):
    whole = False


class Ray:
    def __init__(self, _address: str) -> None:
        import ray

        ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False, configure_logging=False)
        self.ray = ray
        scope: dict[str, Any] = {}
        exec(compile(SOURCE, "<node>", "exec"), scope)
        self.task = ray.remote(num_cpus=1)(scope["process"])

    def one(self, i: int) -> None:
        check(i, self.ray.get(self.task.remote(i)))

    async def many(self, n: int, k: int) -> None:
        gate = asyncio.Semaphore(k)

        async def task(i: int) -> None:
            async with gate:
                v = await self.task.remote(i)
            check(i, v)

        await asyncio.gather(*(task(i) for i in range(n)))


def main() -> None:
    kind, address = sys.argv[1], sys.argv[2]
    caller = {"berth": Berth, "berth-stream": BerthStream, "grpc": Bare, "grpc-stream": BareStream, "ray": Ray}[kind](
        address
    )
    print(json.dumps({"ready": kind}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        global RUN_ID
        RUN_ID = f"bench-{os.getpid()}-{time.monotonic_ns()}"
        t0 = time.perf_counter()
        if words[0] == "sync":
            until, count = t0 + float(words[1]), 0
            while time.perf_counter() < until:
                caller.one(count)
                count += 1
        elif words[0] == "aio":
            count = int(words[1])
            asyncio.run(caller.many(count, int(words[2])))
        else:
            raise SystemExit(f"driver: unknown command {line!r}")
        print(json.dumps({"rate": count / (time.perf_counter() - t0)}), flush=True)


if __name__ == "__main__":
    main()
