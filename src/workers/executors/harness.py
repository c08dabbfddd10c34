"""berth Python harness: a persistent interpreter that runs node sources one at a time.

Protocol (JSON lines, stdlib only): requests arrive on fd 3, answers leave on fd 4.
  request  {"op": "run", "source": str, "kwargs": {...}, "filename": str}
           {"op": "compile", "source": str, "filename": str}
  answers  {"t": "log", "stream": "stdout"|"stderr", "line": str}
           {"t": "logs", "stream": "stdout"|"stderr", "lines": [str, ...]}  (consecutive lines, batched)
           {"t": "metric", "name": str, "value": float}
           {"t": "result", "value": <json>}
           {"t": "failure", "type": str, "message": str, "traceback": str}
           {"t": "compiled"} (compile ok; a SyntaxError is a failure answer)
print() output of a node is forwarded as log answers, batched: lines of one stream are sent together
when BATCH_LINES or BATCH_BYTES are reached, when the other stream or a metric comes, when the node
ends, or FLUSH_S after the first waiting line (a flusher thread) — so a quiet node's line still
shows at once and a chatty one costs one answer per batch; report(name, value) as metric answers.
os.environ is restored after every node that changed it, so one node cannot leak env into the next.
"""

import functools
import json
import linecache
import os
import sys
import threading
import time
import traceback
import types
import warnings

_requests = os.fdopen(3, "r", encoding="utf-8", newline="\n")
_answers = os.fdopen(4, "w", encoding="utf-8", newline="\n")


CODE_CACHE = 256  # distinct node sources kept compiled
_CAN_RENAME = hasattr(types.CodeType, "replace")  # Python 3.8+; before, every call compiles its source
BATCH_LINES = 512
BATCH_BYTES = 16 * 1024
FLUSH_S = 0.005


class _Batch:
    """Lines waiting to be sent as one answer, all of one stream; thread-safe (the flusher)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.stream = None
        self.lines = []
        self.size = 0
        self.first_at = 0.0

    def add(self, stream, lines):
        with self.lock:
            for line in lines:
                if self.stream != stream or len(self.lines) >= BATCH_LINES or self.size >= BATCH_BYTES:
                    self._send_locked()
                    self.stream = stream
                if not self.lines:
                    self.first_at = time.monotonic()
                    self.wake.notify()  # only when the batch starts: the flusher sleeps until it is due
                self.lines.append(line)
                self.size += len(line) + 1

    def send(self, msg=None):
        """Sends the waiting lines, then `msg` if given, in that order."""
        with self.lock:
            self._send_locked()
            if msg is not None:
                _answers.write(json.dumps(msg, ensure_ascii=False) + "\n")
                _answers.flush()

    def _send_locked(self):
        if not self.lines:
            return
        if len(self.lines) == 1:
            msg = {"t": "log", "stream": self.stream, "line": self.lines[0]}
        else:
            msg = {"t": "logs", "stream": self.stream, "lines": self.lines}
        self.lines = []
        self.size = 0
        _answers.write(json.dumps(msg, ensure_ascii=False) + "\n")
        _answers.flush()

    def flusher(self):
        """Sends lines that have waited FLUSH_S (runs in a daemon thread)."""
        with self.lock:
            while True:
                if not self.lines:
                    self.wake.wait()
                    continue
                due = self.first_at + FLUSH_S - time.monotonic()
                if due > 0:
                    self.wake.wait(due)
                    continue
                self._send_locked()


_batch = _Batch()
threading.Thread(target=_batch.flusher, name="berth-flush", daemon=True).start()


def _send(msg):
    _batch.send(msg)


class _LineWriter:
    """A text stream that forwards complete lines as (batched) log answers."""

    def __init__(self, stream):
        self._stream = stream
        self._buf = ""

    def write(self, text):
        text = str(text)
        if "\n" not in text:
            self._buf += text
            return len(text)
        lines = (self._buf + text).split("\n")
        self._buf = lines.pop()
        _batch.add(self._stream, lines)
        return len(text)

    def flush(self):
        if self._buf:
            _batch.add(self._stream, [self._buf])
            self._buf = ""

    def isatty(self):
        return False


def report(name, value):
    """Sends a metric event: report("loss", 0.5)."""
    _send({"t": "metric", "name": str(name), "value": float(value)})


def _trim(te, filename):
    """Drops the frames before the node's first one (the harness and what it called, e.g. json or
    compile), in te and the exceptions chained to it; a harness failure keeps no frame at all."""
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == filename), len(frames))
    te.stack = traceback.StackSummary.from_list(frames[first:])
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            _trim(chained, filename)


def _failure(exc, filename):
    """Failure answer for exc, its traceback starting at the node's own code."""
    te = traceback.TracebackException.from_exception(exc)
    _trim(te, filename)
    return {
        "t": "failure",
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(te.format()),
    }


@functools.lru_cache(maxsize=CODE_CACHE)
def _compiled(source):
    """source compiled once (under a placeholder file name), with its lines and the warnings compiling it gave (e.g.
    SyntaxWarning), which each call shows again under its own name: a node's source is the same from call to call,
    and compiling it was about a third of a tiny node's time in this process (issue 11)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = compile(source, "<berth node>", "exec")
    return code, tuple(source.splitlines(True)), tuple((w.message, w.lineno) for w in caught)


def _renamed(code, filename):
    """code, and the functions and classes defined in it, as if compiled under filename."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _define(source, filename):
    """Compiles source under filename, registered in linecache so tracebacks show its lines (until _forget)."""
    cached = None
    if _CAN_RENAME:
        try:
            cached = _compiled(source)
        except (SyntaxError, ValueError):
            pass  # not cached: compiled again below, outside this handler, so the error names filename
    if cached is not None:
        code, lines, caught = cached
        linecache.cache[filename] = (len(source), None, list(lines), filename)  # a list of its own: calls share none
        for message, lineno in caught:
            warnings.warn_explicit(message, type(message), filename, lineno)
        try:
            return _renamed(code, filename)
        except RecursionError:
            pass  # nested deeper than the renaming can follow: compiled under its own name instead
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


def _forget(filename):
    """Drops filename's lines from linecache once its call is over: every call has its own file name (the call
    id), so kept entries would grow without bound in a warm interpreter."""
    linecache.cache.pop(filename, None)


def _env_snapshot():
    """os.environ as it is now: its encoded mapping (a plain dict copy, about 1 us), else a decoded copy."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else dict(os.environ)


def _env_restore(saved):
    """Puts os.environ back to `saved` (an _env_snapshot) when a node changed it. Clearing and refilling it
    for every node cost ~150 us a call (a putenv/unsetenv per variable), most of a tiny node's time."""
    if _env_snapshot() == saved:
        return
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict) and hasattr(os.environ, "decodekey"):
        saved = {os.environ.decodekey(k): os.environ.decodevalue(v) for k, v in saved.items()}
    os.environ.clear()
    os.environ.update(saved)


def _run(req):
    filename = req.get("filename") or "<node>"
    env = _env_snapshot()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _LineWriter("stdout"), _LineWriter("stderr")
    try:
        code = _define(req["source"], filename)
        scope = {"__name__": "__berth_node__", "report": report}
        exec(code, scope)
        fn = scope.get("process")
        if not callable(fn):
            raise NameError("the node source defines no function named process")
        value = fn(**(req.get("kwargs") or {}))
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError("process() returned a value that is not JSON-able: %s" % e) from None
        answer = '{"t": "result", "value": %s}' % text
        with _batch.lock:
            _batch._send_locked()  # every line before the result
            _answers.write(answer + "\n")
            _answers.flush()
    except BaseException as exc:  # a node's exception is its Failure, never the harness's
        sys.stdout.flush()
        sys.stderr.flush()
        _send(_failure(exc, filename))
    finally:
        sys.stdout, sys.stderr = out, err
        _env_restore(env)
        _forget(filename)


def _compile(req):
    filename = req.get("filename") or "<node>"
    try:
        _define(req["source"], filename)
        _send({"t": "compiled"})
    except Exception as exc:  # SyntaxError, and what a pathological source raises (RecursionError, MemoryError)
        _send(_failure(exc, filename))
    finally:
        _forget(filename)


def main():
    for raw in _requests:
        req = json.loads(raw)
        if req.get("op") == "compile":
            _compile(req)
        else:
            _run(req)


if __name__ == "__main__":
    main()
