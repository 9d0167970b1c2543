"""What the walk must show at each gate: the issue thread, the Slack calls and
``loopgate check ITEM --format json``. Shared by the scenarios so the webhook, poller
and restart runs are held to the same expectations."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from engine.hooks.markers import (
    CONFIRMATION_MARKER,
    PHASE_SELECTION_MARKER,
    attestation_line,
    parse_quiz_markers,
)
from tests.e2e.stack import (
    AUTHOR,
    CHANNEL,
    CODE_AGENTS,
    EXPECTED_MARKERS,
    REPO,
    REVIEWER,
    SLACK_USER,
    SPEC_AGENTS,
    START_LABEL,
    Walk,
    wait_until,
)
from tests.fakes.github import FakeComment

__all__ = [
    "statuses", "spec_digest", "at_phase_selection", "after_execute", "at_approval_gate",
    "at_spec_quiz", "after_spec_attested", "at_code_quiz", "at_human_approval",
    "no_duplicates", "walk_to_human_approval", "DM_CHANNEL", "heads_digest",
]

#: The DM channel the fake opens for the author's Slack user.
DM_CHANNEL = "D" + SLACK_USER


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    """Node id -> the report's status word."""
    return {n["id"]: n["status"] for n in doc["report"]["nodes"]}


def outcomes(doc: dict[str, Any]) -> dict[str, str]:
    """Node id -> recorded outcome, for nodes that have one."""
    return {k: v["outcome"] for k, v in doc["nodes"].items() if v["outcome"]}


def spec_digest(walk: Walk) -> str:
    """The spec digest as the design defines it (C3): sha256 over requirements.md,
    design.md and testing-plan.md, in that order, first 12 hex."""
    data = b"".join((walk.files.dir / name).read_bytes()
                    for name in ("requirements.md", "design.md", "testing-plan.md"))
    return hashlib.sha256(data).hexdigest()[:12]


def heads_digest(walk: Walk) -> str:
    """The code quiz's digest (issue 19 §3): sha256 over ``N=<head sha>`` lines of the open
    delivering pull requests, first 12 hex."""
    lines = f"{walk.pr}={walk.gh.head_sha(REPO, walk.pr)}\n"
    return hashlib.sha256(lines.encode("ascii")).hexdigest()[:12]


def quiz_marker(comment: FakeComment) -> tuple[str, str]:
    """``(node, digest)`` of the one quiz marker a comment carries."""
    [marker] = parse_quiz_markers(comment.body)
    return marker.node, marker.digest


def _parked_at(doc: dict[str, Any], node: str) -> None:
    assert (doc["currentNode"], doc["status"]) == (node, "parked"), (doc["currentNode"],
                                                                      doc["parked"])
    assert doc["parked"]["node"] == node
    assert statuses(doc)[node] == "waiting"


def _thread_lines(walk: Walk, needle: str) -> list[Any]:
    card_ts = walk.card().response["ts"]
    return [c for c in walk.slack.calls_to("chat.postMessage")
            if c.args.get("channel") == CHANNEL and c.args.get("thread_ts") == card_ts
            and needle in c.args.get("text", "")]


# -- gates ---------------------------------------------------------------------------------
def at_phase_selection(walk: Walk, checklist: FakeComment) -> None:
    """The checklist is on the issue, the card is in Slack, the gate waits."""
    assert checklist.author == walk.gh.bot_login
    assert PHASE_SELECTION_MARKER in checklist.body
    for row in ("- [x] brainstorming", "- [x] requirements-definition",
                "- [ ] design-critic-review"):
        assert row in checklist.body
    assert walk.gh.labels_of(REPO, walk.number) == [START_LABEL, "loop:phase-selection"]
    card = walk.card()
    blocks = card.args["blocks"]
    assert blocks[0]["text"]["text"] == f"Phase selection · {walk.ref}"
    ticked = {o["value"] for b in blocks for e in b.get("elements") or ()
              for o in e.get("initial_options") or ()}
    offered = {o["value"] for b in blocks for e in b.get("elements") or ()
               for o in e.get("options") or ()}
    assert {"brainstorming", "requirements-definition", "explainer"} <= ticked
    assert "design-critic-review" in offered - ticked
    doc = walk.check()
    _parked_at(doc, "phase-selection")
    assert "the-loop execute" in doc["parked"]["reason"]


def after_execute(walk: Walk) -> None:
    """The Execute click selected exactly what the card's state said, the engine
    confirmed it on the issue, the card became read-only, the item moved on."""
    [confirmation] = walk.comments(CONFIRMATION_MARKER)
    assert f"**Phase selection recorded** by @{AUTHOR} — from Slack." in confirmation.body
    assert "Skipped by @alice: `brainstorming`." in confirmation.body
    assert "Also running: `design-critic-review`." in confirmation.body
    assert "Explainer and quizzes: on" in confirmation.body
    card = walk.card()
    # The Slack worker rewrites the card after the engine committed the selection: wait
    # for that call rather than read the calls made so far.
    [rewrite] = wait_until(lambda: [c for c in walk.slack.calls_to("chat.update")
                                    if c.args.get("ts") == card.response["ts"]
                                    and c.args["text"] == (f"Phase selection of {walk.ref} "
                                                           f"made by @{AUTHOR}")],
                           "the card rewritten read-only")
    assert rewrite.args["channel"] == CHANNEL
    assert not any(e.get("type") in ("button", "checkboxes")
                   for b in rewrite.args["blocks"] for e in b.get("elements") or ())
    assert walk.slack.calls_to("chat.postEphemeral") == []  # nobody was refused
    doc = walk.check()
    decision = doc["decisions"]["phase-selection"]
    assert (decision["by"], decision["via"]) == (f"@{AUTHOR}", "slack")
    assert (decision["skips"], decision["optIns"], decision["explainer"]) == (
        ["brainstorming"], ["design-critic-review"], True)
    assert outcomes(doc) == {"phase-selection": "selected", "brainstorming": "skipped"}
    assert doc["currentNode"] == "requirements-definition"
    assert statuses(doc)["design-critic-review"] == "not reached"  # selected, so it will run


def at_approval_gate(walk: Walk, gate: str, passed: tuple[str, ...]) -> None:
    """``gate`` asked for a review on the issue and in the Slack thread, and waits."""
    [request] = walk.comments(f"<!-- the-loop:review-request {gate} ")
    assert f"@{AUTHOR}, @{REVIEWER}: please review" in request.body
    wait_until(lambda: _thread_lines(walk, f"`{gate}` waits for an approval"),
               f"the {gate} line in the Slack thread")
    doc = walk.check()
    _parked_at(doc, gate)
    for node in passed:
        assert doc["nodes"][node]["outcome"] == "pass", node
        assert doc["completions"][node]["by"] == "cli"


def approved(walk: Walk, gate: str, comment: FakeComment) -> dict[str, Any]:
    """The gate's decision names the reviewer's comment."""
    doc = walk.check()
    decision = doc["decisions"][gate]
    assert (decision["by"], decision["outcome"], decision["commentId"]) == (
        f"@{REVIEWER}", "approved", comment.id)
    return doc


def at_spec_quiz(walk: Walk, quiz: FakeComment, dms: int = 1) -> str:
    """The spec quiz comment (current digest, view commands) is on the issue, the author
    has a DM (the ``dms``-th spec quiz DM), the gate waits. Returns the digest."""
    digest = spec_digest(walk)
    assert quiz_marker(quiz) == ("spec-quiz", digest)
    assert quiz.author == walk.gh.bot_login
    assert attestation_line("spec") in quiz.body
    page = walk.files.page
    assert f"repos/{REPO}/contents/{page}?ref=main" in quiz.body
    html = (walk.home.workspace / page).read_text("utf-8")
    assert "Attested quiz gates for the spec and the code" in html
    assert f"| Location | {page} |" in walk.files.read("evidence/spec-explainer.md")
    dm = _quiz_dm(walk, "Spec quiz", dms)
    assert dm.args["text"] == (f"🎓 Spec quiz waiting on {walk.ref}: read the spec explainer "
                               "and take its quiz before code generation starts, then tick "
                               "the box on GitHub.")
    assert any(c.args.get("users") == SLACK_USER
               for c in walk.slack.calls_to("conversations.open"))
    doc = walk.check()
    _parked_at(doc, "spec-quiz")
    assert doc["surface"]["quiz"]["spec-quiz"]["digest"] == digest
    assert [c["id"] for c in doc["surface"]["quiz"]["spec-quiz"]["comments"]] == [quiz.id]
    return digest


def _quiz_dm(walk: Walk, name: str, count: int = 1) -> Any:
    """The latest quiz-pending DM (waits until ``count`` were sent)."""
    posts = wait_until(lambda: (found := [c for c in walk.dm_posts()
                                          if c.args["text"].startswith(f"🎓 {name} waiting")])
                       and len(found) >= count and found, f"{count} {name} DM(s)")
    assert posts[-1].args["channel"] == DM_CHANNEL
    return posts[-1]


def _attested_update(walk: Walk, name: str) -> Any:
    dm = _quiz_dm(walk, name)
    return wait_until(lambda: [c for c in walk.slack.calls_to("chat.update")
                               if c.args.get("channel") == DM_CHANNEL
                               and c.args.get("ts") == dm.response["ts"]
                               and f"{name} on {walk.ref}: attested by @{AUTHOR}"
                               in c.args.get("text", "")],
                      f"the {name} DM rewritten to 'attested'")


def after_spec_attested(walk: Walk, quiz: FakeComment) -> None:
    """The DM says attested, the decision names the author and the comment, the item is
    at tasks-breakdown."""
    [update] = _attested_update(walk, "Spec quiz")
    doc = walk.check()
    decision = doc["decisions"]["spec-quiz"]
    assert (decision["attestedBy"], decision["via"], decision["commentId"]) == (
        f"@{AUTHOR}", "tick", quiz.id)
    assert update.args["text"].endswith(decision["attestedAt"])
    assert doc["currentNode"] == "tasks-breakdown"
    assert walk.gh.labels_of(REPO, walk.number) == [START_LABEL, "loop:tasks"]


def at_code_quiz(walk: Walk, quiz: FakeComment) -> None:
    """The code quiz is on the pull request (not on the issue), the explainer page holds
    both contents, the briefing starts with it, the author has a DM, the gate waits."""
    assert quiz_marker(quiz) == ("code-quiz", heads_digest(walk))
    assert attestation_line("code") in quiz.body
    assert walk.comments("the-loop:quiz code-quiz ") == []  # not on the issue
    tabs = walk.files.renders[-1].split("(tabs: ", 1)[1]
    assert tabs.startswith("Spec explainer, Spec quiz, ") and "Code quiz" in tabs, tabs
    assert f"| Location | {walk.files.page} |" in walk.files.read("evidence/explainer.md")
    assert f"the explainer ({walk.files.page})" in walk.files.read("pr-briefing.md")
    _quiz_dm(walk, "Code quiz")
    doc = walk.check()
    _parked_at(doc, "code-quiz")
    for node in CODE_AGENTS:
        assert doc["nodes"][node]["outcome"] == "pass", node


def at_human_approval(walk: Walk, spec_quiz: FakeComment, code_quiz: FakeComment) -> None:
    """The end state every scenario reaches: the code quiz attested, human-approval
    waiting for a review, every node of the walk recorded once."""
    _attested_update(walk, "Code quiz")
    wait_until(lambda: _thread_lines(walk, "a pull request review is requested"),
               "the pr-review-pending line")
    doc = walk.check()
    _parked_at(doc, "human-approval")
    expected = {"phase-selection": "selected", "brainstorming": "skipped",
                **{n: "pass" for n in (*SPEC_AGENTS, "spec-explainer", "spec-quiz",
                                       *CODE_AGENTS, "code-quiz")},
                "requirements-approval": "approved", "design-approval": "approved"}
    assert outcomes(doc) == expected
    attestations = {a["node"]: a for a in doc["report"]["attestations"]}
    assert {n: (a["attestedBy"], a["comment"]) for n, a in attestations.items()} == {
        "spec-quiz": (f"@{AUTHOR}", _url(walk, spec_quiz)),
        "code-quiz": (f"@{AUTHOR}", _url(walk, code_quiz, walk.pr)),
    }
    assert doc["report"]["unmet"] == [{"node": "human-approval", "status": "waiting"}]
    no_duplicates(walk)


def _url(walk: Walk, comment: FakeComment, number: int = 0) -> str:
    kind = "pull" if number else "issues"
    return f"https://github.com/{REPO}/{kind}/{number or walk.number}#issuecomment-{comment.id}"


def no_duplicates(walk: Walk, markers: Counter[str] = EXPECTED_MARKERS) -> None:
    """Every loopgate comment was posted exactly as often as expected and no Slack
    message was posted twice."""
    assert walk.posted_markers() == markers
    posts = walk.slack_posts()
    assert [key for key, n in posts.items() if n > 1] == []
    dms = [text for channel, text in posts if channel == DM_CHANNEL]
    assert sum(1 for text in dms if text.startswith("🎓")) == 2  # one per quiz
    # Issue 24 §3: and one to the author per gate that passed (as the thread's lines say).
    passed = sorted(k.split(" ", 1)[1].replace("-", " ") for k in markers
                    if k.startswith("gate-passed "))
    told = sorted(text.split(": your ", 1)[1].rsplit(" is ", 1)[0] for text in dms
                  if not text.startswith("🎓"))
    assert told == passed


# -- the whole journey -------------------------------------------------------------------
def walk_to_human_approval(walk: Walk,
                           tick_spec: Callable[[FakeComment], Any] | None = None) -> None:
    """Scenario 1's journey with every gate's assertions: start label → checklist and card
    → Execute in Slack (brainstorming unticked, design-critic-review ticked) → claims and
    approvals → spec quiz ticked → claims → code quiz on the pull request ticked →
    human-approval.

    Args:
        walk: a walk over a started server.
        tick_spec: how the spec quiz gets ticked (default :meth:`Walk.tick`); the restart
            scenario kills the server in there.
    """
    checklist = walk.to_phase_selection()
    at_phase_selection(walk, checklist)

    walk.select_in_slack()
    after_execute(walk)

    walk.to_requirements_approval()
    at_approval_gate(walk, "requirements-approval", ("requirements-definition",))
    approval = walk.approve("requirements-approval", "the-loop:assignment design ")
    approved(walk, "requirements-approval", approval)

    for node in SPEC_AGENTS[1:]:
        walk.claim(node)
    at_approval_gate(walk, "design-approval", SPEC_AGENTS[1:])
    assert "## Design critic review" in walk.files.read("execution-log.md")

    spec_quiz = walk.to_spec_quiz()
    # The reviewer's reply (loopgate's "✅ ... passed — approved by" line says it too).
    approved(walk, "design-approval",
             [c for c in walk.comments("approved") if c.author == REVIEWER][-1])
    at_spec_quiz(walk, spec_quiz)

    (tick_spec or walk.tick)(spec_quiz)
    walk.wait_comment("the-loop:assignment tasks-breakdown ")
    after_spec_attested(walk, spec_quiz)

    code_quiz = walk.to_code_quiz()
    at_code_quiz(walk, code_quiz)

    walk.tick(code_quiz, number=walk.pr)
    walk.wait_comment("the-loop:assignment human-approval ")
    at_human_approval(walk, spec_quiz, code_quiz)


def complete(walk: Walk, doc: dict[str, Any]) -> None:
    """The walk's end after human-approval was approved: the item is complete, both quizzes
    stay attested by the author, nothing was posted twice, and every loopgate comment was
    posted by loopgate's own account (a ``Bot`` when it runs as a GitHub App)."""
    assert (doc["currentNode"], doc["status"]) == ("complete", "complete"), doc["parked"]
    decision = doc["decisions"]["human-approval"]
    assert (decision["by"], decision["outcome"]) == (f"@{REVIEWER}", "approved")
    attested = {a["node"]: a["attestedBy"] for a in doc["report"]["attestations"]}
    assert attested == {"spec-quiz": f"@{AUTHOR}", "code-quiz": f"@{AUTHOR}"}
    assert doc["report"]["unmet"] == []
    assert walk.gh.labels_of(REPO, walk.number)[-1] == "loop:complete"
    posted = walk.posted_markers()
    assert set(posted.values()) == {1} and EXPECTED_MARKERS - posted == Counter(), posted
    kind = "Bot" if walk.gh.app is not None else "User"
    ours = [c for n in (walk.number, walk.pr) for c in walk.gh.comments_on(REPO, n)
            if "<!-- the-loop:" in c.body and c.author == walk.gh.bot_login]
    assert ours and {c.author_type for c in ours} == {kind}
