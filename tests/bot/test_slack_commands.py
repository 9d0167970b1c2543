"""``/loop`` slash commands (tier 1: the listener with a mock ``ack``/``respond``), the
``/loop check`` report blocks, identity links by one-time code, and the error handler."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.slack.blocks.card import MAX_BLOCKS
from bot.slack.blocks.escaping import escape
from bot.slack.bolt_app import GENERIC_ERROR, _on_error
from bot.slack.listeners.commands.loop import on_loop, run_loop_command
from bot.slack.listeners.commands.replies import HELP_TEXT
from bot.slack.slack_identity import (
    comment_observer,
    confirm_link_from_comment,
    create_link_code,
    resolve_login,
    slack_users_for_login,
)
from engine.ports import SELF_MARKER, Comment
from engine.refs import WorkItemRef
from tests.bot.conftest import REF, SPEC_CHAIN, SlackWorld


def _loop(world: SlackWorld, user: str, text: str) -> dict[str, Any]:
    order: list[str] = []
    answers: list[dict[str, Any]] = []

    def respond(**kwargs: Any) -> None:
        order.append("respond")
        answers.append(kwargs)

    on_loop(lambda *a, **k: order.append("ack"), {"user_id": user, "text": text}, respond,
            {"services": world.services})
    assert order == ["ack", "respond"]
    assert answers[0]["response_type"] == "ephemeral"
    return answers[0]


def _texts(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", {}).get("text", "") for b in blocks)


@pytest.mark.parametrize("text", ["", "help", "frobnicate the widgets", "HELP"])
def test_help_and_unknown_words_answer_the_help_text(world: SlackWorld, text: str) -> None:
    # Sent with Slack's escaping (issue 19 §6): `<github-login>` must not read as a link.
    assert _loop(world, "UALICE", text)["text"] == escape(HELP_TEXT)
    assert "/loop link &lt;github-login&gt;" in escape(HELP_TEXT)


def test_check_output_for_an_item_with_a_declared_skip_an_unselected_opt_in_and_an_attestation(
    world: SlackWorld,
) -> None:
    world.start()
    comment = world.walk_to_spec_quiz()
    world.tick_quiz(comment, "alice")

    answer = _loop(world, "UCAROL", "check acme/widgets#7")

    blocks = answer["blocks"]
    assert len(blocks) <= MAX_BLOCKS
    assert answer["text"] == "acme/widgets#7: at tasks-breakdown (parked), 12 unmet"
    assert blocks[0]["text"]["text"] == "Check · acme/widgets#7"
    text = _texts(blocks)
    assert "*Now:* `tasks-breakdown` (parked) · ❌ not ok — 12 unmet" in text
    assert ("⏭️ `brainstorming` — *skipped* — skipped by declaration — via selection, token "
            "'brainstorming', by @alice") in text
    assert "reason:" not in text  # issue 14 §9: a selection skip has no reason to print
    assert ("➖ `design-critic-review` — *not selected* — not selected — an opt-in phase, off "
            "unless it is ticked at phase-selection") in text
    assert "✅ `spec-quiz` — *passed* — outcome pass; attested by @alice" in text
    assert "⏳ `tasks-breakdown` — *waiting* — waiting for tasks-breakdown to be claimed" in text
    assert "⚪ `implementation` — *not reached*" in text
    attested_at = world.state().decisions["spec-quiz"]["attestedAt"]
    assert (f"🎓 `spec-quiz` — attested by @alice at {attested_at} (<{comment.url}|comment>)"
            in text)
    decision = world.state().decisions["phase-selection"]
    assert f"*Phase selection:* by @alice via reply at {decision['at']}" in text


def test_check_of_a_waiting_gate_says_waiting_with_the_reason(world: SlackWorld) -> None:
    world.start()

    text = _texts(_loop(world, "UALICE", "check acme/widgets#7")["blocks"])

    assert "⏳ `phase-selection` — *waiting* — waiting for @alice, @carol to reply" in text
    assert "*Phase selection:* not made yet" in text
    assert "*Quiz attestations:* none yet" in text


def test_check_errors_are_plain_sentences(world: SlackWorld) -> None:
    assert _loop(world, "UALICE", "check nope")["text"] == (
        "not a work item reference: 'nope' (expected owner/repo#N or an issue URL)")
    assert _loop(world, "UALICE", "check acme/widgets#99")["text"] == (
        "acme/widgets#99 is not started.")
    assert _loop(world, "UALICE", "check a b")["text"].startswith("Usage: `/loop check")


def test_check_without_argument_lists_the_callers_items(world: SlackWorld) -> None:
    other = WorkItemRef("acme", "widgets", 8)
    world.tracker.set_issue(other, "Someone else's", author="dave")
    world.start()
    world.drain()  # the card records the issue author (carol)
    world.services.runtime.start(other)
    rows = "\n".join(f"- [ ] {t}" for t in SPEC_CHAIN)
    world.reply_on_github("alice", f"the-loop execute\n{rows}")

    alice = _loop(world, "UALICE", "check")
    carol = _loop(world, "UCAROL", "check")
    bob = _loop(world, "UBOB", "check")

    assert alice["text"] == "1 work item(s) involve @alice."
    assert "• `acme/widgets#7` — at `spec-explainer` (parked)" in _texts(alice["blocks"])
    assert carol["text"] == "1 work item(s) involve @carol."  # the issue author
    assert _texts(bob["blocks"]) == "No work items involve @bob yet."
    assert _loop(world, "UEVE", "check")["text"].startswith("Your Slack account is not linked")


def test_start_needs_an_authorized_linked_user(world: SlackWorld) -> None:
    assert _loop(world, "UBOB", "start acme/widgets#7")["text"] == (
        "@bob is not an authorized user, so nothing was started.")
    assert _loop(world, "UEVE", "start acme/widgets#7")["text"].startswith(
        "Your Slack account is not linked")
    assert world.services.store.load(REF) is None

    assert _loop(world, "UALICE", "start acme/widgets#7")["text"] == (
        "Started acme/widgets#7; it is at phase-selection.")
    assert _loop(world, "UALICE", "start acme/widgets#7")["text"] == (
        "acme/widgets#7 was already started; it is at phase-selection.")
    assert [e for e, _ in world.outbox()] == ["phase-selection-pending"]


def test_start_refuses_an_item_of_a_repository_nobody_watches(world: SlackWorld) -> None:
    answer = _loop(world, "UALICE", "start other/unwatched#5")
    assert answer["text"] == (
        "Nothing was started: other/unwatched is not a watched repository (github.repos: "
        "acme/widgets): nothing would ever advance its work items.")
    assert world.services.store.load(WorkItemRef("other", "unwatched", 5)) is None


# -- identity ----------------------------------------------------------------------------
def _code(text: str) -> str:
    match = re.search(r"`loopgate link ([A-Z0-9]+)`", text)
    assert match, text
    return match[1]


def _comment(author: str, body: str, cid: int = 500) -> Comment:
    return Comment(id=cid, author=author, body=body)


def test_linking_by_code(world: SlackWorld) -> None:
    answer = _loop(world, "UDAVE", "link @Dave")
    code = _code(answer["text"])
    assert answer["text"].startswith("To link this Slack account to @dave, comment")
    assert "on any issue of acme/widgets within 15 minutes (until 2026-03-01T12:15:00Z)" in (
        answer["text"])
    assert resolve_login(world.services, "UDAVE") is None

    linked = confirm_link_from_comment(world.services, REF,
                                       _comment("dave", f"Sure.\nloopgate link {code.lower()}"))

    assert linked == "UDAVE"
    assert resolve_login(world.services, "UDAVE") == "dave"
    assert slack_users_for_login(world.services, "DAVE") == ["UDAVE"]
    # The code works once.
    again = _comment("dave", f"loopgate link {code}")
    assert confirm_link_from_comment(world.services, REF, again) is None


def test_a_wrong_code_is_refused(world: SlackWorld) -> None:
    create_link_code(world.services, "UDAVE", "dave")

    assert confirm_link_from_comment(world.services, REF,
                                     _comment("dave", "loopgate link WRONGCODE2")) is None
    assert resolve_login(world.services, "UDAVE") is None


def test_an_expired_code_is_refused(world: SlackWorld) -> None:
    code = create_link_code(world.services, "UDAVE", "dave").code
    world.clock.advance(minutes=15, seconds=1)

    assert confirm_link_from_comment(world.services, REF,
                                     _comment("dave", f"loopgate link {code}")) is None
    assert resolve_login(world.services, "UDAVE") is None


@pytest.mark.parametrize(("author", "ref", "extra"), [
    ("mallory", REF, ""),  # the code was issued for @dave
    ("dave", WorkItemRef("elsewhere", "repo", 1), ""),  # not a configured repository
    ("dave", REF, SELF_MARKER),  # loopgate's own comment
])
def test_a_code_used_by_someone_else_elsewhere_or_by_loopgate_is_refused(
    world: SlackWorld, author: str, ref: WorkItemRef, extra: str,
) -> None:
    code = create_link_code(world.services, "UDAVE", "dave").code

    linked = confirm_link_from_comment(world.services, ref,
                                       _comment(author, f"loopgate link {code}\n{extra}"))

    assert linked is None
    assert resolve_login(world.services, "UDAVE") is None


def test_the_dispatcher_observer_links_and_never_raises(world: SlackWorld) -> None:
    code = create_link_code(world.services, "UDAVE", "dave").code
    observe = comment_observer(world.services)

    observe(REF, _comment("dave", f"loopgate link {code}"))
    observe(REF, None)  # type: ignore[arg-type]  # a bad comment is logged, not raised

    assert resolve_login(world.services, "UDAVE") == "dave"


def test_unlink_removes_the_stored_link_but_not_configuration(world: SlackWorld) -> None:
    code = create_link_code(world.services, "UDAVE", "dave").code
    confirm_link_from_comment(world.services, REF, _comment("dave", f"loopgate link {code}"))

    assert _loop(world, "UDAVE", "unlink")["text"] == "Your link was removed."
    assert resolve_login(world.services, "UDAVE") is None
    assert _loop(world, "UALICE", "unlink")["text"] == (
        "You had no stored link. The mapping in loopgate.yaml (slack.identities) is "
        "configuration and stays.")
    assert resolve_login(world.services, "UALICE") == "alice"


@pytest.mark.parametrize("login", ["-dave", "dave--x", "a" * 40, "da ve", ""])
def test_link_refuses_a_bad_login(world: SlackWorld, login: str) -> None:
    text = run_loop_command(world.services, "UDAVE", f"link {login}".strip()).text

    assert text.endswith("is not a GitHub login") or text.startswith("Usage: `/loop link")


# -- the one error handler ----------------------------------------------------------------
def test_an_unexpected_error_is_logged_and_answered_with_one_plain_sentence(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said: list[dict[str, Any]] = []

    _on_error(RuntimeError("boom at line 3"), {"response_url": "http://127.0.0.1:1/r"},
              respond=lambda **kw: said.append(kw))

    assert said == [{"text": GENERIC_ERROR, "response_type": "ephemeral",
                     "replace_original": False}]
    assert "Traceback" not in said[0]["text"] and "boom" not in said[0]["text"]
    assert "slack listener failed: RuntimeError" in caplog.text
