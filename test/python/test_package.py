"""The client as users get it (issue 14 item 7): `python -m build` makes an sdist and a wheel from
clients/python; the wheel, installed into a fresh venv, carries the stubs and py.typed, and the
examples run from it (outside the source tree) against a real server and worker (worker_server, w1)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import grpc
import pytest
from processes import ROOT


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/ with the sdist and the wheel (`python -m build`, wheel built from the sdist)."""
    tmp = tmp_path_factory.mktemp("build")
    source = tmp / "source"  # built from a copy: setuptools writes build/ and *.egg-info next to the sources
    shutil.copytree(
        ROOT / "clients" / "python", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"), str(source)],
        check=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return tmp / "dist"


@pytest.fixture(scope="module")
def fresh_python(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a new venv with the wheel installed. Its dependencies (grpcio, protobuf: the
    wheel's Requires-Dist, checked below) are this venv's pinned ones, seen through a .pth file, so
    the test needs no network; the source tree is not on its path."""
    venv = tmp_path_factory.mktemp("venv") / "fresh"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120, stdin=subprocess.DEVNULL
    )
    [wheel] = dist.glob("berth_client-*.whl")
    python = venv / "bin" / "python"
    # this venv's pip installs into the fresh one (`--python`): quicker than bootstrapping a pip there
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    Path(site, "berth-test-deps.pth").write_text(str(Path(grpc.__file__).parents[1]) + "\n")
    return python


def test_the_wheel_and_sdist_carry_the_stubs_the_typing_marker_and_the_dependencies(dist: Path) -> None:
    [wheel] = dist.glob("berth_client-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        "py.typed",
        "client.py",
        "aio/client.py",
        "_proto/berth/v1/placement_pb2.py",
        "_proto/berth/v1/placement_pb2_grpc.py",
        "_proto/berth/v1/placement_pb2.pyi",
    ):
        assert f"berth_client/{name}" in names
    metadata = next(n for n in names if n.endswith("METADATA"))
    lines = zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
    requires = [line for line in lines if line.startswith("Requires-Dist")]
    assert requires == ["Requires-Dist: grpcio>=1.85.1", "Requires-Dist: protobuf<8,>=7.35.1"]
    [sdist] = dist.glob("berth_client-*.tar.gz")
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("src/berth_client/aio/client.py") for m in members)
    assert any(m.endswith("src/berth_client/_proto/berth/v1/placement_pb2.pyi") for m in members)


@pytest.mark.parametrize("example", ["engine.py", "engine_async.py"])
def test_the_examples_run_from_the_installed_wheel(
    fresh_python: Path, run_ready: str, worker: str, example: str, tmp_path: Path
) -> None:
    """On worker_server (no cores on the engine host) every node runs on w1, the fit node with GPU 0."""
    where = subprocess.run(
        [str(fresh_python), "-c", "import berth_client; print(berth_client.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert where.stdout.startswith(str(fresh_python.parents[1])), where  # the wheel's copy, not the source tree
    out = subprocess.run(
        [str(fresh_python), str(ROOT / "examples" / example), "--address", run_ready],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    ran = sorted(line for line in out.stdout.splitlines() if ": ran on " in line)
    assert "study.fit: ran on w1 (remote worker) with cpus=1 gpu_ids=[0]" in ran
    assert "study.load: ran on w1 (remote worker) with cpus=1 gpu_ids=[]" in ran
    assert out.stdout.splitlines()[-1].startswith("result: mean 3.00")
