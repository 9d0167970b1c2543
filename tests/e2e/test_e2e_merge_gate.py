"""Issue 11 §1 end to end: the ``loopgate`` check on the delivering pull request.

The webhook walk of scenario 1 (token mode: a commit status with context ``loopgate``;
App mode: a check run named ``loopgate``, since the Checks API takes only GitHub Apps'
writes) shows the check pending on the pull request until human-approval, keeps it on
every new head commit (``pull_request.synchronize``), and turns it success once the
reviewer approved.
"""

from __future__ import annotations

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.e2e.stack import REPO, wait_until

pytestmark = pytest.mark.e2e


def _state(walk, sha: str) -> str | None:
    return walk.gh.commit_state(REPO, sha, "loopgate")


def _pending(walk) -> str:
    # A commit status says pending; a check run that is not completed says in_progress.
    return "in_progress" if walk.gh.app is not None else "pending"


def test_loopgate_is_pending_on_the_pull_request_until_human_approval_then_success(
        make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    expect.walk_to_human_approval(walk)
    first = walk.gh.head_sha(REPO, walk.pr)
    wait_until(lambda: _state(walk, first) == _pending(walk), "loopgate pending on the head")
    # pending all along, from the pull request's first check to human-approval
    if walk.gh.app is None:
        states = [s["state"] for s in walk.gh.statuses[(REPO, first)]]
        assert states and set(states) == {"pending"}
        assert all(s["context"] == "loopgate" for s in walk.gh.statuses[(REPO, first)])
        assert walk.gh.statuses[(REPO, first)][-1]["description"].startswith(
            f"{walk.ref}: at human-approval (the merge gate): waiting for ")
    else:
        [run] = [r for r in walk.gh.check_runs.values() if r["head_sha"] == first]
        assert (run["name"], run["status"], run["conclusion"]) == ("loopgate", "in_progress",
                                                                   None)
        assert run["output"]["title"].startswith(
            f"{walk.ref}: at human-approval (the merge gate): waiting for ")

    # a push to the PR keeps the state on the new head
    second = walk.gh.push(REPO, walk.pr)
    walk.webhook("pull_request", "synchronize", number=walk.pr, before_sha=first)
    wait_until(lambda: _state(walk, second) == _pending(walk),
               "loopgate pending on the new head")

    expect.complete(walk, walk.approve_to_complete())
    wait_until(lambda: _state(walk, second) == "success", "loopgate success on the head")
    if walk.gh.app is None:
        [status] = [s for s in walk.gh.statuses[(REPO, second)] if s["state"] == "success"]
        assert status["context"] == "loopgate"
        assert status["description"] == f"{walk.ref}: work item complete"
        assert status["creator"]["login"] == walk.gh.bot_login
    else:
        runs = [r for r in walk.gh.check_runs.values() if r["head_sha"] == second]
        assert len(runs) == 1  # one run per head, updated in place
        assert runs[0]["conclusion"] == "success"
        assert runs[0]["output"]["title"] == f"{walk.ref}: work item complete"
        assert "human-approval" in runs[0]["output"]["summary"]
        assert "quiz `code-quiz`" in runs[0]["output"]["summary"]
