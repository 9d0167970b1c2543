"""The machine's floor for the ingress burst (``bench/ingress_bench.py``): ``loopgate
serve``'s HTTP server (waitress with :data:`bot.web.server.HTTP_SETTINGS`, 8 request
threads, serve's switch interval) around a WSGI app that only reads the body and answers
``202``. The same burst against it, under the same load, shows how much of an ack's time
the machine takes before loopgate does anything.

Usage: ``python bench/_null_server.py`` prints ``http://127.0.0.1:PORT`` on one line, then
serves until its stdin closes.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any

import _common  # noqa: F401 - sets sys.path

from bot.web.server import Server
from bridges.ingress.ack_first import shorter_switch_interval


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Read the whole body, answer ``202 {}``."""
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("202 Accepted", [("Content-Type", "application/json"),
                                    ("Content-Length", "3")])
    return [b"{}\n"]


def main() -> None:
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is 1"
    shorter_switch_interval()
    server = Server(app, "127.0.0.1", 0).start()
    print(server.url, flush=True)
    sys.stdin.read()  # until the benchmark closes the pipe
    server.stop(grace=1.0)


if __name__ == "__main__":
    main()
