"""A gang claim lives through a `berth serve` SIGKILL (rule G7), from Python, sync and asyncio: the restarted server
(same port, same state directory) holds the group whole, and `client.resume_group(group_id, resume_token)` takes it
back with the same members, machines and GPU ids; a wrong token raises NotFound; releasing it frees every member."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest
from berth_client.errors import NotFound
from conftest import Connect, machine
from processes import BerthProcess, free_port


def serve(address: str, state: str) -> BerthProcess:
    server = BerthProcess(
        ["serve", "--listen", address, "--state-dir", state, "--cpus", "2", "--gpus", "0-1", "--grace", "1"]
        + ["--claim-hold", "30"]
    )
    server.wait_for_line('"msg":"berth serving"')
    return server


@pytest.fixture
def state() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="berth-group-restart-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_group_is_resumed_whole_after_a_server_sigkill(connect: Connect, state: str) -> None:
    address = f"127.0.0.1:{free_port()}"
    server = serve(address, state)
    try:
        with connect(address) as client:
            lease = client.acquire_group(members=[dict(cpus=1, gpus=1), dict(cpus=1, gpus=1)], strategy="STRICT_PACK")
            grant = lease.grant
            assert len(grant.resume_token) == 22 and not grant.resumed
            server.kill()  # while the group's stream is open: nothing gives it back
        server = serve(address, state)
        with connect(address) as client:
            snap = client.snapshot()
            assert machine(snap, "engine").free.gpus == 0  # the restored group holds both GPUs
            with pytest.raises(NotFound):
                client.resume_group(grant.group_id, "A" * 22)
            back = client.resume_group(grant.group_id, grant.resume_token)
            assert back.grant.resumed
            assert back.grant.group_id == grant.group_id
            assert [(m.machine, list(m.allocation.gpu_ids)) for m in back.grant.members] == [
                (m.machine, list(m.allocation.gpu_ids)) for m in grant.members
            ]
            back.release()
            assert machine(client.snapshot(), "engine").free.gpus == 2
    finally:
        server.stop()
