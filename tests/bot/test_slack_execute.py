"""Execute on the card, tier 1: the listener called directly with a mock ``ack`` (the
Web API calls go to the loopback fake through the real WebClient)."""

from __future__ import annotations

import threading
from typing import Any

from bot.slack.listeners.actions.execute import REFUSED_EVENT, on_execute
from bot.slack.listeners.actions.ticks import on_tick
from bot.slack.slack_tables import load_thread
from tests.bot.conftest import (
    CHANNEL,
    EXPLAINER_NODES,
    REF,
    SlackWorld,
    execute_body,
    state_values,
)

PHASES_0 = ["brainstorming", "requirements-definition", "requirements-approval", "design",
            "test-planning", "design-approval", "tasks-breakdown", "implementation",
            "verification", "self-review"]


class Ack:
    """A mock ``ack`` that records how many Slack calls had been made when it ran."""

    def __init__(self, world: SlackWorld) -> None:
        self.world = world
        self.seen: list[int] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append(len(self.world.fake.calls))


def _click(world: SlackWorld, user: str, values: dict[str, Any] | None = None,
           concurrent: bool = False) -> Ack:
    ack = Ack(world)
    calls_before = len(world.fake.calls)
    thread = load_thread(world.store, REF)
    ts = thread["ts"] if thread else "1503435956.000001"
    on_execute(ack, execute_body(world, user, values, ts=ts), world.client,
               {"services": world.services})
    if concurrent:  # another click's calls may interleave; the ack still ran exactly once
        assert len(ack.seen) == 1
    else:
        assert ack.seen == [calls_before], "ack must come first, before any other work"
    return ack


def _ephemerals(world: SlackWorld, user: str) -> list[str]:
    return [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == user]


def test_execute_by_an_authorized_linked_user_selects_exactly_what_the_state_says(
    world: SlackWorld,
) -> None:
    world.start()
    world.drain()
    [card] = world.fake.calls_to("chat.postMessage")
    values = state_values(phases={0: [p for p in PHASES_0 if p != "brainstorming"]},
                          opt_ins=["design-critic-review"], explainer=True)

    _click(world, "UALICE", values)

    state = world.state()
    assert state.current_node == "requirements-definition"
    assert state.nodes["phase-selection"].outcome == "selected"
    decision = state.decisions["phase-selection"]
    assert (decision["by"], decision["via"]) == ("@alice", "slack")
    assert decision["skips"] == ["brainstorming"]
    assert decision["optIns"] == ["design-critic-review"]
    assert state.skips["brainstorming"].to_json() == {"via": "selection", "token": "brainstorming",
                                            "by": "@alice", "reason": "",
                                            "at": "2026-03-01T12:00:00Z"}
    assert list(state.opt_ins) == ["design-critic-review"]
    [confirmation] = world.comments("Phase selection recorded")
    assert "by @alice — from Slack." in confirmation.body
    thread = load_thread(world.store, REF)
    assert thread is not None and thread["kind"] == "status"
    assert card.args["channel"] == CHANNEL
    [update] = world.fake.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, thread["ts"])
    blocks = update.args["blocks"]
    assert not [b for b in blocks if b["type"] == "actions"], "the card is read-only now"
    text = str(blocks)
    assert "Phase selection recorded* by @alice — from Slack." in text
    assert "Skipped by @alice: `brainstorming`." in text
    assert _ephemerals(world, "UALICE") == []


def test_untouched_blocks_keep_their_defaults_on_execute(world: SlackWorld) -> None:
    world.start()

    _click(world, "UALICE", {})  # Slack sent no state for any block

    state = world.state()
    assert state.decisions["phase-selection"]["skips"] == []
    assert state.decisions["phase-selection"]["optIns"] == []
    assert state.decisions["phase-selection"]["explainer"] is True
    assert state.current_node == "brainstorming"
    assert "design-critic-review" not in state.opt_ins


def test_unticking_the_explainer_setting_in_slack_skips_the_four_explainer_nodes(
    world: SlackWorld,
) -> None:
    world.start()

    _click(world, "UALICE", state_values(explainer=False))

    state = world.state()
    for node in EXPLAINER_NODES:
        skip = state.skips[node]
        assert (skip.via, skip.token, skip.by, skip.reason) == (
            "selection", "explainer", "@alice", "")
    [confirmation] = world.comments("Phase selection recorded")
    assert ("Explainer and quizzes: off, as declared by @alice — spec-explainer, spec-quiz, "
            "code-explainer, code-quiz skipped") in confirmation.body


def test_an_unlinked_clicker_selects_nothing(world: SlackWorld) -> None:
    world.start()

    _click(world, "UEVE", state_values(explainer=False))

    state = world.state()
    assert state.current_node == "phase-selection"
    assert "phase-selection" not in state.decisions
    assert state.skips == {}
    [text] = _ephemerals(world, "UEVE")
    assert "not linked to a GitHub login" in text and "/loop link" in text
    assert world.events(REFUSED_EVENT) == [{"slackUser": "UEVE", "login": "",
                                            "reason": "not-linked"}]
    assert world.fake.calls_to("chat.update") == []
    assert world.comments("Phase selection recorded") == []


def test_an_unauthorized_linked_clicker_selects_nothing(world: SlackWorld) -> None:
    world.start()

    _click(world, "UBOB")

    state = world.state()
    assert "phase-selection" not in state.decisions
    [text] = _ephemerals(world, "UBOB")
    assert text.startswith("@bob is not an authorized user")
    assert world.events(REFUSED_EVENT) == [{"slackUser": "UBOB", "login": "bob",
                                            "reason": "not-authorized"}]


def test_a_double_click_makes_one_decision(world: SlackWorld) -> None:
    world.start()
    values = state_values(opt_ins=["design-critic-review"])
    threads = [threading.Thread(target=_click, args=(world, user, values, True))
               for user in ("UALICE", "UCAROL")]

    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    state = world.state()
    winner = state.decisions["phase-selection"]["by"]
    assert winner in ("@alice", "@carol")
    assert len(world.comments("Phase selection recorded")) == 1
    loser = "UCAROL" if winner == "@alice" else "UALICE"
    [text] = _ephemerals(world, loser)
    assert text.startswith(f"Phase selection of acme/widgets#7 was already selected by {winner}")

    _click(world, "UALICE", state_values(explainer=False))  # a third click, later

    assert world.state().decisions["phase-selection"] == state.decisions["phase-selection"]
    assert world.state().skips == state.skips
    assert len(world.comments("Phase selection recorded")) == 1


def test_execute_after_a_github_answer_says_already_selected_and_changes_nothing(
    world: SlackWorld,
) -> None:
    world.start()
    world.reply_on_github("carol", "the-loop execute\n- [ ] brainstorming")
    before = world.state()

    _click(world, "UALICE", state_values(explainer=False))

    after = world.state()
    assert after.decisions == before.decisions
    assert after.skips == before.skips and after.current_node == before.current_node
    [text] = _ephemerals(world, "UALICE")
    assert text == ("Phase selection of acme/widgets#7 was already selected by @carol "
                    "(via reply); nothing changed.")
    # The card still showed the Execute button: it is rewritten read-only.
    [update] = world.fake.calls_to("chat.update")
    assert "by @carol" in str(update.args["blocks"])


def test_a_checkbox_tick_is_acked_and_changes_nothing(world: SlackWorld) -> None:
    world.start()
    before = world.state()
    acks: list[int] = []

    on_tick(lambda *a, **k: acks.append(1))

    assert acks == [1]
    assert world.state().decisions == before.decisions
    assert world.fake.calls == [c for c in world.fake.calls if c.method == "chat.postMessage"]


def test_execute_on_an_item_not_started_is_refused_plainly(world: SlackWorld) -> None:
    _click(world, "UALICE")

    [text] = _ephemerals(world, "UALICE")
    assert text == "acme/widgets#7 is not started."
