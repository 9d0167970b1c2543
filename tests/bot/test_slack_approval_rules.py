"""Issue 11 §2 meets issue 12 §1, tier 1: a gate's approval rules (``gates.<node>`` in
loopgate.yaml) decide a Slack click exactly as they decide a GitHub reply — the count,
self-approval, team approvers — and the clicker hears what the gate said. Listeners are
called directly with a recording ``ack``; Web API calls go to the loopback fake Slack
through the real WebClient; GitHub is the in-memory tracker."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack import approval_clicks as approvals
from bot.slack.blocks import ids
from bot.slack.home_tab import home_rows, publish_home
from bot.slack.listeners.actions import approve as approve_listener
from bot.slack.listeners.actions.approve import on_approve, on_open_modal
from bot.slack.listeners.views.decision import on_decision_submit
from engine.hooks.chat_decision import decision_marker as slack_decision_marker
from engine.ports import TrackerError
from tests.bot.conftest import (
    REF,
    SlackWorld,
    approval_click,
    build_world,
    slack_config,
    view_submission,
)
from tests.fakes.slack import FakeSlack

GATE = "requirements-approval"
MIRROR = slack_decision_marker(GATE)
REFUSED = f"<!-- the-loop:approval-refused {GATE} "


class Ack:
    """Records each ack's keyword arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(dict(kwargs))


@pytest.fixture
def make_world(tmp_path: Path, fake_slack: FakeSlack,
               slack_env: None) -> Iterator[Callable[..., SlackWorld]]:
    """``make_world(gates={...})``: a world whose loopgate.yaml carries ``gates``; its
    worker is stopped and its services closed at teardown."""
    made: list[SlackWorld] = []

    def make(**config: Any) -> SlackWorld:
        world = build_world(tmp_path, fake_slack, slack_config(fake_slack, **config))
        made.append(world)
        return world

    yield make
    for world in made:
        world.worker.stop()
        assert not world.worker.running
        world.services.close()


def _posted(world: SlackWorld) -> tuple[str, str]:
    """Walk to requirements-approval and post its message: ``(ts, button value)``."""
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    return str(message.response["ts"]), str(actions["elements"][0]["value"])


def _approve(world: SlackWorld, user: str, value: str, ts: str) -> None:
    ack = Ack()
    on_approve(ack, approval_click(world, user, ids.ACTION_APPROVE, value, ts=ts),
               world.client, {"services": world.services})
    assert ack.calls == [{}]


def _request_changes(world: SlackWorld, user: str, value: str, ts: str, text: str) -> None:
    on_open_modal(Ack(), approval_click(world, user, ids.ACTION_REQUEST_CHANGES, value, ts=ts),
                  world.client, {"services": world.services})
    view = world.fake.calls_to("views.open")[-1].args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    ack = Ack()
    on_decision_submit(ack, view_submission(view, user, text), world.client,
                       {"services": world.services})
    assert ack.calls == [{}]


def _ephemerals(world: SlackWorld, user: str) -> list[str]:
    return [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == user]


def _recorded(world: SlackWorld) -> list[tuple[str, str, str]]:
    entry = world.state().surface["approvals"][GATE]
    return [(a["by"], a["outcome"], a["via"]) for a in entry["approvals"]]


def _still_waits(count: str, who: str = "@carol") -> str:
    # The wait names only who may still approve (the one counted is in the tally).
    return (f"`{GATE}` took your answer and still waits: {count} — waiting for {who} "
            f"to reply on {GATE}: approved, approved with comments, or changes "
            "requested.")


# -- 1. approvals: 2 ------------------------------------------------------------------------
def test_a_slack_approval_at_a_two_approval_gate_waits_mirrors_once_and_a_github_reply_passes(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2}})
    ts, value = _posted(world)

    _approve(world, "UALICE", value, ts)

    state = world.state()
    assert state.current_node == GATE
    assert GATE not in state.decisions
    assert _ephemerals(world, "UALICE") == [_still_waits("1 of 2 approvals: @alice")]
    [mirror] = world.comments(MIRROR)
    assert mirror.body.startswith(f"✅ **Approved** at `{GATE}` by @alice — from Slack.")
    entry = state.surface["approvals"][GATE]
    assert entry["enteredAt"] == state.nodes[GATE].entered_at
    assert entry["approvals"] == [{"by": "alice", "outcome": "approved",
                                   "at": "2026-03-01T12:00:00Z", "via": "slack"}]
    assert entry["refused"] == []
    assert not [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]

    state = world.reply_on_github("carol", "approved")

    assert state.current_node == "design"
    decision = state.decisions[GATE]
    assert (decision["by"], decision["outcome"], decision["approvers"]) == (
        "@carol", "approved", ["@alice", "@carol"])
    assert len(world.comments(MIRROR)) == 1  # a GitHub reply is its own record
    world.drain()
    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    head = update.args["blocks"][0]["text"]["text"]
    assert head.startswith(f"✅ Approved — `{GATE}` of ")
    assert head.endswith("by @carol on GitHub at 2026-03-01T12:00:00Z "
                         "(approvals: @alice, @carol)")


def test_the_same_person_clicking_approve_twice_in_slack_counts_once(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2}})
    ts, value = _posted(world)

    _approve(world, "UALICE", value, ts)
    world.clock.advance(minutes=5)
    _approve(world, "UALICE", value, ts)

    state = world.state()
    assert state.current_node == GATE
    assert _recorded(world) == [("alice", "approved", "slack")]
    assert _ephemerals(world, "UALICE") == [_still_waits("1 of 2 approvals: @alice")] * 2
    assert len(world.comments(MIRROR)) == 1  # the repeat changed nothing: no second record

    state = world.reply_on_github("carol", "approved")
    assert state.current_node == "design"
    assert state.decisions[GATE]["approvers"] == ["@alice", "@carol"]


def test_two_slack_approvals_pass_a_two_approval_gate_and_the_message_names_both(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2}})
    ts, value = _posted(world)

    _approve(world, "UALICE", value, ts)
    _approve(world, "UCAROL", value, ts)

    state = world.state()
    assert state.current_node == "design"
    decision = state.decisions[GATE]
    assert (decision["by"], decision["via"], decision["approvers"]) == (
        "@carol", "slack", ["@alice", "@carol"])
    assert [(a["by"], a["via"]) for a in state.surface["approvals"][GATE]["approvals"]] == [
        ("alice", "slack"), ("carol", "slack")]
    assert [m.body.splitlines()[0] for m in world.comments(MIRROR)] == [
        f"✅ **Approved** at `{GATE}` by @alice — from Slack.",
        f"✅ **Approved** at `{GATE}` by @carol — from Slack."]
    assert _ephemerals(world, "UCAROL") == []
    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    assert update.args["blocks"][0]["text"]["text"].endswith(
        "by @carol from Slack at 2026-03-01T12:00:00Z (approvals: @alice, @carol)")
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]


# -- 2. preventSelfApproval -----------------------------------------------------------------
def test_the_authors_own_slack_approval_is_refused_ephemerally_and_changes_nothing(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"preventSelfApproval": True}})
    ts, value = _posted(world)  # carol opened acme/widgets#7 (build_world)
    before = world.state()
    comments_before = len(world.tracker.comments_on(REF))

    _approve(world, "UCAROL", value, ts)

    assert _ephemerals(world, "UCAROL") == [
        f"@carol may not answer `{GATE}` of acme/widgets#7 (@carol opened this work item, "
        "and this gate has preventSelfApproval: the author cannot approve their own work), "
        "so nothing was decided."]
    after = world.state()
    assert after.current_node == GATE
    assert after.surface == before.surface
    assert after.decisions == before.decisions
    assert after.nodes[GATE].entered_at == before.nodes[GATE].entered_at
    assert world.comments(MIRROR) == []
    assert len(world.tracker.comments_on(REF)) == comments_before
    assert not [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]

    _approve(world, "UALICE", value, ts)  # someone else's approval still passes
    assert world.state().decisions[GATE]["by"] == "@alice"


# -- 3. changes requested after one approval ------------------------------------------------
def test_a_slack_request_changes_after_one_slack_approval_resets_the_count_and_routes_back(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2}})
    ts, value = _posted(world)
    _approve(world, "UALICE", value, ts)
    assert _recorded(world) == [("alice", "approved", "slack")]

    _request_changes(world, "UCAROL", value, ts, "R2 is two requirements.")

    state = world.state()
    assert state.current_node == "requirements-definition"
    decision = state.decisions[GATE]
    assert (decision["by"], decision["outcome"], decision["via"], decision["text"]) == (
        "@carol", "changes-requested", "slack", "R2 is two requirements.")
    assert "approvers" not in decision
    assert state.surface["approvals"][GATE]["approvals"] == []
    assert [m.body.splitlines()[0] for m in world.comments(MIRROR)] == [
        f"✅ **Approved** at `{GATE}` by @alice — from Slack.",
        f"✋ **Changes requested** at `{GATE}` by @carol — from Slack."]
    assert _ephemerals(world, "UCAROL") == []

    # Back at the gate, the count starts from zero: alice's earlier approval is gone.
    world.artifacts.write(REF, "requirements.md", "---\nstatus: approved\n---\n# R\n\n"
                          "## Requirements\n\n- x\n- y\n")
    state = world.services.runtime.complete(REF, "requirements-definition", "agent")
    assert state.current_node == GATE
    state = world.reply_on_github("alice", "approved")
    assert state.current_node == GATE
    assert "1 of 2 approvals: @alice — " in str(state.parked.reason)


# -- 4. team approvers ----------------------------------------------------------------------
def test_a_slack_click_by_a_linked_team_member_is_allowed_and_counted_with_the_team(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)

    _approve(world, "UBOB", value, ts)

    state = world.state()
    assert state.current_node == "design"
    decision = state.decisions[GATE]
    assert (decision["by"], decision["outcome"], decision["via"]) == ("@bob", "approved", "slack")
    [counted] = state.surface["approvals"][GATE]["approvals"]
    assert (counted["by"], counted["via"], counted["team"]) == ("bob", "slack", "acme/reviewers")
    assert _ephemerals(world, "UBOB") == []
    assert len(world.comments(MIRROR)) == 1


def test_a_slack_click_by_a_linked_non_member_is_refused(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)

    _approve(world, "UALICE", value, ts)  # authorizedUsers, but not on the team

    assert _ephemerals(world, "UALICE") == [
        f"@alice may not answer `{GATE}` of acme/widgets#7 (@alice is not among the "
        "approvers of this gate (@acme/reviewers)), so nothing was decided."]
    assert world.state().current_node == GATE
    assert world.comments(MIRROR) == []


def test_a_failed_team_lookup_refuses_a_slack_click_fail_closed(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    world.tracker.failing.add("team_membership")
    ts, value = _posted(world)
    before = world.state()

    _approve(world, "UBOB", value, ts)

    assert _ephemerals(world, "UBOB") == [
        f"@bob may not answer `{GATE}` of acme/widgets#7 (@bob is not among the approvers "
        "of this gate (@acme/reviewers); the membership lookup failed for acme/reviewers "
        "(team_membership: tracker unavailable (simulated))), so nothing was decided."]
    after = world.state()
    assert after.current_node == GATE
    assert after.surface == before.surface and GATE not in after.decisions
    assert world.comments(MIRROR) == []


def test_one_click_applies_the_gates_rule_once_and_asks_github_once(
        make_world: Callable[..., SlackWorld]) -> None:
    # Issue 20 §1: a click is no longer pre-checked and then decided again, so GitHub cannot
    # answer the two differently: the team lookup and the authorship read happen once.
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"],
                                     "preventSelfApproval": True}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)
    since = len(world.tracker.calls)
    real_decide = approvals.decide
    during: list[list[str]] = []

    def decide(*args: Any, **kwargs: Any) -> Any:
        mark = len(world.tracker.calls)
        try:
            return real_decide(*args, **kwargs)
        finally:
            during.append([name for name, _ in world.tracker.calls[mark:]])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(approve_listener, "decide", decide)
        _approve(world, "UBOB", value, ts)

    state = world.state()
    assert state.current_node == "design"
    assert state.decisions[GATE]["by"] == "@bob"
    [reads] = during
    assert reads.count("issue_info") == 1  # whose work it is, read once
    assert reads.count("team_membership") == 1
    made = [name for name, _ in world.tracker.calls[since:]]
    assert made.count("team_membership") == 1
    assert len(world.comments(MIRROR)) == 1


def test_a_click_whose_author_cannot_be_read_at_the_gate_is_not_taken_and_says_try_again(
        make_world: Callable[..., SlackWorld]) -> None:
    # preventSelfApproval needs whose work it is; GitHub fails when the gate reads it (the
    # one read of the click, issue 20 §1). The gate waits unverified (fail closed) and nobody
    # replays a Slack click, so the clicker must not hear that their answer was taken.
    world = make_world(gates={GATE: {"preventSelfApproval": True}})
    ts, value = _posted(world)
    reads: Iterator[bool] = iter([])
    real = world.tracker.issue_info

    def flaky(ref: Any) -> Any:
        if next(reads, None) is None:
            raise TrackerError("GET /repos/acme/widgets/issues/7: 502")
        return real(ref)

    world.tracker.issue_info = flaky  # type: ignore[method-assign]

    _approve(world, "UALICE", value, ts)

    state = world.state()
    assert state.current_node == GATE and GATE not in state.decisions
    assert world.comments(MIRROR) == []
    [told] = _ephemerals(world, "UALICE")
    assert told.startswith(f"`{GATE}` could not count your answer: ")
    assert "could not read who authored the work (GET /repos/acme/widgets/issues/7: 502)" \
        in told
    assert told.endswith("Nothing was decided; try again in a moment.")


# -- App Home under the gate's rule ---------------------------------------------------------
def _waiting_on(world: SlackWorld, login: str) -> list[tuple[str, str]]:
    waiting, _items = home_rows(world.services, login)
    return [(row.ref, row.node) for row in waiting]


def test_home_lists_a_gate_only_for_those_it_still_waits_on(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2, "preventSelfApproval": True,
                                     "approvers": ["alice", "bob", "carol"]}})
    ts, value = _posted(world)
    gate = [("acme/widgets#7", GATE)]
    assert (_waiting_on(world, "alice"), _waiting_on(world, "bob")) == (gate, gate)
    assert _waiting_on(world, "carol") == []  # she opened it: she may not approve it

    publish_home(world.services, world.client, "UALICE")  # she has opened her Home tab
    _approve(world, "UALICE", value, ts)

    assert _waiting_on(world, "alice") == []  # her approval is counted
    homes = [c.args["view"] for c in world.fake.calls_to("views.publish")
             if c.args["user_id"] == "UALICE"]
    assert len(homes) == 2  # republished after her click
    row = f"`{GATE}` (approval)"
    assert row in json.dumps(homes[0]) and row not in json.dumps(homes[1])
    assert "Nothing waits on you." in json.dumps(homes[1])
    assert _waiting_on(world, "bob") == gate
    assert _waiting_on(world, "carol") == []


def test_mentions_and_reminders_name_only_those_the_gate_still_waits_on(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvals": 2, "preventSelfApproval": True,
                                     "approvers": ["alice", "bob", "carol"]}})
    ts, value = _posted(world)
    text = world.approval_message().args["blocks"][0]["text"]["text"]
    assert text.splitlines()[-1] == "Waiting on: <@UALICE>, <@UBOB>"  # carol opened it

    _approve(world, "UALICE", value, ts)
    world.clock.advance(hours=25)
    world.drain()

    reminders = [c for c in world.fake.calls_to("chat.postMessage")
                 if "⏰" in str(c.args.get("text"))]
    assert sorted(c.args["channel"] for c in reminders) == ["C0CARDS", "DUBOB"]
    [line] = [c for c in reminders if c.args["channel"] == "C0CARDS"]
    assert line.args["text"].endswith("has waited 25 hours for an approval — <@UBOB>.")


# -- Slack's 3 s: ack and views.open come before any GitHub read ----------------------------
class _AckCountingReads(Ack):
    """An ack that notes how many tracker reads had happened when it was called."""

    def __init__(self, world: SlackWorld) -> None:
        super().__init__()
        self.world = world
        self.reads_at_ack: list[int] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.reads_at_ack.append(len(self.world.tracker.calls))
        super().__call__(*args, **kwargs)


def _open_modal(world: SlackWorld, user: str, value: str, ts: str,
                action: str = ids.ACTION_APPROVE_COMMENTS) -> dict[str, Any]:
    on_open_modal(Ack(), approval_click(world, user, action, value, ts=ts),
                  world.client, {"services": world.services})
    view = world.fake.calls_to("views.open")[-1].args["view"]
    return json.loads(view) if isinstance(view, str) else view


def test_the_modal_opens_and_its_submission_is_acked_before_any_github_read(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)
    reads = len(world.tracker.calls)

    view = _open_modal(world, "UBOB", value, ts)
    assert len(world.tracker.calls) == reads  # the trigger_id was spent before any read

    ack = _AckCountingReads(world)
    on_decision_submit(ack, view_submission(view, "UBOB", "Nit: rename R3."),
                       world.client, {"services": world.services})

    assert ack.calls == [{}] and ack.reads_at_ack == [reads]
    read = [name for name, _ in world.tracker.calls[reads:]]
    assert "team_membership" in read  # the gate's rule, after the ack
    assert _ephemerals(world, "UBOB") == []
    assert world.state().decisions[GATE]["by"] == "@bob"


def test_a_modal_submission_the_gate_refuses_closes_the_modal_and_says_why_ephemerally(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)
    before = world.state()

    view = _open_modal(world, "UALICE", value, ts)  # not on the team: told on submission
    ack = Ack()
    on_decision_submit(ack, view_submission(view, "UALICE", "Looks wrong."), world.client,
                       {"services": world.services})

    assert ack.calls == [{}]
    assert _ephemerals(world, "UALICE") == [
        f"@alice may not answer `{GATE}` of acme/widgets#7 (@alice is not among the "
        "approvers of this gate (@acme/reviewers)), so nothing was decided."]
    after = world.state()
    assert after.current_node == GATE and after.decisions == before.decisions
    assert world.comments(MIRROR) == []


def test_an_expired_trigger_id_tells_the_clicker_to_click_again(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    ts, value = _posted(world)
    click = approval_click(world, "UALICE", ids.ACTION_REQUEST_CHANGES, value, ts=ts)
    issued = world.fake.clock()
    world.fake.clock = lambda: issued + 3.5  # Slack delivered the click late

    on_open_modal(Ack(), click, world.client, {"services": world.services})

    [refused] = world.fake.calls_to("views.open")
    assert refused.response == {"ok": False, "error": "expired_trigger_id"}
    assert _ephemerals(world, "UALICE") == [
        "loopgate could not open the form in time; nothing changed. Click the button again."]
    assert world.state().current_node == GATE


# -- which Home tabs a move republishes -----------------------------------------------------
def test_home_refresh_reaches_an_owner_whose_tab_did_not_list_the_new_item(
        make_world: Callable[..., SlackWorld]) -> None:
    world = make_world()
    publish_home(world.services, world.client, "UCAROL")  # before her item existed
    assert "acme/widgets#7" not in json.dumps(world.fake.calls_to("views.publish")[-1].args)

    world.start()
    world.drain()  # the card is posted; carol's item joins her Home

    latest = [c.args["view"] for c in world.fake.calls_to("views.publish")
              if c.args["user_id"] == "UCAROL"][-1]
    assert "acme/widgets#7" in json.dumps(latest)


def test_home_refresh_applies_the_gates_rule_to_the_item_as_waiting_on_you_does(
        make_world: Callable[..., SlackWorld]) -> None:
    from bot.slack.home_tab import homes_to_refresh

    world = make_world(gates={GATE: {"preventSelfApproval": True,
                                     "approvers": ["alice", "bob", "carol"]}})
    publish_home(world.services, world.client, "UBOB")  # his tab lists nothing yet
    world.walk_to_requirements_approval()  # not drained: no refresh has run
    assert "UBOB" in homes_to_refresh(world.services, REF)
    assert _waiting_on(world, "bob") == [("acme/widgets#7", GATE)]

    title = world.tracker.issue_info(REF).title
    world.tracker.set_issue(REF, title, author="bob")  # GitHub now says bob wrote it

    assert _waiting_on(world, "bob") == []  # the author may not approve it
    assert "UBOB" not in homes_to_refresh(world.services, REF)


def test_a_team_members_request_changes_from_slack_decides_and_says_nothing_wrong(
        make_world: Callable[..., SlackWorld]) -> None:
    # record-feedback, after classify-feedback counted a team member's changes-requested,
    # fell back to the authorizedUsers reading and waited: the gate never moved and the
    # clicker was told 'did not count your answer' (found by a tester).
    world = make_world(gates={GATE: {"approvers": ["acme/reviewers"]}})
    world.tracker.set_team("acme/reviewers", ["bob"])
    ts, value = _posted(world)

    _request_changes(world, "UBOB", value, ts, "R2 is vague")

    state = world.state()
    assert state.current_node == "requirements-definition"
    decision = state.decisions[GATE]
    assert (decision["by"], decision["outcome"], decision["via"], decision["text"]) == (
        "@bob", "changes-requested", "slack", "R2 is vague")
    assert _ephemerals(world, "UBOB") == []
    [mirror] = world.comments(MIRROR)
    assert "Changes requested" in mirror.body and "> R2 is vague" in mirror.body
