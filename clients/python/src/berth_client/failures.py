"""Turning a node's Failure (type, message, traceback) back into a Python exception.

A Python builtin exception type comes back as that class (ValueError stays ValueError) with the
original message (a KeyError's key without the repr quotes the worker sends); SystemExit as
NodeExited(code); any other type comes back as a RemoteError subclass named after it, one class
per name so `except` works across calls. Either way the exception carries `remote_type`, `remote_traceback`, `call_id`
and the remote traceback as a note. Only the type's name travels: a node's own class named like a
builtin (its own `TimeoutError`) comes back as the builtin.
"""

from __future__ import annotations

import ast
import builtins
import threading

from .errors import NodeExited, RemoteError

_classes: dict[str, type[RemoteError]] = {}
_lock = threading.Lock()


def remote_error_class(type_name: str) -> type[RemoteError]:
    """The RemoteError subclass for `type_name` (e.g. "ExitCode", "mylib.FitError" → FitError)."""
    with _lock:
        cls = _classes.get(type_name)
        if cls is None:
            short = type_name.rsplit(".", 1)[-1]
            name = short if short.isidentifier() else "RemoteError"
            cls = type(name, (RemoteError,), {"remote_type": type_name, "__module__": __name__})
            _classes[type_name] = cls
        return cls


def _builtin(type_name: str, message: str) -> BaseException | None:
    """An instance of the builtin Exception subclass named `type_name`, or None (never BaseException-only
    classes such as SystemExit or KeyboardInterrupt, which would stop the engine itself)."""
    cls = getattr(builtins, type_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return None
    if issubclass(cls, KeyError):
        message = _unquoted_key(message)
    try:
        return cls(message)
    except TypeError:  # e.g. UnicodeDecodeError needs five arguments
        return None


def _unquoted_key(message: str) -> str:
    """The key of a KeyError message: str(KeyError('x')) is "'x'" (the key's repr), so the worker
    sends the quotes; "'x'" → "x". Anything that is not one quoted string is kept as is."""
    try:
        key = ast.literal_eval(message)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return message
    return key if isinstance(key, str) else message


def _exit_code(message: str) -> int | str:
    """SystemExit's code as the harness sends it (`str(exc)`): "" for `sys.exit()` → 0, "3" → 3,
    anything else is the message given to `sys.exit("...")`."""
    if not message:
        return 0
    try:
        return int(message)
    except ValueError:
        return message


def exception_from_failure(type_name: str, message: str, traceback: str, call_id: str) -> BaseException:
    """The exception to raise in the engine for a node's Failure: a builtin class kept, SystemExit
    as NodeExited(code), else a RemoteError subclass named after the type."""
    exc: BaseException
    if type_name == "SystemExit":
        exc = NodeExited(_exit_code(message))
    else:
        exc = _builtin(type_name, message) or remote_error_class(type_name)(message)
    # setattr: these attributes are added to builtin exception classes too, which mypy would refuse (B010 off here).
    setattr(exc, "remote_type", type_name)  # noqa: B010
    setattr(exc, "remote_traceback", traceback)  # noqa: B010
    setattr(exc, "call_id", call_id)  # noqa: B010
    if traceback and hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(f"remote traceback of call {call_id}:\n{traceback.rstrip()}")
    return exc
