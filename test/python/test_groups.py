"""Gang claims from Python (docs/groups.md, rules G1–G5), sync and asyncio, through a real `berth serve` whose
engine has 2 cpus and one GPU: every member granted at once or none, given back on every exit of the block, an
infeasible group refused at once naming the member and dimension, bad members refused before anything is sent."""

from __future__ import annotations

import pytest
from berth_client import Client, InvalidAsk
from berth_client.errors import BerthError
from conftest import machine


def books_full(client: Client) -> bool:
    snap = client.snapshot()
    engine = machine(snap, "engine")
    return engine.free.cpus == 2 and list(engine.free_gpu_ids) == [0] and not snap.held


def test_a_group_is_granted_whole_and_given_back_on_leaving_the_block(client: Client) -> None:
    with client.claim_group(members=[dict(cpus=1, gpus=1), dict(cpus=1)], strategy="STRICT_PACK") as group:
        assert [m.machine for m in group.members] == ["engine", "engine"]
        assert list(group.members[0].allocation.gpu_ids) == [0]
        assert group.members[0].allocation.env["CUDA_VISIBLE_DEVICES"] == "0"
        assert group.members[1].allocation.cpus == 1
        assert group.strategy == "STRICT_PACK"
        assert machine(client.snapshot(), "engine").free.cpus == 0
    assert books_full(client)


def test_acquire_group_holds_until_release(client: Client) -> None:
    lease = client.acquire_group(members=[dict(cpus=1), dict(cpus=1)])
    assert len(lease.members) == 2
    assert machine(client.snapshot(), "engine").free.cpus == 0
    lease.release()
    lease.release()  # idempotent
    assert books_full(client)


def test_an_exception_in_the_block_gives_every_member_back(client: Client) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with client.claim_group(members=[dict(cpus=1), dict(gpus=1, cpus=0)]):
            raise RuntimeError("boom")
    assert books_full(client)


def test_an_infeasible_group_fails_at_once_naming_the_member(client: Client) -> None:
    with pytest.raises(BerthError, match=r"members\[1\]\.gpus"):
        with client.claim_group(members=[dict(cpus=1), dict(cpus=1, gpus=2)]):
            pass
    with pytest.raises(BerthError, match=r"members\[\d\]\.machines"):
        client.acquire_group(members=[dict(cpus=1), dict(cpus=1)], strategy="STRICT_SPREAD")
    assert books_full(client)


def test_a_waiting_group_hears_why_and_is_granted_once_room_frees(client: Client) -> None:
    heard = []
    holder = client.acquire(cpus=2)
    group = client.claim_group(members=[dict(cpus=1), dict(cpus=1)], on_queued=heard.append, timeout=0.5)
    from berth_client import NodeTimeout

    with pytest.raises(NodeTimeout):
        group.acquire()
    assert heard and heard[0].dimension == "cpus"
    holder.release()
    with client.claim_group(members=[dict(cpus=1), dict(cpus=1)]) as granted:
        assert len(granted.members) == 2
    assert books_full(client)


def test_bad_members_are_refused_naming_the_field(client: Client) -> None:
    with pytest.raises(InvalidAsk, match=r"members\[1\]\.gpus"):
        client.claim_group(members=[dict(cpus=1), dict(gpus=-1)])
    with pytest.raises(InvalidAsk, match=r"members\[0\]\.color"):
        client.claim_group(members=[dict(color="red")])
    with pytest.raises(InvalidAsk, match="strategy"):
        client.claim_group(members=[dict(cpus=1)], strategy="DIAGONAL")
    with pytest.raises(InvalidAsk, match="members"):
        client.claim_group(members=[])
