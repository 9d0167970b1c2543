"""The webhook receiver through the real HTTP server (waitress + Flask): the real payloads
signed per headers.computed.json, 401 before parsing, duplicates processed once, ping,
health, and the refusal to start without a secret."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import requests

from bot.web.server import Server, build_wsgi_app
from engine.errors import ConfigError
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.fakes.github import FakeGitHub, wait_for


@pytest.fixture
def fixture_world(github_env: FakeGitHub, tmp_path: Path) -> GitHubWorld:
    """A world watching the repository the public payload examples come from."""
    world = GitHubWorld(github_env, tmp_path,
                        {"github": {"repos": [REPO, "Codertocat/Hello-World"]}}).build()
    yield world
    world.close()


def _computed(fixtures_dir: Path) -> dict[str, dict[str, str]]:
    data = json.loads((fixtures_dir / "github/webhooks/headers.computed.json").read_text())
    return {n: h for n, h in data["files"].items()
            if (fixtures_dir / "github/webhooks" / n).exists()}


EXPECTED = {
    "issue_comment.created.payload.json": (202, "queued"),
    "issue_comment.created.with-installation.payload.json": (202, "queued"),
    "issue_comment.edited.payload.json": (200, "ignored"),
    "issue_comment.deleted.payload.json": (200, "ignored"),
    "issues.opened.payload.json": (200, "ignored"),
    "issues.labeled.payload.json": (200, "ignored"),
    "pull_request.opened.payload.json": (202, "queued"),  # issue 11: a new head commit
    "ping.payload.json": (200, "ignored"),
}


def test_the_real_payloads_signed_with_the_docs_secret_are_accepted(
        fixture_world: GitHubWorld, fixtures_dir: Path) -> None:
    fixture_world.serve()
    observed: list[str] = []
    fixture_world.dispatcher.comment_observers.append(lambda ref, c: observed.append(str(ref)))
    answers = {}
    for n, (name, headers) in enumerate(sorted(_computed(fixtures_dir).items())):
        body = (fixtures_dir / "github/webhooks" / name).read_bytes()
        response = fixture_world.post({**headers, "X-GitHub-Delivery": f"guid-{n}"}, body)
        answers[name] = (response.status_code, response.json()["status"])
    assert answers == EXPECTED
    assert fixture_world.dispatcher.wait_idle(10)
    # the two "created" examples carry the same comment id: one comment, told once
    assert observed == ["codertocat/hello-world#1"]


def test_a_forged_signature_is_refused_before_parsing(world: GitHubWorld) -> None:
    world.serve()
    seen: list[object] = []
    world.dispatcher.comment_observers.append(lambda ref, c: seen.append(c))
    ref = world.issue()
    headers, body = world.fake.webhook("issue_comment", "created", repo=REPO,
                                       number=ref.number,
                                       comment_id=world.comment(ref, "the-loop start").id,
                                       secret="a guess")
    assert world.post(headers, body).status_code == 401
    garbage = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
    response = world.post(garbage, b"{not json at all")
    assert response.status_code == 401  # not 400: nothing was parsed
    assert response.json() == {"error": "invalid signature"}
    unsigned = {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}
    assert world.post(unsigned, body).status_code == 401
    assert world.dispatcher.wait_idle(5)
    assert seen == [] and world.services.store.load(ref) is None
    assert not world.dispatcher.known(headers["X-GitHub-Delivery"])


def test_a_duplicate_delivery_id_is_processed_once(world: GitHubWorld) -> None:
    world.serve()
    seen: list[int] = []
    world.dispatcher.comment_observers.append(lambda ref, c: seen.append(c.id))
    ref = world.issue()
    comment = world.comment(ref, "the-loop start")
    headers, body = world.fake.webhook("issue_comment", "created", repo=REPO,
                                       number=ref.number, comment_id=comment.id, secret=SECRET,
                                       delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    statuses = [world.post(headers, body).status_code for _ in range(3)]
    assert world.dispatcher.wait_idle(10)
    assert statuses[0] == 202 and set(statuses[1:]) <= {200, 202}
    again = world.post(headers, body)
    assert again.status_code == 200 and again.json() == {"status": "duplicate"}
    assert seen == [comment.id]
    assert len(world.events(ref, "graph.started")) == 1
    world.restart()
    world.serve()
    assert world.post(headers, body).json() == {"status": "duplicate"}  # persisted


def test_ping_and_health_answer_200(world: GitHubWorld, fixtures_dir: Path) -> None:
    url = world.serve()
    body = (fixtures_dir / "github/webhooks/ping.payload.json").read_bytes()
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "p-1",
               "X-Hub-Signature-256": _computed(fixtures_dir)["ping.payload.json"][
                   "X-Hub-Signature-256"], "Content-Type": "application/json"}
    assert world.post(headers, body).status_code == 200
    health = requests.get(f"{url}/healthz", timeout=5)
    assert health.status_code == 200 and health.json() == {"ok": True, "dispatcher": True}


def test_no_secret_refuses_to_build_the_receiver(world: GitHubWorld) -> None:
    with pytest.raises(ConfigError, match="GITHUB_WEBHOOK_SECRET") as err:
        build_wsgi_app(world.services, world.dispatcher, webhook_secret=None, slack_routes=False)
    assert "--insecure-webhooks" in str(err.value)


def test_insecure_webhooks_accept_unsigned_deliveries(world: GitHubWorld) -> None:
    world.serve(secret=None, insecure=True)
    ref = world.issue()
    headers, body = world.fake.webhook("issue_comment", "created", repo=REPO,
                                       number=ref.number,
                                       comment_id=world.comment(ref, "the-loop start").id)
    assert world.post(headers, body).status_code == 202
    assert world.dispatcher.wait_idle(10)
    assert world.state(ref).current_node == "phase-selection"


def test_the_start_label_webhook_starts_the_item(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    response = world.webhook("issues", "labeled", ref, label="loop:start", sender="alice")
    assert response.status_code == 202 and response.json()["kind"] == "start"
    assert world.state(ref).current_node == "phase-selection"


def test_a_bad_body_with_a_good_signature_is_a_400(world: GitHubWorld) -> None:
    world.serve()
    from bridges.github.webhook import sign

    body = b"[1, 2, 3]"
    response = world.post({"X-GitHub-Event": "issues", "X-GitHub-Delivery": "b-1",
                           "X-Hub-Signature-256": sign(body, SECRET)}, body)
    assert response.status_code == 400 and "not a JSON object" in response.json()["error"]


def test_an_answered_delivery_a_killed_process_did_not_handle_is_replayed_on_start(
        world: GitHubWorld) -> None:
    # The dispatcher's worker never runs: the delivery is answered 202 and still queued
    # when the process goes away, as when loopgate serve is killed right after answering.
    app = build_wsgi_app(world.services, world.dispatcher, webhook_secret=SECRET,
                         slack_routes=False)
    world.server = Server(app, "127.0.0.1", 0, threads=2).start()
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    headers, body = world.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                       label="loop:start", sender="alice", secret=SECRET)
    assert world.post(headers, body).status_code == 202
    assert world.services.store.load(ref) is None
    delivery = headers["X-GitHub-Delivery"]
    assert [e.delivery_id for e in world.dispatcher.inbox.owed()] == [delivery]
    world.restart()  # the queue in memory is gone; the inbox row is not
    world.serve()  # its inbox-replay thread queues the row at once
    assert wait_for(lambda: world.dispatcher.inbox.owed() == [], timeout=10)
    assert world.state(ref).current_node == "phase-selection"
    assert world.post(headers, body).json() == {"status": "duplicate"}
    world.restart()
    world.serve()
    assert world.dispatcher.wait_idle(10)
    assert len(world.events(ref, "graph.started")) == 1  # nothing replayed twice


def test_a_signed_payload_with_a_malformed_field_is_a_400_not_a_crash(
    world: GitHubWorld,
) -> None:
    world.serve()
    import json

    from bridges.github.webhook import sign

    body = json.dumps({"action": "created", "repository": {"full_name": REPO},
                       "issue": {"number": 1}, "sender": {"login": "alice"},
                       "comment": {"id": "abc", "body": "hi", "user": {"login": "alice"}}}
                      ).encode()
    response = world.post({"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "b-2",
                           "X-Hub-Signature-256": sign(body, SECRET)}, body)
    assert response.status_code == 400
    assert response.json()["error"] == "malformed issue_comment.created payload"
    assert not world.dispatcher.known("b-2")


def test_a_webhook_is_answered_while_an_item_transaction_holds_the_database(
        world: GitHubWorld) -> None:
    """Issue 10 §3: ingress never waits on egress. Another connection holds the state
    database's write lock (as an item transaction calling GitHub does, for seconds); the
    delivery is still answered 202, a redelivery is still recognised, and the delivery is
    handled once the lock is released."""
    world.serve()
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    headers, body = world.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                       label="loop:start", sender="alice", secret=SECRET)
    holder = sqlite3.connect(world.tmp / "loopgate.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        # Waiting on this lock would take the store 5 attempts of 5 s: far past the 10 s
        # bound below, so a receiver that waited could not answer in time.
        answered = world.post(headers, body)
        again = world.post(headers, body)  # GitHub's redelivery, lock still held
        assert answered.status_code == 202 and answered.json()["status"] == "queued"
        assert again.status_code == 200 and again.json() == {"status": "duplicate"}
        assert world.services.store.load(ref) is None  # not handled: the lock is held
        assert [e.delivery_id for e in world.dispatcher.inbox.owed()] == [
            headers["X-GitHub-Delivery"]]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert wait_for(lambda: world.dispatcher.inbox.owed() == [], timeout=30)
    assert world.state(ref).current_node == "phase-selection"
    assert len(world.events(ref, "graph.started")) == 1


def test_a_delivery_the_inbox_cannot_keep_is_not_acknowledged(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    world.dispatcher.inbox.close()  # e.g. the disk is gone: nothing can be kept
    headers, body = world.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                       label="loop:start", sender="alice", secret=SECRET)
    response = world.post(headers, body)
    assert response.status_code == 503  # no 2xx: GitHub shows it failed, to redeliver
    assert response.json() == {"error": "the delivery could not be stored"}
    assert not world.dispatcher.in_flight(headers["X-GitHub-Delivery"])
