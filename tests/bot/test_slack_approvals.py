"""Issue 12 §1, tier 1: approve from Slack — the approval gates' buttons and the decision
modal, listeners called directly with a recording ``ack`` (Web API calls go to the
loopback fake through the real WebClient)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from bot.slack.blocks import ids
from bot.slack.listeners.actions.approve import on_approve, on_open_modal
from bot.slack.listeners.views.decision import on_decision_submit
from engine.hooks.chat_decision import decision_marker as slack_decision_marker
from tests.bot.conftest import (
    CHANNEL,
    REF,
    SlackWorld,
    approval_click,
    view_submission,
)


class Ack:
    """Records each ack's arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(dict(kwargs))


def _posted(world: SlackWorld) -> tuple[str, str, list[dict[str, Any]]]:
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    value = actions["elements"][0]["value"]
    return str(message.response["ts"]), value, message.args["blocks"]


def _click(world: SlackWorld, user: str, action_id: str, value: str, ts: str) -> Ack:
    ack = Ack()
    listener = on_approve if action_id == ids.ACTION_APPROVE else on_open_modal
    listener(ack, approval_click(world, user, action_id, value, ts=ts), world.client,
             {"services": world.services})
    assert len(ack.calls) == 1
    return ack


def _ephemerals(world: SlackWorld, user: str) -> list[str]:
    return [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == user]


def test_entering_an_approval_gate_posts_a_thread_message_with_three_buttons(
        world: SlackWorld) -> None:
    ts, value, blocks = _posted(world)

    message = world.approval_message()
    assert message.args["thread_ts"] == world.fake.calls_to("chat.postMessage")[0].response["ts"]
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert [(e["text"]["text"], e["action_id"], e.get("style")) for e in actions["elements"]] == [
        ("Approve", ids.ACTION_APPROVE, "primary"),
        ("Approve with comments", ids.ACTION_APPROVE_COMMENTS, None),
        ("Request changes", ids.ACTION_REQUEST_CHANGES, "danger")]
    entered = world.state().nodes["requirements-approval"].entered_at
    assert value == f"acme/widgets#7|requirements-approval|{entered}|1"  # issue 19 §2: visit
    assert "a person approves the requirements or requests changes" in blocks[0]["text"]["text"]


def test_approve_by_a_linked_authorized_user_passes_the_gate_via_slack_mirrors_and_updates(
        world: SlackWorld) -> None:
    ts, value, _ = _posted(world)

    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)

    state = world.state()
    assert state.current_node == "design"
    decision = state.decisions["requirements-approval"]
    assert (decision["by"], decision["outcome"], decision["via"]) == (
        "@alice", "approved", "slack")
    assert decision["at"] == "2026-03-01T12:00:00Z"
    mirrors = world.comments(slack_decision_marker("requirements-approval"))
    assert len(mirrors) == 1
    assert mirrors[0].body.startswith(
        "✅ **Approved** at `requirements-approval` by @alice — from Slack.")
    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    assert update.args["text"] == "acme/widgets#7: requirements-approval — approved"
    assert "✅ Approved — `requirements-approval`" in update.args["blocks"][0]["text"]["text"]
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]
    assert _ephemerals(world, "UALICE") == []


def test_request_changes_opens_a_modal_and_its_submission_routes_back_with_the_text(
        world: SlackWorld) -> None:
    ts, value, _ = _posted(world)

    _click(world, "UCAROL", ids.ACTION_REQUEST_CHANGES, value, ts)
    [opened] = world.fake.calls_to("views.open")
    view = opened.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["callback_id"] == ids.VIEW_DECISION
    assert world.state().current_node == "requirements-approval"  # nothing yet

    ack = Ack()
    on_decision_submit(ack, view_submission(view, "UCAROL", "Split R2 into two."),
                       world.client, {"services": world.services})

    assert ack.calls == [{}]
    state = world.state()
    assert state.current_node == "requirements-definition"
    decision = state.decisions["requirements-approval"]
    assert (decision["by"], decision["outcome"], decision["via"], decision["text"]) == (
        "@carol", "changes-requested", "slack", "Split R2 into two.")
    [mirror] = world.comments(slack_decision_marker("requirements-approval"))
    assert "✋ **Changes requested** at `requirements-approval` by @carol" in mirror.body
    assert "> Split R2 into two." in mirror.body


def test_approve_with_comments_records_the_review_comments(world: SlackWorld) -> None:
    ts, value, _ = _posted(world)
    _click(world, "UALICE", ids.ACTION_APPROVE_COMMENTS, value, ts)
    view = world.fake.calls_to("views.open")[0].args["view"]
    view = json.loads(view) if isinstance(view, str) else view

    on_decision_submit(Ack(), view_submission(view, "UALICE", "Nit: rename R3.\n"
                                              "request changes next time"),
                       world.client, {"services": world.services})

    state = world.state()
    assert state.current_node == "design"
    assert state.decisions["requirements-approval"]["outcome"] == "approved-with-comments"
    [entry] = state.surface["reviewComments"]
    assert entry["by"] == "@alice" and "> Nit: rename R3." in entry["body"]


@pytest.mark.parametrize(("user", "expected"), [
    ("UEVE", "Your Slack account is not linked to a GitHub login, so nothing was decided. "
             "Run `/loop link &lt;github-login&gt;` first."),  # Slack's escaping
    ("UBOB", "@bob may not answer `requirements-approval` of acme/widgets#7 (@bob is not "
             "among the approvers of this gate (@alice, @carol)), so nothing was decided."),
])
def test_an_unlinked_or_unauthorized_click_gets_an_ephemeral_and_changes_nothing(
        world: SlackWorld, user: str, expected: str, caplog: pytest.LogCaptureFixture) -> None:
    ts, value, _ = _posted(world)
    caplog.set_level(logging.INFO, logger="bot.slack.approval_clicks")

    for action in (ids.ACTION_APPROVE, ids.ACTION_REQUEST_CHANGES):
        _click(world, user, action, value, ts)
    if user == "UBOB":
        # Linked: the modal opens at once (the trigger_id lasts 3 s) and the gate's rule,
        # which may read GitHub, refuses the submission after the ack.
        [opened] = world.fake.calls_to("views.open")
        ack = Ack()
        on_decision_submit(ack, view_submission(opened.args["view"], user, "No."),
                           world.client, {"services": world.services})
        assert ack.calls == [{}]
    else:
        assert world.fake.calls_to("views.open") == []  # unlinked: known without GitHub

    assert _ephemerals(world, user) == [expected, expected]
    assert world.state().current_node == "requirements-approval"
    assert "requirements-approval" not in world.state().decisions
    assert world.comments(slack_decision_marker("requirements-approval")) == []


def test_a_click_on_an_outdated_message_says_the_gate_moved(world: SlackWorld) -> None:
    ts, value, _ = _posted(world)
    world.reply_on_github("carol", "approved")  # answered on GitHub first

    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)

    [said] = _ephemerals(world, "UALICE")
    assert said == ("This message is outdated: `requirements-approval` of acme/widgets#7 is no "
                    "longer waiting (✅ Approved by @carol); the item is at `design`. Nothing "
                    "changed.")
    assert world.state().decisions["requirements-approval"]["by"] == "@carol"
    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    assert "by @carol on GitHub" in update.args["blocks"][0]["text"]["text"]


def test_a_github_decision_rewrites_the_open_message_on_the_next_drain(
        world: SlackWorld) -> None:
    ts, _value, _ = _posted(world)

    world.reply_on_github("carol", "approved")
    world.drain()

    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    assert update.args["text"] == "acme/widgets#7: requirements-approval — approved"


def test_bad_input_unparsable_value_and_unknown_item_get_an_ephemeral_and_one_log_line(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    ts, _value, _ = _posted(world)
    caplog.set_level(logging.INFO)
    caplog.clear()

    _click(world, "UALICE", ids.ACTION_APPROVE, "not a gate", ts)
    records = [r for r in caplog.records if r.name.startswith("bot.")]
    assert [r.getMessage() for r in records] == [
        "approval click refused: not a gate reference: 'not a gate'"]
    caplog.clear()
    _click(world, "UALICE", ids.ACTION_APPROVE, "acme/gadgets#9|requirements-approval|x", ts)
    records = [r for r in caplog.records if r.name.startswith("bot.")]
    assert len(records) == 1 and "unknown-item" in records[0].getMessage()

    assert _ephemerals(world, "UALICE") == [
        "This button names no gate loopgate can read; nothing changed.",
        "acme/gadgets#9 is not a work item loopgate knows; nothing changed."]
    assert world.state().current_node == "requirements-approval"


def _modal(world: SlackWorld, user: str = "UALICE") -> dict[str, Any]:
    ts, value, _ = _posted(world)
    _click(world, user, ids.ACTION_REQUEST_CHANGES, value, ts)
    view = world.fake.calls_to("views.open")[0].args["view"]
    return json.loads(view) if isinstance(view, str) else view


@pytest.mark.parametrize("text", [None, "", "   \n "])
def test_a_modal_with_empty_required_comments_gets_a_modal_error_and_changes_nothing(
        world: SlackWorld, text: str | None, caplog: pytest.LogCaptureFixture) -> None:
    view = _modal(world)
    caplog.set_level(logging.INFO)
    caplog.clear()
    ack = Ack()

    on_decision_submit(ack, view_submission(view, "UALICE", text), world.client,
                       {"services": world.services})

    assert ack.calls == [{"response_action": "errors", "errors": {
        ids.BLOCK_DECISION_TEXT: "Comments are required for this answer."}}]
    assert world.state().current_node == "requirements-approval"
    assert len([r for r in caplog.records if r.name.startswith("bot.")]) == 1


def test_a_view_submission_for_a_gate_that_moved_gets_a_modal_error(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    view = _modal(world)
    world.reply_on_github("carol", "approved")
    caplog.set_level(logging.INFO)
    caplog.clear()
    ack = Ack()

    on_decision_submit(ack, view_submission(view, "UALICE", "too late"), world.client,
                       {"services": world.services})

    [call] = ack.calls
    assert call["response_action"] == "errors"
    assert call["errors"][ids.BLOCK_DECISION_TEXT].startswith("This message is outdated")
    assert world.state().decisions["requirements-approval"]["by"] == "@carol"
    assert len([r for r in caplog.records if r.name.startswith("bot.")]) == 1


def test_a_view_submission_with_unparsable_metadata_gets_a_modal_error(
        world: SlackWorld) -> None:
    view = {**_modal(world), "private_metadata": "{not json"}
    ack = Ack()

    on_decision_submit(ack, view_submission(view, "UALICE", "x"), world.client,
                       {"services": world.services})

    assert ack.calls[0]["errors"] == {
        ids.BLOCK_DECISION_TEXT: "loopgate could not read this form; nothing changed."}
    assert world.state().current_node == "requirements-approval"
    assert CHANNEL and REF


def test_a_failed_home_refresh_after_a_click_leaves_the_decision_recorded_and_told_nothing_wrong(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    from bot.slack.home_tab import publish_home

    ts, value, _ = _posted(world)
    publish_home(world.services, world.client, "UALICE")  # she has opened her Home tab
    world.fake.fail_method("views.publish", "invalid_arguments")
    caplog.set_level(logging.WARNING, logger="bot.slack.home_tab")

    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)  # raises nothing

    state = world.state()
    assert state.current_node == "design"
    assert state.decisions["requirements-approval"]["by"] == "@alice"
    assert [c.args["ts"] for c in world.fake.calls_to("chat.update")] == [ts]
    assert _ephemerals(world, "UALICE") == []
    assert len(world.fake.all_calls_to("views.publish")) == 2
    assert [r.getMessage() for r in caplog.records if r.name == "bot.slack.home_tab"] == [
        "home tabs showing acme/widgets#7 not refreshed for 1 of 1 users (invalid_arguments)"]


def test_a_slack_request_for_changes_is_quoted_in_the_new_assignment(world: SlackWorld) -> None:
    # Issue 23 ("Smaller"): the words typed in the modal reach the agent's next assignment.
    ts, value, _ = _posted(world)
    world.clock.advance(minutes=5)  # the review comes after the first assignment
    _click(world, "UCAROL", ids.ACTION_REQUEST_CHANGES, value, ts)
    view = world.fake.calls_to("views.open")[0].args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    on_decision_submit(Ack(), view_submission(view, "UCAROL", "Split R2 into two."),
                       world.client, {"services": world.services})
    assert world.state().current_node == "requirements-definition"
    again = world.comments("the-loop:assignment requirements-definition")[-1]
    assert ("- Changes requested by @carol at `requirements-approval`; change what they ask "
            "for (the gate will not accept `requirements.md` or `bugfix.md` unchanged):\n\n"
            "  > Split R2 into two.\n") in again.body
