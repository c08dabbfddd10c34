"""The Python clients in front of an HA cluster (SPEC S7, issue 20 item 3), both sync and asyncio, through real
`berth serve --store etcd://…` processes, a real etcd and a real `berth worker`: `Client("a:1,b:2")` whose first
address is unreachable and whose second is a standby claims and runs on the leader the standby names; after the
leader's SIGKILL a `with client.claim(..., hold=30)` block and a running `client.run(...)` follow to the new
leader with the same claim and the same call (run once), as after a server restart; a Claim stream the standby ends
while the asyncio client writes its first message counts as unreached (UNAVAILABLE), never as grpc.aio's INTERNAL."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from berth_client import Client, Snapshot, Unavailable
from berth_client._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from berth_client.aio.streams import CallEnded, send
from berth_client.claim_resume import worth_resuming
from berth_client.servers import never_reached
from conftest import Connect, has_machine, wait_until
from processes import BerthProcess, Etcd, free_port, start_member, start_worker

_MISSING = Etcd.missing()
pytestmark = pytest.mark.skipif(
    bool(_MISSING) and os.environ.get("CI") != "true", reason=f"{_MISSING} (in CI these tests run)"
)


@pytest.fixture(scope="module")
def etcd() -> Iterator[Etcd]:
    e = Etcd()
    yield e
    e.stop()


@dataclass
class Cluster:
    leader: BerthProcess
    leader_address: str
    standby: BerthProcess
    standby_address: str


_clusters = 0
_RESUME = placement_pb2.ClaimRequest(resume=placement_pb2.Resume(claim_id="c-none", resume_token="none"))


@contextmanager
def _cluster(etcd: Etcd) -> Iterator[Cluster]:
    """A leader and a standby of a fresh cluster (engine 1 cpu each), and worker w1 (label w, 2 cpus) given both."""
    global _clusters
    _clusters += 1
    name = f"py{os.getpid()}-{_clusters}"
    procs: list[BerthProcess] = []
    state = tempfile.mkdtemp(prefix="berth-w-")
    try:
        leader, la = start_member(etcd.endpoint, name, "--cpus", "1", "--gpus", "")
        procs.append(leader)
        standby, sa = start_member(etcd.endpoint, name, "--cpus", "1", "--gpus", "")
        procs.append(standby)
        assert any('"berth serving"' in line for line in leader.lines)
        assert any('"berth standing by"' in line for line in standby.lines)
        worker = start_worker(f"{la},{sa}", "w1", "--labels", "w", "--cpus", "2", "--gpus", "", "--state-dir", state)
        procs.append(worker)
        with Client(la) as direct:
            wait_until(direct, has_machine("w1"), timeout=30)
        yield Cluster(leader, la, standby, sa)
    finally:
        for p in reversed(procs):
            p.kill()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def steady_cluster(etcd: Etcd) -> Iterator[Cluster]:
    """A cluster whose leader stays (shared by the tests that kill nothing)."""
    with _cluster(etcd) as c:
        yield c


@pytest.fixture
def cluster(etcd: Etcd) -> Iterator[Cluster]:
    """A cluster of its own, for a test that kills its leader."""
    with _cluster(etcd) as c:
        yield c


def snapshot_when(address: str, check: Any, timeout: float = 30.0) -> Snapshot:
    """The first snapshot of `address` for which `check` holds, while it may still be a standby (Unavailable)."""
    deadline = time.monotonic() + timeout
    with Client(address) as c:
        while True:
            try:
                snap = c.snapshot()
                if check(snap):
                    return snap
            except Unavailable:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{address}: condition not met within {timeout} s")
            time.sleep(0.1)


def test_a_client_whose_first_address_is_unreachable_and_second_a_standby_claims_and_runs_on_the_leader(
    steady_cluster: Cluster, connect: Connect
) -> None:
    cluster = steady_cluster
    servers = f"127.0.0.1:{free_port()},{cluster.standby_address}"  # the leader is not listed: only the hint leads
    with connect(servers) as client:
        assert [m.name for m in client.snapshot().machines if m.name == "w1"] == ["w1"]
        with client.claim(cpus=1, label="w", policy="require") as grant:
            assert grant.machine == "w1"
        # WatchEvents too: its stream is opened again on the leader the standby names
        kinds: list[str] = []
        events_stream = client.events()

        def watch() -> None:
            for event in events_stream:
                kinds.append(event.kind)
                if event.kind == "claim_released":
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        deadline = time.monotonic() + 20
        while watcher.is_alive() and time.monotonic() < deadline:  # claims until the watcher saw one released
            with client.claim(cpus=1, label="w", policy="require"):
                pass
            watcher.join(0.2)
        events_stream.close()
        assert "claim_released" in kinds
        assert client.run(command=["sh", "-c", "echo hi"], label="w") == {"exit_code": 0}
        events: list[Any] = []
        assert client.run(command=["sh", "-c", "echo streamed"], label="w", on_event=events.append) == {"exit_code": 0}
        assert any(getattr(e, "line", "") == "streamed" for e in events)
    with Client(cluster.leader_address) as direct:
        assert not direct.snapshot().held


def test_asyncio_claim_streams_a_standby_ends_at_once_are_refused_as_unreached_never_as_internal(
    steady_cluster: Cluster,
) -> None:
    """A standby ends a Claim stream as soon as it opens; grpc.aio then often loses that status to its own INTERNAL
    "Internal error from Core" for the first write, which made a held claim's resume give up (SPEC S7, S3)."""

    async def open_streams(n: int) -> list[tuple[grpc.StatusCode, str]]:
        seen: list[tuple[grpc.StatusCode, str]] = []
        async with grpc.aio.insecure_channel(steady_cluster.standby_address) as channel:
            stub = placement_pb2_grpc.PlacementServiceStub(channel)  # type: ignore[no-untyped-call]
            for _ in range(n):
                call = stub.Claim()
                try:
                    await send(call, _RESUME)
                    await call.read()
                    seen.append((await call.code(), await call.details()))
                except grpc.RpcError as err:
                    seen.append((err.code(), err.details()))  # type: ignore[attr-defined]
                call.cancel()
        return seen

    seen = asyncio.run(open_streams(200))
    assert {code for code, _ in seen} == {grpc.StatusCode.UNAVAILABLE}, Counter(code.name for code, _ in seen)
    assert all(worth_resuming(code, details) and never_reached(CallEnded(code, details)) for code, details in seen)


def test_after_the_leader_is_killed_a_held_claim_and_a_running_call_follow_to_the_new_leader(
    cluster: Cluster, connect: Connect, tmp_path: Path
) -> None:
    go, runs = tmp_path / "go", tmp_path / "runs"
    script = f"echo ran >> '{runs}'; while [ ! -f '{go}' ]; do sleep 0.05; done; echo after"
    outcome: dict[str, Any] = {}
    with connect(f"{cluster.leader_address},{cluster.standby_address}") as client:

        def run() -> None:
            try:
                outcome["value"] = client.run(command=["sh", "-c", script], label="w", run_id="ha-run")
            except BaseException as err:  # handed to the test thread
                outcome["error"] = err

        with client.claim(cpus=1, label="w", policy="require", hold=30) as grant:
            runner = threading.Thread(target=run, daemon=True)
            runner.start()
            snapshot_when(cluster.leader_address, lambda s: len(s.calls) == 1 and runs.exists())
            cluster.leader.kill()
            go.touch()  # the call ends while no leader runs: its worker keeps the ending for the new one
            snap = snapshot_when(
                cluster.standby_address,
                lambda s: any(h.claim_id == grant.claim_id and not h.awaiting_holder for h in s.held),
            )
            assert grant.claim_id in [h.claim_id for h in snap.held]
            runner.join(60)
            assert outcome == {"value": {"exit_code": 0}}
        assert runs.read_text() == "ran\n"  # one call id, one execution
        # leaving the block released the claim on the new leader, acknowledged
        snapshot_when(cluster.standby_address, lambda s: not s.held)
