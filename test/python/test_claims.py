"""Claims from Python: the lease lives exactly as long as the `with` block (SPEC P6, P8, P9)."""

from __future__ import annotations

import threading

import pytest
from berth_client import Client, InvalidAsk, NodeTimeout, NoWorker, Queued
from conftest import machine, wait_until


def books_full(snap) -> bool:
    engine = machine(snap, "engine")
    return engine.free.cpus == 2 and list(engine.free_gpu_ids) == [0] and not snap.held and not snap.waiting


def test_claim_and_release_restore_the_books(client: Client) -> None:
    with client.claim(cpus=1, gpus=1, node="study.fit", env={"XLA_FLAGS": "--x=false"}) as grant:
        assert (grant.machine, grant.remote, grant.clamped, grant.fell_back) == ("engine", False, False, False)
        assert grant.allocation.cpus == 1 and grant.allocation.gpu_ids == (0,)
        assert grant.allocation.env["OMP_NUM_THREADS"] == "1"
        assert grant.allocation.env["CUDA_VISIBLE_DEVICES"] == "0"
        assert grant.allocation.env["XLA_FLAGS"] == "--x=false"
        held = client.snapshot()
        engine = machine(held, "engine")
        assert engine.free.cpus == 1 and list(engine.free_gpu_ids) == []
        assert [h.claim_id for h in held.held] == [grant.claim_id]
    # the release was acknowledged before the block returned: the books are already full
    assert books_full(client.snapshot())


def test_second_claim_on_a_full_machine_is_queued_then_granted_when_the_first_is_released(client: Client) -> None:
    reasons: list[Queued] = []
    queued, granted, done = threading.Event(), threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def second() -> None:
        def on_queued(reason: Queued) -> None:
            reasons.append(reason)
            queued.set()

        try:
            with client.claim(cpus=2, node="study.b", on_queued=on_queued, timeout=30) as grant:
                assert grant.allocation.cpus == 2
                granted.set()
        except BaseException as err:  # reported by the main thread
            failure.append(err)
        finally:
            done.set()

    with client.claim(cpus=2, node="study.a"):
        waiter = threading.Thread(target=second)
        waiter.start()
        assert queued.wait(20), f"second claim was never queued: {failure}"
        assert not granted.is_set()
        assert [w.node for w in client.snapshot().waiting] == ["study.b"]
    assert granted.wait(20), f"second claim was not granted after the release: {failure}"
    assert done.wait(20)
    waiter.join(20)
    assert not failure
    assert reasons and all("2 cpu(s)" in str(r) for r in reasons)
    assert books_full(client.snapshot())


def test_an_exception_inside_the_block_releases_the_claim(client: Client) -> None:
    with pytest.raises(RuntimeError, match="node blew up"):
        with client.claim(cpus=2, gpus=1, node="study.crash"):
            raise RuntimeError("node blew up")
    assert books_full(client.snapshot())


def test_a_claim_not_granted_in_time_raises_node_timeout_and_leaves_no_waiter(client: Client) -> None:
    with client.claim(cpus=2, node="study.hog"):
        with pytest.raises(NodeTimeout):
            with client.claim(cpus=2, node="study.late", timeout=0.5):
                pytest.fail("granted while the machine was full")
        wait_until(client, lambda snap: not snap.waiting)
    assert books_full(client.snapshot())


def test_a_required_label_no_machine_carries_raises_no_worker_naming_it(client: Client) -> None:
    with pytest.raises(NoWorker, match="tpu") as caught:
        with client.claim(cpus=1, label="tpu", policy="require", node="study.tpu"):
            pytest.fail("granted without a tpu machine")
    assert caught.value.label == "tpu"
    assert books_full(client.snapshot())


def test_a_preferred_label_that_is_absent_falls_back_to_the_engine(client: Client) -> None:
    with client.claim(cpus=1, label="gpu", policy="prefer", node="study.pref") as grant:
        assert grant.machine == "engine" and grant.fell_back


def test_an_ask_no_machine_can_hold_is_clamped(client: Client) -> None:
    with client.claim(cpus=64, gpus=4, node="study.huge") as grant:
        assert grant.clamped
        assert grant.allocation.cpus == 2 and grant.allocation.gpu_ids == (0,)
    assert books_full(client.snapshot())


@pytest.mark.parametrize(
    "ask, field",
    [({"cpus": 10**9}, "cpus"), ({"gpus": 10**9}, "gpus"), ({"cpus": -1}, "cpus"), ({"policy": "maybe"}, "policy")],
)
def test_a_bad_ask_raises_invalid_ask_naming_the_field(client: Client, ask: dict, field: str) -> None:
    with pytest.raises(InvalidAsk) as caught:
        with client.claim(node="study.bad", **ask):
            pytest.fail("a bad ask was granted")
    assert isinstance(caught.value, ValueError)
    assert field in caught.value.field
    assert books_full(client.snapshot())
