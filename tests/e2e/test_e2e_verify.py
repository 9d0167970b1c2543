"""Issue 22 §3 end to end: ``loopgate verify`` re-derives the walk's verdicts from the fake
GitHub alone and agrees; it names each difference when a test tampers with loopgate's
state (a decision's ``by``, a removed attestation, a coverage head) or with GitHub (another
user edits an approval, a quiz box unticked by someone else, a push moving the head);
GitHub answering 5xx or rate-limited is exit 2 with one line, never "agrees".

One walk per mode (token: commit statuses; App: check runs), then every tampering on it,
each undone before the next (GitHub's own edits cannot be undone: they come last).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from engine.refs import WorkItemRef
from engine.state import ItemState
from engine.store.sqlite import SqliteStore
from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.e2e.stack import (
    AUTHOR,
    GITHUB_SECRET,
    REPO,
    REVIEWER,
    Home,
    ServeProcess,
    Walk,
    wait_until,
)
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack

pytestmark = pytest.mark.e2e

MALLORY = "mallory"


def _verify(walk: Walk, *args: str) -> Any:
    return walk.home.cli("verify", *args, ok=False)


def _lines(done: Any) -> dict[str, str]:
    """``{gate or check: its line}`` of a text verify."""
    out = {}
    for line in done.stdout.splitlines():
        _, _, rest = line.partition(" ")
        out[rest.split(":", 1)[0]] = rest
    return out


def _tamper(walk: Walk, change: Callable[[ItemState], None]) -> dict[str, Any]:
    """Change the item's stored state with ``change``; returns the document before."""
    store = SqliteStore(walk.home.db)
    ref = WorkItemRef.parse(walk.ref)
    try:
        before = store.load(ref)
        assert before is not None
        with store.transaction(ref) as tx:
            assert tx.state is not None
            change(tx.state)
        return before.to_document()
    finally:
        store.close()


def _restore(walk: Walk, doc: dict[str, Any]) -> None:
    fresh = ItemState.from_document(doc)

    def back(state: ItemState) -> None:
        for f in fields(ItemState):
            if f.name not in ("ref", "revision"):
                setattr(state, f.name, getattr(fresh, f.name))

    _tamper(walk, back)


def _set_decision(node: str, **changes: Any) -> Callable[[ItemState], None]:
    from dataclasses import replace

    from engine.visits import VisitDecision

    def change(state: ItemState) -> None:
        visits = list(state.visits[node])
        last = visits[-1]
        if changes.get("drop"):
            visits[-1] = replace(last, decision=None)
        else:
            assert last.decision is not None
            doc = {**last.decision.to_json(), **changes}
            visits[-1] = replace(last, decision=VisitDecision.from_json(doc))
        state.visits[node] = tuple(visits)
    return change


def _queue(walk: Walk) -> str:
    """Queue the pull request, deliver ``merge_group.checks_requested``, wait for loopgate's
    answer on the group commit; returns its sha."""
    group = walk.gh.queue(REPO, [walk.pr])
    headers, body = walk.gh.merge_group_webhook(REPO, group, secret=GITHUB_SECRET)
    answer = requests.post(f"{walk.server.url}/github/webhook", data=body, headers=headers,
                           timeout=10)
    assert answer.status_code == 202, answer.text
    sha = str(group["head_sha"])
    wait_until(lambda: walk.gh.commit_state(REPO, sha, "loopgate") == "success",
               "loopgate success on the merge group")
    return sha


def _decision(walk: Walk, node: str) -> dict[str, Any]:
    return dict(walk.check()["decisions"][node])


def _statuses_ok(walk: Walk, head: str) -> bool:
    state = walk.gh.commit_state(REPO, head, "loopgate")
    return state == "success"


@pytest.mark.timeout(300)
def test_verify_agrees_on_the_walk_and_names_every_difference(make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    expect.walk_to_human_approval(walk)
    expect.complete(walk, walk.approve_to_complete())
    head = walk.gh.head_sha(REPO, walk.pr)
    wait_until(lambda: _statuses_ok(walk, head), "loopgate success on the head")

    # -- agrees: every gate of the walk, and the published check ---------------------------
    done = _verify(walk, walk.ref)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = _lines(done)
    approval = _decision(walk, "human-approval")
    assert lines["human-approval (visit 1)"] == (
        f"human-approval (visit 1): agrees — recorded approved by @{REVIEWER} at comment "
        f"{approval['commentId']}")
    quiz = _decision(walk, "code-quiz")
    assert lines["code-quiz (visit 1)"] == (
        f"code-quiz (visit 1): agrees — recorded attested by @{AUTHOR} at comment "
        f"{quiz['commentId']} (tick)")
    # the Execute click lives in Slack: re-derived from loopgate's confirmation comment
    assert lines["phase-selection (visit 1)"] == (
        f"phase-selection (visit 1): agrees — recorded selected by @{AUTHOR} via slack "
        "(decided via slack: re-derived from loopgate's confirmation)")
    assert len(done.stdout.splitlines()) == 7  # six gates, one check
    for gate in ("requirements-approval", "design-approval", "spec-quiz"):
        assert lines[f"{gate} (visit 1)"].startswith(f"{gate} (visit 1): agrees — "), lines
    assert lines[f"check on #{walk.pr} @{head[:7]}"] == (
        f"check on #{walk.pr} @{head[:7]}: agrees — published success, re-derived success")
    as_json = json.loads(_verify(walk, walk.ref, "--format", "json").stdout)
    assert as_json["verdict"] == "agrees"
    [item] = as_json["items"]
    assert item["item"] == walk.ref and {g["verdict"] for g in item["gates"]} == {"agrees"}
    assert [c["published"] for c in item["checks"]] == ["success"]
    # verify --sha: the items delivered by the pull request whose head it is
    by_sha = _verify(walk, "--sha", head)
    assert by_sha.returncode == 0, by_sha.stdout + by_sha.stderr
    assert f"{walk.ref} check on #{walk.pr} @{head[:7]}: agrees" in by_sha.stdout
    # ... and a merge queue's group commit loopgate answered (issue 19 §4)
    group = _queue(walk)
    by_group = _verify(walk, "--sha", group)
    assert by_group.returncode == 0, by_group.stdout + by_group.stderr
    assert by_group.stdout.splitlines()[-1] == (
        f"{REPO} merge group check on @{group[:7]}: agrees — published success, re-derived "
        "success")
    assert f"{walk.ref} human-approval (visit 1): agrees" in by_group.stdout

    # -- loopgate's state tampered with: a decision's `by` ---------------------------------
    before = _tamper(walk, _set_decision("human-approval", by="@carol"))
    done = _verify(walk, walk.ref)
    assert done.returncode == 1
    assert _lines(done)["human-approval (visit 1)"] == (
        f"human-approval (visit 1): differs — recorded approved by @carol at comment "
        f"{approval['commentId']}; GitHub shows comment {approval['commentId']} written by "
        f"@{REVIEWER}, not @carol")
    assert _lines(done)["code-quiz (visit 1)"].startswith("code-quiz (visit 1): agrees")
    _restore(walk, before)
    assert _verify(walk, walk.ref).returncode == 0

    # -- a removed attestation --------------------------------------------------------------
    before = _tamper(walk, _set_decision("code-quiz", drop=True))
    done = _verify(walk, walk.ref)
    assert done.returncode == 1
    assert _lines(done)["code-quiz (visit 1)"] == (
        "code-quiz (visit 1): differs — recorded pass with no attestation; loopgate's "
        "record holds no attestation to check against GitHub")
    # the item's verdict does not stand: what it would publish is pending, GitHub says success
    check = _lines(done)[f"check on #{walk.pr} @{head[:7]}"]
    assert check.startswith(f"check on #{walk.pr} @{head[:7]}: differs — published success, "
                            "re-derived pending")
    _restore(walk, before)

    # -- a coverage head -----------------------------------------------------------------------
    forged = "0" * 40

    def cover_other(state: ItemState) -> None:
        coverage = dict(state.surface["mergeCoverage"])
        nodes = {k: dict(v) for k, v in coverage["nodes"].items()}
        nodes["code-quiz"]["heads"] = {str(walk.pr): forged}
        coverage["nodes"] = nodes
        state.surface["mergeCoverage"] = coverage

    before = _tamper(walk, cover_other)
    done = _verify(walk, walk.ref)
    assert done.returncode == 1
    check = _lines(done)[f"check on #{walk.pr} @{head[:7]}"]
    assert check.startswith(f"check on #{walk.pr} @{head[:7]}: differs — published success, "
                            "re-derived pending; loopgate's coverage: head "
                            f"{head[:7]} was pushed after code-quiz covered 0000000 "
                            "(loopgate records success)"), check
    _restore(walk, before)
    assert _verify(walk, walk.ref).returncode == 0

    # -- GitHub tampered with: exit 2 first (GitHub unreachable: never a false "agrees") -----
    walk.gh.fail_route("GET", "issue-comments", 502, times=3)  # the client's retries too
    done = _verify(walk, walk.ref)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("loopgate: GitHub could not be read, nothing verified: ")
    walk.gh.rest_rate_limit(times=3, status=403, reset_in=120)
    done = _verify(walk, walk.ref)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("loopgate: GitHub could not be read, nothing verified: ")
    if walk.gh.app is None:  # App mode: the refused request is minting the token first
        assert "rate limit" in line
    # GraphQL over its limit answers 200 with RATE_LIMITED errors (platform-facts A10):
    # no edit history read is no "agrees" either
    walk.gh.graphql_rate_limit(times=1)
    done = _verify(walk, walk.ref)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("loopgate: GitHub could not be read, nothing verified: ")
    wait_until(lambda: _verify(walk, walk.ref).returncode == 0, "verify agrees again")

    # -- another user edits the approval comment ------------------------------------------------
    cid = int(approval["commentId"])
    walk.gh.edit_comment(cid, "approved", MALLORY)
    done = _verify(walk, walk.ref)
    assert done.returncode == 1
    assert _lines(done)["human-approval (visit 1)"] == (
        f"human-approval (visit 1): differs — recorded approved by @{REVIEWER} at comment "
        f"{cid}; GitHub shows that comment edited by @{MALLORY}")

    # -- a quiz box unticked by someone else ----------------------------------------------------
    qid = int(quiz["commentId"])
    body = walk.gh.comments[qid].body
    walk.gh.edit_comment(qid, body.replace("- [x] I have read", "- [ ] I have read"), MALLORY)
    done = _verify(walk, walk.ref)
    assert _lines(done)["code-quiz (visit 1)"] == (
        f"code-quiz (visit 1): differs — recorded attested by @{AUTHOR} at comment {qid} "
        f"(tick); GitHub shows the box of comment {qid} is not ticked (last edited by "
        f"@{MALLORY})")

    # -- a push moves the pull request's head (no webhook: loopgate has not seen it) -----------
    second = walk.gh.push(REPO, walk.pr)
    done = _verify(walk, walk.ref)
    assert done.returncode == 1
    check = _lines(done)[f"check on #{walk.pr} @{second[:7]}"]
    assert check.startswith(
        f"check on #{walk.pr} @{second[:7]}: differs — published nothing, re-derived pending; "
        f"loopgate's coverage: head {second[:7]} was pushed after code-quiz covered "
        f"{head[:7]} (loopgate records success)"), check


class _AuditHome(Home):
    """An installation whose ``serve`` audits itself every 0.6 s, items 0 s apart."""

    def write(self) -> _AuditHome:
        super().write()
        config = yaml.safe_load(self.config.read_text("utf-8"))
        config["server"].update(auditMinutes=0.01, auditItems=5, auditPaceSeconds=0)
        self.config.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
        return self


def _audit(server: ServeProcess) -> tuple[int, dict[str, Any]]:
    answer = requests.get(f"{server.url}/readyz", timeout=10)
    return answer.status_code, answer.json()["checks"]["audit"]


def _metric(server: ServeProcess, name: str) -> float | None:
    text = requests.get(f"{server.url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


@pytest.mark.timeout(300)
@pytest.mark.parametrize("gh", ["token"], indirect=True)
def test_the_self_audit_shows_a_disagreement_on_readyz_and_metrics(
        tmp_path: Path, gh: FakeGitHub, slack: FakeSlack) -> None:
    home = _AuditHome(tmp_path, gh, slack, 0).write()
    server = ServeProcess(home).start()
    try:
        walk = Walk(home, server, webhooks=True)
        expect.walk_to_human_approval(walk)  # the item waits at human-approval: active
        wait_until(lambda: "1 active item(s) agree with GitHub" in _audit(server)[1]["detail"],
                   "the self-audit agrees")
        assert _metric(server, "loopgate_audit_disagreements") == 0.0

        # another user edits the reviewer's requirements-approval reply on GitHub
        approval = _decision(walk, "requirements-approval")
        walk.gh.edit_comment(int(approval["commentId"]), "approved", MALLORY)

        def named() -> dict[str, Any] | None:
            status, check = _audit(server)
            return check if "differ" in check["detail"] and status == 200 else None

        check = wait_until(named, "the self-audit names the item")
        assert check["ok"] is True  # reported, never failing readiness (bot.ops.self_audit)
        assert check["detail"].startswith(
            f"1 item(s) differ from GitHub's records: {walk.ref}: requirements-approval "
            f"(visit 1): differs — recorded approved by @{REVIEWER} at comment "
            f"{approval['commentId']}; GitHub shows that comment edited by @{MALLORY}")
        assert requests.get(f"{server.url}/readyz", timeout=10).json()["ready"] is True
        assert _metric(server, "loopgate_audit_disagreements") == 1.0
        runs = _metric(server, "loopgate_audit_runs_total")
        assert runs is not None and runs >= 2
    finally:
        code = server.stop()
        log = server.log()
        print(f"--- loopgate serve stderr (exit {code}) ---\n{log}")
    assert code == 0 and "Traceback" not in log
    assert f"self-audit: {walk.ref} requirements-approval (visit 1): differs" in log
