"""How fast clients and workers follow a killed leader (issue 20, SPEC S7): per trial, a fresh two-server cluster
(`--leader-ttl 2`) on a one-member etcd, worker w1 given both servers, and a Python `claim(..., hold=30)`; the
leader is SIGKILLed and the new leader is polled every 20 ms for (a) the claim held again by its holder and (b)
w1 connected. Run from the repository root after `make build`:

    PYTHONPATH=clients/python/src .venv/bin/python bench/ha_follow.py 8
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
from berth_client import Client, Snapshot, Unavailable  # noqa: E402
from processes import Etcd, start_member, start_worker  # noqa: E402


def snapshot(address: str) -> Snapshot | None:
    """The books of `address`, or None while it stands by or is gone."""
    with Client(address) as c:
        try:
            return c.snapshot()
        except Unavailable:
            return None


def connected(s: Snapshot | None) -> bool:
    return s is not None and any(m.name == "w1" and m.state == "connected" for m in s.machines)


def trial(etcd: Etcd, n: int) -> tuple[float, float]:
    """(claim resumed, worker attached) in seconds after the leader's SIGKILL."""
    name, state = f"bench{os.getpid()}-{n}", tempfile.mkdtemp()
    leader, la = start_member(etcd.endpoint, name, "--cpus", "1", "--gpus", "")
    standby, sa = start_member(etcd.endpoint, name, "--cpus", "1", "--gpus", "")
    worker = start_worker(f"{la},{sa}", "w1", "--labels", "w", "--cpus", "2", "--gpus", "", "--state-dir", state)
    try:
        while not connected(snapshot(la)):
            time.sleep(0.05)
        with Client(f"{la},{sa}") as client, client.claim(cpus=1, label="w", policy="require", hold=30) as g:
            leader.kill()
            t0 = time.monotonic()
            resumed = attached = 0.0
            while not (resumed and attached):
                s = snapshot(sa)
                if s and not resumed and any(h.claim_id == g.claim_id and not h.awaiting_holder for h in s.held):
                    resumed = time.monotonic() - t0
                if s and not attached and connected(s):
                    attached = time.monotonic() - t0
                time.sleep(0.02)
            return resumed, attached
    finally:
        for p in (worker, standby, leader):
            p.kill()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    etcd = Etcd()
    try:
        results = [trial(etcd, n) for n in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5)]
    finally:
        etcd.stop()

    def line(xs: list[float]) -> str:
        return f"min {min(xs):.2f} median {statistics.median(xs):.2f} max {max(xs):.2f} s"

    print(f"trials {len(results)}, --leader-ttl 2, after the leader's SIGKILL:")
    print(f"  hold=30 claim resumed on the new leader: {line([r for r, _ in results])}")
    print(f"  worker w1 attached to the new leader:    {line([a for _, a in results])}")


if __name__ == "__main__":
    main()
