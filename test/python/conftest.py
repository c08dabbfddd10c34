"""Fixtures: real berth servers and workers (subprocesses on loopback) and clients bound to them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest
from berth_client import Client, Machine, Snapshot
from berth_client._proto.berth.v1 import placement_pb2, placement_pb2_grpc
from bridge import BridgedClient
from processes import BerthProcess, start_server, start_worker, worker_cli_built


def wait_until(client: Client, check: Callable[[Snapshot], bool], timeout: float = 20.0) -> Snapshot:
    """Returns the first snapshot for which `check` holds, re-checking on every event
    (WatchEvents) and at least every 0.25 s; fails after `timeout` s."""
    wake = threading.Event()
    stream = client.events()

    def pump() -> None:
        try:
            for _ in stream:
                wake.set()
        except Exception:
            pass

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            snap = client.snapshot()
            if check(snap):
                return snap
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout} s; last snapshot:\n{snap}")
            wake.wait(0.25)
            wake.clear()
    finally:
        stream.close()


def machine(snap: Snapshot, name: str) -> Machine:
    """The machine `name` in a snapshot (fails when absent)."""
    found = snap.machine(name)
    if found is None:
        raise AssertionError(f"no machine {name!r} in {[m.name for m in snap.machines]}")
    return found


def has_machine(name: str) -> Callable[[Snapshot], bool]:
    """Check: a machine of that name is attached."""
    return lambda snap: any(m.name == name for m in snap.machines)


Connect = Callable[..., Client]


@pytest.fixture(params=["sync", "async"])
def connect(request: pytest.FixtureRequest) -> Connect:
    """Opens a client of an address: `Client`, or the same surface served by `aio.AsyncClient`
    (bridge.py) — every test taking this fixture runs against both."""
    if request.param == "sync":
        return Client
    return BridgedClient  # type: ignore[return-value]


@pytest.fixture(scope="session")
def engine_server() -> Iterator[str]:
    """A server whose engine has 2 cpus and one virtual GPU (id 0), no workers: the claim tests."""
    server, address = start_server("--cpus", "2", "--gpus", "0-0", "--ram-mb", "4096")
    yield address
    server.stop()


@pytest.fixture
def client(engine_server: str, connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of engine_server."""
    with connect(engine_server) as c:
        yield c


@pytest.fixture(scope="session")
def worker_server() -> Iterator[str]:
    """A server whose engine has no cores (so every call goes to a worker): the run tests."""
    server, address = start_server("--cpus", "0", "--gpus", "")
    yield address
    server.stop()


def _run_unimplemented(address: str) -> str:
    """Why Run cannot be tested on this server ("" when it can): probes Run with an empty request,
    which an implemented server refuses as INVALID_ARGUMENT (no payload) before placing anything."""
    with grpc.insecure_channel(address) as channel:
        stub = placement_pb2_grpc.PlacementServiceStub(channel)
        try:
            for _ in stub.Run(placement_pb2.RunRequest(), timeout=10):
                break
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return f"Run is not implemented on this server yet: {err.details()}"
    return ""


@pytest.fixture(scope="session")
def run_ready(worker_server: str) -> str:
    """The worker_server address, or a skip when Run or `berth worker` is not built yet (issue #4)."""
    why = _run_unimplemented(worker_server) or worker_cli_built()
    if why:
        pytest.skip(f"needs Run and the berth worker agent (issue #4): {why}")
    return worker_server


@pytest.fixture(scope="session")
def worker(run_ready: str) -> Iterator[str]:
    """A real `berth worker` named w1 (4 cpus, GPU 0, 4 calls at once, label pyw, 2 s cancel grace)
    attached to worker_server."""
    proc = start_worker(
        run_ready, "w1", "--cpus", "4", "--gpus", "0-0", "--max-parallel", "4", "--labels", "pyw", "--grace", "2"
    )
    with Client(run_ready) as c:
        try:
            wait_until(c, has_machine("w1"))
        except AssertionError:
            proc.stop()
            raise AssertionError("worker w1 did not attach; stderr:\n" + "\n".join(proc.lines[-30:])) from None
    yield "w1"
    proc.stop()


@pytest.fixture
def run_client(run_ready: str, worker: str, connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of worker_server with worker w1 attached."""
    with connect(run_ready) as c:
        yield c


@pytest.fixture
def doomed_worker(run_ready: str) -> Iterator[BerthProcess]:
    """A worker named doomed, labelled doomed, for a test to kill."""
    proc = start_worker(run_ready, "doomed", "--labels", "doomed", "--cpus", "1", "--gpus", "")
    with Client(run_ready) as c:
        wait_until(c, has_machine("doomed"))
    yield proc
    proc.stop()
