"""Per-work-item state: the record the runtime reads and writes in one transaction.

The JSON document (:meth:`ItemState.to_document`) keeps the keys of the designs' state
file: ``version, workItem, currentNode, nodes, decisions, forced, parked, completions,
skips, optIns, surface, loop``. Absent keys read as empty (:meth:`ItemState.from_document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.refs import WorkItemRef

__all__ = ["STATE_VERSION", "NodeRecord", "ItemState", "ItemStatus"]

STATE_VERSION = 1


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
        decisions: node id -> the gate's recorded decision (first answer wins).
        forced: the list of forced moves ``{from, to, reason, by, at}``.
        parked: ``{node, reason, at}`` while waiting, else ``{}``.
        completions: node id -> ``{by, at}`` for accepted ``complete`` claims.
        skips: node id -> ``{via, token, by, reason, at}`` (declarations as recorded;
            read them only through ``Runtime.declared_skips``).
        opt_ins: node id -> ``{via, by, at}`` (read through ``Runtime.selected``).
        surface: free-form context shared by hooks (e.g. ``pullRequests``, ``branch``).
        started_at: ISO-8601 UTC start time.
        revision: bumped on every committed write (optimistic checks, tests).
    """

    ref: WorkItemRef
    loop: str = ""
    current_node: str = ""
    status: str = ItemStatus.RUNNING
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    forced: list[dict[str, Any]] = field(default_factory=list)
    parked: dict[str, Any] = field(default_factory=dict)
    completions: dict[str, dict[str, Any]] = field(default_factory=dict)
    skips: dict[str, dict[str, Any]] = field(default_factory=dict)
    opt_ins: dict[str, dict[str, Any]] = field(default_factory=dict)
    surface: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    revision: int = 0

    def record(self, node_id: str) -> NodeRecord:
        """The node's record, created empty when missing."""
        return self.nodes.setdefault(node_id, NodeRecord())

    def to_document(self) -> dict[str, Any]:
        """The JSON document ``loopgate check --format json`` prints."""
        return {
            "version": STATE_VERSION,
            "workItem": str(self.ref),
            "currentNode": self.current_node,
            "status": self.status,
            "startedAt": self.started_at,
            "nodes": {k: v.to_mapping() for k, v in self.nodes.items()},
            "decisions": _copy(self.decisions),
            "forced": _copy(self.forced),
            "parked": _copy(self.parked),
            "completions": _copy(self.completions),
            "skips": _copy(self.skips),
            "optIns": _copy(self.opt_ins),
            "surface": _copy(self.surface),
            "loop": self.loop,
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ItemState:
        """Build from a document; absent keys read as empty."""
        return cls(
            ref=WorkItemRef.parse(str(doc["workItem"])),
            loop=str(doc.get("loop") or ""),
            current_node=str(doc.get("currentNode") or ""),
            status=str(doc.get("status") or ItemStatus.RUNNING),
            nodes={k: NodeRecord.from_mapping(v) for k, v in (doc.get("nodes") or {}).items()},
            decisions=_copy(doc.get("decisions") or {}),
            forced=_copy(doc.get("forced") or []),
            parked=_copy(doc.get("parked") or {}),
            completions=_copy(doc.get("completions") or {}),
            skips=_copy(doc.get("skips") or {}),
            opt_ins=_copy(doc.get("optIns") or {}),
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


