"""berth Python harness: a persistent interpreter that runs node sources one at a time.

Protocol (JSON lines, stdlib only): requests arrive on fd 3, answers leave on fd 4.
  request  {"op": "run", "source": str, "kwargs": {...}, "filename": str}
           {"op": "compile", "source": str, "filename": str}
  answers  {"t": "log", "stream": "stdout"|"stderr", "line": str}
           {"t": "metric", "name": str, "value": float}
           {"t": "result", "value": <json>}
           {"t": "failure", "type": str, "message": str, "traceback": str}
           {"t": "compiled"} (compile ok; a SyntaxError is a failure answer)
print() output of a node is forwarded as log answers; report(name, value) as metric answers.
os.environ is restored after every node so one node cannot leak env into the next.
"""
import json
import linecache
import os
import sys
import traceback

_requests = os.fdopen(3, "r", encoding="utf-8", newline="\n")
_answers = os.fdopen(4, "w", encoding="utf-8", newline="\n")


def _send(msg):
    _answers.write(json.dumps(msg, ensure_ascii=False) + "\n")
    _answers.flush()


class _LineWriter:
    """A text stream that forwards complete lines as log answers."""

    def __init__(self, stream):
        self._stream = stream
        self._buf = ""

    def write(self, text):
        self._buf += str(text)
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            _send({"t": "log", "stream": self._stream, "line": line})
        return len(text)

    def flush(self):
        if self._buf:
            _send({"t": "log", "stream": self._stream, "line": self._buf})
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


def _define(source, filename):
    """Compiles source under filename (registered so tracebacks show its lines)."""
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return compile(source, filename, "exec")


def _run(req):
    filename = req.get("filename") or "<node>"
    env = dict(os.environ)
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
        _answers.write(answer + "\n")
        _answers.flush()
    except BaseException as exc:  # a node's exception is its Failure, never the harness's
        sys.stdout.flush()
        sys.stderr.flush()
        _send(_failure(exc, filename))
    finally:
        sys.stdout, sys.stderr = out, err
        os.environ.clear()
        os.environ.update(env)


def _compile(req):
    filename = req.get("filename") or "<node>"
    try:
        _define(req["source"], filename)
        _send({"t": "compiled"})
    except (SyntaxError, ValueError) as exc:
        _send(_failure(exc, filename))


def main():
    for raw in _requests:
        req = json.loads(raw)
        if req.get("op") == "compile":
            _compile(req)
        else:
            _run(req)


if __name__ == "__main__":
    main()
