"""``loopgate simulate``: what a gate's rules would do with one decision, touching nothing
(issue 24 §4).

The simulation is the real engine on a copy: a :class:`~engine.runtime.Runtime` over a
:class:`~engine.store.memory.MemoryStore` seeded with the item's committed state, whose
``on_commit`` carries nothing out, and ports whose writes are recorded and never sent
(:class:`DryTracker`, :class:`DryNotifier`). Reads go to the real tracker (a team lookup, the
delivering pull requests, CODEOWNERS), so the answer is the one the walk would give now.
The real store is only ever ``load``-ed.

The decision is fed as a chat surface's Approve click is (an :class:`engine.events.Decision`
by LOGIN at NODE): the gate's own rules decide, once, as for a reply on the thread
(``engine.approvals.evaluate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine import events as ev
from engine.approvals import recorded_approvals
from engine.errors import ClaimRefused
from engine.graph.model import Graph
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.ports import Comment, Ports, PullRequest, Tracker, TrackerError
from engine.refs import WorkItemRef
from engine.settings import EngineSettings, normalize_login
from engine.state import ItemState
from engine.store.base import Store
from engine.store.memory import MemoryStore

__all__ = ["DECISION_WORDS", "DryTracker", "DryNotifier", "Simulation", "CodeOwnersView",
           "simulate_decision", "simulate_push", "simulate_changes", "render", "owner_lines",
           "change_path"]

#: The outcomes a decision may be simulated with (engine.hooks.feedback's keywords).
DECISION_WORDS = {APPROVED: "approved", APPROVED_WITH_COMMENTS: "approved with comments",
                  CHANGES_REQUESTED: "changes requested"}

#: ``via`` of a simulated decision when the caller names no surface: the shipped chat
#: surface's name (data, as stored by a real click; it only names where the echo says the
#: decision came from). The CLI and the web API pass their own (``cli``, ``web``).
SIMULATED_VIA = "slack"

#: Tracker methods that only read; every other call is recorded and not sent.
_READS = frozenset({
    "list_comments", "labels", "delivering_pull_requests", "issue_info", "comment_edits",
    "team_membership", "items_for_pull_request", "codeowners_file",
    "merge_group_commit_list", "pull_request_commits", "merge_queue_pulls",
    "changed_files", "comment", "get_comment", "pull_commits",
})
_ATTRIBUTES = frozenset({"comments_editable", "capabilities"})


class DryTracker:
    """A tracker that reads through ``real`` and records every write without sending it.

    Only the methods in ``_READS`` reach ``real``; any other method (``add_comment``,
    ``add_label``, ``publish_check``, ``remember_comment``, ...) is recorded in :attr:`writes` as
    ``(method, args)`` and answers a harmless value, so an unknown write fails safe.

    Args:
        real: the configured tracker.
        heads: ``{pull number: sha}`` to report as those pull requests' heads
            (``simulate --push``).
        changes: repository paths every delivering pull request is said to change too
            (``simulate --codeowners-change``), besides what GitHub lists.
    """

    def __init__(self, real: Tracker, heads: Mapping[int, str] | None = None,
                 changes: Sequence[str] = ()) -> None:
        self._real = real
        self._heads = dict(heads or {})
        self._changes = tuple(changes)
        self.writes: list[tuple[str, tuple[Any, ...]]] = []

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """The real list, with :attr:`heads` applied."""
        pulls = self._real.delivering_pull_requests(ref)
        return [replace(p, head_sha=self._heads.get(p.number, p.head_sha)) for p in pulls]

    def changed_files(self, pull: WorkItemRef) -> list[str]:
        """The real list (``TrackerError`` when it cannot be read), plus :attr:`changes`."""
        read = getattr(self._real, "changed_files", None)
        if read is None:
            raise TrackerError("this tracker cannot read a pull request's files")
        return list(dict.fromkeys([*read(pull), *self._changes]))

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
                # Never posted: a negative id no tracker gives names the n-th dry write.
                return Comment(id=-len(self.writes), author="",
                               body=str(args[-1]) if args else "")
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
    changes: tuple[str, ...] = ()
    owners: CodeOwnersView | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``--format json`` document (camelCase); with ``--codeowners-change`` also
        ``codeownersChange`` (the paths) and ``codeOwners`` (:meth:`CodeOwnersView.to_json`)."""
        doc = {"item": str(self.ref), "node": self.node, "as": self.login,
               "counted": self.counted, "reason": self.reason, "from": self.before_node,
               "to": self.after_node, "status": self.after_status, "tally": self.tally,
               "wait": self.wait, "check": dict(self.check), "effects": list(self.effects),
               "pulls": list(self.pulls)}
        if self.changes:
            doc["codeownersChange"] = list(self.changes)
            doc["codeOwners"] = self.owners.to_json() if self.owners else None
        return doc


@dataclass(frozen=True)
class CodeOwnersView:
    """Who owns the changed files at gate ``node`` once ``--codeowners-change`` paths are
    added (issue 24 §1 meets §4).

    Attributes:
        node: the gate the owners were computed for.
        files: ``(path, owners)`` of every changed file, sorted by path.
        problem: why nobody is a code owner there ("" when ``files`` is the answer; the
            read's error when CODEOWNERS or the files could not be read).
        approvers: who may approve there (the gate rule's :meth:`ApprovalRule.who`).
        in_rule: the gate's rule names ``codeowners`` (else the owners approve nothing).
    """

    node: str
    files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    problem: str = ""
    approvers: str = ""
    in_rule: bool = False
    skipped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{node, files: {path: [owner]}, problem, approvers, inRule, skipped}``
        (``skipped``: the CODEOWNERS lines GitHub would skip, ``path:line: reason: text``)."""
        return {"node": self.node, "files": {p: list(o) for p, o in self.files},
                "problem": self.problem, "approvers": self.approvers, "inRule": self.in_rule,
                "skipped": list(self.skipped)}


def _runtime(graph: Graph, state: ItemState, ports: Ports, settings: EngineSettings,
             heads: Mapping[int, str] | None, changes: Sequence[str] = ()
             ) -> tuple[Any, MemoryStore, DryTracker]:
    from engine.runtime import Runtime  # late: the runtime imports every hook

    copy = MemoryStore()
    with copy.transaction(state.ref) as tx:
        tx.state = state.copy()
    tracker = DryTracker(ports.tracker, heads, changes)
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
    if not detail and getattr(effect, "body", None):
        first = str(effect.body).strip().splitlines()[0]
        detail = repr(first if len(first) <= 80 else first[:79] + "…")
    return f"{effect.kind} {detail}".strip()


def _summary(ref: WorkItemRef, node: str, login: str, before: ItemState, after: ItemState,
             copy: MemoryStore, counted: bool, reason: str, graph: Graph | None = None,
             settings: EngineSettings | None = None,
             tracker: DryTracker | None = None) -> Simulation:
    approvals = ""
    if node and after.current_node == node and graph is not None and settings is not None:
        approvals = _tally(graph, settings, tracker, ref, node, after)
    gate = after.surface.get("mergeGate") or {}
    check = ({k: gate[k] for k in ("state", "description") if k in gate}
             if isinstance(gate, Mapping) else {})
    wait = after.parked.reason
    return Simulation(ref, node, login, counted, reason, before.current_node,
                      after.current_node, str(after.status), approvals, wait, check,
                      _effects(copy, ref))


def _tally(graph: Graph, settings: EngineSettings, tracker: DryTracker | None,
           ref: WorkItemRef, node: str, after: ItemState) -> str:
    """The gate's tally after, as the gate counts it: with whose work it is when the rule
    needs it (``agentAuthored``, ``codeowners: all-files``), read through the dry tracker;
    a failed read leaves the plain count (the wait then says why)."""
    from engine.approvals import tally
    from engine.hooks.common import people_for, rule_for

    rule = rule_for(graph, settings, node)
    people = None
    if tracker is not None and (rule.agent_approvals or rule.codeowners):
        try:
            people = people_for(tracker, ref, node, rule, settings, state=after, graph=graph)
        except TrackerError:
            people = None
    membership = tracker.team_membership if tracker is not None else None
    return tally(rule, recorded_approvals(after, node), people=people,
                 membership=membership).summary()


def _owners_view(graph: Graph, settings: EngineSettings, tracker: DryTracker,
                 ref: WorkItemRef, node: str, changes: Sequence[str]) -> CodeOwnersView | None:
    """The code owners of ``node`` with ``changes`` added (None without changes)."""
    if not changes:
        return None
    from engine.hooks.common import code_owners_for, rule_for  # late: hooks import a lot

    rule = rule_for(graph, settings, node)
    try:
        found = code_owners_for(tracker, ref, node, settings)
    except TrackerError as exc:
        return CodeOwnersView(node, problem=str(exc), approvers=rule.who(
            settings.authorized_users), in_rule=bool(rule.codeowners))
    return CodeOwnersView(node, found.files, found.problem,
                          rule.who(settings.authorized_users, found), bool(rule.codeowners),
                          tuple(found.errors))


def change_path(path: str) -> str:
    """A ``--codeowners-change`` / ``codeownersChange`` path as GitHub lists changed files:
    repository-relative, ``/``-separated, no leading ``/``.

    Raises:
        ValueError: empty, a ``..`` or ``.`` segment, or a backslash (one line naming it).
    """
    text = str(path).strip().lstrip("/")
    parts = text.split("/")
    if not text or "\\" in text or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r} is not a repository path (like src/app.py)")
    return text


def simulate_decision(graph: Graph, store: Store, ports: Ports, settings: EngineSettings,
                      ref: WorkItemRef, login: str, node: str,
                      outcome: str = APPROVED, changes: Sequence[str] = (),
                      via: str = SIMULATED_VIA) -> Simulation:
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
        changes: paths the delivering pull requests are said to change too
            (``--codeowners-change``): the code owners are recomputed with them and shown
            (:attr:`Simulation.owners`), and the gate decides with them.
        via: the surface the simulation was asked on (``cli``, ``web``, ``slack``): the
            decision is simulated as made there, so the effects' echo names it.

    Returns:
        The :class:`Simulation`. A decision for a node the item is not at answers nothing
        (``counted`` False, ``reason`` says where the item is).

    Raises:
        ClaimRefused: ``not-started``.
        KeyError: ``outcome`` is not one of :data:`DECISION_WORDS`.
    """
    DECISION_WORDS[outcome]  # KeyError for an unknown outcome, as documented
    before = _load(store, ref)
    name = normalize_login(login)
    runtime, copy, dry = _runtime(graph, before, ports, settings, None, changes)
    owners = _owners_view(graph, settings, dry, ref, node, changes)
    if before.current_node != node:
        return replace(_summary(ref, node, name, before, before, copy, False,
                                f"the item is at {before.current_node}, not {node}: the "
                                "decision would answer no gate"),
                       changes=tuple(changes), owners=owners)
    result = runtime.advance(ref, ev.Decision(node, outcome, name, via=via or SIMULATED_VIA))
    counted, reason = _verdict(node, name, result)
    return replace(_summary(ref, node, name, before, result.state, copy, counted, reason,
                            graph, settings, dry), changes=tuple(changes), owners=owners)


def simulate_changes(graph: Graph, store: Store, ports: Ports, settings: EngineSettings,
                     ref: WorkItemRef, changes: Sequence[str]) -> Simulation:
    """What the item's current gate would say if its pull requests also changed
    ``changes`` (``simulate ITEM --codeowners-change FILE``): the code owners recomputed
    (:attr:`Simulation.owners`) and the gate re-evaluated with no new decision (a
    ``codeowners: all-files`` gate may then wait for a new file's owner).

    Raises:
        ClaimRefused: ``not-started``.
        ValueError: no path given.
    """
    if not changes:
        raise ValueError("--codeowners-change needs at least one path")
    before = _load(store, ref)
    node = before.current_node
    runtime, copy, dry = _runtime(graph, before, ports, settings, None, changes)
    owners = _owners_view(graph, settings, dry, ref, node, changes)
    result = runtime.advance(ref, ev.Recheck(node))
    return replace(_summary(ref, node, "", before, result.state, copy, False, "", graph, settings,
                            dry), changes=tuple(changes), owners=owners)


def _verdict(node: str, name: str, result: ev.Result) -> tuple[bool, str]:
    """``(counted, reason)`` of ``name``'s decision at ``node``, read from the runtime's
    typed result (issue 20 §1)."""
    if isinstance(result, ev.Unverified):
        return False, f"could not be checked now: {result.reason}"
    if isinstance(result, ev.Refused):
        return False, result.reason
    if isinstance(result, ev.Moved):
        return True, ""
    if name in {a.by for a in recorded_approvals(result.state, node)}:
        return True, ""
    return False, result.reason or "the gate did not count it"


def simulate_push(graph: Graph, store: Store, ports: Ports, settings: EngineSettings,
                  ref: WorkItemRef, heads: Sequence[tuple[int, str]],
                  changes: Sequence[str] = ()) -> Simulation:
    """What a push of new head commits (``(pull number, sha)``) would do to ``ref``: the
    item sent back to a vouching gate, and the ``loopgate`` check (issue 19 §3). Needs
    ``settings.merge_gate`` (the runtime's publishing is off otherwise). ``changes``: the
    push also changes these paths (``--codeowners-change``; the code owners of the gate
    the item is at afterwards are shown).

    Raises:
        ClaimRefused: ``not-started``.
    """
    before = _load(store, ref)
    runtime, copy, dry = _runtime(graph, before, ports, settings, dict(heads), changes)
    pulls = tuple(n for n, _ in heads)
    if not runtime.publish_gate(ref, pulls=pulls):
        off = _summary(ref, "", "", before, before, copy, False,
                       "the merge gate is off (mergeGate.enabled, or no github section): "
                       "a push changes nothing")
        return replace(off, pulls=pulls, changes=tuple(changes), owners=_owners_view(
            graph, settings, dry, ref, before.current_node, changes))
    after = copy.load(ref) or before
    return replace(_summary(ref, "", "", before, after, copy, True, ""), pulls=pulls,
                   changes=tuple(changes), owners=_owners_view(
                       graph, settings, dry, ref, after.current_node, changes))


def render(sim: Simulation) -> list[str]:
    """The lines ``loopgate simulate`` prints (plain text)."""
    lines: list[str] = []
    if sim.changes and not sim.login and not sim.pulls:
        lines.append(f"{sim.ref}: if its pull requests also changed "
                     + ", ".join(sim.changes))
    elif sim.node:
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
    lines.extend(owner_lines(sim))
    lines.append("(simulated: nothing was written)")
    return lines


def owner_lines(sim: Simulation) -> list[str]:
    """``--codeowners-change``'s lines: the code owners of each changed file at the gate,
    the paths added marked, and who may approve there."""
    view = sim.owners
    if not sim.changes or view is None:
        return []
    added = set(sim.changes)
    lines = [f"code owners at {view.node}, with " + ", ".join(sim.changes) + " changed:"]
    if view.problem:
        lines.append(f"  none: {view.problem}")
    for path, owners in view.files:
        mark = " (added)" if path in added else ""
        lines.append(f"  {path}{mark}: " + (", ".join(owners) or "no owner"))
    lines.extend(f"  skipped as GitHub skips it: {line}" for line in view.skipped)
    if view.in_rule:
        lines.append(f"may approve at {view.node}: {view.approvers}")
    else:
        lines.append(f"{view.node}'s rule names no codeowners: these owners approve nothing "
                     "there")
    return lines
