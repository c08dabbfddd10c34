"""Every public method checks its arguments before anything is sent (issue #6 item 1): a wrong type
raises TypeError, a wrong value InvalidAsk (a ValueError), both naming the argument and the value.

The client here points at a port where nothing listens: an error other than the argument's own
(Unavailable) would mean the request went out first."""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from berth_client import Client, InvalidAsk
from conftest import Connect


@pytest.fixture
def offline(connect: Connect) -> Iterator[Client]:
    """A client (sync and async) of a loopback port nobody listens on (bound, never listened, then freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with connect(f"127.0.0.1:{port}") as c:
        yield c


WRONG_TYPES: list[tuple[str, Callable[[Client], Any], str, str]] = [
    ("run command as a string", lambda c: c.run(command="echo hi"), "command", "'echo hi'"),
    ("run command item not a str", lambda c: c.run(command=["echo", 3]), "command[1]", "3"),
    ("claim timeout as a string", lambda c: c.claim(timeout="x"), "timeout", "'x'"),
    ("claim env value not a str", lambda c: c.claim(env={"A": 1}), "env['A']", "1"),
    ("claim label not a str", lambda c: c.claim(label=5), "label", "5"),
    ("claim policy not a str", lambda c: c.claim(policy=["prefer"]), "policy", "['prefer']"),
    ("claim on_queued not callable", lambda c: c.claim(on_queued="print"), "on_queued", "'print'"),
    ("run source not a str", lambda c: c.run(source=123), "source", "123"),
    ("run claim neither a Grant nor an id", lambda c: c.run(source="", claim=123), "claim", "123"),
    ("run kwargs key not a str", lambda c: c.run(source="", kwargs={1: 2}), "kwargs key", "1"),
    ("run kwargs value not JSON-like", lambda c: c.run(source="", kwargs={"s": {1, 2}}), "kwargs['s']", "{1, 2}"),
    ("run timeout as a string", lambda c: c.run(source="", timeout="10"), "timeout", "'10'"),
    ("run run_id not a str", lambda c: c.run(source="", run_id=7), "run_id", "7"),
    ("satisfiable label not a str", lambda c: c.satisfiable(label=5), "label", "5"),
    ("cancel run_id not a str", lambda c: c.cancel(42), "run_id", "42"),
    ("claim cpus as a string", lambda c: c.claim(cpus="x"), "cpus", "'x'"),
    ("claim gpu_type not a str", lambda c: c.claim(gpu_type=100), "gpu_type", "100"),
]


@pytest.mark.parametrize("call,argument,shown", [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES])
def test_a_wrong_type_raises_type_error_naming_the_argument_and_value(
    offline: Client, call: Callable[[Client], Any], argument: str, shown: str
) -> None:
    with pytest.raises(TypeError) as caught:
        call(offline)
    message = str(caught.value)
    assert message.startswith(f"{argument}: ") and shown in message


WRONG_VALUES: list[tuple[str, Callable[[Client], Any], str, str]] = [
    ("claim timeout negative", lambda c: c.claim(timeout=-1), "timeout", "-1"),
    ("claim timeout zero", lambda c: c.claim(timeout=0), "timeout", "0"),
    ("claim timeout NaN", lambda c: c.claim(timeout=math.nan), "timeout", "nan"),
    ("run timeout zero", lambda c: c.run(source="", timeout=0), "timeout", "0"),
    ("run timeout negative", lambda c: c.run(source="", timeout=-0.5), "timeout", "-0.5"),
    ("run kwargs NaN", lambda c: c.run(source="", kwargs={"lr": math.nan}), "kwargs['lr']", "nan"),
    (
        "run kwargs nested infinity",
        lambda c: c.run(source="", kwargs={"grid": [1.0, math.inf]}),
        "kwargs['grid'][1]",
        "inf",
    ),
    ("run command empty", lambda c: c.run(command=[]), "command", "[]"),
    ("run kwargs with a command", lambda c: c.run(command=["true"], kwargs={"x": 1}), "kwargs", "command"),
    ("run claim id empty", lambda c: c.run(source="", claim=""), "claim", "''"),
    ("claim cpus negative", lambda c: c.claim(cpus=-1), "ask.cpus", "-1"),
    ("claim cpus past uint32", lambda c: c.claim(cpus=10**12), "ask.cpus", "at most 4294967295 (got 1000000000000)"),
    ("claim policy unknown", lambda c: c.claim(policy="always"), "ask.policy", "'always'"),
    ("cancel run_id empty", lambda c: c.cancel(""), "run_id", "''"),
    # a fraction is a GPU share only in (0, 1) (SPEC P14): 1.5 is a bad value, not a bad type
    ("run gpus 1.5", lambda c: c.run(source="", gpus=1.5), "ask.gpus", "1.5"),
]


@pytest.mark.parametrize("call,argument,shown", [w[1:] for w in WRONG_VALUES], ids=[w[0] for w in WRONG_VALUES])
def test_a_wrong_value_raises_invalid_ask_naming_the_argument_and_value(
    offline: Client, call: Callable[[Client], Any], argument: str, shown: str
) -> None:
    with pytest.raises(InvalidAsk) as caught:
        call(offline)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert message.startswith(f"{argument}: ") and shown in message
    assert caught.value.field == argument


def test_json_like_kwargs_pass_the_checks(offline: Client) -> None:
    """Tuples, nested dicts, None, bools, big ints and finite floats are accepted: the call goes
    out and fails only because nobody listens."""
    from berth_client import Unavailable

    with pytest.raises(Unavailable):
        offline.run(
            source="def process(**k):\n    return k",
            timeout=5,
            kwargs={"t": (1, 2), "d": {"a": None, "b": True}, "big": 2**60, "f": 0.5},
        )


def test_a_wrong_client_argument_raises_type_error_naming_it(connect: Connect) -> None:
    with pytest.raises(TypeError, match=r"^token: .*123"):
        connect("127.0.0.1:1", token=123)
    with pytest.raises(TypeError, match=r"^certificate_chain, private_key: give both"):
        connect("127.0.0.1:1", certificate_chain=b"cert")
