"""The engine's door (issue 20 §1): typed events in, a typed result out.

:meth:`engine.runtime.Runtime.advance` takes one of these frozen events:

* :class:`Comments` — replies read on the tracker's thread (a webhook, the poller, the CLI).
* :class:`Attestation` — a quiz comment's box was ticked (the comment id and its URL).
* :class:`Decision` — a person answered an approval gate on a chat surface (a button
  click): the gate's own rule (``engine.approvals.evaluate``) decides it, once, exactly as
  it decides a reply on the thread. No words are made up and parsed back.
* :class:`Selection` — a person made the phase selection on a chat surface (the card's
  Execute button): the rows they ticked.
* :class:`Confirmation` — a person confirmed a pending operator request on a chat surface
  (issue 19 §5).
* :class:`Recheck` — nothing new: evaluate the current node again.

and answers with one frozen result, each naming the node the event was offered to, the
reason and that node's visit (issue 19 §2):

* :class:`Moved` — the node passed (its visit closed with ``outcome``); the item is at ``to``.
* :class:`Waiting` — the node still waits (``reason`` is the wait as ``check`` says it).
* :class:`Refused` — the event was not taken and nothing changed: ``code`` says why
  (:data:`NOT_CURRENT`: the item is no longer at the expected node; :data:`NOT_ALLOWED`:
  the gate's approval rule refused the decision's person).
* :class:`Unverified` — the gate could not read what it needed (a tracker read failed);
  it waits, and an ingress that can replay offers the event again.

``via`` is data: it names where a decision came from (``reply`` on the thread; a chat
surface supplies its own name, e.g. ``slack``) and is stored with the decision as given.
The legacy mapping shape (``{"comments": [...], "via": ..., "expectNode": ...}``) still
reaches the engine through :func:`from_mapping`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.ports import Comment
from engine.state import ItemState
from engine.visits import Visit

__all__ = [
    "VIA_REPLY", "DECISION_OUTCOMES", "NOT_CURRENT", "NOT_ALLOWED",
    "Comments", "Attestation", "Decision", "Selection", "Confirmation", "Recheck", "Event",
    "EVENT_TYPES", "Moved", "Waiting", "Refused", "Unverified", "Result",
    "from_mapping", "hook_event", "expected_node",
]

#: ``via`` of a reply written on the tracker's thread.
VIA_REPLY = "reply"
#: The outcomes a :class:`Decision` may state (an approval gate's, issue 2 §3).
DECISION_OUTCOMES = (APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED)
#: :attr:`Refused.code`: the item is no longer at the node the event was meant for.
NOT_CURRENT = "not-current"
#: :attr:`Refused.code`: the gate's approval rule does not let the person decide.
NOT_ALLOWED = "not-allowed"


def _need(value: str, what: str) -> None:
    if not value or not value.strip():
        raise ValueError(f"{what} must not be empty")


@dataclass(frozen=True)
class Comments:
    """Replies on the tracker's thread.

    Attributes:
        comments: the comments, as the ingress read them.
        via: where they were written (``reply``; a legacy chat ingress passed its name).
        expected_node: the event applies only while the pointer is at this node (an
            ingress that read the state earlier must not answer the next gate); None: any.
    """

    comments: tuple[Comment, ...]
    via: str = VIA_REPLY
    expected_node: str | None = None


@dataclass(frozen=True)
class Attestation:
    """A quiz comment's box was ticked (design C3/C4).

    Attributes:
        comment_id: the quiz comment's id on the tracker.
        url: its URL ("" when the ingress does not know it).
        expected_node: as for :class:`Comments`.
    """

    comment_id: int
    url: str = ""
    expected_node: str | None = None


@dataclass(frozen=True)
class Decision:
    """An approval gate answered on a chat surface (issue 12 §1, issue 20 §1).

    Attributes:
        node: the gate answered.
        outcome: one of :data:`DECISION_OUTCOMES`.
        by: the GitHub login the clicker is linked to (with or without ``@``).
        text: the words given with it ("" for a plain Approve); stored as the decision's
            ``text`` and quoted in the echo comment on the thread.
        via: the surface's name, stored as the decision's ``via`` (``slack``).
        expected_node: the node the pointer must be at; None means ``node``.

    Raises:
        ValueError: an unknown outcome, or an empty node, login or via.
    """

    node: str
    outcome: str
    by: str
    text: str = ""
    via: str = ""
    expected_node: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in DECISION_OUTCOMES:
            raise ValueError(f"unknown decision outcome {self.outcome!r} (expected one of "
                             f"{', '.join(DECISION_OUTCOMES)})")
        _need(self.node, "a decision's node")
        _need(self.by, "a decision's login")
        _need(self.via, "a decision's via")


@dataclass(frozen=True)
class Selection:
    """The phase selection made on a chat surface (issue 4 §3): the rows as ticked.

    Attributes:
        node: the phase-selection node.
        by: the GitHub login the clicker is linked to.
        skips: default-on rows left unticked (node ids).
        opt_ins: opt-in rows ticked (node ids).
        explainer_on: the explainer row's tick (ignored when the graph shows none).
        via: the surface's name, stored as the selection's ``via`` (``slack``).
        expected_node: the node the pointer must be at; None means ``node``.

    Raises:
        ValueError: an empty node, login or via.
    """

    node: str
    by: str
    skips: tuple[str, ...] = ()
    opt_ins: tuple[str, ...] = ()
    explainer_on: bool = True
    via: str = ""
    expected_node: str | None = None

    def __post_init__(self) -> None:
        _need(self.node, "a selection's node")
        _need(self.by, "a selection's login")
        _need(self.via, "a selection's via")


@dataclass(frozen=True)
class Confirmation:
    """A pending operator request confirmed on a chat surface (issue 19 §5).

    Attributes:
        request_id: the request's id (``surface.operatorRequests``).
        by: the GitHub login the clicker is linked to.
        via: the surface's name, stored as ``confirmedVia``.

    Raises:
        ValueError: an empty id, login or via.
    """

    request_id: str
    by: str
    via: str

    def __post_init__(self) -> None:
        _need(self.request_id, "a confirmation's request id")
        _need(self.by, "a confirmation's login")
        _need(self.via, "a confirmation's via")


@dataclass(frozen=True)
class Recheck:
    """Nothing new: evaluate the current node's exit chain again.

    Attributes:
        expected_node: as for :class:`Comments`.
    """

    expected_node: str | None = None


Event = Comments | Attestation | Decision | Selection | Confirmation | Recheck
#: The event classes, for ``isinstance``.
EVENT_TYPES = (Comments, Attestation, Decision, Selection, Confirmation, Recheck)


# -- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Moved:
    """The node passed.

    Attributes:
        node: the node the event was offered to.
        reason: how it passed (``approved by @alice``).
        visit: the node's visit the event closed (with its outcome and decision).
        to: where the item is now (a terminal node's id, e.g. ``complete``, when the walk
            finished; the node itself when it was passed and entered again).
        outcome: the outcome it routed on.
        state: a copy of the committed state.
    """

    node: str
    reason: str
    visit: Visit | None
    to: str
    outcome: str
    state: ItemState = field(repr=False, compare=False)


@dataclass(frozen=True)
class Waiting:
    """The node still waits (the event was taken, or added nothing).

    Attributes:
        node: the node the event was offered to.
        reason: the wait, as ``check`` says it.
        visit: the node's current visit.
        state: a copy of the committed state.
    """

    node: str
    reason: str
    visit: Visit | None
    state: ItemState = field(repr=False, compare=False)


@dataclass(frozen=True)
class Refused:
    """The event was not taken; nothing changed.

    Attributes:
        node: the node the event was meant for.
        reason: why, in one sentence fragment (the approval rule's own reason for
            :data:`NOT_ALLOWED`).
        visit: that node's current visit (None when never entered).
        code: :data:`NOT_CURRENT` or :data:`NOT_ALLOWED`.
        state: a copy of the state as stored.
        by: whose decision was refused ("" when not a person's).
    """

    node: str
    reason: str
    visit: Visit | None
    code: str
    state: ItemState = field(repr=False, compare=False)
    by: str = ""


@dataclass(frozen=True)
class Unverified:
    """The gate could not read what it needed (fail closed): it waits, nothing counted.

    Attributes:
        node: the node the event was offered to.
        reason: the wait, naming what could not be read.
        visit: the node's current visit.
        state: a copy of the committed state.
    """

    node: str
    reason: str
    visit: Visit | None
    state: ItemState = field(repr=False, compare=False)


Result = Moved | Waiting | Refused | Unverified


# -- the legacy shape -----------------------------------------------------------------------
def from_mapping(event: Mapping[str, Any] | None) -> Event:
    """The typed event a legacy mapping stands for (``{"comments": [...]}``,
    ``{"attestation": {"comment_id", "url"}}`` or ``{}``, with optional ``via`` and
    ``expectNode``). An attestation without an integer ``comment_id`` is no
    :class:`Attestation`: it reads as a :class:`Recheck` (the quiz gate, which sees the
    mapping as given, says what is wrong with it)."""
    event = event or {}
    expected = event.get("expectNode")
    expected = str(expected) if expected is not None else None
    if "attestation" in event and isinstance(event["attestation"], Mapping):
        att = event["attestation"]
        cid = att.get("comment_id")
        if isinstance(cid, int) and not isinstance(cid, bool):
            return Attestation(cid, str(att.get("url") or ""), expected)
        return Recheck(expected)
    comments = event.get("comments")
    if comments is not None:
        return Comments(tuple(comments), str(event.get("via") or VIA_REPLY), expected)
    return Recheck(expected)


def expected_node(event: Event) -> str | None:
    """The node ``event`` is bound to (None: whichever is current). A :class:`Decision`
    or :class:`Selection` is bound to its node unless it names another."""
    if isinstance(event, Decision | Selection):
        return event.expected_node or event.node
    if isinstance(event, Confirmation):
        return None
    return event.expected_node


def hook_event(event: Event) -> dict[str, Any]:
    """The mapping hooks read as ``ctx.event`` (``engine.hooks.registry.HookContext``):
    ``comments`` (a list), ``attestation`` (``{comment_id, url}``), ``decision`` (the
    :class:`Decision`), ``selection`` (the :class:`Selection`), ``confirmation``; ``via``
    whenever the event names one."""
    if isinstance(event, Comments):
        out: dict[str, Any] = {"comments": list(event.comments)}
        if event.via != VIA_REPLY:
            out["via"] = event.via
        return out
    if isinstance(event, Attestation):
        return {"attestation": {"comment_id": event.comment_id, "url": event.url}}
    if isinstance(event, Decision):
        return {"decision": event, "via": event.via}
    if isinstance(event, Selection):
        return {"selection": event, "via": event.via}
    if isinstance(event, Confirmation):
        return {"confirmation": event, "via": event.via}
    return {}


def comment_ids(comments: Sequence[Any]) -> list[int]:
    """The integer ids of ``comments`` (what :meth:`ItemState.saw_comments` records)."""
    return [c.id for c in comments if isinstance(getattr(c, "id", None), int)]
