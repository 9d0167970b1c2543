"""Webhook senders in processes of their own (the benchmarks' GitHub side): reads signed
deliveries as JSON lines on stdin (``{"headers": {...}, "body": "<latin-1 text>"}``), posts
them to ``argv[1]`` from ``argv[2]`` sender processes (one connection per delivery, like
GitHub), writes one JSON line per delivery (``[seconds, status, delivery id]``, in input
order) to stdout.

Why processes and ``http.client``: the senders must not share a GIL with the loopback fake
GitHub (busy answering the server under test), nor with each other; GitHub's senders are
other machines. Eight threads of one process measured a trivial waitress app at p99 98 ms
where eight processes measured 22 ms on the same loaded machine. Bounded: every request has
a 30 s timeout.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from multiprocessing import Pool
from urllib.parse import urlsplit

_URL = urlsplit("http://127.0.0.1/")


def _init(url: str) -> None:
    global _URL
    _URL = urlsplit(url)


def _send(item: dict[str, object]) -> list[object]:
    headers = {str(k): str(v) for k, v in dict(item["headers"]).items()}  # type: ignore[call-overload]
    body = str(item["body"]).encode("latin-1")
    started = time.perf_counter()
    try:
        conn = http.client.HTTPConnection(_URL.hostname or "127.0.0.1", _URL.port, timeout=30)
        conn.request("POST", _URL.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        status = response.status
        conn.close()
    except OSError:
        status = 0
    return [time.perf_counter() - started, status, headers.get("X-GitHub-Delivery", "")]


def main() -> None:
    url, senders = sys.argv[1], int(sys.argv[2])
    items = [json.loads(line) for line in sys.stdin if line.strip()]
    with Pool(senders, initializer=_init, initargs=(url,)) as pool:
        results = pool.map(_send, items, chunksize=1)
    for r in results:
        sys.stdout.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
