"""Issue 11 §1 and issue 19 §3/§4 end to end: the ``loopgate`` check on the delivering
pull request, bound to the commits the gates covered, and the merge queue.

The webhook walk of scenario 1 (token mode: a commit status with context ``loopgate``;
App mode: a check run named ``loopgate``, since the Checks API takes only GitHub Apps'
writes) shows the check pending on the pull request until human-approval, success once the
reviewer approved, success on a merge group of that pull request; then a push after
human-approval turns it pending on the new head with the reason, a merge group of the new
head fails naming the pull request, the item goes back through the code quiz's ``stale``
edge to code-explainer, and once the code is explained, quizzed and approved again the
check is success on the new head.
"""

from __future__ import annotations

import pytest
import requests

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.e2e.stack import GITHUB_SECRET, REPO, REVIEWER, Walk, wait_until

pytestmark = pytest.mark.e2e


def _state(walk: Walk, sha: str) -> str | None:
    return walk.gh.commit_state(REPO, sha, "loopgate")


def _pending(walk: Walk) -> str:
    # A commit status says pending; a check run that is not completed says in_progress.
    return "in_progress" if walk.gh.app is not None else "pending"


def _description(walk: Walk, sha: str) -> str:
    """The latest ``loopgate`` line on ``sha``: a status's description, a run's title."""
    if walk.gh.app is None:
        return str(walk.gh.statuses[(REPO, sha)][-1]["description"])
    [run] = [r for r in walk.gh.check_runs.values()
             if r["head_sha"] == sha and r["name"] == "loopgate"]
    return str(run["output"]["title"])


def _queue(walk: Walk) -> str:
    """Put the pull request in a merge group, deliver ``merge_group.checks_requested``
    and return the group's head sha."""
    group = walk.gh.queue(REPO, [walk.pr])
    headers, body = walk.gh.merge_group_webhook(REPO, group, secret=GITHUB_SECRET)
    response = requests.post(f"{walk.server.url}/github/webhook", data=body,
                             headers=headers, timeout=10)
    assert response.status_code == 202, response.text
    walk.server.wait_log(f"delivery={headers['X-GitHub-Delivery']} ")
    sha = str(group["head_sha"])
    wait_until(lambda: _state(walk, sha) in ("success", "failure"), "the merge group's check")
    return sha


# The whole walk plus a second round through code-quiz: longer than the suite's 120 s
# default on a loaded 2-core machine.
@pytest.mark.timeout(300)
def test_loopgate_is_bound_to_the_covered_head_and_answers_the_merge_queue(
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
    else:
        [run] = [r for r in walk.gh.check_runs.values() if r["head_sha"] == first]
        assert (run["name"], run["status"], run["conclusion"]) == ("loopgate", "in_progress",
                                                                   None)
        assert run["app"]["id"] == walk.gh.app.app_id  # loopgate's own App's run
    assert _description(walk, first).startswith(
        f"{walk.ref}: at human-approval (the merge gate): waiting for ")

    expect.complete(walk, walk.approve_to_complete())
    wait_until(lambda: _state(walk, first) == "success", "loopgate success on the head")
    assert _description(walk, first) == f"{walk.ref}: work item complete"
    if walk.gh.app is None:
        [status] = [s for s in walk.gh.statuses[(REPO, first)] if s["state"] == "success"]
        assert status["creator"]["login"] == walk.gh.bot_login
    else:
        runs = [r for r in walk.gh.check_runs.values() if r["head_sha"] == first]
        assert len(runs) == 1  # one run per head, updated in place
        assert "quiz `code-quiz`" in runs[0]["output"]["summary"]

    # the merge queue asks on the group's commit: the covered pull request passes
    group = _queue(walk)
    assert _state(walk, group) == "success"
    assert _description(walk, group) == (
        f"every pull request in the group is covered: #{walk.pr}")

    # a push after human-approval: pending on the new head, saying why
    second = walk.gh.push(REPO, walk.pr)
    walk.webhook("pull_request", "synchronize", number=walk.pr, before_sha=first)
    wait_until(lambda: _state(walk, second) == _pending(walk), "loopgate pending on the push")
    why = f"head {second[:7]} was pushed after code-quiz covered {first[:7]}"
    assert _description(walk, second).startswith(f"{walk.ref}: {why}; now at code-explainer")
    assert _state(walk, first) == "success"  # what was reviewed stays so
    # ... and the item went back the way the graph says: code-quiz's stale edge
    doc = walk.check()
    assert (doc["currentNode"], doc["nodes"]["code-quiz"]["outcome"]) == ("code-explainer",
                                                                          "stale")
    # the merge queue now fails, naming the pull request and why
    group = _queue(walk)
    assert _state(walk, group) == "failure"
    assert _description(walk, group).startswith(f"#{walk.pr} is not covered: {walk.ref}: {why}")

    # explained, quizzed and approved again: success on the new head
    for node in ("code-explainer", "evidence", "capability-docs", "reviewer-briefing"):
        walk.claim(node)
    quiz = walk.wait_comment("the-loop:quiz code-quiz ", count=2, number=walk.pr)[-1]
    assert expect.quiz_marker(quiz) == ("code-quiz", expect.heads_digest(walk))
    walk.tick(quiz, number=walk.pr)
    wait_until(lambda: walk.check()["currentNode"] == "human-approval", "human-approval again")
    comment = walk.gh.add_comment(REPO, walk.number, "approved", as_user=REVIEWER)
    walk.webhook("issue_comment", "created", comment_id=comment.id, sender=REVIEWER)
    wait_until(lambda: _state(walk, second) == "success", "loopgate success on the new head")
    assert _description(walk, second) == f"{walk.ref}: work item complete"
    assert _state(walk, _queue(walk)) == "success"
