"""Test support: the real berth CLI (`berth serve`, `berth worker`) as subprocesses on loopback.

Each process runs in its own session (so a worker's node processes are killed with it), its
stderr is drained in a thread (kept for failure messages), and `stop()` ends it: SIGTERM, then
SIGKILL after a grace.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BERTH_BIN = ROOT / "bin" / "berth.js"


class BerthProcess:
    """`node bin/berth.js ARGS...` with its stderr lines collected."""

    def __init__(self, args: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
        env["BERTH_LOG_LEVEL"] = "info"
        # A server's journal goes to a temporary state directory, never ~/.local/state (removed by kill()).
        self.state_dir = ""
        if args[:1] == ["serve"] and "--state-dir" not in args:
            self.state_dir = env["BERTH_STATE_DIR"] = tempfile.mkdtemp(prefix="berth-serve-")
        self.args = args
        self.proc = subprocess.Popen(
            ["node", str(BERTH_BIN), *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, needle: str, timeout: float = 30.0) -> str:
        """The first stderr line containing `needle`; fails if the process exits or `timeout` s pass."""
        with self._changed:
            ok = self._changed.wait_for(
                lambda: any(needle in line for line in self.lines) or self.proc.poll() is not None, timeout
            )
            found = [line for line in self.lines if needle in line]
        if not ok or not found:
            self.stop()
            raise RuntimeError(
                f"berth {' '.join(self.args)}: no line with {needle!r}; stderr:\n" + "\n".join(self.lines[-30:])
            )
        return found[0]

    def kill(self) -> None:
        """SIGKILL to the whole process group (the agent and every node it started)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after `grace` s."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self.kill()


def start_server(*flags: str) -> tuple[BerthProcess, str]:
    """`berth serve --listen 127.0.0.1:0 FLAGS` → (process, "127.0.0.1:PORT") once it logs "berth serving"."""
    server = BerthProcess(["serve", "--listen", "127.0.0.1:0", "--grace", "1", "--reconnect-grace", "0", *flags])
    line = server.wait_for_line('"msg":"berth serving"')
    return server, str(json.loads(line)["address"])


def start_worker(address: str, name: str, *flags: str) -> BerthProcess:
    """`berth worker --server ADDRESS --name NAME FLAGS` (attachment is awaited by the caller)."""
    return BerthProcess(["worker", "--server", address, "--name", name, *flags])


def worker_cli_built() -> str:
    """ "" when `berth worker` exists, else why not (its placeholder says "not built yet")."""
    out = subprocess.run(
        ["node", str(BERTH_BIN), "worker", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    text = out.stdout + out.stderr
    return text.strip() if "not built yet" in text else ""


def free_port() -> int:
    """A loopback port nothing listens on now (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_member(etcd: str, cluster: str, *flags: str) -> tuple[BerthProcess, str]:
    """`berth serve --store etcd://ETCD --cluster CLUSTER` (SPEC S7) on a fresh loopback port, with a 2 s leader
    lease → (process, "127.0.0.1:PORT") once it leads ("berth serving") or stands by ("berth standing by")."""
    address = f"127.0.0.1:{free_port()}"
    server = BerthProcess(
        ["serve", "--listen", address, "--store", f"etcd://{etcd}", "--cluster", cluster, "--leader-ttl", "2"]
        + ["--grace", "1", *flags]
    )
    server.wait_for_line('"msg":"berth s')  # serving, or standing by
    return server, address


class Etcd:
    """A one-member etcd (Debian's etcd-server) on loopback ports of its own with a temporary data dir; `stop()`
    ends it and removes the dir. `missing()` says why none can run here."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="berth-etcd-")
        port, peer = free_port(), free_port()
        self.endpoint = f"127.0.0.1:{port}"
        peer_url = f"http://127.0.0.1:{peer}"
        self.proc = subprocess.Popen(
            ["etcd", "--name=t", f"--data-dir={self.dir}/data", f"--listen-client-urls=http://{self.endpoint}"]
            + [f"--advertise-client-urls=http://{self.endpoint}", f"--listen-peer-urls={peer_url}"]
            + [f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=t={peer_url}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=1) as res:
                    if b"true" in res.read():
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("etcd did not answer within 20 s")
            time.sleep(0.1)

    @staticmethod
    def missing() -> str:
        """ "" when an etcd 3 binary is installed, else why not."""
        try:
            out = subprocess.run(["etcd", "--version"], capture_output=True, text=True, timeout=10)
        except OSError:
            return "no etcd binary (apt-get install etcd-server, or run scripts/etcd-up.sh)"
        return "" if "etcd Version: 3." in out.stdout else f"etcd 3 needed (found {out.stdout.splitlines()[:1]})"

    def stop(self) -> None:
        """SIGKILL, and the data dir removed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
