"""Operator requests (issue 19 §5): a CLI verb that would skip, force past or pass a
human node after the phase selection takes effect only when an authorized person says so.

Whoever holds the CLI and the database may be the agent session the gates exist for, so
after the selection ``loopgate skip`` of a human node and a ``loopgate force`` that moves
the pointer past a human gate do not act: they record a *pending operator request* in
``surface.operatorRequests[<id>]`` and post it on the thread (marker
``<!-- the-loop:operator-request <id> -->``). An authorized person confirms with a reply
``the-loop confirm <id>`` (GitHub, or ``loopgate advance ITEM --comment alice=FILE`` on the
offline thread). The reply is authorized the way every gate reply is: for each human node
the request concerns, :func:`engine.approvals.authorize` under that node's rule (approvers,
teams, ``preventSelfApproval``), so a non-approver or the item's own author (where the
gate forbids self-approval) is refused with the reason. Before the selection, and for
agent and code nodes, the verbs act at once as before.

Stored request document (camelCase, JSON)::

    {"id": "3f9a1c2e", "verb": "skip" | "force", "nodes": [human node ids],
     "skips": {node: token}, "to": "complete", "reason": "...", "by": "cli",
     "at": "2026-...Z", "status": "pending" | "confirmed",
     "confirmed": {"by": "alice", "via": "reply", "at": "...", "commentId": 12, "comment": url},
     "refused": [{"by": "bob", "reason": "...", "at": "...", "via": "reply", "commentId": 13}]}
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.approvals import VIA_REPLY, Verdict, authorize
from engine.graph.model import Graph
from engine.hooks.common import is_self_authored, people_for, rule_for
from engine.hooks.markers import spoken_lines
from engine.outcomes import CHANGES_REQUESTED, STALE
from engine.ports import Comment, TrackerError
from engine.settings import EngineSettings, normalize_login
from engine.state import ItemState

__all__ = [
    "SURFACE_KEY",
    "NOTICE",
    "PENDING",
    "CONFIRMED",
    "Confirmation",
    "request_marker",
    "confirm_ids",
    "new_request_id",
    "selection_made",
    "guarded_skips",
    "force_passes",
    "pending_requests",
    "request_text",
    "authorize_confirmation",
]

#: Where requests are kept in the item's surface.
SURFACE_KEY = "operatorRequests"
#: The notifier event of a new request (Slack: a thread message with a Confirm button).
NOTICE = "operator-request"
PENDING = "pending"
CONFIRMED = "confirmed"

#: ``the-loop confirm <id>`` at the start of a line (ids are 8 lower-case hex digits).
#: A quoted line (``> the-loop confirm …``, e.g. quoting the request) confirms nothing.
_CONFIRM = re.compile(r"^[ \t]*the-loop[ \t]+confirm[ \t]+`?([0-9a-f]{8})\b", re.I | re.M)

#: Forcing an item to the escalated node stops it: it walks around no gate.
_GIVE_UP = "escalated"

#: Outcomes that leave a human gate unanswered (it sent the item back, or went stale).
_NOT_PASSED = ("", CHANGES_REQUESTED, STALE, "escalated")


def request_marker(request_id: str) -> str:
    """The thread marker of request ``request_id``: ``<!-- the-loop:operator-request ID -->``."""
    return f"<!-- the-loop:operator-request {request_id} -->"


def new_request_id() -> str:
    """A fresh request id: 8 lower-case hex digits (short enough to type in a reply)."""
    return uuid.uuid4().hex[:8]


def confirm_ids(body: str | None) -> list[str]:
    """The request ids a comment confirms (``the-loop confirm <id>`` lines), in order,
    lower-cased, without repeats."""
    text = "\n".join(spoken_lines(body))  # not from a quote or a code block
    return list(dict.fromkeys(m.lower() for m in _CONFIRM.findall(text)))


def selection_made(graph: Graph, state: ItemState) -> bool:
    """True once the item's phase selection is behind it (issue 19 §5: from then on
    operator verbs touching human nodes need an authorized person's say-so).

    The selection is the graph's start node when that is a human gate; it counts as made
    when it has a passing outcome or a recorded decision, or when any other node was ever
    entered (sticky: forcing the pointer back to the selection does not reopen the door).
    A graph whose start node is not a human gate has no selection: made once started.
    """
    if not state.current_node:
        return False
    start = graph.start
    if not graph.has_node(start) or not graph.node(start).is_human:
        return True
    if start in state.decisions:
        return True
    record = state.nodes.get(start)
    if record is not None and record.outcome not in _NOT_PASSED:
        return True
    return any(node_id != start and rec.entered_at for node_id, rec in state.nodes.items())


def guarded_skips(graph: Graph, state: ItemState | None,
                  nodes: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``nodes`` (node id -> token) that need a confirmation: the human
    nodes, once the selection is made (empty before, or for a state not started)."""
    if state is None or not selection_made(graph, state):
        return {}
    return {n: t for n, t in nodes.items() if graph.has_node(n) and graph.node(n).is_human}


def _passed(state: ItemState, node_id: str) -> bool:
    record = state.nodes.get(node_id)
    return bool(record and record.exited_at and record.outcome not in _NOT_PASSED)


def force_passes(graph: Graph, state: ItemState, to: str,
                 skipped: Sequence[str] = ()) -> list[str]:
    """The human gates a forced move to ``to`` would walk around, once the selection is
    made: every non-terminal human node declared before ``to`` that has not passed and is
    not skipped (``skipped``: the trusted skips), the current one included. A move back
    to rework (every earlier gate passed), onto a gate, or to ``escalated`` (giving up)
    passes none.

    Returns:
        Node ids in graph order; empty before the selection or when ``to`` is unknown.
    """
    if not selection_made(graph, state) or not graph.has_node(to) or to == _GIVE_UP:
        return []
    limit = graph.position(to)
    out = []
    for i, node in enumerate(graph.ordered()):
        if i >= limit:
            break
        if not node.is_human or node.terminal or node.id in skipped:
            continue
        if not _passed(state, node.id):
            out.append(node.id)
    return out


def pending_requests(state: ItemState) -> dict[str, dict[str, Any]]:
    """The item's pending requests, ``id -> document`` (see the module docstring)."""
    stored = state.surface.get(SURFACE_KEY)
    if not isinstance(stored, Mapping):
        return {}
    return {str(k): dict(v) for k, v in stored.items()
            if isinstance(v, Mapping) and v.get("status") == PENDING}


def _does(request: Mapping[str, Any]) -> str:
    nodes = ", ".join(f"`{n}`" for n in request.get("nodes") or ())
    if request.get("verb") == "force":
        return (f"`loopgate force --to {request.get('to')}` would move the pointer past the "
                f"human gate(s) {nodes} without their answers")
    return f"`loopgate skip` would skip the human gate(s) {nodes}"


def request_text(request: Mapping[str, Any]) -> str:
    """The thread comment of a new request (markers added by the caller): what it would
    do, why, who asked, and how an authorized person confirms it."""
    rid = request["id"]
    return (
        f"**Operator request `{rid}`**: {_does(request)}.\n\n"
        f"Reason given: {request.get('reason')}\n"
        f"Asked by `{request.get('by')}` from the command line at {request.get('at')}.\n\n"
        "Nothing changes until a person authorized for these gates confirms with a reply:\n\n"
        f"    the-loop confirm {rid}\n\n"
        "(or the Confirm button in Slack). Ignore this request to leave the gates as they are."
    )


@dataclass(frozen=True)
class Confirmation:
    """One ``the-loop confirm <id>`` reply, as read from the thread.

    Attributes:
        request_id: the request it names.
        by: the replying login (lower-cased, no ``@``).
        at: when (ISO-8601 UTC).
        via: ``reply`` (GitHub or the offline thread) or ``slack``.
        comment_id: the reply's id, or None.
        comment: the reply's URL ("" if none).
    """

    request_id: str
    by: str
    at: str
    via: str = VIA_REPLY
    comment_id: int | None = None
    comment: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored camelCase document (``confirmed`` / ``refused`` entries)."""
        doc: dict[str, Any] = {"by": self.by, "via": self.via, "at": self.at}
        if self.comment_id is not None:
            doc["commentId"] = self.comment_id
        if self.comment:
            doc["comment"] = self.comment
        return doc


def confirmations(comments: Sequence[Any], settings: EngineSettings, at: str,
                  via: str = VIA_REPLY) -> list[Confirmation]:
    """The confirmations in an event's comments, oldest first; loopgate's own comments
    (the request itself quotes the command) are never read as one."""
    out = []
    for c in comments:
        if not isinstance(c, Comment) or is_self_authored(c, settings):
            continue
        for rid in confirm_ids(c.body):
            out.append(Confirmation(rid, normalize_login(c.author), c.created_at or at, via,
                                    c.id, c.url))
    return out


def authorize_confirmation(graph: Graph, settings: EngineSettings, tracker: Any,
                           state: ItemState, request: Mapping[str, Any],
                           login: str) -> Verdict:
    """Whether ``login`` may confirm ``request``: authorized under the rule of EVERY human
    node it concerns (the same :func:`engine.approvals.authorize` a gate reply passes,
    with teams and ``preventSelfApproval``; issue 19 §5).

    Returns:
        The first refusal (its reason names the node), else an allowing verdict. A
        tracker failure while reading whose work it is refuses (fail closed); its reason
        starts ``could not read``.
    """
    membership = tracker.team_membership
    for node_id in request.get("nodes") or ():
        rule = rule_for(graph, settings, node_id)
        try:
            people = people_for(tracker, state.ref, node_id, rule, settings, state=state,
                                graph=graph)  # issue 24 §2: the dispatcher is an author
        except TrackerError as exc:
            return Verdict(False, f"could not read who authored the work ({exc})")
        verdict = authorize(login, rule, authorized_users=settings.authorized_users,
                            people=people, membership=membership)
        if not verdict.allowed:
            return Verdict(False, f"{verdict.reason} (at {node_id})")
    return Verdict(True)
