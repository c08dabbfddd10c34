"""Test support: a TCP proxy on loopback between a client and a berth server, whose link a test can cut.

`cut()` drops every connection through it (both ends at once); `down()` also refuses new ones (accepted, then
closed: a reset link) until `up()`. Threads only; `close()` ends it.
"""

from __future__ import annotations

import socket
import threading


class CutProxy:
    """Forwards loopback TCP connections to `target`; `cut()` drops every open one (both ends), `down()`
    also refuses new ones until `up()`."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))  # may be changed: new connections go to the new target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._refusing = False
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self._listener.accept()
            except OSError:
                return
            if self._refusing:
                inbound.close()
                continue
            try:
                outbound = socket.create_connection(self.target)
            except OSError:
                inbound.close()
                continue
            with self._lock:
                self.connections += 1
                self._open.update((inbound, outbound))
            for a, b in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            self._drop(s)

    def _drop(self, s: socket.socket) -> None:
        with self._lock:
            self._open.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def cut(self) -> None:
        """Drops every open connection, both ends at once."""
        with self._lock:
            dropped = list(self._open)
        for s in dropped:
            self._drop(s)

    def down(self) -> None:
        """Cuts, and refuses new connections until up()."""
        self._refusing = True
        self.cut()

    def up(self) -> None:
        """Accepts connections again."""
        self._refusing = False

    def close(self) -> None:
        """Stops listening and drops every connection."""
        self._listener.close()
        self.cut()
