"""Named resources and pools from Python (issue 23): `claim(..., resources={"trainer": 1})` takes a per-machine
resource the server's engine offers (`--resources trainer=1`) or a pool license (`--pools license/matlab=1`), and
the allocation shows it; a quantity finer than 0.0001 is refused before anything is sent, naming the field; a name
nothing has is refused by the server (FAILED_PRECONDITION, NoWorker) naming it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from berth_client import Client, InvalidAsk, NoWorker
from conftest import Connect
from processes import start_server


@pytest.fixture(scope="module")
def named_server() -> Iterator[str]:
    """An engine of 2 cpus with one trainer, and a pool of one MATLAB license."""
    server, address = start_server("--cpus", "2", "--resources", "trainer=1", "--pools", "license/matlab=1")
    yield address
    server.stop()


@pytest.fixture
def named(named_server: str, connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of named_server."""
    with connect(named_server) as c:
        yield c


def test_a_trainer_and_a_license_are_granted_with_the_cores_and_shown_in_the_allocation(named: Client) -> None:
    with named.claim(cpus=1, resources={"trainer": 1, "license/matlab": 1}) as lease:
        assert lease.allocation.resources == {"trainer": 1.0, "license/matlab": 1.0}
        assert lease.allocation.cpus == 1
    with named.claim(cpus=1, resources={"trainer": 0.5}) as lease:
        assert lease.allocation.resources == {"trainer": 0.5}


def test_a_quantity_finer_than_a_ten_thousandth_is_refused_naming_the_field(named: Client) -> None:
    with pytest.raises(InvalidAsk, match=r"ask\.resources\.trainer: in steps of 0\.0001") as e:
        named.claim(cpus=1, resources={"trainer": 0.00005})
    assert e.value.field == "ask.resources.trainer"


def test_a_name_nothing_has_is_refused_by_the_server_naming_it(named: Client) -> None:
    with pytest.raises(NoWorker, match="ask.resources.dongle"):
        with named.claim(cpus=1, resources={"dongle": 1}):
            pass
