"""Issue 13 §1-2 in process: ``/readyz`` names the failing check (database made
read-only, poller stopped or stale, rate limit exhausted beyond its reset) and ``/metrics``
parses with ``prometheus_client.parser`` and counts one walk exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from bot.ops.health import Health, QueueWatch
from bot.ops.metrics import Metrics
from bot.ops.supervisor import Supervisor
from bot.web.server import Server, build_wsgi_app, inbox_replay
from bridges import telemetry
from engine.hooks.markers import attestation_line
from tests.bridges.conftest import SECRET, GitHubWorld
from tests.fakes.github import wait_for

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` read-only for everyone: ``chmod`` as a user; as root (who ignores
    modes) the immutable attribute, or a skip where the file system has none."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: no way to make a file read-only")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("chattr +i is not permitted here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@contextmanager
def installed(*sinks: telemetry.Sink) -> Iterator[None]:
    for sink in sinks:
        telemetry.install(sink)
    try:
        yield
    finally:
        for sink in sinks:
            telemetry.uninstall(sink)


def serve(world: GitHubWorld, health: Health, metrics: Metrics | None) -> str:
    """The served GitHub stack (as ``GitHubWorld.serve``) with these checks and metrics."""
    app = build_wsgi_app(world.services, world.dispatcher, webhook_secret=SECRET,
                         slack_routes=False, health=health, metrics=metrics)
    supervisor = Supervisor(stop_timeout=5)
    supervisor.on_close("store", world.services.close)
    supervisor.on_close("inbox", world.dispatcher.close)
    supervisor.add("dispatcher", world.dispatcher)
    replay = inbox_replay(world.services, world.dispatcher)
    assert replay is not None
    supervisor.add_loop("inbox-replay", replay)
    world.server = Server(app, "127.0.0.1", 0, threads=4)
    supervisor.add("http", world.server)
    world.supervisor = supervisor.start()
    return world.server.url


def ready(url: str) -> tuple[int, dict[str, Any]]:
    answer = requests.get(f"{url}/readyz", timeout=10)
    return answer.status_code, answer.json()


def scrape(url: str) -> Samples:
    """Every sample of ``/metrics``, parsed by prometheus_client's own parser."""
    answer = requests.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain; version=")
    out: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


# -- readiness ---------------------------------------------------------------------------
def test_readyz_flips_to_503_naming_the_database_when_it_is_made_read_only(
        world: GitHubWorld) -> None:
    url = serve(world, Health(world.services, dispatcher=world.dispatcher), None)
    code, body = ready(url)
    assert (code, body["ready"], body["failing"]) == (200, True, [])
    assert list(body["checks"]) == ["database", "dispatcher", "github_effects", "inbox"]
    db = world.tmp / "loopgate.db"
    with read_only(db):
        code, body = ready(url)
        assert (code, body["ready"], body["failing"]) == (503, False, ["database"])
        assert body["checks"]["database"] == {"ok": False, "detail": f"{db} is read-only"}
    assert ready(url)[0] == 200  # writable again: ready again


def test_readyz_flips_to_503_naming_the_poller_when_the_poller_is_stopped(
        world: GitHubWorld) -> None:
    health = Health(world.services, dispatcher=world.dispatcher, poller=world.poller)
    url = serve(world, health, None)
    stop = threading.Event()
    thread = threading.Thread(target=world.poller.run, args=(1, stop))
    thread.start()
    try:
        assert wait_for(lambda: world.poller.last_cycle_at is not None, timeout=10)
        code, body = ready(url)
        assert code == 200 and body["checks"]["poller"]["ok"] is True
    finally:
        stop.set()
        thread.join(10)
    code, body = ready(url)
    assert (code, body["failing"]) == (503, ["poller"])
    assert body["checks"]["poller"]["detail"] == "the poll loop is not running"


def test_readyz_names_a_poller_whose_last_cycle_is_older_than_three_intervals(
        world: GitHubWorld) -> None:
    offset = [0.0]
    health = Health(world.services, dispatcher=world.dispatcher, poller=world.poller,
                    clock=lambda: time.monotonic() + offset[0])
    url = serve(world, health, None)
    world.poller.interval = 60  # as run(60, stop) sets it; one cycle by hand
    world.poll()
    world.poller.next_cycle_at = world.poller.last_cycle_at + 60
    assert ready(url)[0] == 200
    offset[0] = 179  # 3 × 60 s not reached yet
    assert ready(url)[0] == 200
    offset[0] = 181
    code, body = ready(url)
    assert (code, body["failing"]) == (503, ["poller"])
    assert body["checks"]["poller"]["detail"].endswith("s ago (limit 180 s)")


def test_readyz_names_a_rate_limit_exhausted_beyond_its_reset(world: GitHubWorld) -> None:
    now = [datetime(2026, 1, 1, 12, 0, tzinfo=UTC)]
    watch = telemetry.RateLimitWatch(grace=30, clock=lambda: now[0])
    url = serve(world, Health(world.services, dispatcher=world.dispatcher, rate_watch=watch),
                None)
    reset = now[0] + timedelta(minutes=10)
    watch.rate_limit("core", 0, reset)
    watch.rate_limited("core", reset)  # spent until its reset: loopgate waits, still ready
    assert ready(url)[0] == 200
    now[0] = reset + timedelta(seconds=31)
    watch.rate_limited("core", reset + timedelta(hours=1))  # refused after the reset
    code, body = ready(url)
    assert (code, body["failing"]) == (503, ["github_rate_limit"])
    assert body["checks"]["github_rate_limit"]["detail"] == (
        "exhausted beyond its reset: core (now until 13:10:00Z)")
    watch.rate_limit("core", 4999, reset + timedelta(hours=1))  # a request got through
    assert ready(url)[0] == 200


def test_a_queue_is_stalled_only_after_growing_for_longer_than_its_limit() -> None:
    watch = QueueWatch(limit=600)
    watch.observe(1, 0.0)
    watch.observe(3, 300.0)
    assert not watch.stalled(599.0)
    watch.observe(4, 601.0)
    assert watch.stalled(601.0)
    watch.observe(4, 700.0, progress=1)  # its consumer finished one: it is moving
    assert not watch.stalled(700.0)
    watch.observe(2, 2000.0, progress=1)  # shrank
    assert not watch.stalled(2000.0)
    watch.observe(0, 5000.0, progress=1)
    assert not watch.stalled(9000.0)


# -- metrics -----------------------------------------------------------------------------
def test_metrics_parse_and_count_one_walk_to_the_attested_spec_quiz(world: GitHubWorld) -> None:
    health = Health(world.services, dispatcher=world.dispatcher, poller=world.poller)
    metrics = Metrics(health)
    with installed(metrics):
        url = serve(world, health, metrics)
        before = scrape(url)
        asked = world.fake.count()
        ref = world.issue()
        quiz = world.to_spec_quiz(ref)  # start comment + poll, execute comment + poll
        waiting = scrape(url)
        body = quiz.body.replace(attestation_line("spec"), attestation_line("spec", True))
        world.fake.edit_comment(quiz.id, body, "alice")
        world.poll()  # the tick: one quiz_attestation delivery, the gate passes
        after = scrape(url)
        requests_sent = world.fake.count() - asked
    assert world.state(ref).current_node == "tasks-breakdown"
    assert value(after, "loopgate_deliveries_total", source="poller", kind="comment",
                 result="handled") == 2
    assert value(after, "loopgate_deliveries_total", source="poller",
                 kind="quiz_attestation", result="handled") == 1
    assert total(after, "loopgate_deliveries_total") == 3
    assert value(after, "loopgate_dispatch_seconds_count") == 3
    assert value(after, "loopgate_poll_cycle_seconds_count") == 3
    assert value(after, "loopgate_quiz_attestations_total", node="spec-quiz") == 1
    assert value(after, "loopgate_quiz_refusals_total", node="spec-quiz") == 0
    assert value(after, "loopgate_effects_failed_total") == 0
    assert value(after, "loopgate_work_items", node="tasks-breakdown", status="parked") == 1
    assert value(after, "loopgate_queue_depth", queue="github_effects") == 0
    assert value(after, "loopgate_queue_depth", queue="inbox") == 0
    # every request the fake saw was counted once, by endpoint and status
    counted = total(after, "loopgate_github_requests_total") - total(
        before, "loopgate_github_requests_total")
    assert counted == requests_sent
    assert value(after, "loopgate_github_requests_total", endpoint="poll_comments",
                 status="2xx") >= 1
    assert value(after, "loopgate_github_rate_limit_remaining", resource="core") > 0
    for (name, labels), _ in after.items():  # no work item, repository or login label
        for key, label in labels:
            assert "/" not in label and "#" not in label and label != "alice", (name, key)
    # one item waiting at the spec quiz (a human gate), then none
    assert value(waiting, "loopgate_gate_wait_seconds_count", node="spec-quiz") == 1
    assert value(waiting, "loopgate_gate_wait_seconds_bucket", node="spec-quiz", le="60.0") == 1
    assert value(after, "loopgate_gate_wait_seconds_count", node="spec-quiz") == 0


def test_metrics_read_acks_first_pauses_overruns_and_refusals_by_thread(
        world: GitHubWorld) -> None:
    """Acks first's live counts (issue 21 §1), by background thread: each thread has its
    own pause reserve, so whose work was held back is told apart."""
    from tests.bridges.test_dispatcher import comment_delivery

    dispatcher = world.dispatcher
    acks = dispatcher.acks
    effects = acks.pauser("github_effects")  # as serve wires the effects worker
    health = Health(world.services, dispatcher=dispatcher, poller=world.poller)
    metrics = Metrics(health, acks=acks)
    url = serve(world, health, metrics)
    names = ("loopgate_ack_first_pauses_total", "loopgate_ack_first_overruns_total",
             "loopgate_ack_first_budget_refusals_total")

    def counts(samples: Samples, thread: str) -> tuple[float, ...]:
        keys = [(name, frozenset({("thread", thread)})) for name in names]
        assert all(key in samples for key in keys), (thread, samples.keys())
        return tuple(samples[key] for key in keys)

    before = scrape(url)  # both threads shown before any ack, at zero
    assert counts(before, "dispatcher") == counts(before, "github_effects") == (0, 0, 0)
    ref = world.issue()

    def deliver(text: str) -> None:
        future = dispatcher.submit(comment_delivery(ref, world.comment(ref, text)))
        assert future.result(10).reason == "not-started"

    acks.pause_s = 30.0
    acks.enter()  # an ack in hand: the dispatcher waits for it, then decides
    future = dispatcher.submit(comment_delivery(ref, world.comment(ref, "one")))
    assert wait_for(lambda: acks.waiting == 1, 10)
    acks.leave()
    assert future.result(10).reason == "not-started"
    acks.pause_s = 0.05
    with acks.receiving():  # never answered: the pause gives up at its bound
        deliver("two")
        acks.reserve_s = 0.0  # the reserve spent: the next pause is refused at once
        deliver("three")
        waited: list[float] = []
        thread = threading.Thread(target=lambda: waited.append(effects()))
        thread.start()  # another thread's pause: refused too, counted as that thread's
        thread.join(10)
        assert waited == [0.0]
    after = scrape(url)
    assert counts(after, "dispatcher") == (2, 1, 1)
    assert counts(after, "github_effects") == (0, 0, 1)
    assert (acks.pauses, acks.overruns, acks.budget_refusals) == (2, 1, 2)  # the totals
    assert counts(scrape(url), "dispatcher") == (2, 1, 1)  # read, not counted, per scrape
