"""Up-front checks of the public methods' arguments: a wrong type or value raises before anything
is sent, naming the argument and the value (TypeError for a wrong type, InvalidAsk — a ValueError —
for a wrong value)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import InvalidAsk


def _got(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def wrong_type(name: str, expected: str, value: object) -> TypeError:
    """A TypeError naming the argument, what it must be and what it got."""
    return TypeError(f"{name}: must be {expected} (got {type(value).__name__} {_got(value)})")


def optional_str(name: str, value: object) -> str | None:
    """`value` when it is a str or None; else TypeError naming `name`."""
    if value is not None and not isinstance(value, str):
        raise wrong_type(name, "a str or None", value)
    return value


def text(name: str, value: object) -> str:
    """`value` when it is a str; else TypeError naming `name`."""
    if not isinstance(value, str):
        raise wrong_type(name, "a str", value)
    return value


def timeout(value: object) -> float | None:
    """None (no deadline) or a finite number of seconds > 0; 0 and negatives are refused
    (InvalidAsk naming `timeout`), other types raise TypeError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type("timeout", "a number of seconds > 0 or None", value)
    if not (math.isfinite(value) and value > 0):
        message = f"timeout: must be a finite number of seconds > 0, or None for no deadline (got {_got(value)})"
        raise InvalidAsk(message, field="timeout")
    return float(value)


def disconnect_grace(value: object) -> float | None:
    """None (the server's worker hold) or a finite number of seconds in (0, 3600] (SPEC S2, S3); else InvalidAsk
    naming `disconnect_grace`, or TypeError for another type."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type("disconnect_grace", "a number of seconds in (0, 3600] or None", value)
    if not (math.isfinite(value) and 0 < value <= 3600):
        message = f"disconnect_grace: must be a number of seconds in (0, 3600], or None (got {_got(value)})"
        raise InvalidAsk(message, field="disconnect_grace")
    return float(value)


MAX_RETRIES = 10
"""Most `max_retries` the server takes (SPEC S8)."""


def retries(max_retries: object, retry_on_failure: object) -> tuple[int, bool]:
    """`max_retries` (an int 0 to 10) and `retry_on_failure` (a bool, only with max_retries >= 1); else InvalidAsk
    naming the argument, or TypeError for another type."""
    if isinstance(max_retries, bool) or not isinstance(max_retries, int):
        raise wrong_type("max_retries", f"an int from 0 to {MAX_RETRIES}", max_retries)
    if not 0 <= max_retries <= MAX_RETRIES:
        raise InvalidAsk(f"max_retries: must be 0 to {MAX_RETRIES} (got {max_retries})", field="max_retries")
    if not isinstance(retry_on_failure, bool):
        raise wrong_type("retry_on_failure", "a bool", retry_on_failure)
    if retry_on_failure and max_retries == 0:
        raise InvalidAsk("retry_on_failure: needs max_retries of 1 or more (got 0)", field="retry_on_failure")
    return max_retries, retry_on_failure


def env(name: str, value: object) -> dict[str, str] | None:
    """None or a mapping of str to str (copied); else TypeError naming the argument and the key."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise wrong_type(name, "a mapping of str to str or None", value)
    for key, item in value.items():
        if not isinstance(key, str):
            raise wrong_type(f"{name} key", "a str", key)
        if not isinstance(item, str):
            raise wrong_type(f"{name}[{key!r}]", "a str", item)
    return dict(value)


def callback(name: str, value: object) -> Callable[..., object] | None:
    """None or a callable; else TypeError naming the argument."""
    if value is not None and not callable(value):
        raise wrong_type(name, "callable or None", value)
    return value


HOLD_MAX_S = 3600  # the server's bound on Ask.hold_ms (one hour)


def hold(value: object) -> int:
    """The Ask's hold_ms for `hold` seconds: None or 0 (no hold) or a finite number of seconds in
    (0, 3600]; InvalidAsk naming `hold` for other values, TypeError for other types."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type("hold", "a number of seconds (0 to 3600) or None", value)
    if not (math.isfinite(value) and 0 <= value <= HOLD_MAX_S):
        message = f"hold: must be a number of seconds from 0 to {HOLD_MAX_S}, or None for no hold (got {_got(value)})"
        raise InvalidAsk(message, field="hold")
    return round(value * 1000)


def argv(value: object) -> list[str] | None:
    """None or a non-empty list/tuple of str (a bare str is refused: it is not an argv)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise wrong_type("command", "a list of str (an argv, e.g. ['echo', 'hi'])", value)
    if not value:
        raise InvalidAsk("command: must name a program (got [])", field="command")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise wrong_type(f"command[{i}]", "a str", item)
    return list(value)


def _json_like(path: str, value: object) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidAsk(f"{path}: NaN and infinities cannot be sent (got {value!r})", field=path)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise wrong_type(f"{path} key", "a str", key)
            _json_like(f"{path}[{key!r}]", item)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _json_like(f"{path}[{i}]", item)
        return
    raise wrong_type(path, "JSON-like (None, bool, int, float, str, list, tuple or dict with str keys)", value)


def kwargs(value: object) -> dict[str, Any] | None:
    """None or a mapping with str keys of JSON-like values (no NaN/Inf); else TypeError or
    InvalidAsk naming the key, e.g. `kwargs['lr']: NaN and infinities cannot be sent (got nan)`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise wrong_type("kwargs", "a mapping of str to JSON-like values or None", value)
    _json_like("kwargs", value)
    return dict(value)
