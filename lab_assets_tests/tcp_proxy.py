"""A TCP proxy on 127.0.0.1 that can make a server unreachable on cue, for fault tests.

Moto's S3 server keeps its objects in memory, so stopping it would lose them: the proxy sits
between the clients and the server instead. `trip` arms it: the first request whose bytes
contain that pattern (e.g. `b"PUT /bucket/lab/assets/embedding/"`) is forwarded torn (its
headers and half the body bytes that came with them), then every connection is reset and the
port refuses new ones, until `restore()`. `let_through` matching requests pass untouched first.
Cutting at a request, not at a moment, keeps the fault at the same point of the work on every run.
"""

from __future__ import annotations

import socket
import threading

from lab_assets_tests.conftest import free_port


class TcpProxy:
    def __init__(self, target_port: int, trip: bytes | None = None, let_through: int = 0):
        self.port = free_port()
        self.target_port = target_port
        self.trip = trip
        self.let_through = let_through
        self.tripped = threading.Event()  # stays set after restore(): the fault happened
        self.tripped_request = b""  # the request line that tripped it
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _listen(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut(): the listener was shut down
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets |= {client, upstream}
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, upload: bool) -> None:
        tail = b""  # the pattern may straddle two reads
        try:
            while data := src.recv(65536):
                if self._cut.is_set():  # nothing more goes through, whichever connection
                    return
                if upload and self.trip:
                    found = (tail + data).find(self.trip)
                    if found >= 0 and self._passes():
                        found = -1
                    if found >= 0:
                        with self._lock:  # one request trips it; a concurrent one is dropped
                            first = not self._cut.is_set()
                            self._cut.set()
                        if first:
                            start = max(0, found - len(tail))
                            dst.sendall(data[: self._torn_end(data, start)])
                            self.tripped_request = data[start:].split(b"\r\n", 1)[0]
                            self.tripped.set()
                        self.cut()
                        return
                    tail = data[-len(self.trip) :]
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def _passes(self) -> bool:
        """Whether this matching request is one of the first `let_through`, which pass."""
        with self._lock:
            self.let_through -= 1
            return self.let_through >= 0

    @staticmethod
    def _torn_end(data: bytes, start: int) -> int:
        """Where to stop forwarding the tripping request: after its headers and half the body
        bytes of this read (all of it up to the pattern if the headers are not complete)."""
        headers_end = data.find(b"\r\n\r\n", start)
        if headers_end < 0:
            return start
        body_start = headers_end + 4
        return body_start + (len(data) - body_start) // 2

    def _close(self, *socks: socket.socket) -> None:
        for s in socks:
            with self._lock:
                self._sockets.discard(s)
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self) -> None:
        """Unreachable: open connections reset, new ones refused."""
        self._cut.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            self._close(listener)
        with self._lock:
            open_ = list(self._sockets)
        self._close(*open_)

    def restore(self) -> None:
        """Reachable again, on the same port, disarmed."""
        self.trip = None
        self._cut.clear()
        if self._listener is None:
            self._listen()

    def close(self) -> None:
        self.cut()
