"""What only asyncio has (issue 14 item 1): cancelling the task cancels the call on the worker and
gives back its claim; many runs at once on one event loop; the client's own lifetime."""

from __future__ import annotations

import asyncio
import os
import select
import time
from collections.abc import Callable

from berth_client import LogLine, NodeTimeout, Snapshot
from berth_client.aio import AsyncClient

PRINTS_PID_THEN_SLEEPS = """
import os, time

def process():
    print(os.getpid(), flush=True)
    time.sleep(60)
"""

GRACE_S = 2.0  # the worker fixture's --grace


def process_gone_within(pid: int, seconds: float) -> bool:
    """True when process `pid` has ended within `seconds` (a pidfd becomes readable when it exits)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(fd)


async def until(client: AsyncClient, check: Callable[[Snapshot], bool], timeout: float = 20.0) -> Snapshot:
    """The first snapshot for which `check` holds, re-checked on every event; fails after `timeout` s."""

    async def watch() -> Snapshot:
        async with client.events() as events:
            snap = await client.snapshot()  # the stream is open before the first look
            if check(snap):
                return snap
            async for _ in events:
                snap = await client.snapshot()
                if check(snap):
                    return snap
        raise AssertionError("event stream ended")

    return await asyncio.wait_for(watch(), timeout)


def test_cancelling_the_task_of_a_run_ends_the_node_process_and_gives_back_its_claim(
    run_ready: str, worker: str
) -> None:
    async def main() -> tuple[int, float, Snapshot]:
        async with AsyncClient(run_ready) as client:
            pid: asyncio.Future[int] = asyncio.get_running_loop().create_future()

            async def run() -> None:
                async for item in client.stream_run(
                    source=PRINTS_PID_THEN_SLEEPS, node="sleeper", run_id="r-aio-cancel"
                ):
                    if isinstance(item, LogLine) and not pid.done():
                        pid.set_result(int(item.line))

            task = asyncio.create_task(run())
            node_pid = await asyncio.wait_for(asyncio.shield(pid), 30)
            cancelled_at = time.monotonic()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            gone = await asyncio.to_thread(process_gone_within, node_pid, GRACE_S + 2)
            assert gone, f"node process {node_pid} still alive {GRACE_S + 2} s after the task was cancelled"
            snap = await until(
                client,
                lambda s: (
                    not any(c.run_id == "r-aio-cancel" for c in s.calls)
                    and not any(h.run_id == "r-aio-cancel" for h in s.held)
                ),
            )
            return node_pid, time.monotonic() - cancelled_at, snap

    _pid, _elapsed, snap = asyncio.run(main())
    assert all(m.free.cpus == m.total.cpus for m in snap.machines if m.name == "w1")


def test_a_hundred_concurrent_runs_on_one_event_loop_all_complete(run_ready: str, worker: str) -> None:
    async def main() -> list[object]:
        async with AsyncClient(run_ready) as client:
            runs = [
                client.run(
                    source="def process(i):\n    return i * i", kwargs={"i": i}, node=f"sq{i}", cpus=1, timeout=60
                )
                for i in range(100)
            ]
            return list(await asyncio.gather(*runs))

    assert asyncio.run(main()) == [i * i for i in range(100)]


def test_cancelling_the_task_waiting_for_a_claim_abandons_it(engine_server: str) -> None:
    async def main() -> None:
        async with AsyncClient(engine_server) as client:
            async with client.claim(cpus=2, node="study.hog"):
                queued = asyncio.Event()
                waiter = asyncio.create_task(
                    client.acquire(cpus=2, node="study.waiter", on_queued=lambda _q: queued.set())
                )
                await asyncio.wait_for(queued.wait(), 20)
                assert [w.node for w in (await client.snapshot()).waiting] == ["study.waiter"]
                waiter.cancel()
                await until(client, lambda s: not s.waiting)
            snap = await until(client, lambda s: not s.held)
            assert snap.machines[0].free.cpus == 2

    asyncio.run(main())


def test_a_claim_timeout_in_async_raises_node_timeout_and_the_client_closes_with_await_close(
    engine_server: str,
) -> None:
    async def main() -> None:
        client = AsyncClient(engine_server)
        try:
            hog = await client.acquire(cpus=2, node="study.hog")
            try:
                began = time.monotonic()
                try:
                    async with client.claim(cpus=1, node="study.late", timeout=0.5):
                        raise AssertionError("granted while the machine was full")
                except NodeTimeout:
                    assert time.monotonic() - began < 10
                await until(client, lambda s: not s.waiting)
            finally:
                await hog.release()
            assert not (await client.snapshot()).held
        finally:
            await client.close()

    asyncio.run(main())


def test_cancelling_the_task_holding_a_claim_gives_it_back(engine_server: str) -> None:
    async def main() -> None:
        async with AsyncClient(engine_server) as client:
            granted = asyncio.Event()

            async def holder() -> None:
                async with client.claim(cpus=2, gpus=1, node="study.held"):
                    granted.set()
                    await asyncio.Event().wait()  # holds until cancelled

            task = asyncio.create_task(holder())
            await asyncio.wait_for(granted.wait(), 20)
            assert [h.node for h in (await client.snapshot()).held] == ["study.held"]
            task.cancel()
            snap = await until(client, lambda s: not s.held)
            assert snap.machines[0].free.cpus == 2 and snap.machines[0].free_gpu_ids == (0,)

    asyncio.run(main())
