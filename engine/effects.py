"""Effects: what a hook wants done outside the item's transaction (issue 10 §1).

Decide, commit, then act. A hook never calls a tracker write or the notifier; it emits an
effect (``ctx.emit(PostComment(...))``), the runtime commits the state change, the event log
and one row per effect in one short transaction with no network call inside, and a
performer (:mod:`engine.perform` inline, or the GitHub worker in ``bridges/``) carries the
rows out after commit, in order per item, and records each result in a second short
transaction. The engine stays pure: effects are data; it never learns that GitHub exists.

The effect kinds:

* :class:`PostComment` — post a comment; its result (id, url) may be recorded in the
  item's surface (``record``): the quiz gate and the checklist reader need it.
* :class:`AddLabel` / :class:`RemoveLabel` — one label; idempotent by nature.
* :class:`Notify` — a named event for the notifier (Slack); performed in order with the
  item's other effects, so a quiz-pending DM follows the quiz comment it links to.
* :class:`PublishGate` — publish the ``loopgate`` check (issue 11 §1) on the head commit of
  every open pull request delivering the item; the verdicts are read from the store when
  it is carried out, so the newest state lands on the newest head. Idempotent by nature.
* :class:`RequestReviews` — ask GitHub for reviews on the delivering pull requests from the
  approvers an approval gate waits on (issue 24 §3): emitted once per gate visit, a
  courtesy that never passes or holds the gate (:mod:`engine.reviewers`).

Exactly once across crashes: every row has a random ``key``; a posted comment carries
:func:`effect_marker` of it, and before posting the performer looks for that marker on
the thread, so a crash between the post and its recording never posts twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.refs import WorkItemRef

__all__ = [
    "PostComment",
    "AddLabel",
    "RemoveLabel",
    "Notify",
    "PublishGate",
    "PublishMergeGroup",
    "RequestReviews",
    "Effect",
    "EffectRow",
    "PENDING",
    "RUNNING",
    "DONE",
    "FAILED",
    "MAX_BODY",
    "effect_marker",
    "effect_to_json",
    "effect_from_json",
    "RECORD_CHECKLIST",
    "quiz_record",
]

#: Row statuses: waiting (maybe until ``not_before``), claimed by a performer, carried out,
#: given up (a permanent failure: visible in ``check`` and ``loopgate effects``).
PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"

#: GitHub's limit on a comment body, in characters (platform-facts A8): a longer body is
#: never sent.
MAX_BODY = 65_536

#: ``PostComment.record`` of the phase-selection checklist: ``surface.phaseSelection``.
RECORD_CHECKLIST = "phaseSelection"


def quiz_record(node: str) -> str:
    """``PostComment.record`` of a quiz comment: appended to
    ``surface.quiz[node].comments``."""
    return f"quiz:{node}"


def effect_marker(key: str) -> str:
    """The hidden marker a posted comment carries for its effect row: the performer looks
    for it before posting, so a retried row never posts twice."""
    return f"<!-- the-loop:effect {key} -->"


@dataclass(frozen=True)
class PostComment:
    """Post ``body`` on ``target``.

    Attributes:
        target: the issue or pull request.
        body: Markdown, markers included (at most :data:`MAX_BODY` characters; a longer
            one fails permanently without a request).
        record: where the posted comment is recorded in the item's surface: "" (nowhere),
            :data:`RECORD_CHECKLIST`, or :func:`quiz_record` of a node.
    """

    target: WorkItemRef
    body: str
    record: str = ""
    kind: str = field(default="post-comment", init=False)


@dataclass(frozen=True)
class AddLabel:
    """Add ``label`` to ``target`` (the others stay)."""

    target: WorkItemRef
    label: str
    kind: str = field(default="add-label", init=False)


@dataclass(frozen=True)
class RemoveLabel:
    """Remove ``label`` from ``target``; an absent label is not an error."""

    target: WorkItemRef
    label: str
    kind: str = field(default="remove-label", init=False)


@dataclass(frozen=True)
class Notify:
    """Send ``event`` with ``data`` through the notifier.

    Attributes:
        target: the work item the event is about.
        event: ``quiz-pending``, ``phase-approval-pending`` ...
        data: JSON-shaped event data.
        links: a :attr:`PostComment.record` this notice links to; the posted comments'
            URLs are filled in at perform time (they are posted by then, in order):
            ``data["url"]`` for :data:`RECORD_CHECKLIST`, ``data["commentUrls"]`` for a
            :func:`quiz_record`.
    """

    target: WorkItemRef
    event: str
    data: Mapping[str, Any]
    links: str = ""
    kind: str = field(default="notify", init=False)


@dataclass(frozen=True)
class PublishGate:
    """Publish the ``loopgate`` check for ``target`` on its delivering pull requests.

    Attributes:
        target: the work item.
        pulls: only these pull request numbers (a new head commit); empty = every open
            pull request delivering the item.
    """

    target: WorkItemRef
    pulls: tuple[int, ...] = ()
    kind: str = field(default="publish-gate", init=False)


@dataclass(frozen=True)
class PublishMergeGroup:
    """Report the ``loopgate`` check on a merge queue's group commit (issue 19 §4).

    Attributes:
        target: the pull request the group's ``head_ref`` names (``owner/repo#N``; no work
            item: the row is keyed by it).
        head_sha: ``merge_group.head_sha``: where the check goes.
        base_sha: ``merge_group.base_sha``: the group's commits are ``base_sha..head_sha``.
        head_ref: ``merge_group.head_ref`` (for the record).
    """

    target: WorkItemRef
    head_sha: str
    base_sha: str = ""
    head_ref: str = ""
    kind: str = field(default="publish-merge-group", init=False)


@dataclass(frozen=True)
class RequestReviews:
    """Request reviews on ``target``'s delivering pull requests (issue 24 §3).

    ``POST /repos/{owner}/{repo}/pulls/{n}/requested_reviewers`` per pull request; the
    people and teams were chosen when the gate opened (:func:`engine.reviewers.plan`).

    Attributes:
        target: the work item.
        node: the approval gate whose visit asks.
        visit: that gate's visit number (a new visit asks again; this one asks once).
        pulls: the open delivering pull request numbers.
        reviewers: logins (no ``@``), at most the configured cap together with ``teams``.
        teams: team slugs of the repository's organization (no ``org/``).
    """

    target: WorkItemRef
    node: str
    visit: int
    pulls: tuple[int, ...]
    reviewers: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    kind: str = field(default="request-reviews", init=False)


Effect = (PostComment | AddLabel | RemoveLabel | Notify | PublishGate | PublishMergeGroup
          | RequestReviews)


@dataclass(frozen=True)
class EffectRow:
    """One stored effect.

    Attributes:
        id: the row id (order of emission across the store).
        key: random, unique: the idempotency key (:func:`effect_marker`).
        ref: the work item whose transaction emitted it.
        effect: the effect.
        status: :data:`PENDING` | :data:`RUNNING` | :data:`DONE` | :data:`FAILED`.
        attempts: how many times a performer tried it.
        not_before: ISO-8601 UTC; a pending row is not tried before then ("" = now).
        last_error: the last failure, for people ("" when none).
        result: what the performer recorded (a posted comment's ``{id, url, target}``).
        created_at: when it was committed (ISO-8601 UTC).
    """

    id: int
    key: str
    ref: WorkItemRef
    effect: Effect
    status: str = PENDING
    attempts: int = 0
    not_before: str = ""
    last_error: str = ""
    result: Mapping[str, Any] = field(default_factory=dict)
    created_at: str = ""

    def describe(self) -> str:
        """One line for people: ``post-comment (quiz spec-quiz) on acme/widgets#7``,
        ``add-label 'loop:design' on …``, ``notify quiz-pending on …``."""
        effect = self.effect
        what = effect.kind
        if isinstance(effect, PostComment):
            what += f" ({_comment_kind(effect.body)})"
        if isinstance(effect, AddLabel | RemoveLabel):
            what += f" {effect.label!r}"
        if isinstance(effect, Notify):
            what += f" {effect.event}"
        if isinstance(effect, PublishGate) and effect.pulls:
            what += " (pull " + ", ".join(f"#{n}" for n in effect.pulls) + ")"
        if isinstance(effect, PublishMergeGroup):
            what += f" (group {effect.head_sha[:7]})"
        if isinstance(effect, RequestReviews):
            what += f" {effect.node} (visit {effect.visit})"
        return f"{what} on {effect.target}"


_MARKER = re.compile(r"<!-- the-loop:([a-z-]+)((?: [a-z0-9][a-z0-9-]*)?)")
# Markers that ride along on every kind of comment and say nothing of its kind.
_RIDERS = {"agent-comment", "entry", "effect"}


def _comment_kind(body: str) -> str:
    """The comment's kind from its loopgate marker (``quiz spec-quiz``, ``phase-selection``,
    ``assignment design`` …), or ``comment``."""
    for name, arg in _MARKER.findall(body or ""):
        if name not in _RIDERS:
            return f"{name}{arg}"
    return "comment"


def effect_to_json(effect: Effect) -> dict[str, Any]:
    """The JSON document of ``effect`` (``kind`` plus its fields; ``target`` as text)."""
    doc: dict[str, Any] = {"kind": effect.kind, "target": str(effect.target)}
    if isinstance(effect, PostComment):
        doc.update(body=effect.body, record=effect.record)
    elif isinstance(effect, AddLabel | RemoveLabel):
        doc["label"] = effect.label
    elif isinstance(effect, PublishGate):
        doc["pulls"] = list(effect.pulls)
    elif isinstance(effect, PublishMergeGroup):
        doc.update(headSha=effect.head_sha, baseSha=effect.base_sha, headRef=effect.head_ref)
    elif isinstance(effect, RequestReviews):
        doc.update(node=effect.node, visit=effect.visit, pulls=list(effect.pulls),
                   reviewers=list(effect.reviewers), teamReviewers=list(effect.teams))
    else:
        doc.update(event=effect.event, data=dict(effect.data), links=effect.links)
    return doc


def effect_from_json(doc: Mapping[str, Any]) -> Effect:
    """Read back :func:`effect_to_json`.

    Raises:
        ValueError: an unknown kind or a malformed target.
    """
    kind = str(doc.get("kind") or "")
    target = WorkItemRef.parse(str(doc.get("target") or ""))
    if kind == "post-comment":
        return PostComment(target, str(doc.get("body") or ""), str(doc.get("record") or ""))
    if kind == "add-label":
        return AddLabel(target, str(doc.get("label") or ""))
    if kind == "remove-label":
        return RemoveLabel(target, str(doc.get("label") or ""))
    if kind == "publish-gate":
        return PublishGate(target, tuple(int(n) for n in doc.get("pulls") or ()))
    if kind == "publish-merge-group":
        return PublishMergeGroup(target, str(doc.get("headSha") or ""),
                                 str(doc.get("baseSha") or ""), str(doc.get("headRef") or ""))
    if kind == "request-reviews":
        return RequestReviews(target, str(doc.get("node") or ""), int(doc.get("visit") or 1),
                              tuple(int(n) for n in doc.get("pulls") or ()),
                              tuple(str(r) for r in doc.get("reviewers") or ()),
                              tuple(str(t) for t in doc.get("teamReviewers") or ()))
    if kind == "notify":
        return Notify(target, str(doc.get("event") or ""), dict(doc.get("data") or {}),
                      str(doc.get("links") or ""))
    raise ValueError(f"unknown effect kind {kind!r}")
