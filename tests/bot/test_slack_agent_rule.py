"""Issue 24 §2 meets the Slack surface: the person who dispatched the agent (whose
``the-loop execute`` answered the phase selection) — or whom ``agents.requesters`` names
for an agent bot's pull request — may not approve a gate whose rule has
``preventSelfApproval`` and ``agentAuthored``. The click's pre-check and App Home use the
engine's own check, so that person is told at once why and is not listed as awaited; a
failed commits read fails closed. Listeners are called directly; Web API calls go to the
loopback fake Slack through the real WebClient; GitHub is the in-memory tracker."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack import approval_clicks
from bot.slack.blocks import ids
from bot.slack.home_tab import home_rows
from bot.slack.listeners.actions.approve import on_approve, on_open_modal
from engine.dispatch import PullCommit
from tests.bot.conftest import REF, SlackWorld, approval_click, build_world, slack_config
from tests.fakes.slack import FakeSlack

GATE = "requirements-approval"
AWARE = {"approvals": 1, "preventSelfApproval": True, "agentAuthored": {"approvals": 2}}
BOT = "copilot-swe-agent[bot]"
DISPATCHED = (f"@alice may not answer `{GATE}` of acme/widgets#7 (@alice dispatched the "
              "agent that did this work (the-loop execute), and this gate has "
              "preventSelfApproval: who asked for the work cannot approve it), so nothing "
              "was decided.")


class Ack:
    """Records each ack's keyword arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(dict(kwargs))


@pytest.fixture
def make_world(tmp_path: Path, fake_slack: FakeSlack,
               slack_env: None) -> Iterator[Callable[..., SlackWorld]]:
    """``make_world(**config)``: bob, alice and carol approve ``GATE`` under the agent
    rule; alice dispatches the agent (``walk_to_requirements_approval``), carol opened
    the issue. Stopped and closed at teardown."""
    made: list[SlackWorld] = []

    def make(**extra: Any) -> SlackWorld:
        config = slack_config(fake_slack, authorizedUsers=["alice", "bob", "carol"],
                              gates={GATE: AWARE}, **extra)
        world = build_world(tmp_path, fake_slack, config)
        made.append(world)
        return world

    yield make
    for world in made:
        world.worker.stop()
        assert not world.worker.running
        world.services.close()


def _posted(world: SlackWorld) -> tuple[str, str]:
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    return str(message.response["ts"]), str(actions["elements"][0]["value"])


def _ephemerals(world: SlackWorld, user: str) -> list[str]:
    return [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == user]


def _fed(world: SlackWorld) -> list[Any]:
    """Count what reaches the gate: every ``runtime.advance`` call's event."""
    fed: list[Any] = []
    advance = world.services.runtime.advance

    def spy(ref: Any, event: Any, *args: Any, **kwargs: Any) -> Any:
        fed.append(event)
        return advance(ref, event, *args, **kwargs)

    world.services.runtime.advance = spy  # type: ignore[method-assign,assignment]
    return fed


def _approve(world: SlackWorld, user: str, value: str, ts: str) -> None:
    ack = Ack()
    on_approve(ack, approval_click(world, user, ids.ACTION_APPROVE, value, ts=ts),
               world.client, {"services": world.services})
    assert ack.calls == [{}]


def _bot_pull(world: SlackWorld) -> None:
    """An agent bot's pull request delivers the item; its commit is the bot's,
    co-authored by bob (as GitHub's coding agent does for who asked it)."""
    world.tracker.add_pull_request(REF, 12, author=BOT, author_kind="Bot")
    world.tracker.set_pull_commits(REF.__class__(REF.owner, REF.repo, 12), [PullCommit(
        "a" * 40, "Add widgets\n\nCo-authored-by: Bob <7+bob@users.noreply.github.com>",
        author_login=BOT, author_kind="Bot")])


def test_the_dispatcher_is_refused_before_the_modal_opens_and_told_why(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    ts, value = _posted(world)
    before = world.state()

    on_open_modal(Ack(), approval_click(world, "UALICE", ids.ACTION_REQUEST_CHANGES, value,
                                        ts=ts), world.client, {"services": world.services})

    assert world.fake.calls_to("views.open") == []
    assert _ephemerals(world, "UALICE") == [DISPATCHED]
    assert world.state().surface == before.surface
    # Control: an approver who did not dispatch gets the form.
    on_open_modal(Ack(), approval_click(world, "UBOB", ids.ACTION_REQUEST_CHANGES, value,
                                        ts=ts), world.client, {"services": world.services})
    assert len(world.fake.calls_to("views.open")) == 1


def test_the_dispatchers_approve_click_is_refused_by_the_pre_check_not_fed_to_the_gate(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    ts, value = _posted(world)
    fed = _fed(world)
    comments = len(world.tracker.comments_on(REF))

    _approve(world, "UALICE", value, ts)

    assert fed == []
    assert _ephemerals(world, "UALICE") == [DISPATCHED]
    assert world.state().current_node == GATE
    assert len(world.tracker.comments_on(REF)) == comments

    _approve(world, "UBOB", value, ts)  # control: bob's approval reaches the gate
    assert len(fed) == 1
    assert [a["by"] for a in world.state().surface["approvals"][GATE]["approvals"]] == ["bob"]


def test_who_asked_the_agent_bot_for_its_pull_request_is_refused_at_once(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(agents={"requesters": {BOT: "co-author"}})
    ts, value = _posted(world)
    _bot_pull(world)
    fed = _fed(world)

    _approve(world, "UBOB", value, ts)

    assert fed == []
    assert _ephemerals(world, "UBOB") == [
        f"@bob may not answer `{GATE}` of acme/widgets#7 (@bob asked the agent for the pull "
        "request that delivers this work (agents.requesters), and this gate has "
        "preventSelfApproval: who asked for the work cannot approve it), so nothing was "
        "decided."]
    assert home_rows(world.services, "bob")[0] == []


def test_a_failed_commits_read_fails_closed_the_click_is_told_and_the_gate_waits(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    ts, value = _posted(world)
    _bot_pull(world)
    world.tracker.failing.add("pull_commits")
    fed = _fed(world)
    before = world.state()

    _approve(world, "UBOB", value, ts)

    assert fed == []
    assert _ephemerals(world, "UBOB") == [
        f"`{GATE}` of acme/widgets#7 cannot check your answer now: who asked the agent for "
        "this work could not be read (pull_commits: tracker unavailable (simulated)). "
        "Nothing was decided; the gate waits. Try again in a moment."]
    after = world.state()
    assert after.current_node == GATE
    assert after.surface == before.surface
    # App Home lists the gate for nobody while it cannot be checked (fail closed).
    assert home_rows(world.services, "bob")[0] == []

    world.tracker.failing.discard("pull_commits")
    _approve(world, "UBOB", value, ts)
    assert len(fed) == 1
    assert [a["by"] for a in world.state().surface["approvals"][GATE]["approvals"]] == ["bob"]


def test_app_home_and_the_mentions_do_not_wait_on_the_dispatcher(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    _posted(world)
    state = world.state()

    assert [row.node for row in home_rows(world.services, "alice")[0]] == []
    assert [row.node for row in home_rows(world.services, "bob")[0]] == [GATE]
    # carol opened the issue; alice dispatched the agent: only bob is waited on.
    assert approval_clicks.awaited(world.services, GATE, state) == ["bob"]
    assert approval_clicks.approver_slack_users(world.services, GATE, state) == (["UBOB"], [])
    # Whose work it is cannot be read: everyone but the walk's dispatcher is mentioned.
    world.tracker.failing.add("issue_info")
    assert approval_clicks.awaited(world.services, GATE, state) == ["bob", "carol"]


def test_the_approval_message_names_the_awaited_without_the_dispatcher(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    ts, _ = _posted(world)
    message = world.approval_message()
    text = json.dumps(message.args["blocks"])
    assert "<@UBOB>" in text
    assert "<@UALICE>" not in text
