"""A loopback Slack Socket Mode server: a real WebSocket server on 127.0.0.1 speaking
Slack's envelope protocol (issue 12 §7; docs.slack.dev "Using Socket Mode"):

* on connect the server sends ``{"type": "hello", "num_connections": 1,
  "connection_info": {"app_id": …}, "debug_info": {…}}``;
* each delivery is an envelope ``{"envelope_id", "type": "events_api" | "interactive" |
  "slash_commands", "payload", "accepts_response_payload", "retry_attempt",
  "retry_reason"}``;
* the app acknowledges with ``{"envelope_id": …}``, optionally with a ``payload`` (the
  ack's body: a slash command's reply, a modal's ``response_action``);
* the server may say ``{"type": "disconnect", "reason": "refresh_requested"}``.

The app finds the URL through ``apps.connections.open`` (app-level token) — point
:class:`tests.fakes.slack.FakeSlack` at :attr:`FakeSocketMode.url` with
``set_socket_url``. Built on the ``websockets`` library's threaded server.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

__all__ = ["FakeSocketMode"]


class FakeSocketMode:
    """The fake Socket Mode server; a context manager.

    Attributes:
        acks: envelope id -> the app's ack message (``{"envelope_id"[, "payload"]}``).
        connections: how many WebSocket sessions were opened so far (reconnects count).
        ack_times: envelope id -> seconds from sending the envelope to receiving its ack.
    """

    def __init__(self, app_id: str = "A111") -> None:
        self.app_id = app_id
        self.acks: dict[str, dict[str, Any]] = {}
        self.ack_times: dict[str, float] = {}
        self.connections = 0
        self._sent_at: dict[str, float] = {}
        self._cond = threading.Condition()
        self._conns: list[ServerConnection] = []
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> FakeSocketMode:
        """Listen on 127.0.0.1 (free port) and serve in a thread; returns self."""
        self._server = serve(self._session, "127.0.0.1", 0)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="fake-socket-mode", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every connection, stop serving and join the thread."""
        with self._cond:
            conns = list(self._conns)
        for conn in conns:
            conn.close()
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def __enter__(self) -> FakeSocketMode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The ``wss://``-style URL apps.connections.open hands out (``ws://`` here)."""
        assert self._server is not None, "FakeSocketMode is not started"
        port = self._server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket={uuid.uuid4()}&app_id={self.app_id}"

    def attach(self, slack: Any) -> None:
        """Make ``slack`` (a :class:`~tests.fakes.slack.FakeSlack`) answer
        ``apps.connections.open`` with this server's URL."""
        slack.set_socket_url(self.url)

    @property
    def open_connections(self) -> int:
        """WebSocket sessions open now."""
        with self._cond:
            return len(self._conns)

    # -- the protocol ------------------------------------------------------------------
    def _session(self, conn: ServerConnection) -> None:
        conn.send(json.dumps({"type": "hello", "num_connections": 1,
                              "debug_info": {"host": "applink-fake",
                                             "approximate_connection_time": 18060},
                              "connection_info": {"app_id": self.app_id}}))
        with self._cond:
            self._conns.append(conn)
            self.connections += 1
            self._cond.notify_all()
        try:
            for raw in conn:
                self._received(raw)
        except ConnectionClosed:
            pass
        finally:
            with self._cond:
                if conn in self._conns:
                    self._conns.remove(conn)
                self._cond.notify_all()

    def _received(self, raw: str | bytes) -> None:
        try:
            message = json.loads(raw)
        except (TypeError, ValueError):
            return
        envelope_id = message.get("envelope_id") if isinstance(message, dict) else None
        if not envelope_id:
            return
        with self._cond:
            self.acks[envelope_id] = message
            sent = self._sent_at.get(envelope_id)
            if sent is not None:
                self.ack_times[envelope_id] = time.perf_counter() - sent
            self._cond.notify_all()

    def wait_connected(self, timeout: float = 10.0) -> None:
        """Block until an app is connected (it got ``hello``).

        Raises:
            AssertionError: none connected within ``timeout`` seconds (a liveness bound).
        """
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._conns), timeout):
                raise AssertionError("no Socket Mode connection in time")

    def send(self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0,
             accepts_response_payload: bool | None = None) -> str:
        """Deliver one envelope to the connected app.

        Args:
            kind: ``events_api``, ``interactive`` or ``slash_commands``.
            payload: what Slack would POST over HTTP (the event callback, the interaction
                payload, or the slash command's fields).
            retry_attempt: Slack's retry counter (0 for a first delivery).
            accepts_response_payload: default: True for interactive and slash commands.

        Returns:
            The envelope id.
        """
        envelope_id = str(uuid.uuid4())
        accepts = kind != "events_api" if accepts_response_payload is None \
            else accepts_response_payload
        envelope = {"envelope_id": envelope_id, "type": kind, "payload": payload,
                    "accepts_response_payload": accepts, "retry_attempt": retry_attempt,
                    "retry_reason": "timeout" if retry_attempt else ""}
        with self._cond:
            conn = self._conns[-1]
            self._sent_at[envelope_id] = time.perf_counter()
        conn.send(json.dumps(envelope))
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """The app's ack of ``envelope_id``.

        Raises:
            AssertionError: no ack within ``timeout`` seconds (a liveness bound).
        """
        with self._cond:
            if not self._cond.wait_for(lambda: envelope_id in self.acks, timeout):
                raise AssertionError(f"no ack for envelope {envelope_id}")
            return self.acks[envelope_id]

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the app to reconnect, as Slack does every few hours."""
        with self._cond:
            conns = list(self._conns)
        for conn in conns:
            conn.send(json.dumps({"type": "disconnect", "reason": reason,
                                  "debug_info": {"host": "applink-fake"}}))

    def drop(self, reason: str = "link_disabled") -> None:
        """End every open session as Slack does: a ``disconnect`` message, then a close
        frame (code 1001, going away), then the TCP connection closes."""
        self.disconnect(reason)
        with self._cond:
            conns = list(self._conns)
        for conn in conns:
            conn.close(1001, reason)
