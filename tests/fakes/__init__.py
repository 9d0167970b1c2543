"""Loopback test doubles (real HTTP servers on 127.0.0.1): GitHub and Slack."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """The lifecycle both fakes share: an HTTP server bound to 127.0.0.1 on a free port,
    serving in a daemon thread; a context manager. Subclasses build the server."""

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def _make_server(self) -> ThreadingHTTPServer:
        """The bound (not yet serving) server; subclasses override."""
        raise NotImplementedError

    def start(self) -> Any:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread; returns self."""
        self._server = self._make_server()
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name=type(self).__name__, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
