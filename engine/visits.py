"""Visits: each time the walk enters a node is one visit, with its own decision (issue 19 §2).

A gate that sends the item back (``changes-requested``) and is answered again on its next
entry has two visits, each with the answer given *during* it. Everything that shows "the
gate's decision" (``check``, the Slack approval message, App Home, the merge check) shows
the current (latest) visit's; ``check --history`` and the JSON's ``visits`` keep them all.
First answer wins within a visit only.

The types here are frozen; :func:`visits_to_json` / :func:`visits_from_document` are the
one (de)serialiser of the stored shape, called by ``ItemState.to_document`` /
``ItemState.from_document`` and by the SQL stores' row mapping (``engine/store/rows.py``).

Stored shape (camelCase, the state document's ``visits`` key)::

    visits: {node id: [{visit, enteredAt, exitedAt, outcome, decision?, forced?,
                        inferred?, seq?, afterComment?}, ...]}

``decision`` is the gate's record exactly as the gate wrote it (``engine.records``
documents: ``{by, at, outcome, comment, commentId, via?, text?, approvers?}`` for an
approval, ``{at, attestedBy, attestedAt, comment, commentId, via}`` for a quiz, the
selection's ``{by, via, at, comment, commentId, skips, ...}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, TypeVar

from engine import fastjson

__all__ = [
    "VisitDecision",
    "Visit",
    "Visits",
    "visits_to_json",
    "visits_from_json",
    "visits_from_document",
    "visits_from_rows",
    "legacy_visits",
]


def _frozen(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    # A read-only view of a copy of the top level. Nested values (a selection's frozen
    # graph: thousands of entries) are shared, not copied: ``check --all`` reads 10,000
    # states (issue 2's 2 s budget), and nothing ever changes a recorded decision.
    return MappingProxyType({str(k): v for k, v in doc.items()})


@dataclass(frozen=True)
class VisitDecision:
    """The answer a gate recorded during one visit.

    Attributes:
        by: who answered (``@login``; a quiz's ``attestedBy``), "" when unknown.
        at: when the gate decided (ISO-8601 UTC).
        outcome: the outcome it routed on ("" when the record names none, e.g. a quiz or
            the phase selection: the visit's ``outcome`` says it then).
        via: how (``reply``, ``slack``, ``tick``, ``typed``, ``checklist``, ``default``).
        comment: the deciding comment's URL ("" for a Slack click).
        comment_id: its id (0 when none).
        text: words given with a Slack decision ("" otherwise).
        document: the whole record as the gate wrote it (a read-only mapping whose
            nested values are shared and must not be changed), for gate-specific keys
            (``approvers``, ``skips``, ``frozenGraph`` ...).
    """

    by: str
    at: str
    outcome: str
    via: str
    comment: str
    comment_id: int
    text: str
    document: Mapping[str, Any]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> VisitDecision:
        """Build from a stored record (any gate's shape; missing keys read as empty).

        Raises:
            TypeError: ``doc`` is not a mapping.
        """
        if type(doc) is not dict and not isinstance(doc, Mapping):  # a dict: no ABC check
            raise TypeError(f"a decision record must be a mapping, not {type(doc).__name__}")
        via = doc.get("via")
        return _built(cls, {
            "by": str(doc.get("by") or doc.get("attestedBy") or ""),
            "at": str(doc.get("at") or ""),
            "outcome": str(doc.get("outcome") or ""),
            "via": str(via) if via else ("reply" if doc.get("by") else ""),
            "comment": str(doc.get("comment") or ""),
            "comment_id": _int(doc.get("commentId")),
            "text": str(doc.get("text") or ""),
            "document": _frozen(doc),
        })

    def to_json(self) -> dict[str, Any]:
        """The record exactly as the gate wrote it: a fresh top-level dict (nested values
        shared, see :attr:`document`)."""
        doc = self.document
        if type(doc) is MappingProxyType:  # what from_json makes: the copy in C, a tenth
            made = doc.copy()              # of dict(proxy)'s time (issue 21 §3)
            if type(made) is dict:
                return made
        return dict(doc)


def _int(value: Any) -> int:
    if type(value) is int:  # the stored shape's own ints: most of what is read
        return value
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


_T = TypeVar("_T")


def _built(cls: type[_T], fields: dict[str, Any]) -> _T:
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (every field, by
    name), set in one step: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, which cost ``check --all`` 3.8 µs per visit read (issue 21
    §3). The instance is the one ``cls(**fields)`` makes (equal, same hash, still frozen);
    ``tests/engine/test_visits_build.py`` holds them equal."""
    instance = object.__new__(cls)
    instance.__dict__.update(fields)
    return instance


@dataclass(frozen=True)
class Visit:
    """One entry of the walk into a node.

    Attributes:
        number: 1 for the first visit, counting up.
        entered_at: ISO-8601 UTC ("" when unknown: a visit inferred from old state).
        exited_at: ISO-8601 UTC, "" while the visit is open.
        outcome: the outcome the node was left with ("" while open, or when moved past by
            ``force``).
        decision: the first answer given during this visit, or None.
        forced: the pointer was moved onto (or off) the node by ``force`` in this visit.
        inferred: rebuilt from state written before visits were kept (see
            :func:`legacy_visits`): its number and times are the best the old record tells.
        seq: the item's count of visits when this one began (1, 2, ... across all nodes),
            so the history keeps the walk's order when several visits share a clock
            second; 0 for an inferred visit.
        after_comment: the id of the newest comment on the item's thread loopgate had seen
            when this visit began (0 when none, or the visit began before this was kept).
            A reply with an id at or below it was written before the visit and does not
            answer it (issue 19 §2): GitHub's comment ids increase, so this orders replies
            against the visit without comparing GitHub's clock with loopgate's.
    """

    number: int
    entered_at: str = ""
    exited_at: str = ""
    outcome: str = ""
    decision: VisitDecision | None = None
    forced: bool = False
    inferred: bool = False
    seq: int = 0
    after_comment: int = 0

    @property
    def open(self) -> bool:
        """True while the walk has not left the node on this visit."""
        return not self.exited_at

    def decided(self, decision: VisitDecision) -> Visit:
        """This visit with ``decision`` recorded, unless it already has one (first answer
        wins within a visit)."""
        return self if self.decision is not None else replace(self, decision=decision)

    def takes_comment(self, comment_id: int | None, created_at: str | None) -> bool:
        """True when a GitHub comment (``comment_id``, created at ISO-8601 ``created_at``)
        may answer this visit (issue 19 §2: a decision is bound to the visit it answered).

        The rule: its id is above :attr:`after_comment` (GitHub's comment ids increase, so
        no two clocks are compared); without that anchor a first visit takes every comment
        and a later one those created at or after :attr:`entered_at` (this assumes GitHub's
        clock is not behind loopgate's). No comment id (a chat click, bound to the visit by
        the event's ``expectNode``) is taken. The one rule of the review gate
        (engine.hooks.feedback), the quiz (engine.hooks.quiz_visits) and ``loopgate
        verify`` (engine.verify)."""
        if not comment_id:
            return True
        if self.after_comment:
            return comment_id > self.after_comment
        if self.number < 2:  # no earlier visit whose comment could be offered again
            return True
        return not (self.entered_at and created_at and created_at < self.entered_at)

    def left(self, at: str, outcome: str, *, forced: bool = False) -> Visit:
        """This visit closed at ``at`` with ``outcome``."""
        return replace(self, exited_at=at, outcome=outcome, forced=self.forced or forced)

    def to_json(self) -> dict[str, Any]:
        """``{visit, enteredAt, exitedAt, outcome}`` plus ``decision``, ``forced``,
        ``inferred`` and ``seq`` when set."""
        doc: dict[str, Any] = {"visit": self.number, "enteredAt": self.entered_at,
                               "exitedAt": self.exited_at, "outcome": self.outcome}
        if self.decision is not None:
            doc["decision"] = self.decision.to_json()
        if self.forced:
            doc["forced"] = True
        if self.inferred:
            doc["inferred"] = True
        if self.seq:
            doc["seq"] = self.seq
        if self.after_comment:
            doc["afterComment"] = self.after_comment
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Visit:
        """Build from :meth:`to_json`'s shape.

        Raises:
            TypeError: ``doc`` (or its ``decision``) is not a mapping.
        """
        if type(doc) is not dict and not isinstance(doc, Mapping):  # a dict: no ABC check
            raise TypeError(f"a visit must be a mapping, not {type(doc).__name__}")
        decision = doc.get("decision")
        return _built(cls, {
            "number": _int(doc.get("visit")) or 1,
            "entered_at": str(doc.get("enteredAt") or ""),
            "exited_at": str(doc.get("exitedAt") or ""),
            "outcome": str(doc.get("outcome") or ""),
            "decision": VisitDecision.from_json(decision) if decision is not None else None,
            "forced": bool(doc.get("forced", False)),
            "inferred": bool(doc.get("inferred", False)),
            "seq": _int(doc.get("seq")),
            "after_comment": _int(doc.get("afterComment")),
        })


#: node id -> that node's visits, oldest first.
Visits = dict[str, tuple[Visit, ...]]


def visits_to_json(visits: Mapping[str, Iterable[Visit]]) -> dict[str, list[dict[str, Any]]]:
    """The stored ``visits`` shape: ``{node: [visit document, ...]}``."""
    return {node: [v.to_json() for v in seq] for node, seq in visits.items()}


def visits_from_json(doc: Mapping[str, Any]) -> Visits:
    """Parse the stored ``visits`` shape (:func:`visits_to_json`)."""
    return {str(node): tuple(Visit.from_json(v) for v in seq or ()) for node, seq in doc.items()}


def visits_from_rows(rows: Iterable[tuple[Any, str | bytes]]) -> Visits:
    """:func:`visits_from_json` of ``{node: JSON text}`` rows (the SQL stores' ``visits``
    table: ``(node, data)``, ``data`` a node's list of visits as JSON text), parsed
    straight into the visits without the intermediate document (``check --all`` reads
    every item's, issue 21 §3).

    Raises:
        ValueError: ``data`` is not JSON; TypeError: a visit is not a mapping.
    """
    return {str(node): tuple(map(Visit.from_json, fastjson.loads(data) or ()))
            for node, data in rows}


def visits_from_document(doc: Mapping[str, Any]) -> Visits:
    """The visits of a state document, whichever loopgate wrote it.

    A document with a ``visits`` key is read as is (its ``decisions`` key is derived from
    it and ignored). A document written before visits were kept (issue 19 §2) has only
    ``decisions: {node: record}`` and ``nodes: {node: {enteredAt, exitedAt, outcome,
    forced}}``: its visits are rebuilt by :func:`legacy_visits`.
    """
    if "visits" in doc:
        return visits_from_json(doc.get("visits") or {})
    surface = doc.get("surface") or {}
    approvals = surface.get("approvals") if isinstance(surface, Mapping) else None
    return legacy_visits(doc.get("nodes") or {}, doc.get("decisions") or {},
                         approvals if isinstance(approvals, Mapping) else {})


def legacy_visits(nodes: Mapping[str, Mapping[str, Any]],
                  decisions: Mapping[str, Any],
                  approvals: Mapping[str, Any] | None = None) -> Visits:
    """Visits rebuilt from state written before visits were kept, marked ``inferred``.

    The old record kept one decision per node for the item's life (the first answer,
    whatever visit it came in) and the node's *latest* entry and exit. So, per node:

    * a decision no older than the latest entry (or with no entry on record) belongs to
      that entry: one visit (number 1) with the node record's times and outcome and
      that decision;
    * a decision older than the latest entry was given on an earlier visit: visit 1 holds
      it (entered "" — unknown; left at the decision's time with its outcome), and visit
      2 is the latest entry with the node record's times and outcome and no decision
      (the old code never recorded a later answer; how many visits lay between is not
      known, so the numbers are the fewest that explain the record) — unless the
      approvals the gate counted on that entry (``surface.approvals[node]``, whose
      ``enteredAt`` is the entry's) tell who decided it: then that answer is its
      decision (:func:`_counted_decision`);
    * a node entered but never decided: one visit from its record;
    * a node never entered and never decided: no visit.

    Args:
        nodes: the old document's ``nodes`` (camelCase node records).
        decisions: the old document's ``decisions`` (node -> record).
        approvals: the old document's ``surface.approvals`` (node -> ``{enteredAt,
            approvals, refused, changesRequested?}``), or None.

    Returns:
        node id -> visits, in the order of ``nodes`` then decision-only nodes.
    """
    out: Visits = {}
    for node in [*nodes, *(n for n in decisions if n not in nodes)]:
        record = nodes.get(node) or {}
        raw = decisions.get(node)
        decision = VisitDecision.from_json(raw) if isinstance(raw, Mapping) else None
        visits = _legacy_node(record, decision, (approvals or {}).get(node))
        if visits:
            out[str(node)] = visits
    return out


def _legacy_node(record: Mapping[str, Any], decision: VisitDecision | None,
                 counted: Any) -> tuple[Visit, ...]:
    entered = str(record.get("enteredAt") or "")
    latest = Visit(1, entered, str(record.get("exitedAt") or ""),
                   str(record.get("outcome") or ""), None, bool(record.get("forced")), True)
    if decision is None:
        return (latest,) if entered or latest.exited_at or latest.outcome else ()
    if entered and decision.at and decision.at < entered:
        earlier = Visit(1, "", decision.at, decision.outcome, decision, inferred=True)
        return (earlier, replace(latest, number=2, decision=_counted_decision(latest, counted)))
    return (replace(latest, decision=decision),)


def _counted_decision(visit: Visit, counted: Any) -> VisitDecision | None:
    """The decision of an old record's latest gate entry, rebuilt from the approvals the
    gate counted on it (issue 11 §2's ``surface.approvals[node]``), or None when they do
    not tell: the entry differs, the visit is still open, or nothing deciding was counted.
    Shaped as ``ReviewDecision.to_json`` would have written it."""
    if not isinstance(counted, Mapping) or not visit.exited_at or not visit.entered_at:
        return None
    if counted.get("enteredAt") != visit.entered_at:
        return None
    changes = counted.get("changesRequested")
    listed = [a for a in counted.get("approvals") or () if isinstance(a, Mapping)]
    chosen = changes if isinstance(changes, Mapping) else (listed[-1] if listed else None)
    if chosen is None or not chosen.get("by"):
        return None
    doc: dict[str, Any] = {"by": _at(chosen["by"]), "at": visit.exited_at,
                           "outcome": visit.outcome, "comment": chosen.get("comment") or "",
                           "commentId": _int(chosen.get("commentId"))}
    if chosen.get("via") and chosen.get("via") != "reply":
        doc["via"] = chosen["via"]
        doc["text"] = ""
    if len(listed) > 1 and not isinstance(changes, Mapping):
        doc["approvers"] = [_at(a.get("by") or "") for a in listed]
    return VisitDecision.from_json(doc)


def _at(login: Any) -> str:
    text = str(login)
    return text if text.startswith("@") else f"@{text}"
