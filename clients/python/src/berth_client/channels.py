"""Channel settings shared by both clients: keepalive, message limits, token metadata and TLS/mTLS
credentials (SPEC R2)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import grpc

from . import checks

# Long streams (a claim held for hours, a quiet call) keep their connection: ping every 20 s
# even without data, give up after 10 s without an answer (the server permits pings every 5 s).
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
)

Pem = bytes | str | Path


def _pem(name: str, value: object) -> bytes | None:
    """PEM bytes given as bytes, or read from a file path (str or Path); None stays None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, (str, Path)):
        try:
            return Path(value).read_bytes()
        except OSError as err:
            raise checks.wrong_type(name, f"PEM bytes or a readable file path ({err.strerror})", value) from None
    raise checks.wrong_type(name, "PEM bytes, a file path or None", value)


@dataclass(frozen=True)
class Connection:
    """What a client needs to open its channel: the address, the call metadata and, for TLS, the
    credentials (None = plaintext)."""

    address: str
    metadata: tuple[tuple[str, str], ...]
    credentials: grpc.ChannelCredentials | None


def connection(
    address: object,
    token: object,
    root_certificates: object,
    certificate_chain: object,
    private_key: object,
) -> Connection:
    """Checks the client arguments. `token` (default $BERTH_TOKEN) is sent as `authorization: Bearer`;
    TLS is on when any of `root_certificates` (the CA to trust; None = system roots),
    `certificate_chain` and `private_key` (the client certificate for mutual TLS, both or neither)
    is given, each PEM bytes or a file path. TypeError names a wrong argument."""
    checks.text("address", address)
    checks.optional_str("token", token)
    ca = _pem("root_certificates", root_certificates)
    cert = _pem("certificate_chain", certificate_chain)
    key = _pem("private_key", private_key)
    if (cert is None) != (key is None):
        raise TypeError("certificate_chain, private_key: give both (mutual TLS) or neither")
    tok = token if token is not None else os.environ.get("BERTH_TOKEN") or None
    metadata = (("authorization", f"Bearer {tok}"),) if tok else ()
    tls = ca is not None or cert is not None
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert) if tls else None
    return Connection(str(address), metadata, creds)
