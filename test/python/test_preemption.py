"""Preemption seen from Python (SPEC Q2, issue 22 items 2 and 5), sync and asyncio (`connect` runs both): a lease
whose room a higher class takes hears the notice (`preempted`, `wait_preempted`) and may give the claim back in its
grace; by default (on_preempt "requeue") one given back — by `make_room()` or at the end of the server's
--preemption-grace — waits again at its place (`requeued`) and `wait_granted()` returns its new grant; with
on_preempt "cancel" berth releases it, its release() then raises Preempted naming the preemptor."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from berth_client import BerthError, Client, InvalidAsk, Preempted, Preempting, Queued, Started
from conftest import Connect
from processes import start_server


@contextlib.contextmanager
def _server(grace: str) -> Iterator[str]:
    """An engine of 1 cpu; class urgent (100) may preempt the default class batch (0); `grace` s to give back."""
    with tempfile.TemporaryDirectory() as d:
        config = Path(d) / "berth.yaml"
        config.write_text("priority_classes:\n  urgent: { value: 100 }\n  batch: { value: 0, default: true }\n")
        server, address = start_server("--cpus", "1", "--config", str(config), "--preemption-grace", grace)
        try:
            yield address
        finally:
            server.stop()


@pytest.fixture(scope="module")
def preempt_server() -> Iterator[str]:
    """A grace of 0.3 s: berth releases the victim."""
    with _server("0.3") as address:
        yield address


@pytest.fixture(scope="module")
def patient_server() -> Iterator[str]:
    """A grace of 60 s: the holder gives the claim back itself."""
    with _server("60") as address:
        yield address


@pytest.fixture
def preempt(preempt_server: str, connect: Connect) -> Iterator[Client]:
    with connect(preempt_server) as c:
        yield c


def test_a_lease_not_given_back_in_the_grace_waits_again_and_is_granted_again(preempt: Client) -> None:
    low = preempt.acquire(cpus=1, node=f"low-{uuid.uuid4().hex[:8]}")
    first = low.claim_id
    urgent = preempt.acquire(cpus=1, priority_class="urgent", timeout=10)  # granted once berth released `low`
    try:
        assert low.wait_granted(timeout=0.2) is None  # it waits again: the core is the urgent claim's
        assert low.requeued is not None
        assert f"preempted by claim {urgent.claim_id} of priority 100" in low.requeued.detail
    finally:
        urgent.release()
    again = low.wait_granted(timeout=10)
    assert again is not None and again.claim_id != first
    assert low.claim_id == again.claim_id and low.requeued is None
    low.release()  # an ordinary lease again


def test_make_room_hands_the_core_over_at_once_and_release_while_waiting_again_is_quiet(
    patient_server: str, connect: Connect
) -> None:
    with connect(patient_server) as c:
        low = c.acquire(cpus=1)
        got: dict[str, object] = {}
        waiter = threading.Thread(target=lambda: got.update(urgent=c.acquire(cpus=1, priority_class="urgent")))
        waiter.start()
        assert low.wait_preempted(timeout=10) is not None
        low.make_room()  # not after the 60 s grace
        waiter.join(timeout=10)
        urgent = got["urgent"]
        assert low.wait_granted(timeout=0.2) is None
        low.release()  # while waiting again: no error, nothing was held
        urgent.release()  # type: ignore[attr-defined]


def test_after_the_notice_wait_granted_returns_the_next_grant_and_a_late_make_room_changes_nothing(
    preempt: Client,
) -> None:
    seen: list[Queued] = []
    # each test's victims are their own work: damping (--preemption-limit 3 per work) must not spare them
    low = preempt.acquire(cpus=1, node=f"late-room-{uuid.uuid4().hex[:8]}", on_queued=seen.append)
    first = low.claim_id
    urgent = preempt.acquire(cpus=1, priority_class="urgent", timeout=10)  # the 0.3 s grace ran out
    try:
        assert low.wait_preempted(timeout=10) is not None
        assert low.wait_granted(timeout=0.2) is None  # the old grant is gone: it waits again
        low.make_room()  # too late (it waits again already): ignored, the claim is not given up
    finally:
        urgent.release()
    again = low.wait_granted(timeout=10)
    assert again is not None and again.claim_id != first and again.claim_id == low.claim_id
    assert [q.requeued for q in seen] == [True] and seen[0].claim_id == again.claim_id
    low.release()


def test_on_preempt_must_be_requeue_or_cancel(preempt: Client) -> None:
    with pytest.raises(InvalidAsk, match=r"ask\.on_preempt: must be 'requeue' or 'cancel' \(got 'later'\)"):
        preempt.acquire(cpus=1, on_preempt="later")
    with pytest.raises(TypeError, match="on_preempted"):
        preempt.acquire(cpus=1, on_preempted="print")  # type: ignore[arg-type]


def test_on_preempt_cancel_a_lease_not_given_back_in_the_grace_ends_preempted(preempt: Client) -> None:
    low = preempt.acquire(cpus=1, on_preempt="cancel")
    urgent = preempt.acquire(cpus=1, priority_class="urgent", timeout=10)  # granted once berth released `low`
    try:
        assert urgent.machine == "engine"
        with pytest.raises(
            Preempted,
            match=rf"claim {low.claim_id} released \(preempted by claim "
            rf"{urgent.claim_id} of priority 100\)",
        ) as e:
            low.release()
        assert isinstance(e.value, BerthError)
    finally:
        urgent.release()


@pytest.mark.parametrize("hold", [None, 10], ids=["plain", "with-hold"])
def test_the_holder_hears_the_notice_and_gives_the_claim_back_in_its_grace(
    patient_server: str, connect: Connect, hold: float | None
) -> None:
    with connect(patient_server) as c:
        heard: list[Preempting] = []
        doomed: list[object] = []
        box: dict[str, object] = {}

        def on_preempted(n: Preempting) -> None:
            heard.append(n)
            if isinstance(c, Client):  # sync: the reader thread; the lease already knows its grant is going
                doomed.append(box["lease"].wait_granted(0))  # type: ignore[attr-defined]

        # a lease with a hold reads its stream with its own (resuming) watcher
        low = c.acquire(cpus=1, hold=hold, on_preempted=on_preempted)
        box["lease"] = low
        assert low.wait_preempted(timeout=0.2) is None  # nothing preempts it yet
        got: dict[str, object] = {}
        waiter = threading.Thread(target=lambda: got.update(urgent=c.acquire(cpus=1, priority_class="urgent")))
        waiter.start()
        notice = low.wait_preempted(timeout=10)
        assert isinstance(notice, Preempting)
        assert (notice.by_priority, notice.grace_ms, notice.machine) == (100, 60_000, "engine")
        assert f"claim {low.claim_id} (priority 0) on engine preempted by claim {notice.by_claim_id}" in str(notice)
        assert low.preempted == notice
        assert heard == [notice]  # on_preempted was called with it
        assert doomed == ([None] if isinstance(c, Client) else [])  # never the doomed grant, not even in the callback
        low.release()  # within the grace: an ordinary release, no error
        waiter.join(timeout=10)
        urgent = got["urgent"]
        assert urgent.claim_id == notice.by_claim_id  # type: ignore[attr-defined]
        urgent.release()  # type: ignore[attr-defined]


def test_a_run_of_a_preempting_class_takes_the_core_a_lease_gives_back(patient_server: str, connect: Connect) -> None:
    with connect(patient_server) as c:
        low = c.acquire(cpus=1)
        got: dict[str, object] = {}
        runner = threading.Thread(
            target=lambda: got.update(value=c.run(command=["true"], cpus=1, priority_class="urgent", timeout=30))
        )
        runner.start()
        notice = low.wait_preempted(timeout=10)
        assert notice is not None and notice.by_priority == 100
        low.release()
        runner.join(timeout=30)
        assert got["value"] == {"exit_code": 0}


def test_priority_with_a_claim_is_refused_naming_it(patient_server: str, connect: Connect) -> None:
    with connect(patient_server) as c:
        lease = c.acquire(cpus=1)
        try:
            with pytest.raises(InvalidAsk, match="do not also pass priority_class"):
                c.run(command=["true"], claim=lease, priority_class="urgent")
        finally:
            lease.release()


def test_a_run_whose_own_claim_is_preempted_hears_it_then_ends_preempted(preempt: Client) -> None:
    events: list[object] = []
    done: dict[str, object] = {}
    started = threading.Event()

    def runner() -> None:
        try:
            for e in preempt.stream_run(command=["sleep", "30"], cpus=1, node="sweep", timeout=30):
                events.append(e)
                if isinstance(e, Started):
                    started.set()
        except BerthError as err:
            done["error"] = err

    t = threading.Thread(target=runner)
    t.start()
    urgent = None
    try:
        assert started.wait(timeout=10)  # the Run holds the core
        urgent = preempt.acquire(cpus=1, priority_class="urgent", timeout=10)  # granted once the Run's claim went
        t.join(timeout=10)
        notices = [e for e in events if isinstance(e, Preempting)]
        assert len(notices) == 1 and notices[0].by_claim_id == urgent.claim_id
        assert isinstance(done.get("error"), Preempted)
    finally:
        if urgent is not None:
            urgent.release()
        t.join(timeout=10)
