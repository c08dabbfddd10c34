"""`pip install ./clients/python` gives engines the whole client: the vendored stubs and py.typed."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from processes import ROOT


def test_the_wheel_carries_the_generated_stubs_and_the_typing_marker(tmp_path: Path) -> None:
    source = tmp_path / "source"  # built from a copy: setuptools writes build/ next to the sources
    shutil.copytree(ROOT / "clients" / "python", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(tmp_path), str(source)],
        check=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    [wheel] = tmp_path.glob("berth_client-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("py.typed", "client.py", "_proto/berth/v1/placement_pb2.py", "_proto/berth/v1/placement_pb2_grpc.py", "_proto/berth/v1/placement_pb2.pyi"):
        assert f"berth_client/{name}" in names
    metadata = next(n for n in names if n.endswith("METADATA"))
    requires = [l for l in zipfile.ZipFile(wheel).read(metadata).decode().splitlines() if l.startswith("Requires-Dist")]
    assert requires == ["Requires-Dist: grpcio>=1.85.1", "Requires-Dist: protobuf<8,>=7.35.1"]
