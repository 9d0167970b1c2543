"""Per-work-item state: the record the runtime reads and writes in one transaction.

The JSON document (:meth:`ItemState.to_document`) keeps the keys of the designs' state
file: ``version, workItem, currentNode, nodes, decisions, forced, parked, completions,
skips, optIns, surface, loop`` plus ``visits`` (issue 19 §2). Absent keys read as empty
(:meth:`ItemState.from_document`); a document without ``visits`` (written before visits
were kept) is read through :func:`engine.visits.legacy_visits`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engine.records import NOT_PARKED, Completion, ForcedMove, OptIn, Parked, Skip
from engine.refs import WorkItemRef
from engine.visits import Visit, VisitDecision, visits_from_document, visits_to_json

__all__ = ["STATE_VERSION", "NodeRecord", "ItemState", "ItemStatus"]

STATE_VERSION = 1

#: ``surface`` key: the id of the newest thread comment loopgate was offered (issue 19 §2).
LAST_COMMENT_SEEN = "lastCommentSeen"


class ItemStatus:
    """Values of :attr:`ItemState.status`."""

    RUNNING = "running"
    PARKED = "parked"
    ESCALATED = "escalated"
    COMPLETE = "complete"


@dataclass
class NodeRecord:
    """What happened at one node.

    Attributes:
        attempts: exit-chain blocks counted so far.
        outcome: the outcome the node was left with ("" while not left).
        entered_at: ISO-8601 UTC time the node was (last) entered, "" if never.
        exited_at: ISO-8601 UTC time the node was (last) left, "" if not.
        last_block: the reason of the latest block, "".
        forced: the pointer was moved off or onto this node by ``force``.
    """

    attempts: int = 0
    outcome: str = ""
    entered_at: str = ""
    exited_at: str = ""
    last_block: str = ""
    forced: bool = False

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> NodeRecord:
        """Build from the document shape (camelCase keys)."""
        return cls(
            attempts=int(data.get("attempts", 0)),
            outcome=str(data.get("outcome", "")),
            entered_at=str(data.get("enteredAt", "")),
            exited_at=str(data.get("exitedAt", "")),
            last_block=str(data.get("lastBlock", "")),
            forced=bool(data.get("forced", False)),
        )

    def to_mapping(self) -> dict[str, Any]:
        """The document shape (camelCase keys)."""
        return {
            "attempts": self.attempts,
            "outcome": self.outcome,
            "enteredAt": self.entered_at,
            "exitedAt": self.exited_at,
            "lastBlock": self.last_block,
            "forced": self.forced,
        }


@dataclass
class ItemState:
    """The mutable working copy of one work item's state.

    Attributes:
        ref: the work item.
        loop: the graph name the item walks.
        current_node: the pointer ("" before start).
        status: one of :class:`ItemStatus`.
        nodes: node id -> :class:`NodeRecord` for every node entered or skipped.
        visits: node id -> that node's :class:`~engine.visits.Visit` records, oldest
            first (issue 19 §2); each holds the decision given during it.
        forced: the forced moves (:class:`~engine.records.ForcedMove`), oldest first;
            stored as ``{from, to, reason, by, at}``.
        parked: :class:`~engine.records.Parked` (node, reason, at, blocked, unverified)
            while waiting, else :data:`~engine.records.NOT_PARKED`; stored as
            ``{node, reason, at[, unverified][, blocked]}``, ``{}`` when not waiting.
        completions: node id -> :class:`~engine.records.Completion` for accepted
            ``complete`` claims; stored as ``{by, at}``.
        skips: node id -> :class:`~engine.records.Skip` (declarations as recorded; read
            them only through ``Runtime.declared_skips``). Stored as its camelCase
            document ``{via, token, by, reason, at, ...}`` (issue 20 §1).
        opt_ins: node id -> :class:`~engine.records.OptIn` (read through
            ``Runtime.selected``); stored as ``{via, by, at}``.
        surface: free-form context shared by hooks (e.g. ``pullRequests``, ``branch``).
        started_at: ISO-8601 UTC start time.
        revision: bumped on every committed write (optimistic checks, tests).
    """

    ref: WorkItemRef
    loop: str = ""
    current_node: str = ""
    status: str = ItemStatus.RUNNING
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    visits: dict[str, tuple[Visit, ...]] = field(default_factory=dict)
    forced: list[ForcedMove] = field(default_factory=list)
    parked: Parked = NOT_PARKED
    completions: dict[str, Completion] = field(default_factory=dict)
    skips: dict[str, Skip] = field(default_factory=dict)
    opt_ins: dict[str, OptIn] = field(default_factory=dict)
    surface: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    revision: int = 0

    def record(self, node_id: str) -> NodeRecord:
        """The node's record, created empty when missing."""
        return self.nodes.setdefault(node_id, NodeRecord())

    @property
    def decisions(self) -> Mapping[str, dict[str, Any]]:
        """node id -> the CURRENT (latest) visit's decision record, for nodes whose latest
        visit has one (read-only; record through :meth:`record_decision`). A re-entered
        gate has no decision here until it is answered again (issue 19 §2)."""
        return MappingProxyType(self.current_decisions())

    def current_decisions(self) -> dict[str, dict[str, Any]]:
        """A fresh ``{node id: the current visit's decision record}`` (JSON-shaped)."""
        out: dict[str, dict[str, Any]] = {}
        for node, seq in self.visits.items():
            if seq and seq[-1].decision is not None:
                out[node] = seq[-1].decision.to_json()
        return out

    def history(self, node_id: str) -> tuple[Visit, ...]:
        """Every visit to ``node_id``, oldest first (empty when never entered)."""
        return self.visits.get(node_id, ())

    def visit(self, node_id: str) -> Visit | None:
        """The current (latest) visit to ``node_id``, or None."""
        seq = self.visits.get(node_id)
        return seq[-1] if seq else None

    def decision(self, node_id: str) -> VisitDecision | None:
        """The current visit's decision at ``node_id``, or None."""
        current = self.visit(node_id)
        return current.decision if current is not None else None

    def last_comment_seen(self) -> int:
        """The id of the newest comment of the item's thread loopgate has been offered
        (``surface.lastCommentSeen``; 0 when none), counted or not."""
        try:
            return int(self.surface.get(LAST_COMMENT_SEEN) or 0)
        except (TypeError, ValueError):
            return 0

    def saw_comments(self, ids: Iterable[int]) -> None:
        """Raise ``surface.lastCommentSeen`` to the largest of ``ids`` (comment ids; any
        non-positive or non-integer one is ignored). Issue 19 §2: a visit records it when
        it begins (:attr:`Visit.after_comment`)."""
        top = max((i for i in ids if isinstance(i, int) and i > 0), default=0)
        if top > self.last_comment_seen():
            self.surface[LAST_COMMENT_SEEN] = top

    def begin_visit(self, node_id: str, at: str, *, forced: bool = False) -> Visit:
        """Open the next visit to ``node_id`` entered at ``at`` (ISO-8601 UTC); an open
        visit still on record is closed first (left at ``at``, no outcome)."""
        seq = self.visits.get(node_id, ())
        if seq and seq[-1].open:
            seq = (*seq[:-1], seq[-1].left(at, ""))
        order = sum(len(v) for v in self.visits.values()) + 1
        visit = Visit(len(seq) + 1, at, forced=forced, seq=order,
                      after_comment=self.last_comment_seen())
        self.visits[node_id] = (*seq, visit)
        return visit

    def record_decision(self, node_id: str, record: Mapping[str, Any]) -> bool:
        """Record ``record`` (a gate's decision document) on the open visit to
        ``node_id``; first answer wins within a visit. Returns True when recorded."""
        current = self._open_visit(node_id)
        decided = current.decided(VisitDecision.from_json(record))
        self._replace_last(node_id, decided)
        return decided is not current

    def end_visit(self, node_id: str, at: str, outcome: str, *, forced: bool = False) -> None:
        """Close the open visit to ``node_id`` at ``at`` with ``outcome``."""
        self._replace_last(node_id, self._open_visit(node_id).left(at, outcome, forced=forced))

    def _open_visit(self, node_id: str) -> Visit:
        current = self.visit(node_id)
        if current is not None and current.open:
            return current
        # No open visit (state from before visits were kept): one from the node record.
        record = self.nodes.get(node_id)
        return self.begin_visit(node_id, record.entered_at if record else "")

    def _replace_last(self, node_id: str, visit: Visit) -> None:
        seq = self.visits.get(node_id, ())
        self.visits[node_id] = (*seq[:-1], visit) if seq else (visit,)

    def to_document(self) -> dict[str, Any]:
        """The JSON document ``loopgate check --format json`` prints. ``decisions`` is the
        current visit's decision per node (the key's meaning before visits were kept, so
        consumers do not break); ``visits`` holds every visit (issue 19 §2)."""
        return {
            "version": STATE_VERSION,
            "workItem": str(self.ref),
            "currentNode": self.current_node,
            "status": self.status,
            "startedAt": self.started_at,
            "nodes": {k: v.to_mapping() for k, v in self.nodes.items()},
            "decisions": self.current_decisions(),
            "visits": visits_to_json(self.visits),
            "forced": [m.to_json() for m in self.forced],
            "parked": self.parked.to_json(),
            "completions": {k: v.to_json() for k, v in self.completions.items()},
            "skips": {k: v.to_json() for k, v in self.skips.items()},
            "optIns": {k: v.to_json() for k, v in self.opt_ins.items()},
            "surface": _copy(self.surface),
            "loop": self.loop,
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ItemState:
        """Build from a document; absent keys read as empty, and a document without
        ``visits`` has its visits rebuilt from ``decisions`` and ``nodes``
        (:func:`engine.visits.visits_from_document`)."""
        return cls(
            ref=WorkItemRef.parse(str(doc["workItem"])),
            loop=str(doc.get("loop") or ""),
            current_node=str(doc.get("currentNode") or ""),
            status=str(doc.get("status") or ItemStatus.RUNNING),
            nodes={k: NodeRecord.from_mapping(v) for k, v in (doc.get("nodes") or {}).items()},
            visits=visits_from_document(doc),
            forced=[ForcedMove.from_json(m) for m in doc.get("forced") or ()],
            parked=Parked.from_json(doc.get("parked") or {}),
            completions={k: Completion.from_json(v)
                         for k, v in (doc.get("completions") or {}).items()},
            skips={k: Skip.from_json(v) for k, v in (doc.get("skips") or {}).items()},
            opt_ins={k: OptIn.from_json(v) for k, v in (doc.get("optIns") or {}).items()},
            surface=_copy(doc.get("surface") or {}),
            started_at=str(doc.get("startedAt") or ""),
        )

    def copy(self) -> ItemState:
        """A deep copy (stores hand out copies so a failed transaction leaves no trace)."""
        clone = ItemState.from_document(self.to_document())
        clone.revision = self.revision
        return clone


def _copy(value: Any) -> Any:
    # JSON-shaped deep copy; state never holds anything but JSON types.
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


