"""Claims from Python: the lease lives exactly as long as the `with` block (SPEC P6, P8, P9). Claims granted,
waiting, clamped, timed out, cancelled and refused are cases of the shared list (test/cases/clients.json,
test_cases.py), which the TypeScript client runs too."""

from __future__ import annotations

import pytest
from berth_client import Client
from conftest import machine


def books_full(snap) -> bool:
    engine = machine(snap, "engine")
    return engine.free.cpus == 2 and list(engine.free_gpu_ids) == [0] and not snap.held and not snap.waiting


def test_an_exception_inside_the_block_releases_the_claim(client: Client) -> None:
    with pytest.raises(RuntimeError, match="node blew up"):
        with client.claim(cpus=2, gpus=1, node="study.crash"):
            raise RuntimeError("node blew up")
    assert books_full(client.snapshot())
