"""Issue 19 §2 on Slack: a gate sent back (changes requested on visit 1) and approved on
visit 2 — each visit's approval message says its own answer, a click on the first visit's
message while the second waits is refused naming both visits, and App Home shows the
current visit. Listeners and the worker run against the loopback fake Slack."""

from __future__ import annotations

from typing import Any

from bot.slack.blocks import ids
from bot.slack.blocks.home_blocks import home_view, items_text
from bot.slack.home_tab import home_rows
from bot.slack.listeners.actions.approve import on_approve
from tests.bot.conftest import REF, SlackWorld, approval_click

GATE = "requirements-approval"
AGAIN = "---\nstatus: approved\n---\n# R\n\n## Requirements\n\n- x, measured\n"


class Ack:
    """Records each ack's arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(dict(kwargs))


def _approval_posts(world: SlackWorld) -> list[Any]:
    return [c for c in world.fake.calls_to("chat.postMessage")
            if "` waits for an approval" in str(c.args.get("text"))]


def _value(message: Any) -> str:
    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    return str(actions["elements"][0]["value"])


def _updates(world: SlackWorld, ts: str) -> list[Any]:
    return [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]


def _head(update: Any) -> str:
    return str(update.args["blocks"][0]["text"]["text"])


def _second_visit(world: SlackWorld) -> tuple[Any, Any]:
    """Visit 1 answered ``changes requested`` on GitHub by alice, visit 2 waiting; returns
    both visits' approval messages."""
    world.walk_to_requirements_approval()
    world.drain()
    [first] = _approval_posts(world)
    world.clock.advance(minutes=5)
    state = world.reply_on_github("alice", "changes requested: R1 is vague")
    assert state.current_node == "requirements-definition"
    world.drain()
    world.worker.sweep()
    world.clock.advance(minutes=30)
    world.artifacts.write(REF, "requirements.md", AGAIN)
    state = world.services.runtime.complete(REF, "requirements-definition", "agent")
    assert state.current_node == GATE, state.parked
    world.drain()
    second = _approval_posts(world)[-1]
    assert second.response["ts"] != first.response["ts"]
    return first, second


def test_each_visits_message_says_its_own_answer_and_history_keeps_both(
        world: SlackWorld) -> None:
    first, second = _second_visit(world)
    [closed] = _updates(world, str(first.response["ts"]))
    assert _head(closed).startswith(f"✋ Changes requested — `{GATE}` of ")
    assert "by @alice on GitHub" in _head(closed) and "(visit" not in _head(closed)

    world.clock.advance(minutes=10)
    state = world.reply_on_github("carol", "approved")
    assert state.current_node == "design"
    world.drain()
    world.worker.sweep()

    [done] = _updates(world, str(second.response["ts"]))
    assert _head(done).startswith(f"✅ Approved — `{GATE}` of ")
    assert "by @carol on GitHub at 2026-03-01T12:45:00Z (visit 2)" in _head(done)
    assert done.args["text"] == f"{REF}: {GATE} — approved"
    assert len(_updates(world, str(first.response["ts"]))) == 1  # visit 1's stays as it was
    state = world.state()
    assert (state.decisions[GATE]["by"], state.decisions[GATE]["outcome"]) == (
        "@carol", "approved")
    assert [(v.number, v.decision.by, v.decision.outcome) for v in state.history(GATE)] == [
        (1, "@alice", "changes-requested"), (2, "@carol", "approved")]


def test_a_click_on_the_first_visits_message_while_the_second_waits_is_refused(
        world: SlackWorld) -> None:
    first, second = _second_visit(world)
    ack = Ack()
    on_approve(ack, approval_click(world, "UALICE", ids.ACTION_APPROVE, _value(first),
                                   ts=str(first.response["ts"])),
               world.client, {"services": world.services})
    assert len(ack.calls) == 1
    assert world.state().current_node == GATE and world.state().decision(GATE) is None
    [said] = [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
              if c.args.get("user") == "UALICE"]
    assert said == (f"This message is outdated: it was for visit 1 of `{GATE}` of {REF} "
                    "(✋ Changes requested by @alice); "
                    f"`{GATE}` waits again (visit 2) — answer its newer message. "
                    "Nothing changed.")

    on_approve(Ack(), approval_click(world, "UALICE", ids.ACTION_APPROVE, _value(second),
                                     ts=str(second.response["ts"])),
               world.client, {"services": world.services})
    state = world.state()
    assert state.current_node == "design"
    assert (state.decisions[GATE]["by"], state.decisions[GATE]["via"]) == ("@alice", "slack")
    [done] = _updates(world, str(second.response["ts"]))
    assert "✅ Approved — " in _head(done) and "by @alice from Slack" in _head(done)
    assert _head(done).endswith("(visit 2)")


def test_app_home_shows_the_current_visit(world: SlackWorld) -> None:
    _second_visit(world)
    waiting, items = home_rows(world.services, "carol")
    [row] = [r for r in waiting if r.node == GATE]
    assert (row.visit, row.previous) == (2, "visit 1: ✋ Changes requested by @alice")
    [item] = items  # visit 2 is undecided: visit 1's answer is no longer current
    assert item.decision == "last decision: selected at `phase-selection` by @alice"

    view = home_view("carol", waiting, items)
    texts = [b["text"]["text"] for b in view["blocks"] if b["type"] == "section"]
    assert any(t.startswith(f"*{REF}* · `{GATE}` (approval) — waiting since ")
               and " — visit 2 (visit 1: ✋ Changes requested by @alice)" in t for t in texts)

    world.clock.advance(minutes=10)
    world.reply_on_github("carol", "approved")
    waiting, items = home_rows(world.services, "carol")
    assert [r for r in waiting if r.node == GATE] == []
    assert items[0].decision == (f"last decision: ✅ Approved at `{GATE}` by @carol "
                                 "(visit 2)")
    text = items_text(items)
    assert text.endswith(f"(parked) — last decision: ✅ Approved at `{GATE}` by @carol "
                         "(visit 2)")


def test_a_first_visit_button_cannot_decide_a_second_visit_entered_the_same_second(
        world: SlackWorld) -> None:
    # Issue 19 §2: the buttons named ref|node|enteredAt only. A fast walk back re-enters the
    # gate within the clock's second, so both visits share enteredAt and the first visit's
    # button decided the second. The button names its visit now.
    world.walk_to_requirements_approval()
    world.drain()
    [first] = _approval_posts(world)
    state = world.reply_on_github("alice", "changes requested: R1 is vague")
    assert state.current_node == "requirements-definition"
    world.artifacts.write(REF, "requirements.md", AGAIN)
    state = world.services.runtime.complete(REF, "requirements-definition", "agent")
    assert state.current_node == GATE
    [one, two] = state.history(GATE)
    assert one.entered_at == two.entered_at  # the same clock second
    world.drain()
    second = _approval_posts(world)[-1]
    # a button as loopgate posted it before buttons named their visit: it cannot tell the
    # two visits apart, so it decides neither
    legacy = f"{REF}|{GATE}|{one.entered_at}"
    on_approve(Ack(), approval_click(world, "UALICE", ids.ACTION_APPROVE, legacy,
                                     ts=str(first.response["ts"])),
               world.client, {"services": world.services})
    assert world.state().current_node == GATE and world.state().decision(GATE) is None
    assert _value(first).endswith("|1")
    assert _value(second).endswith("|2") and second.response["ts"] != first.response["ts"]

    on_approve(Ack(), approval_click(world, "UALICE", ids.ACTION_APPROVE, _value(first),
                                     ts=str(first.response["ts"])),
               world.client, {"services": world.services})
    assert world.state().current_node == GATE and world.state().decision(GATE) is None
    said = [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == "UALICE"]
    assert said[0] == (f"This message is outdated: `{GATE}` of {REF} waits again (visit 2) "
                       "and this message does not say which visit it was for — answer its "
                       "newer message. Nothing changed.")
    assert said[1].startswith(
        f"This message is outdated: it was for visit 1 of `{GATE}` of {REF}")
    assert f"`{GATE}` waits again (visit 2) — answer its newer message." in said[1]

    # positive control: the second visit's button decides it
    on_approve(Ack(), approval_click(world, "UALICE", ids.ACTION_APPROVE, _value(second),
                                     ts=str(second.response["ts"])),
               world.client, {"services": world.services})
    state = world.state()
    assert state.current_node == "design"
    assert [(v.number, v.decision.by) for v in state.history(GATE)] == [
        (1, "@alice"), (2, "@alice")]


def test_a_button_posted_before_buttons_named_their_visit_is_read_both_ways() -> None:
    from bot.slack.blocks.approval import GateRef

    old = GateRef.parse(f"{REF}|{GATE}|2026-03-01T12:00:00Z")
    assert (old.entered_at, old.visit) == ("2026-03-01T12:00:00Z", 0)
    new = GateRef(REF, GATE, "2026-03-01T12:00:00Z", 2)
    assert new.value() == f"{REF}|{GATE}|2026-03-01T12:00:00Z|2"
    assert GateRef.parse(new.value()) == new
    assert old.value() == f"{REF}|{GATE}|2026-03-01T12:00:00Z"
    for bad in (f"{REF}|{GATE}|x|two", f"{REF}|{GATE}|x|2|3", f"{REF}|{GATE}|x|12345678"):
        try:
            GateRef.parse(bad)
        except ValueError:
            continue
        raise AssertionError(f"parsed {bad!r}")
