"""The shared behaviour list of both clients (test/cases/clients.json, issue 24 item 2), run with `Client`
and `aio.AsyncClient` (the `connect` fixture) through real `berth serve` processes and real `berth worker`
agents; the TypeScript BerthClient runs the same list in test/client/cases.test.ts. Keys of the file are
the contract's snake_case names, which are this client's keyword arguments; `timeout` is in seconds."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import berth_client
import pytest
from berth_client import Client, LogLine, Metric, Result, Started
from conftest import Connect, has_machine, wait_until
from processes import ROOT, BerthProcess, start_server, start_worker

CASES_DIR = ROOT / "test" / "cases"
FILE = json.loads((CASES_DIR / "clients.json").read_text())
Json = dict[str, Any]


def fill(value: Any, names: dict[str, str]) -> Any:
    """`value` with every `{name}` replaced by `names[name]` (deeply, in strings, lists and dicts)."""
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: names.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    return value


class CaseServer:
    """A server of the case file with its workers attached, its certificates and a scratch dir."""

    def __init__(self, spec: Json) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="berth-cases-"))
        self.certs = self.dir / "certs"
        self.certs.mkdir()
        self.procs: list[BerthProcess] = []
        try:
            subprocess.run(["bash", str(CASES_DIR / "make-certs.sh")], cwd=self.certs, check=True, timeout=60)
            names = {"certs": str(self.certs)}
            server, self.address = start_server("--state-dir", str(self.dir / "s"), *fill(spec["serve"], names))
            self.procs.append(server)
            for w in spec["workers"]:
                state = str(self.dir / f"worker-{w['name']}")
                self.procs.append(start_worker(self.address, w["name"], "--state-dir", state, *fill(w["flags"], names)))
                with Client(self.address) as c:
                    wait_until(c, has_machine(w["name"]))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def case_servers() -> Iterator[dict[str, CaseServer]]:
    """The servers of the case file, each started when a case first needs it, all stopped at the end."""
    started: dict[str, CaseServer] = {}
    yield started
    for s in started.values():
        s.stop()


def client_for(case: Json, server: CaseServer, connect: Connect) -> Client:
    conn = fill(case.get("connect", {}), {"certs": str(server.certs)})
    kwargs: Json = {}
    if "token" in conn:
        kwargs["token"] = conn["token"]
    tls = conn.get("tls", {})
    for ours, theirs in (("ca", "root_certificates"), ("cert", "certificate_chain"), ("key", "private_key")):
        if ours in tls:
            kwargs[theirs] = tls[ours]
    return connect(server.address, **kwargs)


def check_error(err: BaseException | None, want: Json) -> None:
    """`err` against a case's `expect.error`; a RemoteError class is the node's own (Python builtins are kept)."""
    assert err is not None, f"expected {want}, got no error"
    cls = want["class"]
    if cls == "RemoteError":
        assert type(err).__name__ == want["remote_type"] and getattr(err, "remote_type", None) == want["remote_type"]
    else:
        assert isinstance(err, getattr(berth_client, cls)), f"expected {cls}, got {type(err).__name__}: {err}"
    checks = {"field": "field", "label": "label", "exit_code": "exit_code"}
    for key, attr in checks.items():
        if key in want:
            assert getattr(err, attr) == want[key], (key, getattr(err, attr, None))
    if "message" in want:
        assert str(err) == want["message"]
    if "match" in want:
        assert want["match"] in str(err)
    if "traceback_has" in want:
        assert want["traceback_has"] in err.remote_traceback  # type: ignore[attr-defined]


def check_grant(grant: Any, want: Json) -> None:
    got = {
        "machine": grant.machine,
        "remote": grant.remote,
        "clamped": grant.clamped,
        "fell_back": grant.fell_back,
        "cpus": grant.allocation.cpus,
        "gpu_ids": list(grant.allocation.gpu_ids),
    }
    for key, value in want.items():
        if key == "env":
            assert {k: grant.allocation.env.get(k) for k in value} == value
        else:
            assert got[key] == value, key


def item_fields(item: Any) -> Json:
    if isinstance(item, Started):
        return {"kind": "started", "machine": item.machine, "call_id": item.call_id}
    if isinstance(item, Metric):
        return {"kind": "metric", "name": item.name, "value": item.value}
    if isinstance(item, LogLine):
        return {"kind": "log", "line": item.line, "stream": item.stream}
    return {"kind": type(item).__name__}


def outcome(fn: Any) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except Exception as err:  # judged by the case
        return None, err


def check_outcome(value: Any, err: BaseException | None, want: Json) -> None:
    if "error" in want:
        check_error(err, want["error"])
    elif err is not None:
        raise err


def claim_case(client: Client, case: Json, want: Json) -> None:
    hold = client.acquire(**case["while_holding"]) if "while_holding" in case else None
    queued: list[str] = []
    was_queued = threading.Event()
    result: list[tuple[Any, BaseException | None]] = []

    def on_queued(reason: Any) -> None:
        queued.append(str(reason))
        was_queued.set()

    def claim() -> None:
        result.append(
            outcome(lambda: client.acquire(**case["claim"], timeout=case.get("timeout"), on_queued=on_queued))
        )
        was_queued.set()

    waiter = threading.Thread(target=claim)
    waiter.start()
    if hold is not None:
        assert was_queued.wait(30)
        if "cancel_when_queued" in case:
            assert tuple(client.cancel(case["cancel_when_queued"])) == (
                want["cancel_counts"]["calls"],
                want["cancel_counts"]["claims"],
            )
        if case.get("release_hold") != "after":
            hold.release()
    waiter.join(60)
    if hold is not None:
        hold.release()  # idempotent
    if "queued_detail" in want:
        assert queued and want["queued_detail"] in queued[0]
    lease, err = result[0]
    check_outcome(lease, err, want)
    if lease is not None:
        try:
            if "granted" in want:
                check_grant(lease.grant, want["granted"])
            assert lease.claim_id in [h.claim_id for h in client.snapshot().held]
        finally:
            lease.release()


def run_case(client: Client, case: Json, want: Json) -> None:
    lease = client.acquire(**case["in_claim"]) if "in_claim" in case else None
    try:
        if lease is not None and "granted" in want:
            check_grant(lease.grant, want["granted"])
        args = {**case["run"], **({"claim": lease.claim_id} if lease is not None else {})}
        items: list[Any] = []
        if case.get("via") == "stream":

            def streamed() -> Any:
                for item in client.stream_run(**args):
                    if isinstance(item, Result):
                        return item.value
                    items.append(item)
                raise AssertionError("stream ended without a result")

            value, err = outcome(streamed)
        else:
            value, err = outcome(lambda: client.run(**args, on_event=items.append))
        check_outcome(value, err, want)
        if err is None:
            if "value" in want:
                assert value == want["value"]
            if "events" in want:
                got = [item_fields(i) for i in items]
                assert [g["kind"] for g in got] == [w["kind"] for w in want["events"]]
                for g, w in zip(got, want["events"], strict=True):
                    assert {k: g.get(k) for k in w} == w
    finally:
        if lease is not None:
            lease.release()


def cancel_case(client: Client, case: Json, want: Json, server: CaseServer) -> None:
    spec = case["cancel"]
    # one file per run of the case: the sync and asyncio runs share the server's dir, and a file left by the first
    # would let the second's calls finish before the cancel
    release = server.dir / f"release-{case['id']}-{uuid.uuid4().hex[:8]}"
    started = {r["run_id"]: threading.Event() for r in spec["runs"]}
    outcomes: dict[str, tuple[Any, BaseException | None]] = {}

    def call(run: Json) -> None:
        rid = run["run_id"]
        outcomes[rid] = outcome(
            lambda: client.run(**run, on_event=lambda e: isinstance(e, Started) and started[rid].set())
        )

    threads = [threading.Thread(target=call, args=(fill(r, {"release": str(release)}),)) for r in spec["runs"]]
    for t in threads:
        t.start()
    for rid, ev in started.items():
        assert ev.wait(30), f"{rid} never started: {outcomes}"
    counts = client.cancel(spec["cancel"])
    assert tuple(counts) == (want["cancel_counts"]["calls"], want["cancel_counts"]["claims"])
    threads[[r["run_id"] for r in spec["runs"]].index(spec["cancel"])].join(30)
    assert spec["cancel"] in outcomes
    assert [rid for rid in started if rid != spec["cancel"] and rid in outcomes] == [], "other runs are untouched"
    release.touch()
    for t in threads:
        t.join(30)
    for rid, w in want["outcomes"].items():
        value, err = outcomes[rid]
        check_outcome(value, err, w)
        if "value" in w:
            assert value == w["value"]


def books_full(snap: Any) -> bool:
    """Nothing held, waiting or running; every machine's free cores and GPU ids equal its total (SPEC P8)."""
    if snap.held or snap.waiting or snap.calls:
        return False
    return all(m.free.cpus == m.total.cpus and list(m.free_gpu_ids) == list(m.total.gpu_ids) for m in snap.machines)


@pytest.mark.parametrize("case", FILE["cases"], ids=[c["id"] for c in FILE["cases"]])
def test_shared_client_case(case: Json, case_servers: dict[str, CaseServer], connect: Connect) -> None:
    name = case["server"]
    if name not in case_servers:
        case_servers[name] = CaseServer(FILE["servers"][name])
    server = case_servers[name]
    want = case.get("expect", {})
    with client_for(case, server, connect) as client, warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        if "claim" in case:
            claim_case(client, case, want)
        elif "run" in case:
            run_case(client, case, want)
        elif "cancel" in case:
            cancel_case(client, case, want, server)
        elif "snapshot" in case:
            snap, err = outcome(client.snapshot)
            check_outcome(snap, err, want)
            if "machine0" in want:
                assert snap.machines[0].name == want["machine0"]
        if "warns" in want:
            assert want["warns"] in [w.category.__name__ for w in warned]
        if not ("snapshot" in case and "error" in want):  # a refused client cannot look
            wait_until(client, books_full, timeout=10)
