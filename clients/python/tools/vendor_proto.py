"""Copy the grpcio-tools output (generated/python) into the berth_client package.

Usage: python vendor_proto.py SRC DEST

SRC holds `berth/v1/*_pb2*.py[i]` as protoc wrote them (importing `from berth.v1 import ...`).
DEST (clients/python/src/berth_client/_proto) receives the same files with those imports
rewritten to `from berth_client._proto.berth.v1 import ...`, plus empty `__init__.py` files, so
`pip install ./clients/python` works from a fresh clone without touching sys.path.
Output is byte-for-byte a function of SRC (files processed in sorted order, no timestamps).
"""

from __future__ import annotations

import pathlib
import re
import shutil
import sys

HEADER = "# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.\n"
IMPORT = re.compile(r"^from berth\.v1 import ", re.MULTILINE)


def vendor(src: pathlib.Path, dest: pathlib.Path) -> None:
    """Replace DEST with the rewritten copy of SRC."""
    if dest.exists():
        shutil.rmtree(dest)
    for package in (dest, dest / "berth", dest / "berth" / "v1"):
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(HEADER, encoding="utf-8")
    for path in sorted((src / "berth" / "v1").iterdir()):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = IMPORT.sub("from berth_client._proto.berth.v1 import ", path.read_text(encoding="utf-8"))
        (dest / "berth" / "v1" / path.name).write_text(HEADER + text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: vendor_proto.py SRC DEST")
    vendor(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
