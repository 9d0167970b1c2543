"""Authorship from the tracker (issue 19 §1): whose words a comment's body really is.

A collaborator with write access can edit anybody's comment on GitHub; the REST comment
keeps ``user`` = the original author and only ``updated_at`` moves
(``../shared/platform-facts.md`` F3, A6). So a body read *now* (the poller's listing, the
dispatcher's catch-up) is its author's words only when the tracker's edit history says
nobody else edited it. This module is the ONE rule the webhook, the poller, the catch-up
and the Slack link confirmation share:

* A comment whose body is the author's as created (a webhook ``created`` payload, a Slack
  click, the offline thread) counts as it is — no lookup.
* A comment an ingress saw edited by someone else (an ``issue_comment.edited`` webhook
  whose ``sender`` is not the comment's ``user``, :attr:`Comment.edited_by`) does not count.
* A comment read now (:attr:`Comment.as_read`) counts only when
  :meth:`~engine.ports.Tracker.comment_edits` says every edit, and the comment's latest
  ``editor``, is its author (GraphQL ``editor``/``lastEditedAt``/``userContentEdits``,
  platform-facts A1–A4). A null author or editor is unknown, so it does not count (A7); a
  history longer than was read does not count either (an older editor may be hidden).
* When the tracker cannot tell (a failed or rate-limited lookup) nothing of it counts and
  the result is ``unverified``: the gate waits and the ingress offers the event again.

Only comments that could matter are looked up (:func:`could_matter`: a decisive reply, a
typed attestation line, a keyword; :func:`has_link_code` for the Slack link), so an idle
poll costs no query. The
tracker batches the lookups (GitHub: ≤ 100 comments a GraphQL query). Pure over the
Tracker port: no HTTP here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.hooks.feedback import classify_text
from engine.hooks.markers import any_attestation_ticked, says
from engine.identity import Actor
from engine.operator import confirm_ids
from engine.ports import SELF_MARKER, Comment, CommentEdits, TrackerError
from engine.settings import EngineSettings

__all__ = [
    "LINK_LINE",
    "NotCounted",
    "Screened",
    "needs_check",
    "could_matter",
    "has_link_code",
    "judge",
    "screen",
    "wait_note",
]

#: The Slack link confirmation line ``loopgate link <code>`` (issue 4 §2), on a line of its
#: own; shared with :mod:`bot.slack.slack_identity` so both read the same comments as link codes.
LINK_LINE = re.compile(r"(?im)^[ \t]*loopgate[ \t]+link[ \t]+(?P<code>[A-Za-z0-9]{4,64})[ \t]*$")


@dataclass(frozen=True)
class NotCounted:
    """A comment that does not count as its author's.

    Attributes:
        comment_id: the tracker's comment id.
        author: the author's login as the ingress read it ("" when unknown).
        editor: who else edited it ("" when GitHub names nobody).
        reason: one sentence for the wait reason and the log, e.g. ``@bob's reply was
            edited by @mallory; not counted``.
        url: a link to the comment ("" if none).
    """

    comment_id: int
    author: str
    editor: str
    reason: str
    url: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{commentId, author, editor, reason, url}`` (the event log's shape)."""
        return {"commentId": self.comment_id, "author": self.author, "editor": self.editor,
                "reason": self.reason, "url": self.url}


@dataclass(frozen=True)
class Screened:
    """What :func:`screen` decided.

    Attributes:
        counted: the comments that count as their authors' (the others removed), in the
            given order.
        not_counted: the comments removed, each with its reason.
        unverified: "" when every comment could be judged; else why the tracker could not
            tell (those comments are removed too: fail closed, the event is offered again).
    """

    counted: tuple[Comment, ...]
    not_counted: tuple[NotCounted, ...] = ()
    unverified: str = ""


def needs_check(comment: Comment) -> bool:
    """True when ``comment``'s body may not be its author's as created: read now from the
    tracker, or seen edited by someone."""
    return comment.as_read or comment.edited_by is not None


def has_link_code(comment: Comment) -> bool:
    """True when the body carries a ``loopgate link <code>`` line (:data:`LINK_LINE`)."""
    return LINK_LINE.search(comment.body or "") is not None


def could_matter(comment: Comment, settings: EngineSettings) -> bool:
    """True when the body could decide something at a gate if it counted: a decisive reply
    (``approved`` …), a typed attestation line, the execute or start keyword, or an operator
    request's ``the-loop confirm <id>`` (issue 19 §5). loopgate's
    own (marked) comments never decide anything as replies. (A link code matters to the
    Slack side, which asks :func:`has_link_code`.)"""
    body = comment.body or ""
    if SELF_MARKER in body:
        return False
    keywords = (settings.execute_keyword, settings.start_keyword)
    return (classify_text(body) is not None or any_attestation_ticked(body)
            or bool(confirm_ids(body))
            or any(says(body, k) for k in keywords))  # the gates' own reading of a keyword


def _who(actor: Actor) -> str:
    return f"@{actor.login}" if actor.known else "someone GitHub does not name"


def _refuse(comment: Comment, editor: Actor | None, why: str) -> NotCounted:
    author = comment.author or "unknown"
    return NotCounted(comment.id, comment.author, editor.login if editor else "",
                      f"@{author}'s reply {why}; not counted", comment.url)


def _editors(edits: CommentEdits) -> list[Actor]:
    # Every editor GitHub shows: the history (creation entry dropped) and, when the comment
    # was edited at all, its latest editor (the history may lag behind it, A8).
    out = [e.actor for e in edits.edits]
    if edits.last_edited_at or edits.editor:
        out.append(edits.editor_actor)
    return out


def judge(comment: Comment, edits: CommentEdits | None) -> NotCounted | None:
    """Whether ``comment`` (read now) counts as its author's, given the tracker's answer.

    Args:
        comment: the comment as the ingress read it (its REST author).
        edits: :meth:`~engine.ports.Tracker.comment_edits`'s entry for it, None when the
            tracker does not know it (deleted, or not found).

    Returns:
        None when it counts; else the :class:`NotCounted` saying why.
    """
    if edits is None:
        return _refuse(comment, None, "could not be found on the tracker to check who "
                       "edited it")
    author = edits.author_actor
    if not author.known:
        return _refuse(comment, None, "has an author GitHub does not name")
    if not author.same_as(comment.actor):
        return _refuse(comment, author, f"is attributed to {_who(author)} by the edit history")
    if not edits.complete:
        return _refuse(comment, None, "has a longer edit history than could be checked")
    for editor in _editors(edits):
        if not editor.same_as(author):
            return _refuse(comment, editor, f"was edited by {_who(editor)}")
    return None


def _seen_edit(comment: Comment) -> NotCounted | None:
    # An ingress saw the edit itself (a webhook's sender): no lookup needed to refuse.
    editor = comment.edited_by
    if editor is None or editor.same_as(comment.actor):
        return None
    return _refuse(comment, editor, f"was edited by {_who(editor)}")


def screen(comments: Sequence[Comment], tracker: Any, *,
           matters: Callable[[Comment], bool]) -> Screened:
    """Keep the comments that count as their authors' (the rule of this module).

    Args:
        comments: the event's comments, in order.
        tracker: the :class:`~engine.ports.Tracker` (``comments_editable`` False: nobody
            edits others' comments there, nothing is looked up).
        matters: which comments need judging (:func:`could_matter`); the rest are kept
            as they are, since they cannot decide anything.

    Returns:
        A :class:`Screened`. One ``comment_edits`` call for all the comments read now
        (the tracker batches it); a :class:`~engine.ports.TrackerError` makes them
        ``unverified``.
    """
    refused: dict[int, NotCounted] = {}
    ask: list[Comment] = []
    for comment in comments:
        if not needs_check(comment) or not matters(comment):
            continue
        seen = _seen_edit(comment)
        if seen is not None:
            refused[id(comment)] = seen
        elif comment.as_read and tracker.comments_editable:
            ask.append(comment)
    unverified = ""
    held: set[int] = set()
    if ask:
        try:
            found = tracker.comment_edits([c.id for c in ask])
        except TrackerError as exc:
            unverified = f"could not read who edited the replies ({exc})"
            held = {id(c) for c in ask}
        else:
            for comment in ask:
                verdict = judge(comment, found.get(comment.id))
                if verdict is not None:
                    refused[id(comment)] = verdict
    counted = tuple(c for c in comments if id(c) not in refused and id(c) not in held)
    return Screened(counted, tuple(refused[id(c)] for c in comments if id(c) in refused),
                    unverified)


def wait_note(not_counted: Iterable[Mapping[str, Any]], unverified: str = "") -> str:
    """The words a gate's wait reason gains: `` (@bob's reply was edited by @mallory; not
    counted)``; "" when there is nothing to say."""
    parts = [str(n.get("reason") or "") for n in not_counted if n.get("reason")]
    if unverified:
        parts.append(unverified)
    return f" ({'; '.join(parts)})" if parts else ""
