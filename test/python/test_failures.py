"""A node's Failure (type name, message as the harness sends it: `str(exc)`) back into the exception
an engine catches (issue #6 item 3). No server needed: this is the client's decoding alone."""

from __future__ import annotations

import pytest
from berth_client import RemoteError
from berth_client.failures import exception_from_failure


@pytest.mark.parametrize("key", ["x", "it's", 'say "hi"', "", "a\nb"])
def test_a_key_error_gets_back_the_key_the_node_raised(key: str) -> None:
    sent = str(KeyError(key))  # what the worker's harness sends: the key's repr
    exc = exception_from_failure("KeyError", sent, "", "c1")
    assert type(exc) is KeyError and exc.args == (key,)


@pytest.mark.parametrize("message", ["5", "('a', 'b')", "", "not a repr"])
def test_a_key_error_whose_message_is_not_one_quoted_string_keeps_it(message: str) -> None:
    exc = exception_from_failure("KeyError", message, "", "c1")
    assert type(exc) is KeyError and exc.args == (message,)


def test_other_builtins_keep_their_message_as_sent() -> None:
    exc = exception_from_failure("ValueError", "'quoted'", "", "c1")
    assert type(exc) is ValueError and exc.args == ("'quoted'",)


def test_str_of_a_rebuilt_exception_reads_as_it_would_locally() -> None:
    exc = exception_from_failure("ModuleNotFoundError", "No module named 'x'", "", "c1")
    assert type(exc) is ModuleNotFoundError and str(exc) == "No module named 'x'"
    lookup = exception_from_failure("KeyError", "'k'", "", "c1")
    assert str(lookup) == "'k'"  # str() of the rebuilt KeyError is again the repr, as locally


def test_a_non_builtin_type_is_a_remote_error_named_after_it() -> None:
    exc = exception_from_failure("mylib.FitError", "did not converge", "", "c1")
    assert isinstance(exc, RemoteError) and type(exc).__name__ == "FitError"
