"""Bench child of bench/run-floor/server.ts: the least a warm interpreter can do per call.

Reads one JSON request per line on stdin ({"source", "kwargs"}), compiles each distinct source once,
calls its process(**kwargs) and writes {"value": ...} as one JSON line on stdout.
"""

import json
import sys

functions = {}
for line in sys.stdin:
    request = json.loads(line)
    source = request["source"]
    function = functions.get(source)
    if function is None:
        namespace = {}
        exec(compile(source, "<node>", "exec"), namespace)
        function = functions[source] = namespace["process"]
    sys.stdout.write(json.dumps({"value": function(**request["kwargs"])}) + "\n")
    sys.stdout.flush()
