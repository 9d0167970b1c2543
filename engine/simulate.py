"""``loopgate simulate``: what a gate's rules would do with one decision, touching nothing
(issue 24 §4).

The simulation is the real engine on a copy: a :class:`~engine.runtime.Runtime` over a
:class:`~engine.store.memory.MemoryStore` seeded with the item's committed state, whose
``on_commit`` carries nothing out, and ports whose writes are recorded and never sent
(:class:`DryTracker`, :class:`DryNotifier`). Reads go to the real tracker (a team lookup, the
delivering pull requests, CODEOWNERS), so the answer is the one the walk would give now.
The real store is only ever ``load``-ed.

The decision is fed as a Slack Approve click is (``{"comments": [reply by LOGIN],
"via": "slack", "expectNode": NODE}``): the gate's own rules decide, as for a GitHub
reply (``engine.approvals.evaluate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.approvals import VIA_SLACK, recorded_approvals
from engine.errors import ClaimRefused
from engine.graph.model import Graph
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.ports import Comment, Ports, PullRequest, Tracker
from engine.refs import WorkItemRef
from engine.settings import EngineSettings, normalize_login
from engine.state import ItemState
from engine.store.base import Store
from engine.store.memory import MemoryStore

__all__ = ["DECISION_WORDS", "DryTracker", "DryNotifier", "Simulation", "simulate_decision",
           "simulate_push", "render"]

#: the reply words each outcome is simulated with (engine.hooks.feedback's keywords).
DECISION_WORDS = {APPROVED: "approved", APPROVED_WITH_COMMENTS: "approved with comments",
                  CHANGES_REQUESTED: "changes requested"}

#: Tracker methods that only read; every other call is recorded and not sent.
_READS = frozenset({
    "list_comments", "labels", "delivering_pull_requests", "issue_info", "comment_edits",
    "team_membership", "items_for_pull_request", "merge_group_commits", "codeowners_file",
    "merge_group_commit_list", "pull_request_commits", "merge_queue_pulls",
    "changed_files", "comment", "get_comment",
})
_ATTRIBUTES = frozenset({"comments_editable"})


class DryTracker:
    """A tracker that reads through ``real`` and records every write without sending it.

    Only the methods in ``_READS`` reach ``real``; any other method (``add_comment``,
    ``add_label``, ``publish_check``, ``remember``, ...) is recorded in :attr:`writes` as
    ``(method, args)`` and answers a harmless value, so an unknown write fails safe.

    Args:
        real: the configured tracker.
        heads: ``{pull number: sha}`` to report as those pull requests' heads
            (``simulate --push``).
    """

    def __init__(self, real: Tracker, heads: Mapping[int, str] | None = None) -> None:
        self._real = real
        self._heads = dict(heads or {})
        self.writes: list[tuple[str, tuple[Any, ...]]] = []

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """The real list, with :attr:`heads` applied."""
        pulls = self._real.delivering_pull_requests(ref)
        return [replace(p, head_sha=self._heads.get(p.number, p.head_sha)) for p in pulls]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _ATTRIBUTES or name in _READS:
            return getattr(self._real, name)
        if not callable(getattr(self._real, name, None)):
            raise AttributeError(name)
        return self._recorder(name)

    def _recorder(self, name: str) -> Callable[..., Any]:
        def record(*args: Any, **kwargs: Any) -> Any:
            self.writes.append((name, args))
            if name in {"add_comment", "add_comment_as"}:
                return Comment(id=0, author="", body=str(args[-1]) if args else "")
            if name in {"publish_check", "publish_commit_check"}:
                return {"sha": "", "kind": "simulated"}
            return None
        return record


@dataclass
class DryNotifier:
    """Records notices instead of sending them (``sent``: ``(ref, event)``)."""

    sent: list[tuple[str, str]] = field(default_factory=list)

    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Record ``event``; never raises."""
        self.sent.append((str(ref), event))


@dataclass(frozen=True)
class Simulation:
    """What one decision (or push) would do.

    Attributes:
        ref: the work item.
        node: the gate answered ("" for a push).
        login: who decided ("" for a push).
        counted: the decision counts (False: refused, or it answered no gate).
        reason: why it did not count ("" when counted).
        before_node / after_node: where the item is and would be.
        after_status: the item's status after (``waiting``, ``complete`` ...).
        tally: the gate's approvals after (``1 of 2 approvals: @alice``), "" when none.
        wait: the wait reason after ("" when not waiting).
        check: the ``loopgate`` check after: ``{state, description}`` ({} when none).
        effects: the effects that would be queued (``"post-comment"`` ...), in order.
    """

    ref: WorkItemRef
    node: str
    login: str
    counted: bool
    reason: str
    before_node: str
    after_node: str
    after_status: str
    tally: str = ""
    wait: str = ""
    check: Mapping[str, Any] = field(default_factory=dict)
    effects: tuple[str, ...] = ()
    pulls: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--format json`` document (camelCase)."""
        return {"item": str(self.ref), "node": self.node, "as": self.login,
                "counted": self.counted, "reason": self.reason, "from": self.before_node,
                "to": self.after_node, "status": self.after_status, "tally": self.tally,
                "wait": self.wait, "check": dict(self.check), "effects": list(self.effects),
                "pulls": list(self.pulls)}


def _runtime(graph: Graph, state: ItemState, ports: Ports, settings: EngineSettings,
             heads: Mapping[int, str] | None) -> tuple[Any, MemoryStore, DryTracker]:
    from engine.runtime import Runtime  # late: the runtime imports every hook

    copy = MemoryStore()
    with copy.transaction(state.ref) as tx:
        tx.state = state.copy()
    tracker = DryTracker(ports.tracker, heads)
    dry = Ports(tracker=tracker, artifacts=ports.artifacts, notifier=DryNotifier(),
                clock=ports.clock)
    return Runtime(graph, copy, dry, settings, on_commit=lambda ref: None), copy, tracker


def _load(store: Store, ref: WorkItemRef) -> ItemState:
    state = store.load(ref)
    if state is None or not state.current_node:
        raise ClaimRefused("not-started", f"{ref} has not been started")
    return state


def _effects(copy: MemoryStore, ref: WorkItemRef) -> tuple[str, ...]:
    return tuple(_effect_name(row) for row in copy.effects.rows(ref))


def _effect_name(row: Any) -> str:
    """``post-comment``, ``add-label <label>``, ``notify <event>``, ``publish-gate`` ..."""
    effect = row.effect
    detail = getattr(effect, "label", "") or getattr(effect, "event", "")
    if not detail and getattr(effect, "body", ""):
        first = str(effect.body).strip().splitlines()[0]
        detail = repr(first if len(first) <= 80 else first[:79] + "…")
    return f"{effect.kind} {detail}".strip()


def _summary(ref: WorkItemRef, node: str, login: str, before: ItemState, after: ItemState,
             copy: MemoryStore, counted: bool, reason: str, graph: Graph | None = None,
             settings: EngineSettings | None = None) -> Simulation:
    approvals = ""
    if node and after.current_node == node and graph is not None and settings is not None:
        from engine.approvals import tally
        from engine.hooks.common import rule_for

        approvals = tally(rule_for(graph, settings, node),
                          recorded_approvals(after, node)).summary()
    gate = after.surface.get("mergeGate") or {}
    check = ({k: gate[k] for k in ("state", "description") if k in gate}
             if isinstance(gate, Mapping) else {})
    wait = str(after.parked.get("reason") or "")
    return Simulation(ref, node, login, counted, reason, before.current_node,
                      after.current_node, str(after.status), approvals, wait, check,
                      _effects(copy, ref))


def _refusals(state: ItemState, node: str, login: str) -> list[str]:
    """The reasons recorded for refusing ``login`` at this visit of ``node``, oldest first."""
    if not recorded_visit(state, node):
        return []
    entry = (state.surface.get("approvals") or {}).get(node) or {}
    return [str(r.get("reason") or "") for r in entry.get("refused") or ()
            if normalize_login(r.get("by")) == login]


def recorded_visit(state: ItemState, node: str) -> bool:
    """True when ``surface.approvals[node]`` belongs to the node's current visit."""
    entry = (state.surface.get("approvals") or {}).get(node)
    visit = state.visit(node)
    return isinstance(entry, Mapping) and (visit is None or entry.get(
        "visit", visit.number) == visit.number)


def simulate_decision(graph: Graph, store: Store, ports: Ports, settings: EngineSettings,
                      ref: WorkItemRef, login: str, node: str,
                      outcome: str = APPROVED) -> Simulation:
    """What ``login`` answering ``outcome`` at gate ``node`` of ``ref`` would do.

    Args:
        graph: the compiled graph.
        store: the real store (only :meth:`load` is called).
        ports: the real ports (the tracker is read, never written).
        settings: the engine settings.
        ref: the work item.
        login: the deciding person's GitHub login.
        node: the gate answered.
        outcome: ``approved`` | ``approved-with-comments`` | ``changes-requested``.

    Returns:
        The :class:`Simulation`. A decision for a node the item is not at answers nothing
        (``counted`` False, ``reason`` says where the item is).

    Raises:
        ClaimRefused: ``not-started``.
        KeyError: ``outcome`` is not one of :data:`DECISION_WORDS`.
    """
    words = DECISION_WORDS[outcome]
    before = _load(store, ref)
    name = normalize_login(login)
    runtime, copy, _ = _runtime(graph, before, ports, settings, None)
    if before.current_node != node:
        return _summary(ref, node, name, before, before, copy, False,
                        f"the item is at {before.current_node}, not {node}: the decision "
                        "would answer no gate")
    reply = Comment(id=0, author=name, body=words)
    after = runtime.advance(ref, {"comments": [reply], "via": VIA_SLACK, "expectNode": node})
    counted, reason = _verdict(node, name, before, after)
    return _summary(ref, node, name, before, after, copy, counted, reason, graph, settings)


def _verdict(node: str, name: str, before: ItemState, after: ItemState) -> tuple[bool, str]:
    """``(counted, reason)`` of ``name``'s decision at ``node``: what ``after`` records
    beyond ``before`` (a refusal recorded earlier is not this decision's)."""
    if after.current_node == node and after.parked.get("unverified"):
        why = str(after.parked.get("reason") or "a lookup failed")
        return False, f"could not be checked now: {why}"
    earlier = len(_refusals(before, node, name))
    new = _refusals(after, node, name)[earlier:]
    refused = new[-1] if new else ""
    moved = after.current_node != node
    counted = not refused and (moved or name in {a.by for a in recorded_approvals(after, node)})
    if not counted and not refused:
        refused = str(after.parked.get("reason") or "the gate did not count it")
    return counted, refused


def simulate_push(graph: Graph, store: Store, ports: Ports, settings: EngineSettings,
                  ref: WorkItemRef, heads: Sequence[tuple[int, str]]) -> Simulation:
    """What a push of new head commits (``(pull number, sha)``) would do to ``ref``: the
    item sent back to a vouching gate, and the ``loopgate`` check (issue 19 §3). Needs
    ``settings.merge_gate`` (the runtime's publishing is off otherwise).

    Raises:
        ClaimRefused: ``not-started``.
    """
    before = _load(store, ref)
    runtime, copy, _ = _runtime(graph, before, ports, settings, dict(heads))
    pulls = tuple(n for n, _ in heads)
    if not runtime.publish_gate(ref, pulls=pulls):
        off = _summary(ref, "", "", before, before, copy, False,
                       "the merge gate is off (mergeGate.enabled, or no github section): "
                       "a push changes nothing")
        return replace(off, pulls=pulls)
    after = copy.load(ref) or before
    return replace(_summary(ref, "", "", before, after, copy, True, ""), pulls=pulls)


def render(sim: Simulation) -> list[str]:
    """The lines ``loopgate simulate`` prints (plain text)."""
    lines: list[str] = []
    if sim.node:
        verb = "would count" if sim.counted else "would NOT count"
        lines.append(f"{sim.ref}: @{sim.login}'s approval at {sim.node} {verb}"
                     + (f": {sim.reason}" if sim.reason else ""))
    else:
        pulls = ", ".join(f"#{n}" for n in sim.pulls)
        lines.append(f"{sim.ref}: a push to {pulls}" + (f": {sim.reason}" if sim.reason else ""))
    if sim.after_node != sim.before_node:
        lines.append(f"moves: {sim.before_node} -> {sim.after_node} ({sim.after_status})"
                     + (f": {sim.wait}" if sim.wait and sim.after_status != "complete" else ""))
    else:
        lines.append(f"stays at {sim.after_node} ({sim.after_status})"
                     + (f": {sim.wait}" if sim.wait else ""))
    if sim.tally:
        lines.append(f"approvals: {sim.tally}")
    if sim.check:
        lines.append(f"loopgate check: {sim.check.get('state', '')} — "
                     f"{sim.check.get('description', '')}")
    if sim.effects:
        lines.append("would queue:")
        lines.extend(f"  - {name}" for name in sim.effects)
    lines.append("(simulated: nothing was written)")
    return lines
