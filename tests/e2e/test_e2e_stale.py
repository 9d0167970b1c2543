"""Scenario 3: the spec changes after the spec quiz was posted → the gate answers
``stale`` → back at spec-explainer → the explainer is claimed again → a new quiz comment
with a new digest; ticking the old comment does nothing (issue 6, explainer design C4)."""

from __future__ import annotations

import json

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.e2e.stack import AUTHOR, CHANNEL, wait_until

pytestmark = pytest.mark.e2e


def test_a_spec_change_sends_the_quiz_back_and_only_the_new_comment_counts(
        make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    walk.to_phase_selection()
    walk.select_in_slack()
    walk.to_requirements_approval()
    walk.to_design_approval()
    old_quiz = walk.to_spec_quiz()
    old_digest = expect.at_spec_quiz(walk, old_quiz)

    walk.files.change_spec()  # design.md edited after the quiz was posted
    assert expect.spec_digest(walk) != old_digest
    advanced = walk.home.cli("advance", walk.ref)  # a re-evaluation, as a user asks for it
    assert advanced.stdout.startswith(f"{walk.ref}: at spec-explainer"), advanced.stdout

    doc = walk.check()
    assert doc["nodes"]["spec-quiz"]["outcome"] == "stale"
    assert "spec-quiz" not in doc["decisions"]
    assert doc["currentNode"] == "spec-explainer"
    assert len(walk.comments("<!-- the-loop:assignment spec-explainer ")) == 2
    said_stale = "the spec changed and a new quiz will follow"
    wait_until(lambda: len(walk.updates(said_stale)) >= 2,
               "the quiz DM and its thread line rewritten to 'stale'")
    stale = walk.updates(said_stale)
    assert sorted(c.args["channel"] for c in stale) == sorted([CHANNEL, expect.DM_CHANNEL])

    walk.claim("spec-explainer")  # the explainer again, for the new spec
    quizzes = walk.comments("the-loop:quiz spec-quiz ")
    assert [q.id for q in quizzes[:1]] == [old_quiz.id] and len(quizzes) == 2
    new_quiz = quizzes[1]
    new_digest = expect.at_spec_quiz(walk, new_quiz, dms=2)
    assert new_digest != old_digest
    assert expect.quiz_marker(walk.gh.comments[old_quiz.id]) == ("spec-quiz", old_digest)

    walk.tick(old_quiz)  # handled by the server (waited for), and changes nothing
    doc = walk.check()
    assert (doc["currentNode"], doc["status"]) == ("spec-quiz", "parked")
    assert "spec-quiz" not in doc["decisions"]
    events = json.loads(walk.home.cli("events", walk.ref, "--format", "json").stdout)
    assert [e for e in events if e["kind"] == "graph.quiz_attested"] == []
    assert walk.updates("attested by") == []

    walk.tick(new_quiz)
    walk.wait_comment("the-loop:assignment tasks-breakdown ")
    doc = walk.check()
    decision = doc["decisions"]["spec-quiz"]
    assert (decision["attestedBy"], decision["commentId"]) == (f"@{AUTHOR}", new_quiz.id)
    assert doc["currentNode"] == "tasks-breakdown"
    attested = f"Spec quiz on {walk.ref}: attested by @{AUTHOR}"
    wait_until(lambda: len(walk.updates(attested)) >= 2, "the DM and thread line 'attested'")
    assert len(walk.updates(attested)) == 2  # DM, thread
