"""Test support: a TCP proxy on loopback between a client and a berth server, whose link a test can cut.

`cut()` closes every connection through it and refuses new ones (accepted, then closed at once: a reset link)
until `restore()`. Threads only; `close()` ends it.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    """Listens on 127.0.0.1:<port> and forwards each connection to `target` ("host:port")."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._blocked = False
        self._closed = False
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def cut(self) -> None:
        """Closes every connection now and refuses new ones until `restore()`."""
        with self._lock:
            self._blocked = True
            for s in self._open:
                _shut(s)
            self._open.clear()

    def restore(self) -> None:
        """Lets new connections through again."""
        with self._lock:
            self._blocked = False

    def close(self) -> None:
        """Stops listening and closes every connection."""
        self._closed = True
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._blocked:
                    _shut(client)
                    continue
                try:
                    upstream = socket.create_connection(self._target)
                except OSError:
                    _shut(client)
                    continue
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)
            _shut(src)
            _shut(dst)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
