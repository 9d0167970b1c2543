"""Approval gates answered from Slack (issue 12 §1): who may decide, whether a message is
outdated, and handing the decision to the engine.

A click becomes one typed :class:`engine.events.Decision` (the gate, the outcome, the
clicker's linked GitHub login, their words, ``via: slack``) handed to
``Runtime.advance`` (issue 20 §1). The gate's own exit chain (``classify-feedback``,
``record-feedback`` and any approval rules there) decides it once — the rule applied
once, GitHub read once — and the runtime answers with a typed result
(:class:`~engine.events.Moved`, :class:`~engine.events.Waiting`,
:class:`~engine.events.Refused`, :class:`~engine.events.Unverified`) that :func:`decide`
turns into what the clicker is told. The engine echoes a counted decision on the issue
as a marked comment (:mod:`engine.hooks.chat_decision`); a refused one changes nothing.

:func:`verdict` (the gate's own approval rule, issue 11 §2) answers App Home's "waiting on
you"; a click is not pre-checked with it, except for the agent rule of issue 24 §2 (the
person who dispatched the agent, or asked an agent bot for its pull request, may not
approve): :func:`check_gate` asks the engine's own check
(:func:`engine.hooks.common.agent_refusal`) so that person is told at once why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.slack.blocks.approval import OUTCOME_LABELS, GateRef
from bot.slack.click_lock import item_lock
from bot.slack.slack_identity import resolve_login, slack_users_for_login
from engine import events as ev
from engine.approvals import People, Verdict, authorize, recorded_approvals, self_approval
from engine.graph.model import Graph
from engine.hooks.common import agent_people, agent_refusal, people_for, rule_for
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from engine.settings import normalize_login
from engine.state import ItemState
from engine.visits import Visit

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = [
    "FEEDBACK_HOOK",
    "DECISION_OUTCOMES",
    "approval_gates",
    "is_approval_gate",
    "may_decide",
    "verdict",
    "approvers",
    "awaited",
    "approver_slack_users",
    "ClickCheck",
    "check_gate",
    "Decided",
    "decide",
    "gate_visit",
    "gate_decision",
    "VIA",
]

log = logging.getLogger(__name__)

#: The exit hook that makes a node an approval gate.
FEEDBACK_HOOK = "classify-feedback"
#: The outcomes a Slack click may state.
DECISION_OUTCOMES = tuple(OUTCOME_LABELS)
#: ``via`` of every decision made in Slack (stored with it, issue 12 §1).
VIA = "slack"

def approval_gates(graph: Graph) -> list[str]:
    """The node ids whose exit chain runs ``classify-feedback`` (requirements-approval,
    design-approval, human-approval in the shipped graph), in declaration order."""
    return [n.id for n in graph.ordered() if any(h.name == FEEDBACK_HOOK for h in n.exit)]


def is_approval_gate(graph: Graph, node: str) -> bool:
    """Whether ``node`` is an approval gate of ``graph``."""
    return node in approval_gates(graph)


def verdict(services: Services, login: str, node: str, ref: WorkItemRef | None = None,
            state: ItemState | None = None) -> Verdict:
    """Whether GitHub ``login`` may answer gate ``node``, by the gate's own approval rule
    (issue 11 §2: :func:`engine.hooks.common.rule_for` and
    :func:`engine.approvals.authorize`, the functions the gate decides with). Used for the
    ephemeral pre-check and the Home tab only: the gate decides again when the reply
    arrives.

    Args:
        services: the wired services.
        login: the GitHub login ("" never may).
        node: the gate's node id.
        ref: the work item, when known: needed for ``preventSelfApproval`` (whose work it
            is is read through the tracker). Without it that part is left to the gate.
        state: the item's state (loaded from the store when None and ``ref`` is given):
            the agent rule of issue 24 §2 reads who dispatched the agent from it.

    Returns:
        A :class:`~engine.approvals.Verdict`; a tracker failure refuses with its reason
        (fail closed), as the gate would.
    """
    if not login:
        return Verdict(False, "no GitHub login")
    rule = rule_for(services.graph, services.settings, node)
    people = People()
    if ref is not None:
        if state is None:
            state = services.store.load(ref)
        try:
            people = people_for(services.ports.tracker, ref, node, rule, services.settings,
                                state=state, graph=services.graph)
        except TrackerError as exc:
            return Verdict(False, f"could not read who authored the work ({exc})")
    return authorize(login, rule, authorized_users=services.settings.authorized_users,
                     people=people,
                     membership=services.ports.tracker.team_membership)


def may_decide(services: Services, login: str, node: str, ref: WorkItemRef | None = None,
               state: ItemState | None = None) -> bool:
    """:func:`verdict`'s yes or no."""
    return verdict(services, login, node, ref, state).allowed


def approvers(services: Services, node: str) -> list[str]:
    """The GitHub logins gate ``node`` waits on (normalized, configuration order): the
    rule's named logins, else ``authorizedUsers``. Teams are not expanded (no member
    listing is read), so their members are not mentioned."""
    rule = rule_for(services.graph, services.settings, node)
    names = rule.approvers or tuple(services.settings.authorized_users)
    return [normalize_login(u) for u in names if u and "/" not in u]


def awaited(services: Services, node: str, state: ItemState | None = None) -> list[str]:
    """The :func:`approvers` gate ``node`` still waits on at ``state``'s visit (issue 11
    §2): without those whose approval it already counted and, under
    ``preventSelfApproval``, the item's author and — for a rule with ``agentAuthored`` —
    who dispatched the agent or asked an agent bot for its pull request (issue 24 §2; the
    engine's :func:`engine.approvals.self_approval`). Whose work it is is read through the
    tracker; a failed read keeps everyone but the dispatcher the walk recorded (a mention
    is advice, the gate decides)."""
    logins = approvers(services, node)
    if state is None:
        return logins
    counted = {a.by for a in recorded_approvals(state, node)}
    rule = rule_for(services.graph, services.settings, node)
    people = People()
    if rule.prevent_self_approval:
        tracker = services.ports.tracker
        try:
            people = people_for(tracker, state.ref, node, rule, services.settings,
                                state=state, graph=services.graph)
        except TrackerError as exc:
            log.info("who authored %s is unknown (%s): everyone else is mentioned",
                     state.ref, exc)
            people = agent_people(tracker, state.ref, rule, services.settings, state=state,
                                  graph=services.graph, read=False)
    return [login for login in logins
            if login not in counted and self_approval(login, rule, people).allowed]


def approver_slack_users(services: Services, node: str,
                         state: ItemState | None = None) -> tuple[list[str], list[str]]:
    """``(slack user ids, logins without a linked Slack user)`` of the gate's approvers
    (:func:`awaited` at ``state``'s visit when given)."""
    users: list[str] = []
    unlinked: list[str] = []
    for login in awaited(services, node, state):
        linked = slack_users_for_login(services, login)
        users += [u for u in linked if u not in users]
        if not linked:
            unlinked.append(login)
    return users, unlinked


@dataclass(frozen=True)
class ClickCheck:
    """Whether an approval click may go on (not the merge gate's check run,
    :class:`engine.mergegate.GateCheck`).

    Attributes:
        code: ``ok``, ``unknown-item``, ``not-a-gate``, ``outdated``, ``not-linked``,
            ``not-authorized`` (the agent rule of issue 24 §2 refuses the clicker) or
            ``unverified`` (that rule could not be checked: a tracker read failed; the
            gate waits).
        message: the sentence for the clicker ("" when ``ok``).
        login: the clicker's GitHub login ("" when not linked).
    """

    code: str
    message: str = ""
    login: str = ""

    @property
    def ok(self) -> bool:
        """True when the click may be fed to the gate."""
        return self.code == "ok"


def gate_visit(state: ItemState, gate: GateRef) -> Visit | None:
    """The visit to ``gate.node`` a message was posted for (issue 19 §2): the one entered
    at ``gate.entered_at``; for a message naming no time, the current visit; for a time
    no visit has (a visit rebuilt from state written before visits were kept has no
    entry time), the latest visit entered no later than it. None when never visited."""
    history = state.history(gate.node)
    if not history:
        return None
    if gate.visit:  # the button names its visit (issue 19 §2)
        numbered = [v for v in history if v.number == gate.visit]
        return numbered[-1] if numbered else None
    if not gate.entered_at:
        return history[-1]
    exact = [v for v in history if v.entered_at == gate.entered_at]
    if exact:
        return exact[-1]
    earlier = [v for v in history if v.entered_at <= gate.entered_at]
    return earlier[-1] if earlier else history[-1]


def gate_decision(state: ItemState, gate: GateRef) -> dict[str, Any]:
    """The decision recorded on the visit ``gate`` names (:func:`gate_visit`) as the gate
    wrote it (``{by, at, outcome, via, text, ...}``), ``{}`` when it has none. The
    message of a gate's second visit thus shows the second answer, never the first."""
    visit = gate_visit(state, gate)
    return visit.decision.to_json() if visit is not None and visit.decision else {}


def _said(decision: dict[str, Any]) -> str:
    outcome = str(decision.get("outcome") or "")
    return (f" ({OUTCOME_LABELS.get(outcome, outcome)} by {decision.get('by')})"
            if outcome else "")


def _outdated(state: ItemState, gate: GateRef) -> str:
    record = state.nodes.get(gate.node)
    entered = record.entered_at if record is not None else ""
    if state.current_node == gate.node and (not gate.entered_at or entered == gate.entered_at) \
            and _same_visit(state, gate):
        return ""
    visit = gate_visit(state, gate)
    said = _said(gate_decision(state, gate))
    current = state.visit(gate.node)
    if state.current_node == gate.node and visit is not None and current is not None \
            and current is not visit:
        # The gate was sent back and waits again: this message was for an earlier visit.
        return (f"This message is outdated: it was for visit {visit.number} of `{gate.node}` "
                f"of {gate.ref}{said}; `{gate.node}` waits again (visit {current.number}) — "
                "answer its newer message. Nothing changed.")
    if state.current_node == gate.node and current is not None:
        # An older button naming no visit, entered the same second as another visit.
        return (f"This message is outdated: `{gate.node}` of {gate.ref} waits again (visit "
                f"{current.number}) and this message does not say which visit it was for — "
                "answer its newer message. Nothing changed.")
    return (f"This message is outdated: `{gate.node}` of {gate.ref} is no longer waiting"
            f"{said}; the item is at `{state.current_node or '—'}`. Nothing changed.")


def _same_visit(state: ItemState, gate: GateRef) -> bool:
    # Issue 19 §2: a button naming its visit is for that visit only; an older button (no
    # number) only when no other visit shares its entry time (a fast walk back re-enters
    # within the clock's second), else it cannot tell which visit it was for.
    current = state.visit(gate.node)
    if current is None:
        return True
    if gate.visit:
        return gate.visit == current.number
    return sum(1 for v in state.history(gate.node) if v.entered_at == gate.entered_at) < 2


def check_gate(services: Services, gate: GateRef, slack_user: str, *,
               read_tracker: bool = False) -> ClickCheck:
    """Check a click on ``gate`` by ``slack_user`` without changing anything. By default
    against the local store only: fast enough to run before Slack's 3 s ack
    (platform-facts §C1). The gate's approval rule, which may read GitHub, runs once, in
    the engine, when the decision is fed (issue 20 §1); only its agent rule (issue 24 §2:
    the person who dispatched the agent may not approve) is asked here too, through the
    engine's own check (:func:`engine.hooks.common.agent_refusal`), so that person is told
    at once why.

    Args:
        services: the wired services.
        gate: the gate visit the message was for.
        slack_user: the clicker.
        read_tracker: also read the delivering pull requests' commits (who asked an agent
            bot for its pull request, ``agents.requesters``); False checks only the
            dispatcher the walk recorded (no GitHub read).

    Returns:
        The first refusal found (unknown item, not a gate, outdated, not linked, the
        agent rule refuses, the agent rule could not be checked), else ``ok`` with the
        login.
    """
    state = services.store.load(gate.ref)
    if state is None:
        return ClickCheck("unknown-item", f"{gate.ref} is not a work item loopgate knows; "
                         "nothing changed.")
    if not is_approval_gate(services.graph, gate.node):
        return ClickCheck("not-a-gate", f"`{gate.node}` is not an approval gate; nothing "
                         "changed.")
    outdated = _outdated(state, gate)
    if outdated:
        return ClickCheck("outdated", outdated)
    login = resolve_login(services, slack_user) or ""
    if not login:
        return ClickCheck("not-linked", "Your Slack account is not linked to a GitHub login, "
                         "so nothing was decided. Run `/loop link <github-login>` first.")
    return _agent_check(services, gate, state, login, read_tracker)


def _agent_check(services: Services, gate: GateRef, state: ItemState, login: str,
                 read_tracker: bool) -> ClickCheck:
    # Issue 24 §2 through the engine's own check; a failed read fails closed.
    try:
        found = agent_refusal(services.ports.tracker, gate.ref, gate.node, login,
                              services.settings, state=state, graph=services.graph,
                              read=read_tracker)
    except TrackerError as exc:
        return ClickCheck("unverified", f"`{gate.node}` of {gate.ref} cannot check your "
                          f"answer now: who asked the agent for this work could not be read "
                          f"({exc}). Nothing was decided; the gate waits. Try again in a "
                          "moment.", login)
    if not found.allowed:
        return ClickCheck("not-authorized", f"@{login} may not answer `{gate.node}` of "
                          f"{gate.ref} ({found.reason}), so nothing was decided.", login)
    return ClickCheck("ok", "", login)


@dataclass(frozen=True)
class Decided:
    """The result of one decision.

    Attributes:
        code: ``decided``, ``waiting`` (the gate took the answer but still waits, e.g.
            for more approvals), ``unverified`` (the gate could not check the answer — a
            tracker read failed — and did not count it), ``not-authorized`` (the gate's
            rule refused the clicker; nothing changed), ``already-decided`` or one of
            :class:`ClickCheck`'s refusals.
        message: the sentence for the clicker ("" when ``decided``).
        decision: the decision of the visit clicked on after the click (``{}`` when
            none; :func:`gate_decision`).
        current_node: where the item is after the click.
    """

    code: str
    message: str = ""
    decision: dict[str, Any] = field(default_factory=dict)
    current_node: str = ""


def decide(services: Services, gate: GateRef, slack_user: str, outcome: str,
           text: str = "") -> Decided:
    """Hand a Slack decision to the gate (after the ack) and say what became of it.

    The local checks (unknown item, not a gate, outdated message, unlinked clicker) read
    only the store; the agent rule of issue 24 §2 reads who asked an agent for the work
    (a failed read: told it cannot be checked now, nothing fed, the gate waits); the
    gate's approval rule is applied once, by the engine, which answers with a typed
    result (issue 20 §1).

    Args:
        services: the wired services.
        gate: the gate visit the message was for.
        slack_user: the clicker.
        outcome: one of :data:`DECISION_OUTCOMES`.
        text: the comments (required by the modal for the two outcomes that take them).

    Returns:
        What happened; a refusal changes nothing.

    Raises:
        ValueError: ``outcome`` is not one of :data:`DECISION_OUTCOMES`.
    """
    with item_lock(gate.ref):
        check = check_gate(services, gate, slack_user, read_tracker=True)
        if not check.ok:
            log.info("slack decision on %s %s refused for %s: %s", gate.ref, gate.node,
                     slack_user, check.code)
            return Decided(check.code, check.message)
        result = services.runtime.advance(
            gate.ref, ev.Decision(gate.node, outcome, check.login, text, via=VIA))
    told = _told(gate, check.login, result)
    if told.code == "decided":
        log.info("%s %s: %s from Slack by @%s (%s)", gate.ref, gate.node, outcome,
                 check.login, slack_user)
    elif told.code == "not-authorized":
        log.info("slack decision on %s %s refused for %s: %s", gate.ref, gate.node,
                 slack_user, told.code)
    return told


def _told(gate: GateRef, login: str, result: ev.Result) -> Decided:
    """What the clicker is told for the engine's ``result``."""
    state = result.state
    decision = gate_decision(state, gate)
    if isinstance(result, ev.Refused) and result.code == ev.NOT_ALLOWED:
        return Decided("not-authorized", f"@{login} may not answer `{gate.node}` of "
                       f"{gate.ref} ({result.reason}), so nothing was decided.", decision,
                       state.current_node)
    if isinstance(result, ev.Unverified):
        # Nothing replays a Slack click, so it was not taken (fail closed, issue 11 §2).
        return Decided("unverified", f"`{gate.node}` could not count your answer: "
                       f"{result.reason}. Nothing was decided; try again in a moment.",
                       decision, state.current_node)
    if isinstance(result, ev.Waiting):
        return Decided("waiting", f"`{gate.node}` took your answer and still waits: "
                       f"{result.reason}.", decision, state.current_node)
    if isinstance(result, ev.Moved) and normalize_login(
            result.visit.decision.by if result.visit and result.visit.decision else "") == login:
        return Decided("decided", "", decision, state.current_node)
    # Moved by someone else's answer, or the gate had moved on (NOT_CURRENT).
    return Decided("already-decided", f"`{gate.node}` was already answered by "
                   f"{decision.get('by') or 'someone'}; nothing changed.", decision,
                   state.current_node)
