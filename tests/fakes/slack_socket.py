"""A loopback Slack Socket Mode endpoint: a real WebSocket server (RFC 6455) on 127.0.0.1.

How Slack behaves, and so this fake (platform-facts C6; docs.slack.dev, apps.connections.open
and "Using Socket Mode"):

* the app calls ``apps.connections.open`` with its app-level token and gets
  ``{"ok": true, "url": "wss://…/link/?ticket=…&app_id=…"}`` — :class:`FakeSlack` answers
  with this server's ``ws://`` URL once :meth:`FakeSocketMode.attach` ran;
* the client opens the WebSocket there (``GET`` with ``Upgrade: websocket``; the server
  answers ``101`` with ``Sec-WebSocket-Accept``) and Slack first sends
  ``{"type": "hello", "num_connections": 1, …}``;
* pings are answered with pongs carrying the same payload; client frames are masked,
  server frames are not;
* Slack ends a connection with ``{"type": "disconnect", "reason": …}`` and a close frame;
  :meth:`FakeSocketMode.drop` does that to every open connection.

Driven in tests through slack_sdk's own builtin ``SocketModeClient`` (what Bolt's
``SocketModeHandler`` runs).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import socket
import struct
import threading
from typing import Any

__all__ = ["FakeSocketMode"]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


def _frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked, final frame (server to client)."""
    head = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        return head + bytes([size]) + payload
    if size < 65536:
        return head + bytes([126]) + struct.pack("!H", size) + payload
    return head + bytes([127]) + struct.pack("!Q", size) + payload


def _read_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _read_frame(conn: socket.socket) -> tuple[int, bytes]:
    first, second = _read_exact(conn, 2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack("!H", _read_exact(conn, 2))[0]
    elif size == 127:
        size = struct.unpack("!Q", _read_exact(conn, 8))[0]
    mask = _read_exact(conn, 4) if second & 0x80 else b"\0\0\0\0"
    data = _read_exact(conn, size)
    return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


class FakeSocketMode:
    """The WebSocket side of Socket Mode. Use as a context manager.

    Attributes:
        connections: how many WebSocket handshakes succeeded so far.
        received: text frames the app sent (its envelope acks), parsed.
    """

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._tickets = itertools.count(1)
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()
        self.connections = 0
        self.received: list[Any] = []

    # -- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> FakeSocketMode:
        thread = threading.Thread(target=self._accept, name="fake-socket-mode", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._server.close()
        self.drop()
        for thread in self._threads:
            thread.join(5)

    @property
    def url(self) -> str:
        """A fresh connection URL, as ``apps.connections.open`` hands them out."""
        port = self._server.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket={next(self._tickets)}&app_id=A0FAKEAPP"

    def attach(self, slack: Any) -> None:
        """Make ``slack`` (a :class:`~tests.fakes.slack.FakeSlack`) answer
        ``apps.connections.open`` with this server's URLs."""
        slack.socket_url = lambda: self.url

    @property
    def open_connections(self) -> int:
        """WebSocket connections open now."""
        with self._lock:
            return len(self._open)

    def drop(self, reason: str = "link_disabled") -> None:
        """End every open connection as Slack does: a ``disconnect`` message, a close
        frame, then the TCP connection closes."""
        with self._lock:
            conns, self._open = list(self._open), []
        for conn in conns:
            try:
                message = {"type": "disconnect", "reason": reason,
                           "debug_info": {"host": "fake-socket-mode"}}
                conn.sendall(_frame(TEXT, json.dumps(message).encode()))
                conn.sendall(_frame(CLOSE, struct.pack("!H", 1001)))
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone: dropped all the same
            conn.close()

    # -- serving -------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _handshake(self, conn: socket.socket) -> str:
        """Read the upgrade request; returns the ``Sec-WebSocket-Accept`` value ("" after
        refusing it with 400)."""
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return ""
            request += chunk
        headers = {}
        for line in request.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        key = headers.get("sec-websocket-key", "")
        if headers.get("upgrade", "").lower() != "websocket" or not key:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return ""
        return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()

    def _serve(self, conn: socket.socket) -> None:
        try:
            accept = self._handshake(conn)
            if not accept:
                conn.close()
                return
            with self._lock:  # counted (and droppable) before the client hears it is open
                self._open.append(conn)
                self.connections += 1
                count = len(self._open)
            conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\n"
                          f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
            hello = {"type": "hello", "num_connections": count,
                     "debug_info": {"host": "fake-socket-mode"},
                     "connection_info": {"app_id": "A0FAKEAPP"}}
            conn.sendall(_frame(TEXT, json.dumps(hello).encode()))
            self._frames(conn)
        except (OSError, ConnectionError):
            pass
        finally:
            with self._lock:
                if conn in self._open:
                    self._open.remove(conn)
            conn.close()

    def _frames(self, conn: socket.socket) -> None:
        while True:
            opcode, data = _read_frame(conn)
            if opcode == PING:
                conn.sendall(_frame(PONG, data))
            elif opcode == CLOSE:
                conn.sendall(_frame(CLOSE, data[:2]))
                return
            elif opcode == TEXT:
                self.received.append(json.loads(data.decode("utf-8")))
