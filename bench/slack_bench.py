"""Slack bot benchmark (issue 4, "Benchmarks"). Not run by the tests.

In-process HTTP mode: the real Flask route ``POST /slack/events`` (signature check, Bolt
dispatch) is called through Flask's test client; the time measured is from the request
entering the WSGI app to the response leaving it, which with
``process_before_response=False`` is the moment the listener acked (the work continues in
Bolt's thread pool). Web API calls go to the loopback fake Slack.

Measures p50/p99 over N requests for the Execute button, for ``/loop check`` and for an
approval gate's **Approve** click (target p99 <= 50 ms; Slack's limit is 3 s), and renders
the phase-selection card for a 60-node graph (must stay within 50 blocks). Prints a
Markdown table.

Socket Mode (issue 12 §7): the same approval click delivered as an ``interactive``
envelope by the loopback Socket Mode server (:mod:`tests.fakes.slack_socket`) to the real
``SocketModeHandler``; the time measured is from the envelope leaving the server to the
app's ack arriving back on the socket.

Usage: ``.venv/bin/python bench/slack_bench.py [--requests 1000]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes.slack

from flask import Flask  # noqa: E402

from bot.config import validate_mapping  # noqa: E402
from bot.services import Services  # noqa: E402
from bot.slack.blocks import ids  # noqa: E402
from bot.slack.blocks.card import MAX_BLOCKS, phase_selection_card  # noqa: E402
from bot.slack.bolt_app import register_http_routes  # noqa: E402
from bot.slack.notifier import OutboxNotifier  # noqa: E402
from engine.graph.compiler import compile_graph, shipped_graph  # noqa: E402
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker  # noqa: E402
from engine.ports import IssueInfo, Ports  # noqa: E402
from engine.refs import WorkItemRef  # noqa: E402
from engine.runtime import Runtime  # noqa: E402
from engine.store.sqlite import SqliteStore  # noqa: E402
from tests.fakes.slack import FakeSlack, sign  # noqa: E402

REF = WorkItemRef("acme", "widgets", 7)
GATE_REF = WorkItemRef("acme", "widgets", 8)
SECRET = "bench-signing-secret"


def _services(db: Path, fake: FakeSlack) -> Services:
    config = validate_mapping({
        "authorizedUsers": ["alice"],
        "github": {"repos": ["acme/widgets"]},
        "slack": {"channel": "CBENCH", "apiUrl": fake.base_url, "identities": {"UALICE": "alice"}},
    }, "bench")
    store = SqliteStore(db)
    ports = Ports(MemoryTracker(), MemoryArtifactStore(), OutboxNotifier(store))
    graph = shipped_graph()
    settings = config.engine_settings()
    return Services(config, settings, graph, store, ports, Runtime(graph, store, ports, settings))


def _execute_body(fake: FakeSlack) -> str:
    payload = {
        "type": "block_actions", "user": {"id": "UALICE"}, "team": {"id": "T1"},
        "channel": {"id": "CBENCH"}, "container": {"channel_id": "CBENCH",
                                                   "message_ts": "1.000001"},
        "message": {"ts": "1.000001", "blocks": []}, "state": {"values": {}},
        "response_url": fake.response_url, "trigger_id": "1.2",
        "actions": [{"action_id": ids.ACTION_EXECUTE, "block_id": "loopgate.execute.r0.0",
                     "type": "button", "value": str(REF), "action_ts": "1.2"}],
    }
    return "payload=" + urllib.parse.quote(json.dumps(payload))


def _approval_payload(fake: FakeSlack, value: str) -> dict[str, Any]:
    return {
        "type": "block_actions", "user": {"id": "UALICE"}, "team": {"id": "T1"},
        "channel": {"id": "CBENCH"}, "container": {"channel_id": "CBENCH",
                                                   "message_ts": "1.000002"},
        "message": {"ts": "1.000002", "blocks": []}, "state": {"values": {}},
        "response_url": fake.response_url, "trigger_id": "1.3",
        "actions": [{"action_id": ids.ACTION_APPROVE, "block_id": "loopgate.approval.r0.0",
                     "type": "button", "value": value, "action_ts": "1.3"}],
    }


def _walk_to_approval(services: Services, ref: WorkItemRef) -> str:
    """Start ``ref`` and walk it to requirements-approval; returns the buttons' value."""
    tracker = services.ports.tracker
    services.runtime.start(ref)
    reply = tracker.add_comment_as(ref, "alice", "the-loop execute\n- [ ] brainstorming")
    services.runtime.advance(ref, {"comments": [reply]})
    services.ports.artifacts.write(ref, "requirements.md",
                                   "---\nstatus: approved\n---\n## Requirements\n\n- x\n")
    state = services.runtime.complete(ref, "requirements-definition", "agent")
    assert state.current_node == "requirements-approval", state.parked
    entered = state.nodes["requirements-approval"].entered_at
    return f"{ref}|requirements-approval|{entered}"


def _socket_mode_samples(services: Services, fake: FakeSlack, value: str,
                         n: int) -> list[float]:
    from bot.slack.bolt_app import build_app, start_socket_mode, stop_socket_mode
    from tests.fakes.slack_socket import FakeSocketMode

    with FakeSocketMode() as server:
        fake.set_socket_url(server.url)
        app = build_app(services, socket_mode=True)
        handler = start_socket_mode(app, "xapp-1-bench")
        try:
            server.wait_connected()
            payload = _approval_payload(fake, value)
            samples = []
            for i in range(n + 20):
                envelope = server.send("interactive", payload)
                server.wait_ack(envelope)
                if i >= 20:  # the first 20 warm up
                    samples.append(server.ack_times[envelope] * 1000.0)
        finally:
            stop_socket_mode(handler)
    return samples


def _check_body(fake: FakeSlack) -> str:
    return urllib.parse.urlencode({
        "command": "/loop", "text": f"check {REF}", "user_id": "UALICE", "team_id": "T1",
        "channel_id": "CBENCH", "response_url": fake.response_url, "trigger_id": "1.2",
    })


def _time_requests(client: Any, body: str, n: int) -> list[float]:
    raw = body.encode("utf-8")
    samples = []
    for _ in range(n):
        headers = {**sign(raw, SECRET), "Content-Type": "application/x-www-form-urlencoded"}
        start = time.perf_counter()
        reply = client.post("/slack/events", data=raw, headers=headers)
        samples.append((time.perf_counter() - start) * 1000.0)
        if reply.status_code != 200:
            raise SystemExit(f"unexpected status {reply.status_code}")
    return samples


def _percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def _wide_graph(n: int) -> Any:
    nodes: list[dict[str, Any]] = [{"id": "start", "actor": "human", "required": True}]
    edges: list[dict[str, str]] = []
    previous = "start"
    for i in range(n):
        node = f"phase-{i:02d}"
        nodes.append({"id": node, "actor": "agent", "skippable": True,
                      "description": f"phase {i}: " + "a long description " * 6})
        edges.append({"from": previous, "to": node, "on": "pass"})
        if previous != "start":
            edges.append({"from": previous, "to": node, "on": "skipped"})
        previous = node
    nodes.append({"id": "done", "actor": "code", "terminal": True})
    edges += [{"from": previous, "to": "done", "on": "pass"},
              {"from": previous, "to": "done", "on": "skipped"}]
    return compile_graph({"version": 1, "name": "wide", "start": "start", "skipSets": {},
                          "nodes": nodes, "edges": edges})


def main() -> None:
    """Run the benchmark and print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    os.environ["SLACK_SIGNING_SECRET"] = SECRET
    os.environ["SLACK_BOT_TOKEN"] = "xoxb-bench"
    os.environ.pop("SLACK_APP_TOKEN", None)
    rows = []
    with FakeSlack() as fake, tempfile.TemporaryDirectory() as tmp:
        services = _services(Path(tmp) / "bench.db", fake)
        services.runtime.start(REF)
        flask_app = Flask("bench")
        register_http_routes(flask_app, services)
        client = flask_app.test_client()
        _time_requests(client, _check_body(fake), 20)  # warm-up (auth.test, imports)
        value = _walk_to_approval(services, GATE_REF)
        approve = "payload=" + urllib.parse.quote(json.dumps(_approval_payload(fake, value)))
        for name, body in (("Execute (block_actions)", _execute_body(fake)),
                           ("/loop check owner/repo#N", _check_body(fake)),
                           ("Approve click, HTTP (block_actions)", approve)):
            samples = _time_requests(client, body, args.requests)
            rows.append((name, len(samples), statistics.median(samples),
                         _percentile(samples, 99), max(samples)))
        time.sleep(1.0)  # let Bolt's thread pool finish the work queued after the acks
        samples = _socket_mode_samples(services, fake, value, args.requests)
        rows.append(("Approve click, Socket Mode (envelope → ack)", len(samples),
                     statistics.median(samples), _percentile(samples, 99), max(samples)))
        time.sleep(1.0)
        services.close()
    graph = _wide_graph(60)
    start = time.perf_counter()
    blocks = phase_selection_card(graph, IssueInfo(REF, "A wide graph", "https://x", "a"))
    render_ms = (time.perf_counter() - start) * 1000.0
    print("| request | n | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for name, n, p50, p99, worst in rows:
        print(f"| {name} | {n} | {p50:.2f} | {p99:.2f} | {worst:.2f} |")
    print()
    print("| card | nodes | blocks | limit | render ms |")
    print("|---|---:|---:|---:|---:|")
    print(f"| phase selection | 60 | {len(blocks)} | {MAX_BLOCKS} | {render_ms:.2f} |")


if __name__ == "__main__":
    main()
