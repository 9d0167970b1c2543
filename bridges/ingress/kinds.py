"""The dispatcher's kinds and de-duplication keys, the same for every tracker (issue 20 §3).

A tracker's ingress (the GitHub router and poller today) routes what it receives to one of
these kinds — ``comment``, ``quiz_attestation``, ``start``, ``checklist_edited``,
``pull_request_head``, ``merge_group`` — and keys it with the helpers here, so webhook and
poller arrivals share one de-duplication record. :func:`classify_comment` is the one rule
that says what a comment (:class:`engine.ports.Comment`) is to loopgate; it reads only
loopgate's own markers, never a tracker's payload.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engine.hooks.markers import (
    PHASE_SELECTION_MARKER,
    QUIZ_MARKER_PREFIX,
    any_attestation_ticked,
)
from engine.identity import Actor
from engine.ports import Comment
from engine.refs import WorkItemRef

__all__ = [
    "COMMENT", "QUIZ_ATTESTATION", "START", "CHECKLIST_EDITED", "PULL_REQUEST_HEAD",
    "MERGE_GROUP", "QUIZ_MARKER", "Dropped", "as_actor", "is_quiz_tick", "body_hash",
    "quiz_key", "comment_key", "checklist_key", "start_key", "head_key", "merge_group_key",
    "is_self_authored", "classify_comment",
]

COMMENT = "comment"
QUIZ_ATTESTATION = "quiz_attestation"
START = "start"
CHECKLIST_EDITED = "checklist_edited"
PULL_REQUEST_HEAD = "pull_request_head"
MERGE_GROUP = "merge_group"

#: The prefix of the quiz comment's marker ``<!-- the-loop:quiz <node> digest=<hex12|-> -->``
#: (shared with the hooks, so both sides recognise the same comments).
QUIZ_MARKER = QUIZ_MARKER_PREFIX


@dataclass(frozen=True)
class Dropped:
    """A delivery the bridge does not act on.

    Attributes:
        reason: kebab-case code (``ping``, ``self-authored``, ``not-watched`` ...).
    """

    reason: str


def as_actor(bot: Actor | str) -> Actor:
    """``bot`` as an :class:`~engine.identity.Actor` (a login string is read with
    :meth:`Actor.from_login`)."""
    return bot if isinstance(bot, Actor) else Actor.from_login(bot)


def is_quiz_tick(body: str) -> bool:
    """True when ``body`` carries the quiz marker and a ticked attestation line.

    The attestation line is matched by the hooks' own anchored regex
    (:func:`engine.hooks.markers.any_attestation_ticked`), so a candidate here is exactly
    what ``quiz-attested`` will look for.
    """
    return QUIZ_MARKER in (body or "") and any_attestation_ticked(body)


def body_hash(body: str) -> str:
    """First 16 hex digits of sha256 over the UTF-8 body (the ``quizSeen`` key part)."""
    return hashlib.sha256((body or "").encode("utf-8")).hexdigest()[:16]


def quiz_key(comment_id: int, body: str, edited_at: str = "") -> str:
    """The de-duplication key of one tick: ``quiz:<comment id>:<sha256(body)[:16]>``, and
    ``@<edited_at>`` (the comment's ``updated_at``) when known.

    The edit's time is what makes a tick new: an un-tick and re-tick restores a body seen
    before (an earlier visit's tick, or a refused one), and without the time that re-tick
    was dropped as a duplicate before any gate saw it. The webhook's ``comment.updated_at``
    and the REST listing's are the same stored value, so both ingresses still key one
    edit alike (one decision); the gate decides whether the tick counts (made during its
    current visit, by an authorized editor per GraphQL).

    Args:
        comment_id: the comment's REST id.
        body: the edited body.
        edited_at: the comment's ``updated_at`` (ISO-8601, one-second resolution); "" =
            the older key shape.
    """
    key = f"quiz:{comment_id}:{body_hash(body)}"
    return f"{key}@{edited_at}" if edited_at else key


def comment_key(comment_id: int) -> str:
    """The de-duplication key of a new human comment: ``comment:<id>``."""
    return f"comment:{comment_id}"


def checklist_key(comment_id: int, body: str) -> str:
    """The de-duplication key of one checklist edit: ``checklist:<id>:<sha256(body)[:16]>``
    (the webhook and the poller see the same edit under the same key)."""
    return f"checklist:{comment_id}:{body_hash(body)}"


def start_key(ref: WorkItemRef) -> str:
    """The de-duplication key of a start request: ``start:<owner/repo#N>``."""
    return f"start:{ref}"


def head_key(ref: WorkItemRef, sha: str) -> str:
    """The de-duplication key of a pull request's head commit: ``head:<ref>@<sha>``
    (webhook and poller see the same push once)."""
    return f"head:{ref}@{sha}"


def merge_group_key(full_name: str, head_sha: str) -> str:
    """The de-duplication key of a merge group: ``merge-group:<owner/repo>@<head_sha>``
    (a redelivery, or the same group asked twice, is answered once)."""
    return f"merge-group:{full_name.lower()}@{head_sha}"


def is_self_authored(comment: Comment, bot: Actor | str) -> bool:
    """True for loopgate's own comments: the marker, or written by loopgate ``bot``
    (compared as :meth:`Actor.same_as`: kind and id, not a login string alone)."""
    if comment.self_authored:
        return True
    return as_actor(bot).same_as(comment.actor)


def classify_comment(comment: Comment, bot: Actor | str, *, edited: bool,
                     previous_body: str | None = None) -> str | Dropped:
    """What a GitHub comment is to loopgate: the one rule the webhook router and the poller
    share (issue 10 "Shape").

    Args:
        comment: the comment as REST or a webhook payload shows it.
        bot: loopgate's identity.
        edited: classify the comment's latest edit (``issue_comment.edited``) rather than
            its creation.
        previous_body: the body before the edit (a webhook's ``changes.body.from``), when
            known; an edit that leaves it unchanged (GitHub sends these when a comment is
            hidden or unhidden) is :class:`Dropped` ``body-unchanged``, never re-evaluated.

    Returns:
        :data:`QUIZ_ATTESTATION` for an edit leaving loopgate's quiz comment ticked (checked
        before the self-reply guard, design C5: that edit of loopgate's own comment is
        exactly the one not to drop; attribution always comes from GraphQL later);
        :data:`CHECKLIST_EDITED` for an edit of loopgate's own phase-selection checklist;
        :data:`COMMENT` for a person's new comment; else :class:`Dropped` with a reason.
    """
    if edited and previous_body is not None and previous_body == comment.body:
        return Dropped("body-unchanged")
    if edited and is_quiz_tick(comment.body):
        return QUIZ_ATTESTATION
    if is_self_authored(comment, bot):
        if edited and PHASE_SELECTION_MARKER in (comment.body or ""):
            return CHECKLIST_EDITED
        return Dropped("self-authored-edit" if edited else "self-authored")
    return Dropped("human-edit-ignored") if edited else COMMENT
