"""What gates record: decisions, skips, opt-ins and attestations, as small frozen types
(issue 10 "Shape").

Hooks build these and hand them to the runtime (``HookResult`` data ``decision``,
``skips``, ``optIns``); the runtime stores their :meth:`to_json` documents, whose camelCase
keys are the state document's wire format (``check --format json``, the designs), so
nothing stored changes shape. Each type's ``from_json`` reads its document back (issue 20
§1: one (de)serialiser per record; unknown keys are ignored, absent ones read as empty), so
state written before a change still reads. An approval gate's counted approvals are
:class:`engine.approvals.GateApprovals`; a visit's decision as shown is
:class:`engine.visits.VisitDecision`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "Recordable",
    "Skip",
    "OptIn",
    "Attestation",
    "ReviewDecision",
    "SelectionDecision",
    "as_json",
]


class Recordable(Protocol):
    """Anything the runtime can store: it gives its JSON document."""

    def to_json(self) -> dict[str, Any]:
        """The stored document (camelCase keys)."""
        ...


def as_json(value: Recordable | Mapping[str, Any]) -> dict[str, Any]:
    """``value``'s document: :meth:`Recordable.to_json`, or a copy of a mapping (a custom
    hook may still hand over a plain mapping)."""
    if isinstance(value, Mapping):
        return dict(value)
    return value.to_json()


@dataclass(frozen=True)
class Skip:
    """A declaration that a node will not run (opt-in design; issue 2 §4).

    Attributes:
        via: ``selection`` (the phase selection), ``declaration`` (``loopgate skip``) or
            ``not-selected`` (an opt-in nobody ticked).
        token: the skip-set name or node id that named it.
        by: who declared it (``@login`` or the CLI actor).
        reason: why ("" for a selection).
        at: ISO-8601 UTC, "" when the runtime stamps it.
    """

    via: str
    token: str = ""
    by: str = ""
    reason: str = ""
    at: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{via, token, by, reason[, at]}``."""
        doc: dict[str, Any] = {"via": self.via, "token": self.token, "by": self.by,
                               "reason": self.reason}
        if self.at:
            doc["at"] = self.at
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Skip:
        """Read :meth:`to_json` back."""
        return cls(_s(doc, "via"), _s(doc, "token"), _s(doc, "by"), _s(doc, "reason"),
                   _s(doc, "at"))


@dataclass(frozen=True)
class OptIn:
    """A selection of an opt-in node (off unless ticked).

    Attributes:
        via: ``selection``.
        by: who ticked it (``@login``).
        at: ISO-8601 UTC, "" when the runtime stamps it.
    """

    via: str
    by: str
    at: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{via, by[, at]}``."""
        doc = {"via": self.via, "by": self.by}
        if self.at:
            doc["at"] = self.at
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> OptIn:
        """Read :meth:`to_json` back."""
        return cls(_s(doc, "via"), _s(doc, "by"), _s(doc, "at"))


@dataclass(frozen=True)
class Attestation:
    """An authorized, attributed tick on loopgate's quiz comment, or the typed line
    (explainer design C4): the quiz gate's decision.

    Attributes:
        at: when the gate decided (ISO-8601 UTC).
        attested_by: ``@login`` of the person GraphQL named (or who typed the line).
        attested_at: when they edited (or commented).
        comment: the comment's URL.
        comment_id: its id (64-bit).
        via: ``tick`` or ``typed``.
    """

    at: str
    attested_by: str
    attested_at: str
    comment: str
    comment_id: int
    via: str

    def to_json(self) -> dict[str, Any]:
        """``{at, attestedBy, attestedAt, comment, commentId, via}``."""
        return {"at": self.at, "attestedBy": self.attested_by, "attestedAt": self.attested_at,
                "comment": self.comment, "commentId": self.comment_id, "via": self.via}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Attestation:
        """Read :meth:`to_json` back."""
        return cls(_s(doc, "at"), _s(doc, "attestedBy"), _s(doc, "attestedAt"),
                   _s(doc, "comment"), _i(doc, "commentId"), _s(doc, "via"))


@dataclass(frozen=True)
class ReviewDecision:
    """An approval gate's answer (``approved``, ``approved-with-comments``,
    ``changes-requested``).

    Attributes:
        by: ``@login``.
        at: ISO-8601 UTC.
        outcome: the outcome it routes on.
        comment: the reply's URL ("" for a chat surface's click).
        comment_id: the reply's id (0 for a chat surface's click).
        via: ``reply`` (a reply on the thread, the default) or the chat surface's name
            (``slack``; issue 12 §1, issue 20 §1).
        text: the words given with a chat decision ("" otherwise: on the thread the
            comment is the record).
        approvers: ``@login`` of every counted approver when the gate needs more than
            one approval (issue 11 §2), else empty.
    """

    by: str
    at: str
    outcome: str
    comment: str
    comment_id: int
    via: str = "reply"
    approvers: tuple[str, ...] = ()
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{by, at, outcome, comment, commentId}`` plus ``via`` and ``text`` when not a
        reply, and ``approvers`` when several were needed."""
        doc: dict[str, Any] = {"by": self.by, "at": self.at, "outcome": self.outcome,
                               "comment": self.comment, "commentId": self.comment_id}
        if self.via != "reply":
            doc["via"] = self.via
            doc["text"] = self.text
        if self.approvers:
            doc["approvers"] = list(self.approvers)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ReviewDecision:
        """Read :meth:`to_json` back (no ``via``: a reply)."""
        return cls(_s(doc, "by"), _s(doc, "at"), _s(doc, "outcome"), _s(doc, "comment"),
                   _i(doc, "commentId"), _s(doc, "via") or "reply",
                   tuple(str(a) for a in doc.get("approvers") or ()), _s(doc, "text"))


@dataclass(frozen=True)
class SelectionDecision:
    """The phase-selection gate's answer.

    Attributes:
        by: ``@login`` of the authorized person who executed.
        via: ``reply`` (a checklist in the reply), ``checklist`` (the posted one),
            ``default`` or a chat surface's name (``slack``).
        at: ISO-8601 UTC.
        comment: the reply's URL.
        comment_id: the reply's id.
        skips: node ids it skipped.
        opt_ins: opt-in node ids it selected.
        refused: tokens it named that cannot be skipped.
        explainer: whether the explainer set stays on.
        frozen_graph: the graph as it will be walked (nodes and skips, for ``check``).
    """

    by: str
    via: str
    at: str
    comment: str
    comment_id: int
    skips: Sequence[str] = ()
    opt_ins: Sequence[str] = ()
    refused: Sequence[str] = ()
    explainer: bool = True
    frozen_graph: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{by, via, at, comment, commentId, skips, optIns, refused, explainer,
        frozenGraph}``."""
        return {"by": self.by, "via": self.via, "at": self.at, "comment": self.comment,
                "commentId": self.comment_id, "skips": list(self.skips),
                "optIns": list(self.opt_ins), "refused": list(self.refused),
                "explainer": self.explainer, "frozenGraph": dict(self.frozen_graph)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SelectionDecision:
        """Read :meth:`to_json` back."""
        graph = doc.get("frozenGraph")
        return cls(_s(doc, "by"), _s(doc, "via"), _s(doc, "at"), _s(doc, "comment"),
                   _i(doc, "commentId"), tuple(str(n) for n in doc.get("skips") or ()),
                   tuple(str(n) for n in doc.get("optIns") or ()),
                   tuple(str(n) for n in doc.get("refused") or ()),
                   doc.get("explainer") is not False,
                   dict(graph) if isinstance(graph, Mapping) else {})


def _s(doc: Mapping[str, Any], key: str) -> str:
    value = doc.get(key)
    return "" if value is None else str(value)


def _i(doc: Mapping[str, Any], key: str) -> int:
    value = doc.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
