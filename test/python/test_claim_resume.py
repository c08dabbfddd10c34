"""Claims that live through a broken link (issue 19 item 3, SPEC S3): `client.claim(..., hold=S)` is
taken back by the client itself when its Claim stream breaks, with the same claim id and GPU ids, so
the `with` block goes on without code changes; a claim that cannot be taken back raises ClaimLost.
The link is cut by a small TCP proxy on loopback between the client and a real `berth serve`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from berth_client import ClaimLost, Client, InvalidAsk, NotFound
from conftest import Connect, machine, wait_until
from processes import start_server
from tcp_proxy import CutProxy


@pytest.fixture
def proxy(engine_server: str) -> Iterator[CutProxy]:
    """A proxy in front of engine_server (2 cpus, GPU 0)."""
    p = CutProxy(engine_server)
    yield p
    p.close()


def books_full(client: Client) -> bool:
    snap = client.snapshot()
    return list(machine(snap, "engine").free_gpu_ids) == [0] and not snap.held and not snap.waiting


def test_a_claim_block_with_a_hold_lives_through_a_cut_of_its_link_and_keeps_its_gpu(
    proxy: CutProxy, engine_server: str, connect: Connect
) -> None:
    with Client(engine_server) as direct, connect(proxy.address) as client:
        lease = client.claim(cpus=1, gpus=1, node="train.fit", hold=10)
        with lease as grant:
            assert grant.allocation.gpu_ids == (0,) and grant.resume_token
            assert grant.resume_token not in repr(grant)  # never printed with the grant
            proxy.cut()
            # The server saw the stream break; the lease came back on a new connection by itself.
            # (the snapshot, not only the lease: the resume may land between a snapshot and the check)
            snap = wait_until(direct, lambda s: lease.resumes >= 1 and any(not h.awaiting_holder for h in s.held))
            assert lease.resumes == 1 and proxy.connections >= 2
            assert [(h.claim_id, h.allocation.gpu_ids, h.awaiting_holder) for h in snap.held] == [
                (grant.claim_id, (0,), False)
            ]
            assert lease.claim_id == grant.claim_id
        # leaving the block released it (on the resumed stream), acknowledged
        assert books_full(direct)


def test_a_claim_that_cannot_be_taken_back_within_its_hold_raises_claim_lost(
    proxy: CutProxy, engine_server: str, connect: Connect
) -> None:
    with Client(engine_server) as direct, connect(proxy.address) as client:
        with pytest.raises(ClaimLost) as lost:
            with client.claim(cpus=1, gpus=1, node="train.cut", hold=1) as grant:
                proxy.down()
                wait_until(direct, lambda s: bool(s.held) and s.held[0].awaiting_holder)
                wait_until(direct, lambda s: not s.held)  # the hold ran out on the server
                proxy.up()
                time.sleep(1.5)  # the lease's own hold runs out meanwhile: the block goes on regardless
        assert lost.value.claim_id == grant.claim_id
        assert grant.claim_id in str(lost.value) and "could not be resumed" in str(lost.value)
        assert books_full(direct)


def test_a_server_restarted_without_the_claim_answers_the_resume_not_found_and_the_block_raises_claim_lost(
    connect: Connect,
) -> None:
    first, address = start_server("--cpus", "2", "--gpus", "0-0")
    proxy = CutProxy(address)
    second = None
    try:
        with connect(proxy.address) as client:
            with pytest.raises(ClaimLost, match="the server no longer holds it") as lost:
                with client.claim(cpus=1, gpus=1, node="train.restart", hold=30) as grant:
                    first.kill()  # the server dies; a new one (no journal) knows nothing of the claim
                    second, address = start_server("--cpus", "2", "--gpus", "0-0")
                    host, port = address.rsplit(":", 1)
                    proxy.target = (host, int(port))
                    with Client(address) as direct:
                        wait_until(direct, lambda s: proxy.connections >= 2)
                    time.sleep(0.5)  # the block goes on; its lease learnt the claim is gone
            assert lost.value.claim_id == grant.claim_id
            assert isinstance(lost.value, NotFound)
    finally:
        proxy.close()
        first.stop()
        if second is not None:
            second.stop()


def test_a_claim_without_a_hold_ends_with_its_stream_as_before(
    proxy: CutProxy, engine_server: str, connect: Connect
) -> None:
    with Client(engine_server) as direct, connect(proxy.address) as client:
        lease = client.claim(cpus=1, gpus=1, node="train.plain")
        with pytest.raises(Exception):  # noqa: B017 - the release of a broken stream fails as it always did
            with lease:
                proxy.cut()
                wait_until(direct, lambda s: not s.held)  # given back at once
        assert books_full(direct)


def test_a_bad_hold_is_refused_before_anything_is_sent(client: Client) -> None:
    with pytest.raises(InvalidAsk, match=r"hold: must be a number of seconds from 0 to 3600"):
        client.claim(cpus=1, hold=3601)
    with pytest.raises(TypeError, match="hold"):
        client.claim(cpus=1, hold="10")  # type: ignore[arg-type]
