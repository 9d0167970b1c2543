"""Webhook burst benchmark (issue 10, "Benchmarks"). Not run by the tests.

``loopgate serve`` runs as a subprocess (the real receiver, inbox, dispatcher, outbox and
GitHub worker) against the loopback fake GitHub and fake Slack, with GitHub's write pacing
LEFT ON (``LOOPGATE_GITHUB_WRITE_INTERVAL`` unset: one write per second). Then:

* 100 ``issues.labeled`` deliveries (one per issue) are sent by 8 concurrent senders:
  webhook ack latency p50/p99/max and every status (target p99 ≤ 50 ms, max ≤ 1 s, no
  non-2xx; GitHub's own limit is 10 s);
* while the burst drains, a signed ``/loop check`` slash command every 100 ms: Slack ack
  p50/p99 (target p99 ≤ 50 ms; Slack's limit is 3 s);
* the time until all 100 checklists are on GitHub, and its ratio to the pacing floor
  (GitHub writes made by then × 1 s; target ≤ 1.1×);
* ``database ... locked`` warnings in the server log (target 0);
* then a second burst of as many deliveries (other issues) on the now warm server: its
  ack latency (the first burst includes each HTTP thread's first request).

Prints a Markdown table. Usage: ``.venv/bin/python bench/outbox_bench.py [--items 100]``
(about 5 minutes: GitHub's pacing is the floor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.*

import requests  # noqa: E402

from engine.hooks.markers import PHASE_SELECTION_MARKER  # noqa: E402
from tests.e2e.stack import (  # noqa: E402
    AUTHOR,
    GITHUB_SECRET,
    REPO,
    SLACK_SECRET,
    SLACK_USER,
    START_LABEL,
    Home,
    ServeProcess,
)
from tests.fakes.github import FakeGitHub  # noqa: E402
from tests.fakes.slack import FakeSlack, command_body, signed_post  # noqa: E402

WRITES = ("POST", "PATCH", "PUT", "DELETE")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class PacedHome(Home):
    """A home whose server keeps GitHub's write pacing (1 s between writes)."""

    def env(self) -> dict[str, str]:
        env = super().env()
        env.pop("LOOPGATE_GITHUB_WRITE_INTERVAL", None)
        return env


def _deliver(gh: FakeGitHub, url: str, number: int) -> tuple[float, int]:
    gh.add_label(REPO, number, START_LABEL)
    headers, body = gh.webhook("issues", "labeled", repo=REPO, number=number,
                               label=START_LABEL, sender=AUTHOR, secret=GITHUB_SECRET)
    started = time.perf_counter()
    response = requests.post(f"{url}/github/webhook", data=body, headers=headers, timeout=30)
    return time.perf_counter() - started, response.status_code


def _slack_checks(url: str, slack: FakeSlack, stop: threading.Event,
                  into: list[tuple[float, int]]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        body = command_body({  # the fields of bolt-python's slash-command fixture
            "token": "verification_token", "team_id": "T111", "team_domain": "bench",
            "channel_id": "CBENCH", "channel_name": "loopgate", "user_id": SLACK_USER,
            "user_name": "alice", "command": "/loop", "text": f"check {REPO}#{n % 100 + 1}",
            "response_url": slack.response_url, "trigger_id": f"{n}.222.xxx",
            "api_app_id": "A111"})
        started = time.perf_counter()
        reply = signed_post(f"{url}/slack/events", body, SLACK_SECRET)
        into.append((time.perf_counter() - started, reply.status))
        stop.wait(0.1)


def _checklists(gh: FakeGitHub, numbers: list[int]) -> int:
    with gh.lock:
        return sum(1 for n in numbers
                   if any(PHASE_SELECTION_MARKER in c.body for c in gh.comments_on(REPO, n)))


def _writes(gh: FakeGitHub) -> int:
    with gh.lock:
        return sum(1 for r in gh.requests if r.method in WRITES and r.status < 400
                   and r.route != "graphql")


def run(items: int, senders: int) -> dict[str, Any]:
    with FakeGitHub() as gh, FakeSlack() as slack, tempfile.TemporaryDirectory() as tmp:
        gh.create_repo(REPO)
        numbers = [gh.create_issue(REPO, f"item {i}", author=AUTHOR) for i in range(items)]
        second = [gh.create_issue(REPO, f"warm {i}", author=AUTHOR) for i in range(items)]
        home = PacedHome(Path(tmp), gh, slack, poll_interval=0).write()
        server = ServeProcess(home).start(timeout=60)
        slack_acks: list[tuple[float, int]] = []
        stop = threading.Event()
        checker = threading.Thread(target=_slack_checks, args=(server.url, slack, stop, slack_acks))
        try:
            began = time.perf_counter()
            checker.start()
            with ThreadPoolExecutor(senders) as pool:
                acks = list(pool.map(lambda n: _deliver(gh, server.url, n), numbers))
            while _checklists(gh, numbers) < items:
                time.sleep(0.05)  # a benchmark may poll; the tests never do
            elapsed = time.perf_counter() - began
            writes = _writes(gh)
            with ThreadPoolExecutor(senders) as pool:
                warm = list(pool.map(lambda n: _deliver(gh, server.url, n), second))
        finally:
            stop.set()
            checker.join(30)
            server.stop()
        log = server.log()
    latencies = [a for a, _ in acks]
    warm_latencies = [a for a, _ in warm]
    slack_latencies = [a for a, _ in slack_acks]
    return {
        "items": items,
        "ack_p50_ms": statistics.median(latencies) * 1000,
        "ack_p99_ms": _pct(latencies, 0.99) * 1000,
        "ack_max_ms": max(latencies) * 1000,
        "non_2xx": sum(1 for _, s in acks if not 200 <= s < 300),
        "warm_p50_ms": statistics.median(warm_latencies) * 1000,
        "warm_p99_ms": _pct(warm_latencies, 0.99) * 1000,
        "warm_non_2xx": sum(1 for _, s in warm if not 200 <= s < 300),
        "slack_p50_ms": statistics.median(slack_latencies) * 1000 if slack_latencies else 0,
        "slack_p99_ms": _pct(slack_latencies, 0.99) * 1000 if slack_latencies else 0,
        "slack_n": len(slack_latencies),
        "slack_non_2xx": sum(1 for _, s in slack_acks if not 200 <= s < 300),
        "seconds": elapsed,
        "writes": writes,
        "ratio": elapsed / writes if writes else float("nan"),
        "locked": sum(1 for line in log.splitlines() if "locked" in line),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--senders", type=int, default=8)
    args = parser.parse_args()
    os.environ.pop("LOOPGATE_GITHUB_WRITE_INTERVAL", None)
    r = run(args.items, args.senders)
    print("| measure | target | measured |\n|---|---|---|")
    print(f"| webhook ack, {r['items']} deliveries from {args.senders} senders | p99 ≤ 50 ms, "
          f"max ≤ 1 s, 0 non-2xx | p50 {r['ack_p50_ms']:.1f} ms, p99 {r['ack_p99_ms']:.1f} ms, "
          f"max {r['ack_max_ms']:.1f} ms, {r['non_2xx']} non-2xx |")
    print(f"| webhook ack, a second burst on the warm server | p99 ≤ 50 ms | "
          f"p50 {r['warm_p50_ms']:.1f} ms, p99 {r['warm_p99_ms']:.1f} ms, "
          f"{r['warm_non_2xx']} non-2xx |")
    print(f"| Slack ack while the burst drains ({r['slack_n']} `/loop check`) | p99 ≤ 50 ms | "
          f"p50 {r['slack_p50_ms']:.1f} ms, p99 {r['slack_p99_ms']:.1f} ms, "
          f"{r['slack_non_2xx']} non-2xx |")
    print(f"| all {r['items']} checklists on GitHub | ≤ 1.1 × pacing floor | "
          f"{r['seconds']:.1f} s for {r['writes']} paced writes = {r['ratio']:.2f} × |")
    print(f"| `database ... locked` warnings | 0 | {r['locked']} |")


if __name__ == "__main__":
    main()
