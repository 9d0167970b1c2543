"""A Flask app served by waitress in a thread, for tests that speak HTTP to it.

The stop is the one :meth:`bot.web.server.Server.stop` uses: every channel is closed in the
loop's own thread (the loop then ends), or here when the loop's trigger is already closed —
seen under load as ``EBADF`` — and the thread and waitress' request threads are joined.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from waitress.server import create_server

__all__ = ["serving"]


@contextmanager
def serving(app: Any, threads: int = 4) -> Iterator[int]:
    """Serve ``app`` on ``127.0.0.1`` (a free port) until the block ends; yields the port."""
    server = create_server(app, host="127.0.0.1", port=0, threads=threads)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield int(server.effective_port)
    finally:
        def close_all() -> None:  # in the loop thread: the loop ends with an empty map
            for channel in list(server._map.values()):
                try:
                    channel.close()
                except OSError:  # already closed under us: it is gone all the same
                    continue

        try:
            server.trigger.pull_trigger(close_all)
        except OSError:  # the trigger is already closed: close from this thread
            close_all()
        thread.join(5)
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=5)
