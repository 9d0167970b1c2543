"""The engine runtime: walks one work item through a compiled graph.

Contract: docs/ARCHITECTURE.md "Runtime semantics" and issue 2 §4. The runtime never
imports a hook module by name: it looks hooks up in the registry (``engine.hooks``
registers every shipped hook).

Decide, commit, then act (issue 10 §1). An operation first *decides* on a copy of the
committed state, outside any database transaction: hooks read what they need through the
ports (thread, edit history, files: network calls are fine here) and emit effects instead
of writing. Then ONE short transaction commits the new state, the event log and the effect
rows, with no network call inside — provided the item's revision is still the one decided
on; otherwise the decision is thrown away and made again on the newer state (optimistic
concurrency, bounded by :data:`MAX_CONFLICTS`). After commit, ``on_commit`` wakes whoever
performs effects (:mod:`engine.perform`, or the GitHub worker).

Skips (opt-in design, "runtime.py — default, route, record, report"): an unselected
opt-in node is expressed as a skip with ``via: not-selected``, so routing, ``check`` and
``--recompute`` all read skips through the one trusted function :func:`declared_skips`.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import engine.hooks  # noqa: F401  -- registers every shipped hook in REGISTRY
from engine import events as ev
from engine import operator as op
from engine.approvals import Verdict
from engine.authorship import could_matter, needs_check, screen, wait_note
from engine.effects import (
    FAILED,
    PENDING,
    RUNNING,
    Effect,
    Notify,
    PostComment,
    PublishGate,
    PublishMergeGroup,
)
from engine.errors import ClaimRefused, LoopgateError, StoreError
from engine.graph.model import Graph, HookRef, Node
from engine.hooks.common import rule_for
from engine.hooks.markers import with_self_marker
from engine.hooks.registry import (
    BLOCK,
    PASS,
    REGISTRY,
    SKIP,
    WAIT,
    HookContext,
    HookRegistry,
    HookResult,
)
from engine.hooks.review_requests import ask_on_new_pulls
from engine.mergegate import (
    COVERAGE_KEY,
    gates_to_cover,
    item_check,
    note_seen,
    note_sent_back,
    record_coverage,
    seen_heads,
    uncovered,
    vouching_nodes,
    why_uncovered,
)
from engine.mergegate import SURFACE_KEY as MERGE_GATE_KEY
from engine.outcomes import PASS as OUTCOME_PASS
from engine.outcomes import SKIPPED
from engine.perform import InlinePerformer
from engine.ports import Ports, TrackerError
from engine.records import NOT_PARKED, Completion, ForcedMove, OptIn, Parked, Skip
from engine.refs import WorkItemRef
from engine.reviewers import SURFACE_KEY as REVIEWS_KEY
from engine.settings import EngineSettings, normalize_login
from engine.state import ItemState, ItemStatus
from engine.store.base import Store, Transaction
from engine.store.memory import StoreTransaction
from engine.story import (
    SELF_CONFIRMING_HOOKS,
    announces,
    author_completed,
    author_passed,
    completed_comment,
    gate_passed_comment,
)

__all__ = [
    "Runtime",
    "declared_skips",
    "is_selected",
    "NOT_SELECTED",
    "NOT_SELECTED_SKIP",
    "DECLARATION",
    "ESCALATED_NODE",
    "AMNESTY",
    "MAX_CONFLICTS",
    "OperatorResult",
]

T = TypeVar("T")
#: A plan record a passing gate returns (``skips`` / ``optIns`` data).
_Plan = TypeVar("_Plan", Skip, OptIn)

#: Outbox statuses ``check`` reports: still owed, or given up.
OWED = (PENDING, RUNNING, FAILED)

#: How many times an operation decides again because its item changed meanwhile.
MAX_CONFLICTS = 20

logger = logging.getLogger(__name__)

#: ``via`` of the implicit skip of an opt-in node nobody ticked (opt-in design).
NOT_SELECTED = "not-selected"
#: The skip :func:`declared_skips` gives an opt-in node nobody selected; its document is
#: ``{"via": "not-selected"}`` (as ``check --format json`` has always printed it).
NOT_SELECTED_SKIP = Skip(NOT_SELECTED, layout=("via",))
#: ``via`` of a skip declared with ``loopgate skip`` / :meth:`Runtime.declare_skips`.
DECLARATION = "declaration"
#: The node blocks escalate to, when the graph defines it.
ESCALATED_NODE = "escalated"
#: Why a skip of a node already entered is refused (issue 2 §4).
AMNESTY = "a skip is a plan, not an amnesty"

_KINDS = (PASS, WAIT, BLOCK, SKIP)

#: Keys :meth:`Runtime.advance` adds to an event whose comments it screened for
#: authorship (issue 19 §1): the comments removed, and why the tracker could not tell.
NOT_COUNTED_KEY = "notCounted"
UNVERIFIED_KEY = "authorshipUnverified"


# -- the ONE trusted read of skips -------------------------------------------------------
def is_selected(graph: Graph, state: ItemState, node_id: str) -> bool:
    """True when ``node_id`` is a compiled opt-in node with a selection on record.

    A forged ``optIns`` entry on any other node is inert (opt-in design R1.7).
    """
    return node_id in state.opt_ins and graph.has_node(node_id) and graph.node(node_id).opt_in


def declared_skips(graph: Graph, state: ItemState) -> dict[str, Skip]:
    """The skips that count: ``node id -> Skip`` (:class:`engine.records.Skip`).

    Keeps a recorded declaration only for a compiled skippable, non-required node (a
    forged skip on a protected node is inert), then adds ``Skip("not-selected")``
    (:data:`NOT_SELECTED_SKIP`, whose document is ``{via: "not-selected"}``) for every
    opt-in node that is not selected. Routing, ``check`` and ``--recompute`` read
    skips only through this function (opt-in design, "declared_skips").

    Args:
        graph: the compiled graph.
        state: the item's state.

    Returns:
        A fresh mapping in graph order for the defaults, declaration order otherwise.
    """
    out: dict[str, Skip] = {}
    for node_id, decl in state.skips.items():
        if not graph.has_node(node_id):
            continue
        node = graph.node(node_id)
        if node.skippable and not node.required:
            out[node_id] = decl
    for node in graph.opt_in_nodes():
        if node.id not in out and not is_selected(graph, state, node.id):
            out[node.id] = NOT_SELECTED_SKIP
    return out


def entered(state: ItemState, node_id: str) -> bool:
    """True when the pointer is on ``node_id`` or has ever entered (or skipped) it."""
    record = state.nodes.get(node_id)
    return node_id == state.current_node or bool(record and record.entered_at)


def _jsonable(value: Any) -> Any:
    # Hook data must be stored as JSON: thaw read-only mappings and tuples, flatten
    # dataclasses (e.g. a Comment), and stringify anything else rather than fail a commit.
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if callable(getattr(value, "to_json", None)):  # a record type (engine.records)
        return _jsonable(value.to_json())
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _stamp(ports: Ports) -> str:
    return ports.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Walk:
    """One operation's working set: the scratch transaction, the state and the clock."""

    tx: Transaction
    state: ItemState
    ports: Ports
    said_complete: bool = False  # a gate's line already said the item is complete

    def now(self) -> str:
        return _stamp(self.ports)

    def log(self, kind: str, data: Mapping[str, Any]) -> None:
        self.tx.log(kind, _jsonable(data), at=self.now())  # type: ignore[call-arg]

    def emit(self, effect: Effect) -> str:
        key = uuid.uuid4().hex
        self.tx.enqueue(key, effect)
        return key


class _Conflict(Exception):
    """The item's revision moved between the decision and its commit."""


class _Declined(Exception):
    """A chat decision the gate's approval rule refused: nothing is committed."""

    def __init__(self, reason: str, by: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.by = by


@dataclass
class _Offered:
    """Which node an :meth:`Runtime.advance` offered its event to, and that node's visit
    then: what the typed result (:mod:`engine.events`) is read from."""

    node: str = ""
    visit: int = 0
    elsewhere: bool = False

    def offer(self, node_id: str, state: ItemState) -> None:
        visit = state.visit(node_id)
        self.node, self.visit = node_id, visit.number if visit is not None else 0

    def result(self, state: ItemState, expected: str | None) -> ev.Result:
        """The result, read from the committed ``state``."""
        if self.elsewhere:
            where = state.current_node or "no node"
            return ev.Refused(str(expected), f"the item is at {where}, not {expected}",
                              state.visit(str(expected)), ev.NOT_CURRENT, state)
        history = state.history(self.node)
        # A node with no visit on record (state from before visits were kept) got one
        # while deciding: its latest then.
        visit = next((v for v in history if v.number == self.visit), None) if self.visit \
            else (history[-1] if history else None)
        if visit is not None and not visit.open:
            decision = visit.decision
            how = f"{visit.outcome} by {decision.by}" if decision and decision.by \
                else visit.outcome
            return ev.Moved(self.node, how, visit, state.current_node, visit.outcome, state)
        parked = state.parked.at_node(self.node)
        reason = parked.reason or f"waiting at {self.node}"
        if parked.unverified:
            return ev.Unverified(self.node, reason, visit, state)
        return ev.Waiting(self.node, reason, visit, state)


@dataclass
class _Decision:
    """What an operation decided, ready to commit: the base revision it decided on."""

    base: int | None
    scratch: StoreTransaction = field(repr=False)

    def changed(self, before: dict[str, Any] | None) -> bool:
        scratch = self.scratch
        if scratch.events or scratch.effects:
            return True
        after = scratch.state.to_document() if scratch.state is not None else None
        return after != before


@dataclass
class OperatorResult:
    """What an operator verb did (issue 19 §5).

    Attributes:
        accepted: node id -> token of the skips recorded at once (``operator_skip``).
        rejected: token or node id -> why it was refused.
        request: the pending operator request recorded and posted (its stored document),
            or None when nothing waits for a confirmation.
        state: a copy of the committed state (None for an item never started).
    """

    accepted: dict[str, str] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    request: dict[str, Any] | None = None
    state: ItemState | None = None


class Runtime:
    """Walks work items through ``graph``, persisting to ``store``.

    Args:
        graph: the compiled graph.
        store: the state store (:class:`MemoryStore` or :class:`SqliteStore`).
        ports: tracker, artifact store, notifier, clock handed to hooks.
        settings: engine settings (authorized users, keywords, spec dir).
        registry: where hook names are looked up (default: the process-wide registry).
        on_commit: called with the work item after every commit;
            exceptions from it are logged, never raised. Default: an
            :class:`~engine.perform.InlinePerformer` carries them out at once (the CLI,
            the offline tracker, tests); ``serve`` hands them to its GitHub worker.
    """

    def __init__(
        self,
        graph: Graph,
        store: Store,
        ports: Ports,
        settings: EngineSettings | None = None,
        *,
        registry: HookRegistry | None = None,
        on_commit: Callable[[WorkItemRef], None] | None = None,
    ) -> None:
        self.graph = graph
        self.store = store
        self.ports = ports
        self.settings = settings or EngineSettings(loop=graph.name)
        self.registry = registry or REGISTRY
        self.on_commit = on_commit or InlinePerformer(store, ports, self.settings)

    # -- decide, commit ------------------------------------------------------------------
    def _operate(self, ref: WorkItemRef, decide: Callable[[Transaction], T]) -> T:
        """Run ``decide`` on a scratch copy of ``ref``'s state, then commit what it
        decided in one short transaction (see the module docstring).

        Raises:
            StoreError: the item kept changing for :data:`MAX_CONFLICTS` attempts, or the
                store could not commit. Whatever ``decide`` raises (nothing is committed).
        """
        for _ in range(MAX_CONFLICTS):
            base = self.store.load(ref)
            before = base.to_document() if base is not None else None
            exits = {n: r.exited_at for n, r in base.nodes.items()} if base is not None else {}
            decision = _Decision(base.revision if base is not None else None,
                                 StoreTransaction(ref, base))
            result = decide(decision.scratch)
            self._cover_gates(decision.scratch, exits)
            self._refresh_merge_gate(decision.scratch)
            if not decision.changed(before):
                return result
            try:
                self._commit(ref, decision)
            except _Conflict:
                continue
            # Every commit (not only one that stored effects): a row that waited out a
            # failure is taken again on the item's next event.
            self._notify_commit(ref)
            return result
        raise StoreError(f"{ref} kept changing while a decision was made "
                         f"({MAX_CONFLICTS} attempts)")

    def _refresh_merge_gate(self, tx: StoreTransaction, *, pulls: tuple[int, ...] = (),
                            always: bool = False) -> None:
        """Record the item's ``loopgate`` check in ``surface.mergeGate`` and emit a
        :class:`~engine.effects.PublishGate` when it changed (every transition moves the
        pointer or the wait, so it changes with each), or ``always`` (a new head commit).
        Issue 11 §1; off unless ``settings.merge_gate``."""
        state = tx.state
        if not self.settings.merge_gate or state is None or not state.current_node:
            return
        check = item_check(self.graph, state, self.settings.merge_gate_after,
                           self.settings).to_json()
        if check == state.surface.get(MERGE_GATE_KEY) and not always:
            return
        state.surface[MERGE_GATE_KEY] = check
        tx.enqueue(uuid.uuid4().hex, PublishGate(state.ref, pulls))

    def publish_gate(self, ref: WorkItemRef, pulls: tuple[int, ...] = ()) -> bool:
        """Publish ``ref``'s ``loopgate`` check again on its delivering pull requests
        (``pulls``: only these), e.g. on a new head commit (issue 11 §1). A pull request
        that started delivering the item while it waits at an approval gate covering pull
        requests is asked for reviews in this same visit (issue 24 §3,
        :func:`engine.hooks.review_requests.ask_on_new_pulls`), merge gate or not.

        Returns:
            False when nothing was queued (the merge gate is off and no review was asked,
            or the item is not started).
        """
        def decide(tx: Transaction) -> bool:
            if tx.state is None or not tx.state.current_node:
                return False
            walk = _Walk(tx, tx.state, self.ports)
            if self.settings.merge_gate:
                self._send_back_if_uncovered(walk)
            asked = self._review_new_pulls(walk)
            if not self.settings.merge_gate:
                return asked
            self._refresh_merge_gate(tx, pulls=pulls, always=True)  # type: ignore[arg-type]
            return True

        return self._operate(ref, decide)

    def _review_new_pulls(self, w: _Walk) -> bool:
        """Issue 24 §3: at a gate whose entry chain asks for reviews (``request-review``),
        ask on the open delivering pull requests its visit has not asked yet (one durable
        :class:`~engine.effects.RequestReviews`, the same leave-out rules as at entry).
        True when one was queued. Reads the tracker only at such a gate."""
        node_id = w.state.current_node
        if not self.graph.has_node(node_id):
            return False
        node = self.graph.node(node_id)
        hook_ref = next((h for h in node.entry if h.name == "request-review"), None)
        if hook_ref is None:
            return False
        surface = ask_on_new_pulls(self._hook_context(w, node, hook_ref, "entry", {}))
        w.state.surface.update(_jsonable(surface))
        entry = (surface.get(REVIEWS_KEY) or {}).get(node_id) or {}
        return entry.get("status") == "queued"  # not a recorded failure or "nobody"

    def publish_merge_group(self, pull: WorkItemRef, head_sha: str, base_sha: str = "",
                            head_ref: str = "") -> bool:
        """Queue the ``loopgate`` check of a merge queue's group commit ``head_sha``
        (issue 19 §4): a :class:`~engine.effects.PublishMergeGroup` row keyed by ``pull``
        (the pull request ``head_ref`` names; no work item state is written), carried out
        by the performer like every effect (durable, once).

        Returns:
            False when the merge gate is off (nothing queued).
        """
        if not self.settings.merge_gate:
            return False

        def decide(tx: Transaction) -> bool:
            tx.enqueue(uuid.uuid4().hex, PublishMergeGroup(pull, head_sha, base_sha, head_ref))
            return True

        return self._operate(pull, decide)

    # -- issue 19 §3: the vouching gates cover commits -----------------------------------
    def _vouching(self) -> tuple[str, ...]:
        return vouching_nodes(self.graph, self.settings.merge_gate_after,
                              self.settings.merge_gate_vouching)

    def _open_heads(self, ref: WorkItemRef) -> dict[int, tuple[str, str]]:
        """``{pull: (head sha, author)}`` of the open delivering pull requests (a port
        read: called while deciding, never inside a write transaction).

        Raises:
            TrackerError: the tracker could not say.
        """
        return {pr.number: (pr.head_sha, pr.author)
                for pr in self.ports.tracker.delivering_pull_requests(ref)
                if pr.state == "open"}

    def _cover_gates(self, tx: StoreTransaction, before: Mapping[str, str]) -> None:
        """Record the heads every vouching gate that passed in this operation covered
        (``surface.mergeCoverage``; issue 19 §3). Unreadable heads cover nothing."""
        state = tx.state
        if not self.settings.merge_gate or state is None:
            return
        vouching = self._vouching()
        due = gates_to_cover(state, vouching, before)
        if not due:
            return
        heads: dict[int, tuple[str, str]] | None
        try:
            heads, error = self._open_heads(state.ref), ""
        except TrackerError as exc:
            heads, error = None, f"the delivering pull requests could not be read: {exc}"
        after = self.settings.merge_gate_after
        guard = after if (self.graph.has_node(after) and rule_for(
            self.graph, self.settings, after).prevent_self_approval) else ""
        moved = False
        for node in due:
            shown = seen_heads(state, node, heads) if heads is not None else None
            moved = moved or (heads is not None and shown != heads)
            record_coverage(state, vouching, node, shown, error, guard)
        if moved:  # a head pushed while the gate was read: its gate answers it again
            self._send_back_if_uncovered(_Walk(tx, state, self.ports))

    def _note_entry_heads(self, state: ItemState, node_id: str) -> None:
        """At a vouching gate's entry, note the heads its reviewers are shown (read while
        deciding, outside any write transaction); see :func:`engine.mergegate.note_seen`."""
        if not self.settings.merge_gate or node_id not in self._vouching():
            return
        try:
            heads: dict[int, tuple[str, str]] | None = self._open_heads(state.ref)
        except TrackerError:
            heads = None
        note_seen(state, node_id, heads)

    def _send_back_if_uncovered(self, w: _Walk) -> None:
        """A delivering pull request's head that a passed vouching gate did not cover
        (a push, or a pull request that started delivering later) sends the item back to
        the first such gate, as a new visit: its exit chain decides where the graph goes
        (``code-quiz``'s digest of the heads moved: ``stale``). Issue 19 §3. Unreadable
        heads change nothing (the check itself stays bound to covered heads)."""
        state = w.state
        if COVERAGE_KEY not in state.surface or state.status == ItemStatus.ESCALATED:
            return
        vouching = self._vouching()
        try:
            heads = self._open_heads(state.ref)
        except TrackerError:
            return
        here = self.graph.position(state.current_node)
        misses = []
        for pull, (head, _) in sorted(heads.items()):
            node_id, covered = uncovered(state, vouching, pull, head) or ("", "")
            # Back, never forward: a gate past the pointer (passed in an earlier round,
            # the item sent back since) is walked to again anyway.
            if node_id and self.graph.position(node_id) <= here:
                misses.append((node_id, pull, head, covered))
        if not misses:
            return
        node_id, pull, head, covered = min(misses, key=lambda m: vouching.index(m[0]))
        reason = why_uncovered(pull, head, node_id, covered)
        note_sent_back(state, reason, pull=pull, head=head)
        self._reenter(w, node_id, {"pull": pull, "head": head, "covered": covered,
                                   "reason": reason})

    def _reenter(self, w: _Walk, node_id: str, why: Mapping[str, Any]) -> None:
        state, now = w.state, w.now()
        source = state.current_node
        left = state.visit(source) if source else None
        if source != node_id and left is not None and left.open:
            state.end_visit(source, now, "")  # left for a push, not passed (issue 19 §2)
        record = state.record(node_id)
        record.entered_at, record.exited_at, record.outcome = now, "", ""
        record.attempts, record.last_block = 0, ""
        state.begin_visit(node_id, now)
        self._note_entry_heads(state, node_id)
        # A new visit starts from zero even within the clock's second of the last one.
        approvals = dict(state.surface.get("approvals") or {})
        if approvals.pop(node_id, None) is not None:
            state.surface["approvals"] = approvals
        state.current_node, state.status, state.parked = (node_id, ItemStatus.RUNNING,
                                                          NOT_PARKED)
        w.log("graph.head_moved", {"from": source, "to": node_id, **why})
        node = self.graph.node(node_id)
        self._go(w, node, self._evaluate(w, node, {}))

    def _commit(self, ref: WorkItemRef, decision: _Decision) -> None:
        scratch = decision.scratch
        with self.store.transaction(ref) as tx:
            current = tx.state.revision if tx.state is not None else None
            if current != decision.base:
                raise _Conflict(ref)
            tx.state = scratch.state
            for kind, data, at in scratch.events:
                tx.log(kind, data, at=at)  # type: ignore[call-arg]
            for key, effect in scratch.effects:
                tx.enqueue(key, effect)

    def _notify_commit(self, ref: WorkItemRef) -> None:
        try:
            self.on_commit(ref)
        except Exception as exc:  # noqa: BLE001 -- the commit stands; the rows wait
            logger.warning("performing effects of %s failed: %s", ref, type(exc).__name__)

    # -- trusted reads -----------------------------------------------------------------
    def declared_skips(self, state: ItemState) -> dict[str, Skip]:
        """See :func:`declared_skips` (the ONE trusted read of skips)."""
        return declared_skips(self.graph, state)

    def selected(self, state: ItemState, node_id: str) -> bool:
        """See :func:`is_selected`."""
        return is_selected(self.graph, state, node_id)

    # -- verbs -------------------------------------------------------------------------
    def start(self, ref: WorkItemRef) -> ItemState:
        """Start ``ref`` at ``graph.start`` and run the walk as far as it goes.

        Idempotent: a started item is never rewound. The started state (pointer on the
        start node, status running) is committed in its own transaction BEFORE the entry
        chain runs; the second transaction enters the start node unless someone already
        did (so a crash between the two is repaired by calling ``start`` again).

        Returns:
            A copy of the committed state.

        Raises:
            StoreError: the store could not commit.
        """
        self._operate(ref, self._begin)
        return self._operate(ref, self._enter_start).copy()

    def _begin(self, tx: Transaction) -> None:
        state = tx.state
        if state is None or not state.current_node:
            state = state or tx.create(self.graph.name)
            w = _Walk(tx, state, self.ports)
            state.loop = self.graph.name
            state.started_at = w.now()
            state.status = ItemStatus.RUNNING
            state.current_node = self.graph.start
            w.log("graph.started", {"node": self.graph.start, "loop": self.graph.name})

    def _enter_start(self, tx: Transaction) -> ItemState:
        state = tx.state
        assert state is not None  # committed by _begin; items are never deleted
        first = state.nodes.get(self.graph.start)
        if state.current_node == self.graph.start and not (first and first.entered_at):
            self._arrive(_Walk(tx, state, self.ports), self.graph.start, "")
        return state

    @overload
    def advance(self, ref: WorkItemRef, event: ev.Event) -> ev.Result: ...

    @overload
    def advance(self, ref: WorkItemRef,
                event: Mapping[str, Any] | None = None) -> ItemState: ...

    def advance(self, ref: WorkItemRef,
                event: ev.Event | Mapping[str, Any] | None = None) -> ev.Result | ItemState:
        """Offer ``event`` to the current node: re-evaluate its exit chain with it.

        The door (issue 20 §1): ``event`` is one of :mod:`engine.events`' frozen events
        (:class:`~engine.events.Comments`, :class:`~engine.events.Attestation`,
        :class:`~engine.events.Decision`, :class:`~engine.events.Selection`,
        :class:`~engine.events.Confirmation`, :class:`~engine.events.Recheck`) and the
        answer is a frozen :class:`~engine.events.Moved`, :class:`~engine.events.Waiting`,
        :class:`~engine.events.Refused` or :class:`~engine.events.Unverified` naming the
        node, the reason and the node's visit. The legacy mapping (``{"comments":
        [Comment]}`` | ``{"attestation": {...}}`` | ``{}``, optional ``via`` and
        ``expectNode``) is read as the matching typed event
        (:func:`engine.events.from_mapping`) and answered with the committed state, as
        before.

        An event bound to a node (``expected_node``; a decision's or selection's own node)
        applies only while the pointer is there: an ingress that read the state earlier
        must not answer the next gate by accident. Agent nodes move only on a ``complete``
        claim: there the state is returned unchanged and nothing is logged. Finished
        items are returned unchanged. Comments whose body may not be their author's (read
        now, or seen edited by someone else) are screened first (issue 19 §1,
        :meth:`_screen`): one that does not count is left out, logged
        (``graph.comment_not_counted``) and named in the wait; if the tracker cannot tell,
        the wait is ``unverified``. A chat :class:`~engine.events.Decision` whose person
        the gate's approval rule refuses changes nothing (:data:`engine.events.NOT_ALLOWED`).

        Returns:
            The typed result for a typed event; a copy of the committed state for a
            mapping.

        Raises:
            ClaimRefused: ``not-started``.
        """
        if isinstance(event, ev.EVENT_TYPES):
            return self._advance(ref, event, ev.hook_event(event))
        # The hooks see the mapping as given (keys beyond the known ones included).
        legacy = {k: v for k, v in (event or {}).items() if k != "expectNode"}
        return self._advance(ref, ev.from_mapping(event), legacy).state

    def _advance(self, ref: WorkItemRef, event: ev.Event,
                 hooks_see: dict[str, Any]) -> ev.Result:
        """:meth:`advance` for a typed event; ``hooks_see`` is its ``ctx.event``."""
        offered = ev.comment_ids(event.comments) if isinstance(event, ev.Comments) else []
        screened = self._screen(ref, hooks_see)
        expected = ev.expected_node(event)
        seen = _Offered()

        def decide(tx: Transaction) -> ItemState:
            state = self._started(tx, ref)
            # Confirmations of operator requests answer no gate (issue 19 §5).
            gate_event = self._answer_requests(_Walk(tx, state, self.ports), screened)
            node = self._current(state)
            seen.offer(node.id, state)
            if expected is not None and expected != node.id:
                seen.elsewhere = True
                return state
            if not self._finished(state, node) and node.actor != "agent":
                # Issue 19 §2: every comment offered to a gate (counted or held back) was
                # written before any visit that begins from now on (Visit.after_comment).
                state.saw_comments(offered)
                w = _Walk(tx, state, self.ports)
                for entry in screened.get(NOT_COUNTED_KEY) or ():
                    w.log("graph.comment_not_counted", {"node": node.id, **entry})
                self._go(w, node, self._evaluate(w, node, gate_event))
            return state

        try:
            state = self._operate(ref, decide).copy()
        except _Declined as exc:  # nothing was committed
            stored = self.store.load(ref)
            assert stored is not None  # _started found it
            return ev.Refused(seen.node, exc.reason, stored.visit(seen.node), ev.NOT_ALLOWED,
                              stored.copy(), exc.by)
        return seen.result(state, expected)

    def _screen(self, ref: WorkItemRef, event: dict[str, Any]) -> dict[str, Any]:
        """Keep only the event's comments that count as their authors' (issue 19 §1,
        :func:`engine.authorship.screen`: one lookup, before any decision, so a retried
        decision asks GitHub no second time). The removed ones go to
        :data:`NOT_COUNTED_KEY`, and a failed lookup to :data:`UNVERIFIED_KEY`."""
        comments = event.get("comments")
        if not isinstance(comments, list | tuple) or not any(
                needs_check(c) for c in comments if hasattr(c, "as_read")):
            return event
        result = screen([c for c in comments if hasattr(c, "as_read")], self.ports.tracker,
                        matters=lambda c: could_matter(c, self.settings))
        for refused in result.not_counted:
            logger.warning("comment %s on %s not counted: %s", refused.comment_id, ref,
                           refused.reason, extra={"event": "graph.comment_not_counted",
                                                  "item": str(ref), **refused.to_json()})
        if result.unverified:
            logger.warning("authorship of comments on %s unverified: %s", ref,
                           result.unverified, extra={"event": "graph.comment_unverified",
                                                     "item": str(ref)})
        screened = {**event, "comments": list(result.counted)}
        if result.not_counted:
            screened[NOT_COUNTED_KEY] = [n.to_json() for n in result.not_counted]
        if result.unverified:
            screened[UNVERIFIED_KEY] = result.unverified
        return screened

    def complete(self, ref: WorkItemRef, node_id: str, actor: str) -> ItemState:
        """Claim that ``node_id`` is done, then evaluate its exit chain.

        Args:
            ref: the work item.
            node_id: the node claimed complete; must be the current node.
            actor: who claims (recorded in ``completions``).

        Returns:
            A copy of the committed state.

        Raises:
            ClaimRefused: ``not-started``; ``unknown-node``; ``already-past`` (the node is
                behind the pointer); ``not-current`` (elsewhere); ``finished``.
        """
        def decide(tx: Transaction) -> ItemState:
            state = self._started(tx, ref)
            node = self._claimable(state, node_id)
            w = _Walk(tx, state, self.ports)
            state.completions[node_id] = Completion(actor, w.now())
            self._go(w, node, self._evaluate(w, node, {}))
            return state

        return self._operate(ref, decide).copy()

    def declare_skips(
        self, ref: WorkItemRef, tokens: Iterable[str], reason: str, actor: str
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Declare nodes skipped (``loopgate skip``): a plan for nodes not yet entered.

        Tokens are skip-set names or skippable node ids (opt-in nodes are refused: they are
        already off). A node already entered is refused: a skip is a plan, not an amnesty.
        An item never started gets a state with an empty pointer, so ``start`` later walks
        around the declared nodes.

        Args:
            ref: the work item.
            tokens: skip-set names or node ids.
            reason: why (required, recorded).
            actor: who declares.

        Returns:
            ``(accepted, rejected)``: ``accepted`` maps node id -> the token naming it;
            ``rejected`` maps a token (or, for an entered node, its id) -> why.

        Raises:
            LoopgateError: no reason, or no token.
        """
        expanded, bad, why = self._skip_request(tokens, reason)

        def decide(tx: Transaction) -> tuple[dict[str, str], dict[str, str]]:
            return self._declare(tx, expanded, bad, why, actor)

        return self._operate(ref, decide)

    def _skip_request(self, tokens: Iterable[str], reason: str
                      ) -> tuple[dict[str, str], list[str], str]:
        """The checked arguments of a skip: ``(expanded, bad, reason)`` (see
        :meth:`Graph.expand_skip_tokens`). Raises :class:`LoopgateError` for no reason or no
        token."""
        named = [t for t in tokens if t]
        if not reason or not reason.strip():
            raise LoopgateError("a skip needs a reason (--reason)")
        if not named:
            raise LoopgateError("name at least one node or skip set to skip")
        expanded, bad = self.graph.expand_skip_tokens(named)
        return expanded, bad, reason.strip()

    def _declare(self, tx: Transaction, expanded: Mapping[str, str], bad: Iterable[str],
                 reason: str, actor: str) -> tuple[dict[str, str], dict[str, str]]:
        rejected = {t: self.graph.skip_token_refusal(t) for t in bad}
        accepted: dict[str, str] = {}
        for node_id, token in expanded.items():
            if tx.state is not None and entered(tx.state, node_id):
                rejected[node_id] = f"{AMNESTY}: {node_id} was already entered"
                continue
            state = tx.state or tx.create(self.graph.name)
            w = _Walk(tx, state, self.ports)
            state.skips[node_id] = Skip(DECLARATION, token, actor, reason, w.now())
            accepted[node_id] = token
        self._log_declaration(tx, accepted, rejected, reason, actor)
        return accepted, rejected

    def force(self, ref: WorkItemRef, to: str, reason: str, actor: str) -> ItemState:
        """Move the pointer to ``to`` and enter it: a new visit (recorded ``forced``) and
        its entry chain, as any move enters a node (a quiz posts its comment, an approval
        gate asks for reviews); no exit chain runs.

        A forced move never marks a gate satisfied: no decision or outcome is written for
        the node left behind, and no exit chain of the node left or entered runs. It is
        recorded in ``forced`` and on both node records, and ``check`` reports it.

        Returns:
            A copy of the committed state.

        Raises:
            LoopgateError: no reason.
            ClaimRefused: ``not-started``; ``unknown-node``.
        """
        if not reason or not reason.strip():
            raise LoopgateError("a forced move needs a reason (--reason)")

        def decide(tx: Transaction) -> ItemState:
            state = self._started(tx, ref)
            if not self.graph.has_node(to):
                raise ClaimRefused("unknown-node", f"{to!r} is not a node of {self.graph.name}")
            self._move_by_force(_Walk(tx, state, self.ports), to, reason.strip(), actor)
            return state

        return self._operate(ref, decide).copy()

    # -- operator verbs that need an authorized person's say-so (issue 19 §5) -----------
    def operator_skip(self, ref: WorkItemRef, tokens: Iterable[str], reason: str,
                      actor: str) -> OperatorResult:
        """``loopgate skip``: :meth:`declare_skips`, except that after the phase selection
        a human node is not skipped at once: it goes into a pending operator request,
        posted on the thread, that an authorized person confirms (``the-loop confirm
        <id>``). Agent and code nodes, and every node before the selection, are declared
        as :meth:`declare_skips` does.

        Returns:
            An :class:`OperatorResult` (``request`` set when one now waits).

        Raises:
            LoopgateError: no reason, or no token.
        """
        expanded, bad, why = self._skip_request(tokens, reason)

        def decide(tx: Transaction) -> OperatorResult:
            guarded = op.guarded_skips(self.graph, tx.state, expanded)
            rest = {n: t for n, t in expanded.items() if n not in guarded}
            accepted, rejected = self._declare(tx, rest, bad, why, actor)
            waiting = {}
            for node_id, token in guarded.items():
                if entered(tx.state, node_id):  # type: ignore[arg-type]
                    rejected[node_id] = f"{AMNESTY}: {node_id} was already entered"
                else:
                    waiting[node_id] = token
            result = OperatorResult(accepted, rejected)
            if waiting:
                result.request = self._open_request(
                    tx, {"verb": "skip", "nodes": list(waiting), "skips": waiting}, why, actor)
            result.state = tx.state.copy() if tx.state is not None else None
            return result

        return self._operate(ref, decide)

    def operator_force(self, ref: WorkItemRef, to: str, reason: str,
                       actor: str) -> OperatorResult:
        """``loopgate force``: :meth:`force`, except that after the phase selection a move
        that would walk around a human gate (:func:`engine.operator.force_passes`) only
        records and posts a pending operator request; it moves once an authorized person
        confirms it.

        Returns:
            An :class:`OperatorResult` (``request`` set when the move waits).

        Raises:
            LoopgateError: no reason.
            ClaimRefused: ``not-started``; ``unknown-node``.
        """
        if not reason or not reason.strip():
            raise LoopgateError("a forced move needs a reason (--reason)")
        why = reason.strip()

        def decide(tx: Transaction) -> OperatorResult:
            state = self._started(tx, ref)
            if not self.graph.has_node(to):
                raise ClaimRefused("unknown-node", f"{to!r} is not a node of {self.graph.name}")
            gates = op.force_passes(self.graph, state, to, list(self.declared_skips(state)))
            result = OperatorResult()
            if gates:
                result.request = self._open_request(
                    tx, {"verb": "force", "nodes": gates, "to": to}, why, actor)
            else:
                self._move_by_force(_Walk(tx, state, self.ports), to, why, actor)
            result.state = state.copy()
            return result

        return self._operate(ref, decide)

    def _open_request(self, tx: Transaction, what: dict[str, Any], reason: str,
                      actor: str) -> dict[str, Any]:
        state = tx.state or tx.create(self.graph.name)
        w = _Walk(tx, state, self.ports)
        request = {"id": op.new_request_id(), **what, "reason": reason, "by": actor,
                   "at": w.now(), "status": op.PENDING, "refused": []}
        requests = dict(state.surface.get(op.SURFACE_KEY) or {})
        requests[request["id"]] = request
        state.surface[op.SURFACE_KEY] = requests
        w.log("graph.operator_requested", {k: request[k] for k in request if k != "refused"})
        body = with_self_marker(op.request_text(request), op.request_marker(request["id"]))
        w.emit(PostComment(state.ref, body))
        # A chat surface offers a Confirm button
        # (Slack: bot.slack.listeners.actions.operator_confirm).
        w.emit(Notify(state.ref, op.NOTICE, {k: request[k] for k in request
                                              if k not in ("refused", "status")}))
        return dict(request)

    def _answer_requests(self, w: _Walk, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """Apply or refuse the ``the-loop confirm <id>`` replies of ``event`` (issue 19
        §5). Returns the event without those replies, for the gate."""
        comments = event.get("comments") or ()
        typed = event.get("confirmation")
        if isinstance(typed, ev.Confirmation):
            # A chat surface's Confirm click (stored as such a reply was: commentId 0).
            found = [op.Confirmation(typed.request_id, normalize_login(typed.by), w.now(),
                                     typed.via, 0)]
        elif not any(op.confirm_ids(getattr(c, "body", "")) for c in comments):
            return event  # the common case reads no clock
        else:
            found = op.confirmations(comments, self.settings, w.now(),
                                     str(event.get("via") or "reply"))
        if not found:
            return event
        pending = op.pending_requests(w.state)
        for confirmation in found:
            request = pending.get(confirmation.request_id)
            if request is None or op.pending_requests(w.state).get(request["id"]) is None:
                w.log("graph.operator_confirmation_ignored",
                      {"request": confirmation.request_id, "by": confirmation.by,
                       "reason": "no pending operator request has this id"})
                continue
            self._confirm(w, request, confirmation)
        used = {c.comment_id for c in found}
        rest = [c for c in comments if getattr(c, "id", None) not in used]
        return {**event, "comments": rest}

    def _confirm(self, w: _Walk, request: dict[str, Any], confirmation: op.Confirmation) -> None:
        verdict = op.authorize_confirmation(self.graph, self.settings, self.ports.tracker,
                                            w.state, request, confirmation.by)
        if verdict.allowed and request.get("verb") == "force":
            extra = [n for n in op.force_passes(self.graph, w.state, str(request.get("to")),
                                                list(self.declared_skips(w.state)))
                     if n not in (request.get("nodes") or ())]
            if extra:
                verdict = Verdict(False, "the item moved since the request: the move "
                                            f"would now also pass {', '.join(extra)}; ask again")
        if not verdict.allowed:
            self._refuse_confirmation(w, request, confirmation, verdict.reason)
            return
        stored = w.state.surface[op.SURFACE_KEY][request["id"]]
        stored["status"] = op.CONFIRMED
        stored["confirmed"] = confirmation.to_json()
        w.log("graph.operator_confirmed", {"request": request["id"], "verb": request["verb"],
                                           "nodes": request.get("nodes"), **confirmation.to_json()})
        self._apply_request(w, stored, confirmation)

    def _apply_request(self, w: _Walk, request: Mapping[str, Any],
                       confirmation: op.Confirmation) -> None:
        said = {"confirmedBy": confirmation.by, "confirmedVia": confirmation.via,
                "request": request["id"]}
        if request.get("verb") == "force":
            self._move_by_force(w, str(request["to"]), str(request["reason"]),
                                str(request["by"]))
            w.state.forced[-1] = w.state.forced[-1].confirmed(
                confirmation.by, confirmation.via, str(request["id"]))
            return
        accepted: dict[str, str] = {}
        for node_id, token in (request.get("skips") or {}).items():
            if entered(w.state, node_id):
                continue  # entered since the request: a skip is a plan, not an amnesty
            w.state.skips[node_id] = Skip(
                DECLARATION, token, str(request["by"]), str(request["reason"]), w.now(),
                confirmed_by=confirmation.by, confirmed_via=confirmation.via,
                request=str(request["id"]))
            accepted[node_id] = token
        w.log("graph.skips_declared", {"via": DECLARATION, "skips": accepted,
                                       "by": request["by"], "reason": request["reason"],
                                       **said})

    def _refuse_confirmation(self, w: _Walk, request: Mapping[str, Any],
                             confirmation: op.Confirmation, reason: str) -> None:
        stored = w.state.surface[op.SURFACE_KEY][request["id"]]
        refused = stored.setdefault("refused", [])
        if any(r.get("commentId") == confirmation.comment_id and r.get("by") == confirmation.by
               for r in refused):
            return  # the same reply again (a replay): said once
        refused.append({**confirmation.to_json(), "reason": reason})
        data = {"request": request["id"], "by": confirmation.by, "via": confirmation.via,
                "reason": reason}
        w.log("graph.operator_confirmation_refused", data)
        # INFO: a person's refused reply is said on the thread and by the CLI; the log line
        # is the structured record, not an operator's warning (the CLI shows warnings).
        logger.info("operator confirmation refused on %s: request %s by @%s via %s: %s",
                    w.state.ref, request["id"], confirmation.by, confirmation.via or "reply",
                    reason, extra={"event": "graph.operator_confirmation_refused"})
        line = (f"`the-loop confirm {request['id']}` by @{confirmation.by} did not count: "
                f"{reason}. The operator request stays pending.")
        w.emit(PostComment(w.state.ref, with_self_marker(line)))

    def status(self, ref: WorkItemRef, recompute: bool = False) -> dict[str, Any]:
        """The ``check`` report of ``ref`` (see :func:`engine.report.build_report`).

        Args:
            ref: the work item.
            recompute: derive node statuses from :func:`declared_skips` and the records
                instead of the stored outcomes.

        Raises:
            ClaimRefused: ``not-started`` when the store holds nothing for ``ref``.
        """
        from engine.report import build_report  # report reads this module's functions

        state = self.store.load(ref)
        if state is None:
            raise ClaimRefused("not-started", f"{ref} is not started")
        owed = self.store.effects.rows(ref, statuses=OWED)
        return build_report(self.graph, state, recompute=recompute, effects=owed)

    # -- verb helpers ------------------------------------------------------------------
    def _started(self, tx: Transaction, ref: WorkItemRef) -> ItemState:
        if tx.state is None or not tx.state.current_node:
            raise ClaimRefused("not-started", f"{ref} is not started")
        return tx.state

    def _current(self, state: ItemState) -> Node:
        if not self.graph.has_node(state.current_node):
            raise LoopgateError(
                f"{state.ref} is at {state.current_node!r}, which {self.graph.name} does not "
                "define (move it with loopgate force)"
            )
        return self.graph.node(state.current_node)

    def _finished(self, state: ItemState, node: Node) -> bool:
        return node.terminal or state.status in (ItemStatus.COMPLETE, ItemStatus.ESCALATED)

    def _claimable(self, state: ItemState, node_id: str) -> Node:
        ref, current = state.ref, state.current_node
        if not self.graph.has_node(node_id):
            raise ClaimRefused("unknown-node", f"{node_id!r} is not a node of {self.graph.name}")
        if node_id == current:
            node = self._current(state)
            if self._finished(state, node):
                raise ClaimRefused("finished", f"{ref} is {state.status}: nothing to claim")
            return node
        record = state.nodes.get(node_id)
        behind = bool(record and record.exited_at)
        if not behind and self.graph.has_node(current):
            behind = self.graph.position(node_id) < self.graph.position(current)
        if behind:
            raise ClaimRefused(
                "already-past", f"{node_id} is behind the pointer: {ref} is at {current}"
            )
        raise ClaimRefused(
            "not-current", f"{node_id} is not the current node: {ref} is at {current}"
        )

    def _log_declaration(
        self, tx: Transaction, accepted: dict[str, str], rejected: dict[str, str],
        reason: str, actor: str,
    ) -> None:
        at = _stamp(self.ports)
        if accepted:
            tx.log("graph.skips_declared",  # type: ignore[call-arg]
                   {"via": DECLARATION, "skips": accepted, "by": actor, "reason": reason},
                   at=at)
        if rejected:
            tx.log("graph.skips_rejected",  # type: ignore[call-arg]
                   {"via": DECLARATION, "rejected": rejected, "by": actor}, at=at)

    def _move_by_force(self, w: _Walk, to: str, reason: str, actor: str) -> None:
        state, now = w.state, w.now()
        source = state.current_node
        state.forced.append(ForcedMove(source, to, reason, actor, now))
        left = state.record(source)
        left.forced = True
        if source != to:
            left.exited_at = now  # left behind, but its outcome stays unset: never passed
            if state.visit(source) is not None:
                state.end_visit(source, now, "", forced=True)
        target = state.record(to)
        target.forced = True
        target.entered_at, target.exited_at, target.outcome = now, "", ""
        state.begin_visit(to, now, forced=True)
        self._note_entry_heads(state, to)
        target.attempts, target.last_block = 0, ""
        state.current_node = to
        state.parked = NOT_PARKED
        w.log("graph.forced", {"from": source, "to": to, "reason": reason, "by": actor})
        node = self.graph.node(to)
        # A forced move enters the node like any move: its entry chain runs (a quiz posts
        # its comment, an approval gate asks for reviews, an agent gets its assignment),
        # on a visit recorded as forced. Entry hooks never gate, and the node's exit chain
        # is not run here: a forced move decides no gate.
        self._run_chain(w, node, "entry", {})
        if node.terminal:
            state.status = (ItemStatus.ESCALATED if to == ESCALATED_NODE else ItemStatus.COMPLETE)
        else:
            self._park(w, node, _waiting_reason(node))

    # -- the walk ----------------------------------------------------------------------
    def _go(self, w: _Walk, source: Node, target: str | None) -> None:
        if target is not None:
            self._arrive(w, target, source.id)

    def _arrive(self, w: _Walk, node_id: str, came_from: str) -> None:
        """Move the pointer onto ``node_id`` and keep walking while nodes decide at once."""
        hops = 0
        limit = 4 * len(self.graph.nodes) + 4
        target: str | None = node_id
        while target is not None:
            hops += 1
            if hops > limit:  # a cycle of nodes that never wait: stop, do not spin
                self._park(w, self.graph.node(target),
                           f"the walk did not settle after {limit} moves")
                return
            node = self.graph.node(target)
            w.state.current_node = node.id
            skip = self.declared_skips(w.state).get(node.id)
            if skip is not None:
                nxt = self._skip_through(w, node, skip)
            else:
                nxt = self._enter(w, node, came_from)
            came_from, target = node.id, nxt

    def _skip_through(self, w: _Walk, node: Node, skip: Skip) -> str | None:
        # A skipped node runs no hook at all: no label, no log entry, no assignment.
        record, now = w.state.record(node.id), w.now()
        record.outcome, record.entered_at, record.exited_at = SKIPPED, now, now
        w.state.begin_visit(node.id, now)
        w.state.end_visit(node.id, now, SKIPPED)
        data: dict[str, Any] = {"node": node.id, "via": skip.via}
        if skip.token:
            data["token"] = skip.token
        w.log("graph.node_skipped", data)
        return self._route(w, node, SKIPPED)

    def _enter(self, w: _Walk, node: Node, came_from: str) -> str | None:
        state = w.state
        record = state.record(node.id)
        if came_from != node.id:  # a self-loop keeps counting attempts
            record.attempts, record.last_block = 0, ""
        record.entered_at, record.exited_at, record.outcome = w.now(), "", ""
        state.begin_visit(node.id, record.entered_at)
        self._note_entry_heads(state, node.id)
        state.status, state.parked = ItemStatus.RUNNING, NOT_PARKED
        w.log("graph.advanced", {"from": came_from, "to": node.id} if came_from
              else {"to": node.id})
        self._run_chain(w, node, "entry", {})
        if node.terminal:
            self._finish(w, node)
            return None
        if node.actor == "agent":
            self._park(w, node, _waiting_reason(node))
            return None
        # code nodes decide at once; a human gate whose answer is already present passes.
        return self._evaluate(w, node, {})

    def _finish(self, w: _Walk, node: Node) -> None:
        if node.id == ESCALATED_NODE:
            w.state.status = ItemStatus.ESCALATED
            return
        w.state.status = ItemStatus.COMPLETE
        w.log("graph.completed", {"node": node.id})
        if not w.said_complete:  # issue 23 §2: the thread says it
            w.emit(PostComment(w.state.ref, completed_comment(w.state.ref)))
            w.emit(author_completed(w.state.ref, node.id))  # issue 24 §3: the author's DM

    def _evaluate(self, w: _Walk, node: Node, event: Mapping[str, Any]) -> str | None:
        """Run the exit chain; returns the node to move to, or None to stay."""
        result = self._run_chain(w, node, "exit", event)
        declined = result.data.get("declined")
        if result.kind == WAIT and isinstance(declined, Mapping):
            # A chat decision the gate's rule refused changes nothing (issue 20 §1).
            raise _Declined(str(declined.get("reason") or ""), str(declined.get("by") or ""))
        if result.kind == PASS:
            return self._exit_pass(w, node, result.data)
        if result.kind == WAIT:
            # Issue 19 §1: a reply that did not count as its author's is named in the wait.
            note = wait_note(event.get(NOT_COUNTED_KEY) or (), event.get(UNVERIFIED_KEY) or "")
            self._park(w, node, (result.reason or f"waiting at {node.id}") + note,
                       unverified=bool(result.data.get("unverified")
                                       or event.get(UNVERIFIED_KEY)))
            return None
        return self._block(w, node, result)

    def _exit_pass(self, w: _Walk, node: Node, data: Mapping[str, Any]) -> str | None:
        state = w.state
        outcome = str(data.get("outcome") or OUTCOME_PASS)
        decision = data.get("decision")
        if decision is not None:
            self._record_decision(w, node, decision, outcome)
        self._record_plan(w, node, data)
        record = state.record(node.id)
        record.outcome, record.exited_at = outcome, w.now()
        state.end_visit(node.id, record.exited_at, outcome)
        record.last_block = ""  # issue 14 §9: a passed node shows no stale block
        state.parked = NOT_PARKED
        self._announce(w, node, outcome)
        return self._route(w, node, outcome)

    def _announce(self, w: _Walk, node: Node, outcome: str) -> None:
        """Say on the thread that the gate passed, who passed it and what comes next
        (issue 23 §2), once per visit: emitted before the next node's own posts."""
        visit = w.state.visit(node.id)
        if visit is None or not announces(visit) or any(
                h.name in SELF_CONFIRMING_HOOKS for h in node.exit):
            return
        step, complete = self._next_step(w.state, node, outcome)
        w.said_complete = w.said_complete or complete
        w.emit(PostComment(w.state.ref, gate_passed_comment(node.id, visit, step)))
        after = self._next_node(w.state, node, outcome)  # issue 24 §3: the author's DM
        w.emit(author_passed(w.state.ref, node.id, visit, after.id if after else "",
                             after.description if after else "", complete))

    def _next_node(self, state: ItemState, node: Node, outcome: str) -> Node | None:
        # The node the walk goes to from ``node`` on ``outcome``, past declared skips.
        edge = self.graph.route(node.id, outcome)
        skips = self.declared_skips(state)
        for _ in range(len(self.graph.nodes)):
            if edge is None or edge.target not in skips:
                break
            edge = self.graph.route(edge.target, SKIPPED)
        return self.graph.node(edge.target) if edge is not None else None

    def _next_step(self, state: ItemState, node: Node, outcome: str) -> tuple[str, bool]:
        # Where the walk goes from ``node`` on ``outcome``, past nodes declared skipped.
        target = self._next_node(state, node, outcome)
        if target is None:
            return "", False
        if target.terminal:
            if target.id == ESCALATED_NODE:
                return "The item goes to a person (escalated).", False
            return "The work item is complete.", True
        about = f" — {target.description}" if target.description else ""
        return f"Next: `{target.id}`{about}.", False

    @staticmethod
    def _record_decision(w: _Walk, node: Node, decision: Any, outcome: str) -> None:
        """Record a gate's decision on the node's open visit: first answer wins within a
        visit, and a re-entered gate starts a new visit with none (issue 19 §2)."""
        entry = _jsonable(decision)
        entry = entry if isinstance(entry, dict) else {"decision": entry}
        entry.setdefault("at", w.now())
        if w.state.record_decision(node.id, entry):
            visit = w.state.visit(node.id)
            w.log("graph.decided", {
                "node": node.id, "visit": visit.number if visit else 1, "outcome": outcome,
                "by": entry.get("by") or entry.get("attestedBy") or "",
                "via": entry.get("via") or "", "commentId": entry.get("commentId") or 0})

    def _route(self, w: _Walk, node: Node, outcome: str) -> str | None:
        edge = self.graph.route(node.id, outcome)
        if edge is None:
            w.log("graph.no_edge", {"node": node.id, "outcome": outcome})
            self._park(w, node, f"no edge leaves {node.id} on {outcome!r}")
            return None
        return edge.target

    def _park(self, w: _Walk, node: Node, reason: str, *, blocked: bool = False,
              unverified: bool = False) -> None:
        state = w.state
        state.status = ItemStatus.PARKED
        parked = state.parked
        if (parked.node, parked.reason, parked.blocked) == (node.id, reason, blocked):
            # The same wait again: say it once. ``unverified``: the gate could not read
            # what it needed, so the ingress offers the event again.
            state.parked = dataclasses.replace(parked, unverified=unverified)
            return
        # blocked: graph.blocked already said it.
        state.parked = Parked(node.id, reason, w.now(), blocked=blocked, unverified=unverified)
        if not blocked:
            w.log("graph.parked", {"node": node.id, "reason": reason})

    def _block(self, w: _Walk, node: Node, result: HookResult) -> str | None:
        record = w.state.record(node.id)
        reason = result.reason or f"{node.id} is blocked"
        repeated = record.last_block == reason
        record.attempts += 1
        record.last_block = reason
        retriable = result.data.get("retriable", True) is not False
        w.log("graph.blocked", {"node": node.id, "reason": reason, "attempts": record.attempts,
                                "retriable": retriable})
        if repeated or record.attempts >= node.max_attempts:
            return self._escalate(w, node, reason)
        self._park(w, node, reason, blocked=True)
        return None

    def _escalate(self, w: _Walk, node: Node, reason: str) -> str | None:
        record = w.state.record(node.id)
        w.log("graph.escalated", {"node": node.id, "reason": reason, "attempts": record.attempts})
        record.outcome = ESCALATED_NODE
        if self.graph.has_node(ESCALATED_NODE) and node.id != ESCALATED_NODE:
            record.exited_at = w.now()
            w.state.end_visit(node.id, record.exited_at, ESCALATED_NODE)
            return ESCALATED_NODE
        w.state.status = ItemStatus.ESCALATED
        w.state.parked = Parked(node.id, reason, w.now(), blocked=True)
        return None

    # -- plans recorded by a gate ------------------------------------------------------
    def _record_plan(self, w: _Walk, node: Node, data: Mapping[str, Any]) -> None:
        """Record the ``skips`` / ``optIns`` a passing gate returned, for nodes not yet
        entered only (a selection cannot skip or add a node already walked)."""
        refused: dict[str, str] = {}
        if node.id == self.graph.start and node.is_human:
            self._overrule_declarations(w, node, data.get("skips"))
        skips = self._plan_entries(w, data.get("skips"), Skip, refused)
        opt_ins = self._plan_entries(w, data.get("optIns"), OptIn, refused)
        for node_id, entry in skips.items():
            w.state.skips.setdefault(node_id, entry)
        for node_id, opt_in in opt_ins.items():
            w.state.opt_ins.setdefault(node_id, opt_in)
        if skips:
            w.log("graph.skips_declared", {"node": node.id, "skips": _documents(skips)})
        if opt_ins:
            w.log("graph.opt_ins_selected", {"node": node.id, "optIns": _documents(opt_ins)})
        if refused:
            w.log("graph.skips_rejected", {"node": node.id, "rejected": refused})

    def _overrule_declarations(self, w: _Walk, node: Node, selected_skips: Any) -> None:
        """The selection decides about human gates (issue 19 §5): a ``loopgate skip`` of a
        human node declared before it stands only if the selection skips the node too.
        The checklist shows such a row as running, so a person who ticked it (or left it)
        never agreed to drop that gate."""
        keep = set(selected_skips) if isinstance(selected_skips, Mapping) else set()
        dropped = [n for n, decl in w.state.skips.items()
                   if n not in keep and decl.via == DECLARATION and not decl.confirmed_by
                   and self.graph.has_node(n) and self.graph.node(n).is_human]
        for node_id in dropped:
            del w.state.skips[node_id]
        if dropped:
            w.log("graph.skips_overruled", {"node": node.id, "nodes": dropped,
                                            "reason": "a human gate runs unless the "
                                                      "selection skips it"})

    def _plan_entries(
        self, w: _Walk, raw: Any, kind: type[_Plan], refused: dict[str, str]
    ) -> dict[str, _Plan]:
        # A gate hands over records (engine.records) or, from a custom hook, mappings;
        # both become the record, with ``via`` and ``at`` filled where empty.
        out: dict[str, _Plan] = {}
        if not isinstance(raw, Mapping):
            return out
        for node_id, entry in raw.items():
            why = self._plan_refusal(w.state, str(node_id), kind)
            if why:
                refused[str(node_id)] = why
                continue
            if not isinstance(entry, kind):
                record = _jsonable(entry)
                entry = kind.from_json(record if isinstance(record, dict) else {})
            out[str(node_id)] = entry.stamped("selection", w.now())
        return out

    def _plan_refusal(self, state: ItemState, node_id: str, kind: type[_Plan]) -> str:
        if not self.graph.has_node(node_id):
            return f"{node_id!r} is not a node of {self.graph.name}"
        node = self.graph.node(node_id)
        if entered(state, node_id):
            if kind is Skip:
                return f"{AMNESTY}: {node_id} was already entered"
            return f"a selection cannot add {node_id}: it was already entered"
        if kind is Skip and (not node.skippable or node.required):
            return f"{node_id} is not skippable"
        if kind is OptIn and not node.opt_in:
            return f"{node_id} is not an opt-in phase"
        return ""

    # -- hook chains -------------------------------------------------------------------
    def _run_chain(
        self, w: _Walk, node: Node, chain: str, event: Mapping[str, Any]
    ) -> HookResult:
        """Run ``node``'s ``entry`` or ``exit`` chain.

        Stops at the first result that is neither pass nor skip and returns it; otherwise
        returns a pass whose data merges the passes' data (later ``outcome`` wins, the
        first ``decision`` wins, ``skips``/``optIns`` are united). ``data["surface"]`` of
        any result is merged into ``state.surface`` at once, so later hooks see it.
        """
        merged: dict[str, Any] = {}
        for ref in node.entry if chain == "entry" else node.exit:
            result = self._call(w, node, ref, chain, event)
            surface = result.data.get("surface")
            if isinstance(surface, Mapping):
                w.state.surface.update(_jsonable(surface))
            if result.kind == SKIP:
                continue
            if result.kind != PASS:
                if chain == "entry" and "error" not in result.data:  # never gates: note it
                    w.log("graph.hook_degraded", {"node": node.id, "hook": ref.name,
                                                  "chain": chain, "kind": result.kind,
                                                  "reason": result.reason})
                return result
            _merge_pass(merged, result.data)
        return HookResult(PASS, "", merged)

    def _hook_context(self, w: _Walk, node: Node, ref: HookRef, chain: str,
                      event: Mapping[str, Any]) -> HookContext:
        """What hook ``ref`` of ``node``'s ``chain`` sees: this walk's state, log and emit."""
        return HookContext(
            ref=w.state.ref, graph=self.graph, node=node, params=ref.params, state=w.state,
            event=event, ports=self.ports, settings=self.settings, chain=chain, log=w.log,
            emit=w.emit,
        )

    def _call(
        self, w: _Walk, node: Node, ref: HookRef, chain: str, event: Mapping[str, Any]
    ) -> HookResult:
        failed = HookResult(BLOCK, f"the {ref.name} hook failed to run", {"retriable": False})
        if ref.name not in self.registry:
            logger.error("hook %s at %s is not registered", ref.name, node.id)
            return failed
        ctx = self._hook_context(w, node, ref, chain, event)
        try:
            result = self.registry.get(ref.name).fn(ctx)
        except Exception as exc:  # noqa: BLE001 -- a hook failure is a block, never a crash
            # The type only: a message may quote a token or a payload.
            logger.warning("hook %s at %s (%s chain) raised %s", ref.name, node.id, chain,
                           type(exc).__name__)
            w.log("graph.hook_degraded", {"node": node.id, "hook": ref.name, "chain": chain,
                                          "error": type(exc).__name__})
            return HookResult(BLOCK, failed.reason,
                              {"retriable": False, "error": type(exc).__name__})
        if not isinstance(result, HookResult) or result.kind not in _KINDS:
            logger.error("hook %s at %s returned %r", ref.name, node.id, type(result).__name__)
            return failed
        return result


def _documents(records: Mapping[str, Skip | OptIn]) -> dict[str, dict[str, Any]]:
    # The event log keeps JSON: each record's stored document.
    return {node_id: record.to_json() for node_id, record in records.items()}


def _merge_pass(merged: dict[str, Any], data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if key in ("skips", "optIns") and isinstance(value, Mapping):
            bucket = merged.setdefault(key, {})
            for node_id, entry in value.items():
                bucket.setdefault(node_id, entry)
        elif key == "decision":
            merged.setdefault("decision", value)
        elif key != "surface":
            merged[key] = value


def _waiting_reason(node: Node) -> str:
    if node.actor == "agent":
        return f"waiting for {node.id} to be claimed complete"
    if node.actor == "human":
        return f"waiting for a decision at {node.id}"
    return f"waiting to re-evaluate {node.id}"
