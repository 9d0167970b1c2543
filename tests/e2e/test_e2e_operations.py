"""Issue 13 end to end: one ``loopgate serve --log-format json`` (tokens, keys and secrets
set in its environment) walks a work item from the start label to complete. Every log line
is one JSON object; none holds a secret's value (and none needed hiding); ``/metrics``
counts the walk's deliveries, quiz attestations and the completed item."""

from __future__ import annotations

import json

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk, _app_secrets
from tests.e2e.stack import GITHUB_SECRET, SLACK_SECRET, SLACK_TOKEN, Walk, wait_until

pytestmark = pytest.mark.e2e

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(walk: Walk) -> Samples:
    answer = requests.get(f"{walk.server.url}/metrics", timeout=10)
    assert answer.status_code == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples}


def total(samples: Samples, name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (n, got), v in samples.items() if n == name and wanted <= got)


def test_a_full_walk_logs_json_lines_without_a_secret_and_moves_the_metrics(
        make_walk: MakeWalk, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGATE_LOG_FORMAT", "json")  # serve reads it like --log-format
    walk = make_walk(poll_interval=0, webhooks=True)
    before = scrape(walk)
    assert total(before, "loopgate_deliveries_total") == 0
    expect.walk_to_human_approval(walk)
    expect.complete(walk, walk.approve_to_complete())
    wait_until(lambda: total(scrape(walk), "loopgate_queue_depth") == 0,
               "every queue drained")
    after = scrape(walk)

    # metrics: one delivery per webhook sent, both quizzes attested once, one item done
    assert total(after, "loopgate_deliveries_total", source="github") == len(walk.deliveries)
    assert total(after, "loopgate_deliveries_total") == len(walk.deliveries)
    assert total(after, "loopgate_dispatch_seconds_count") == len(walk.deliveries)
    assert total(after, "loopgate_quiz_attestations_total", node="spec-quiz") == 1
    assert total(after, "loopgate_quiz_attestations_total", node="code-quiz") == 1
    assert total(after, "loopgate_quiz_refusals_total") == 0
    assert total(after, "loopgate_effects_failed_total") == 0
    assert total(after, "loopgate_work_items", node="complete", status="complete") == 1
    # the server posts what its own decisions owe (claims by `loopgate complete` post theirs)
    assert total(after, "loopgate_github_requests_total", endpoint="add_comment",
                 status="2xx") >= 1
    assert total(after, "loopgate_poll_cycle_seconds_count") == 0  # webhooks only

    # logs: every line of stderr is one JSON object with the stable keys
    lines = walk.server.err
    records = [json.loads(line) for line in lines]
    for record in records:
        assert {"time", "level", "logger", "event", "message"} <= set(record), record
    handled = [r for r in records if r["event"] == "dispatch.delivery"]
    assert sorted(r["delivery"] for r in handled) == sorted(walk.deliveries)
    assert [r["node"] for r in handled if r["kind"] == "quiz_attestation"] == [
        "spec-quiz", "code-quiz"]
    assert [r["node"] for r in handled if r["kind"] == "start"] == ["phase-selection"]
    for record in handled:
        assert record["time"].endswith("Z") and "T" in record["time"]
        assert record["result"] in ("handled", "dropped", "duplicate")
        assert isinstance(record["ms"], float) and record["ms"] >= 0
        assert record["item"] in ("", walk.ref, f"acme/widgets#{walk.pr}")

    # no secret's value in any line, and nothing needed hiding
    secrets = [walk.gh.token, GITHUB_SECRET, SLACK_SECRET, SLACK_TOKEN, *_app_secrets(walk.gh)]
    everything = "\n".join(walk.server.out + lines)
    for secret in secrets:
        assert secret not in everything
    assert "[redacted]" not in everything
