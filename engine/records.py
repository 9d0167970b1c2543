"""What gates record: decisions, skips, opt-ins and attestations, as small frozen types
(issue 10 "Shape").

Hooks build these and hand them to the runtime (``HookResult`` data ``decision``,
``skips``, ``optIns``). The state holds :class:`Skip`, :class:`OptIn`, :class:`Completion`,
:class:`ForcedMove` and :class:`Parked` themselves (``ItemState.skips`` / ``opt_ins`` /
``completions`` / ``forced`` / ``parked``); only the store and the JSON views call
:meth:`to_json`, whose camelCase keys are the state document's wire format (``check
--format json``, the designs), so nothing stored changes shape. Each type's ``from_json``
reads its document back (issue 20 §1: one (de)serialiser per record; absent keys read as
empty). For the state's records ``from_json`` then ``to_json`` gives the stored document
back byte for byte, whatever wrote it: unknown keys are kept (``extra``), and an unusual
key order too (``layout``), so state written before a change loads and is written back
unchanged. An approval gate's counted approvals are
:class:`engine.approvals.GateApprovals`; a visit's decision as shown is
:class:`engine.visits.VisitDecision`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, TypeVar

__all__ = [
    "Recordable",
    "Skip",
    "OptIn",
    "Completion",
    "ForcedMove",
    "Parked",
    "NOT_PARKED",
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


#: A record's keys not named by its fields, with their values as read, in order.
Extra = tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Skip:
    """A declaration that a node will not run (opt-in design; issue 2 §4), as the state
    holds it (``ItemState.skips``: node id -> Skip; issue 20 §1).

    Attributes:
        via: ``selection`` (the phase selection), ``declaration`` (``loopgate skip``) or
            ``not-selected`` (an opt-in nobody ticked).
        token: the skip-set name or node id that named it.
        by: who declared it (``@login`` or the CLI actor).
        reason: why ("" for a selection).
        at: ISO-8601 UTC, "" when the runtime stamps it.
        confirmed_by: the login that confirmed an operator request (issue 19 §5), "".
        confirmed_via: how it was confirmed (``reply``, a chat surface's name), "".
        request: the operator request's id, "".
        extra: keys of the stored document no field names (a custom hook's), kept as read.
        layout: the stored document's key order when it is not the one :meth:`to_json`
            writes (state written by another writer), so it is written back byte for byte;
            None for the usual order. Not compared.
    """

    via: str
    token: str = ""
    by: str = ""
    reason: str = ""
    at: str = ""
    confirmed_by: str = ""
    confirmed_via: str = ""
    request: str = ""
    extra: Extra = ()
    layout: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{via, token, by, reason[, at][, confirmedBy, confirmedVia, request]}`` (the
        optional keys when not empty), then :attr:`extra`; in :attr:`layout` order when
        set."""
        return _document((("via", self.via, True), ("token", self.token, True),
                          ("by", self.by, True), ("reason", self.reason, True),
                          ("at", self.at, False), ("confirmedBy", self.confirmed_by, False),
                          ("confirmedVia", self.confirmed_via, False),
                          ("request", self.request, False)), self.extra, self.layout)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Skip:
        """Read a stored document back (any shape: a key no field names, or a field's key
        holding a non-string, goes to :attr:`extra`; an absent field reads as "")."""
        if tuple(doc) == _SKIP_USUAL and doc["at"] and _all_text(doc):  # what writers write
            return _usual_skip(doc)
        values, extra = _split(doc, _SKIP_FIELDS)
        made = cls(values.get("via", ""), values.get("token", ""), values.get("by", ""),
                   values.get("reason", ""), values.get("at", ""),
                   values.get("confirmedBy", ""), values.get("confirmedVia", ""),
                   values.get("request", ""), extra)
        return _with_keys(made, doc)

    def stamped(self, via: str, at: str) -> Skip:
        """This skip with ``via`` and ``at`` filled where empty (the runtime's defaults
        for a plan a gate returned)."""
        return replace(self, via=self.via or via, at=self.at or at)


@dataclass(frozen=True, slots=True)
class OptIn:
    """A selection of an opt-in node (off unless ticked), as the state holds it
    (``ItemState.opt_ins``: node id -> OptIn; issue 20 §1).

    Attributes:
        via: ``selection``.
        by: who ticked it (``@login``).
        at: ISO-8601 UTC, "" when the runtime stamps it.
        extra: keys of the stored document no field names, kept as read.
        layout: the stored document's key order when not :meth:`to_json`'s (see
            :attr:`Skip.layout`). Not compared.
    """

    via: str
    by: str = ""
    at: str = ""
    extra: Extra = ()
    layout: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{via, by[, at]}`` then :attr:`extra`; in :attr:`layout` order when set."""
        return _document((("via", self.via, True), ("by", self.by, True),
                          ("at", self.at, False)), self.extra, self.layout)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> OptIn:
        """Read a stored document back (as :meth:`Skip.from_json`)."""
        if tuple(doc) == _OPT_IN_USUAL and doc["at"] and _all_text(doc):
            return _usual_opt_in(doc)
        values, extra = _split(doc, _OPT_IN_FIELDS)
        made = cls(values.get("via", ""), values.get("by", ""), values.get("at", ""), extra)
        return _with_keys(made, doc)

    def stamped(self, via: str, at: str) -> OptIn:
        """This opt-in with ``via`` and ``at`` filled where empty."""
        return replace(self, via=self.via or via, at=self.at or at)


@dataclass(frozen=True, slots=True)
class Completion:
    """An accepted ``complete`` claim of a node (``loopgate complete``, an agent's
    command), as the state holds it (``ItemState.completions``: node id -> Completion;
    issue 20 §1).

    Attributes:
        by: who claimed it (the CLI actor or ``@login``).
        at: ISO-8601 UTC time of the claim.
        extra: keys of the stored document no field names, kept as read.
        layout: the stored document's key order when not :meth:`to_json`'s (see
            :attr:`Skip.layout`). Not compared.
    """

    by: str
    at: str = ""
    extra: Extra = ()
    layout: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{by, at}`` then :attr:`extra`; in :attr:`layout` order when set."""
        if self.layout is None and not self.extra:
            return {"by": self.by, "at": self.at}
        return _document((("by", self.by, True), ("at", self.at, True)), self.extra,
                         self.layout)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Completion:
        """Read a stored document back (as :meth:`Skip.from_json`)."""
        if tuple(doc) == _COMPLETION_USUAL and _all_text(doc):
            return _usual_completion(doc)
        values, extra = _split(doc, _COMPLETION_FIELDS)
        made = cls(values.get("by", ""), values.get("at", ""), extra)
        return _with_keys(made, doc)


@dataclass(frozen=True, slots=True)
class ForcedMove:
    """One move of the pointer by ``force`` (never a pass), as the state holds it
    (``ItemState.forced``: a list of ForcedMove, oldest first; issue 20 §1).

    Attributes:
        from_node: the node the pointer was on (stored as ``from``).
        to_node: the node it was moved to (stored as ``to``).
        reason: why (required by ``loopgate force``).
        by: who forced it (the CLI actor or ``@login``).
        at: ISO-8601 UTC.
        confirmed_by: the login that confirmed an operator request (issue 19 §5), "".
        confirmed_via: how it was confirmed (``reply``, a chat surface's name), "".
        request: the operator request's id, "".
        extra: keys of the stored document no field names, kept as read.
        layout: the stored document's key order when not :meth:`to_json`'s (see
            :attr:`Skip.layout`). Not compared.
    """

    from_node: str
    to_node: str
    reason: str = ""
    by: str = ""
    at: str = ""
    confirmed_by: str = ""
    confirmed_via: str = ""
    request: str = ""
    extra: Extra = ()
    layout: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{from, to, reason, by, at[, confirmedBy, confirmedVia, request]}`` (the
        confirmation's keys when not empty), then :attr:`extra`; in :attr:`layout` order
        when set."""
        return _document((("from", self.from_node, True), ("to", self.to_node, True),
                          ("reason", self.reason, True), ("by", self.by, True),
                          ("at", self.at, True), ("confirmedBy", self.confirmed_by, False),
                          ("confirmedVia", self.confirmed_via, False),
                          ("request", self.request, False)), self.extra, self.layout)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ForcedMove:
        """Read a stored document back (as :meth:`Skip.from_json`)."""
        values, extra = _split(doc, _FORCED_FIELDS)
        made = cls(values.get("from", ""), values.get("to", ""), values.get("reason", ""),
                   values.get("by", ""), values.get("at", ""), values.get("confirmedBy", ""),
                   values.get("confirmedVia", ""), values.get("request", ""), extra)
        return _with_keys(made, doc)

    def confirmed(self, by: str, via: str, request: str) -> ForcedMove:
        """This move with the operator request's confirmation recorded (issue 19 §5)."""
        return replace(self, confirmed_by=by, confirmed_via=via, request=request)


@dataclass(frozen=True, slots=True)
class Parked:
    """Where and why the item waits, as the state holds it (``ItemState.parked``; issue 20
    §1). :data:`NOT_PARKED` (every field empty) is "not waiting", stored as ``{}``.

    Attributes:
        node: the node the item waits at.
        reason: the wait or block, a sentence for people.
        at: ISO-8601 UTC time it was parked.
        blocked: a block (the exit chain refused), not a wait; stored only when true.
        unverified: the gate could not read what it needed, so the ingress offers the event
            again (issue 19 §1); stored only when true.
        extra: keys of the stored document no field names, kept as read.
        layout: the stored document's key order when not :meth:`to_json`'s (see
            :attr:`Skip.layout`). Not compared.
    """

    node: str
    reason: str = ""
    at: str = ""
    blocked: bool = False
    unverified: bool = False
    extra: Extra = ()
    layout: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{node, reason, at[, unverified][, blocked]}`` (the flags when true, in the
        order the runtime has always added them), then :attr:`extra`; ``{}`` for
        :data:`NOT_PARKED`; in :attr:`layout` order when set."""
        if self.layout is None and not self.extra:
            if not (self.node or self.reason or self.at or self.blocked or self.unverified):
                return {}
            doc: dict[str, Any] = {"node": self.node, "reason": self.reason, "at": self.at}
            if self.unverified:
                doc["unverified"] = True
            if self.blocked:
                doc["blocked"] = True
            return doc
        return _document((("node", self.node, True), ("reason", self.reason, True),
                          ("at", self.at, True), ("unverified", self.unverified, False),
                          ("blocked", self.blocked, False)), self.extra, self.layout)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Parked:
        """Read a stored document back (as :meth:`Skip.from_json`; a flag holding anything
        but a boolean is kept in :attr:`extra`); ``{}`` reads as :data:`NOT_PARKED`."""
        if not doc:
            return NOT_PARKED
        if tuple(doc) == _PARKED_USUAL and doc["node"] and _all_text(doc):
            return _usual_parked(doc)
        values, extra = _split(doc, _PARKED_FIELDS, _PARKED_FLAGS)
        made = cls(values.get("node", ""), values.get("reason", ""), values.get("at", ""),
                   values.get("blocked", False), values.get("unverified", False), extra)
        return _with_keys(made, doc)

    def at_node(self, node_id: str) -> Parked:
        """This wait when it is at ``node_id``, else :data:`NOT_PARKED`."""
        return self if self.node == node_id else NOT_PARKED


#: Not waiting: the state's ``parked`` when the item is not parked (stored as ``{}``).
NOT_PARKED = Parked("")


_SKIP_FIELDS = frozenset(("via", "token", "by", "reason", "at", "confirmedBy",
                          "confirmedVia", "request"))
_SKIP_USUAL = ("via", "token", "by", "reason", "at")
_OPT_IN_FIELDS = frozenset(("via", "by", "at"))
_OPT_IN_USUAL = ("via", "by", "at")
_FORCED_FIELDS = frozenset(("from", "to", "reason", "by", "at", "confirmedBy", "confirmedVia",
                            "request"))
_PARKED_FIELDS = frozenset(("node", "reason", "at"))
_PARKED_FLAGS = frozenset(("blocked", "unverified"))
_PARKED_USUAL = ("node", "reason", "at")
_COMPLETION_FIELDS = frozenset(("by", "at"))
_COMPLETION_USUAL = ("by", "at")


_K = TypeVar("_K", Skip, OptIn, Completion, ForcedMove, Parked)


def _slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    # The slots' own setters, in field order: they fill a new frozen record without the
    # dataclass __init__'s object.__setattr__ per field (a third of the time; check --all
    # reads every skip of every item, issue 21 §3).
    return tuple(getattr(cls, f.name).__set__ for f in fields(cls))


_SKIP_SET = _slot_setters(Skip)
_OPT_IN_SET = _slot_setters(OptIn)
_COMPLETION_SET = _slot_setters(Completion)
_PARKED_SET = _slot_setters(Parked)


def _usual_skip(doc: Mapping[str, Any]) -> Skip:
    # Skip(via, token, by, reason, at) from a document of the usual shape, every field set.
    made = object.__new__(Skip)
    via, token, by, reason, at, confirmed_by, confirmed_via, request, extra, layout = _SKIP_SET
    via(made, doc["via"])
    token(made, doc["token"])
    by(made, doc["by"])
    reason(made, doc["reason"])
    at(made, doc["at"])
    confirmed_by(made, "")
    confirmed_via(made, "")
    request(made, "")
    extra(made, ())
    layout(made, None)
    return made


def _usual_opt_in(doc: Mapping[str, Any]) -> OptIn:
    # OptIn(via, by, at) from a document of the usual shape, every field set.
    made = object.__new__(OptIn)
    via, by, at, extra, layout = _OPT_IN_SET
    via(made, doc["via"])
    by(made, doc["by"])
    at(made, doc["at"])
    extra(made, ())
    layout(made, None)
    return made


def _usual_completion(doc: Mapping[str, Any]) -> Completion:
    # Completion(by, at) from a document of the usual shape, every field set.
    made = object.__new__(Completion)
    by, at, extra, layout = _COMPLETION_SET
    by(made, doc["by"])
    at(made, doc["at"])
    extra(made, ())
    layout(made, None)
    return made


def _usual_parked(doc: Mapping[str, Any]) -> Parked:
    # Parked(node, reason, at) from a document of the usual shape, every field set.
    made = object.__new__(Parked)
    node, reason, at, blocked, unverified, extra, layout = _PARKED_SET
    node(made, doc["node"])
    reason(made, doc["reason"])
    at(made, doc["at"])
    blocked(made, False)
    unverified(made, False)
    extra(made, ())
    layout(made, None)
    return made


#: The one value type of a document all of whose values are text.
_TEXT = frozenset((str,))


def _all_text(doc: Mapping[str, Any]) -> bool:
    # Every value is exactly a str (True for none): the types collected in C, a third
    # faster than a generator over the values (issue 21 §3).
    return {*map(type, doc.values())} <= _TEXT


def _split(doc: Mapping[str, Any], names: frozenset[str],
           flags: frozenset[str] = frozenset()) -> tuple[dict[str, Any], Extra]:
    # A text field's key holding a string, or a flag's holding a boolean, sets the field;
    # anything else is kept as read.
    values: dict[str, Any] = {}
    extra: list[tuple[str, Any]] = []
    for key, value in doc.items():
        if (key in names and isinstance(value, str)) or (key in flags
                                                           and isinstance(value, bool)):
            values[key] = value
        else:
            extra.append((str(key), _json_copy(value)))
    return values, tuple(extra)


def _with_keys(made: _K, doc: Mapping[str, Any]) -> _K:
    # Remember the stored order only when to_json would write another one.
    keys = tuple(doc)
    return made if tuple(made.to_json()) == keys else replace(made, layout=keys)


def _document(fields: Sequence[tuple[str, Any, bool]], extra: Extra,
              keys: tuple[str, ...] | None) -> dict[str, Any]:
    """A record's JSON: ``fields`` are ``(key, value, always)`` in the usual order (a
    field not ``always`` is written only when not empty), then ``extra``. With ``keys``
    (the order as read), those keys come first in that order, a field's value winning
    unless it is empty and ``extra`` holds the key; a field set since (not empty) follows."""
    if keys is None and not extra:
        return {k: v for k, v, always in fields if always or v}
    kept = dict(extra)
    doc: dict[str, Any] = {}
    values = {k: v for k, v, _always in fields}
    for key in keys or ():
        if key in values and (values[key] or key not in kept):
            doc[key] = values[key]
        elif key in kept:
            doc[key] = _json_copy(kept[key])
    for key, value, always in fields:
        if key not in doc and key not in kept and (value or (always and keys is None)):
            doc[key] = value
    for key, value in extra:
        doc.setdefault(key, _json_copy(value))
    return doc


def _json_copy(value: Any) -> Any:
    # A JSON value copied (a frozen record must not share a mutable value with its reader).
    if isinstance(value, Mapping):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_copy(v) for v in value]
    return value


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
