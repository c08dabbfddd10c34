"""Both clients over TLS to a server that requires client certificates (mutual TLS, SPEC R2); the
certificates are made by openssl for the test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from berth_client import Unavailable
from conftest import Connect
from processes import start_server

MAKE_CERTS = """set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 1 \
  -subj /CN=berth-test-ca 2>/dev/null
for who in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $who.key -out $who.csr \
    -subj /CN=$who 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 1 \
    -extfile $who.ext 2>/dev/null
done
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, and server and client certificates it signed (for 127.0.0.1)."""
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(["bash", "-c", MAKE_CERTS], cwd=folder, check=True, timeout=60, stdin=subprocess.DEVNULL)
    return folder


@pytest.fixture(scope="module")
def mtls_server(certs: Path) -> Iterator[str]:
    """A server that requires a client certificate signed by the test CA."""
    server, address = start_server(
        "--cpus",
        "1",
        "--gpus",
        "",
        "--tls-cert",
        str(certs / "server.pem"),
        "--tls-key",
        str(certs / "server.key"),
        "--tls-ca",
        str(certs / "ca.pem"),
    )
    yield address
    server.stop()


def test_a_client_with_its_certificate_claims_on_a_mutual_tls_server(
    mtls_server: str, certs: Path, connect: Connect
) -> None:
    with connect(
        mtls_server,
        root_certificates=str(certs / "ca.pem"),
        certificate_chain=str(certs / "client.pem"),
        private_key=(certs / "client.key").read_bytes(),
    ) as client:
        with client.claim(cpus=1, node="study.secure") as grant:
            assert grant.machine == "engine"
        assert client.snapshot().machines[0].free.cpus == 1


def test_a_client_without_a_certificate_is_refused_by_a_mutual_tls_server(
    mtls_server: str, certs: Path, connect: Connect
) -> None:
    with connect(mtls_server, root_certificates=str(certs / "ca.pem")) as client:
        with pytest.raises(Unavailable):
            client.snapshot()
    with connect(mtls_server) as plaintext:
        with pytest.raises(Unavailable):
            plaintext.snapshot()
