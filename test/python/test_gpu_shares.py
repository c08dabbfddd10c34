"""Fractional and typed GPUs from Python (issue 23 items 3-4, SPEC P14), sync and asyncio (`connect` runs both):
`claim(gpus=0.5)` takes half of one GPU of the real server's engine, whose env names the id and the share; two
halves share the one GPU; 1.5 and 0.00005 are refused before anything is sent, naming ask.gpus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from berth_client import Client, InvalidAsk, NoWorker
from conftest import Connect, has_machine, wait_until
from processes import start_server, start_worker


@pytest.fixture(scope="module")
def gpu_server() -> Iterator[str]:
    """An engine of 2 cpus and one GPU (id 0)."""
    server, address = start_server("--cpus", "2", "--gpus", "0-0")
    yield address
    server.stop()


@pytest.fixture
def gpu(gpu_server: str, connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of gpu_server."""
    with connect(gpu_server) as c:
        yield c


def test_two_halves_share_the_one_gpu_and_the_env_says_the_share(gpu: Client) -> None:
    with gpu.claim(cpus=0, gpus=0.5) as a, gpu.claim(cpus=0, gpus=0.5) as b:
        for lease in (a, b):
            assert lease.allocation.gpu_ids == (0,)
            assert lease.allocation.env["CUDA_VISIBLE_DEVICES"] == "0"
            assert lease.allocation.env["BERTH_GPU_SHARE"] == "0.5"
            assert lease.allocation.gpu_share == 0.5


def test_a_fraction_above_one_or_finer_than_a_ten_thousandth_is_refused_naming_gpus(gpu: Client) -> None:
    for bad in (1.5, 0.00005):
        with pytest.raises(InvalidAsk, match=r"ask\.gpus: a fraction in \(0, 1\)") as e:
            gpu.claim(cpus=0, gpus=bad)
        assert e.value.field == "ask.gpus"


def test_a_gpu_type_lands_on_the_worker_of_that_type_and_an_unknown_one_is_named(
    gpu_server: str, connect: Connect
) -> None:
    proc = start_worker(gpu_server, "a100-box", "--cpus", "1", "--gpus", "0-1", "--gpu-type", "a100")
    try:
        with connect(gpu_server) as c:
            wait_until(c, has_machine("a100-box"))
            with c.claim(cpus=0, gpus=1, gpu_type="a100") as lease:
                assert lease.machine == "a100-box"
                assert lease.allocation.gpu_share is None
            lease2 = c.acquire(cpus=0, gpus=0.5, gpu_type="a100")
            try:
                assert lease2.machine == "a100-box"
                assert lease2.allocation.env["BERTH_GPU_SHARE"] == "0.5"
            finally:
                lease2.release()
            with pytest.raises(NoWorker, match=r"ask\.gpu_type") as e, c.claim(cpus=0, gpus=1, gpu_type="h100"):
                pass
            assert "h100" in str(e.value)
            with pytest.raises(TypeError, match="gpu_type"):
                c.claim(cpus=0, gpus=1, gpu_type=100)  # type: ignore[arg-type]
    finally:
        proc.stop()
