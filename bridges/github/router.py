"""Route webhook deliveries by ``event.action`` to the dispatcher's kinds.

The routed kinds (the ``event`` of a routed :class:`~bridges.ingress.delivery.Delivery`):

* ``comment`` — a new human comment (``issue_comment.created``);
* ``quiz_attestation`` — loopgate's quiz comment with its box ticked (explainer design C5):
  an ``issue_comment.edited`` whose body carries ``<!-- the-loop:quiz`` and a ticked
  attestation line is rewritten to this kind *before* the self-reply guard. It carries only
  the comment id and url: attribution always comes from GraphQL, never from ``sender``;
* ``start`` — the configured start label was added (``issues.labeled``);
* ``checklist_edited`` — loopgate's own phase-selection checklist was edited (a row ticked
  or unticked on GitHub): the Slack card is redrawn to match (issue 14 §15). Carries the
  comment; the dispatcher acts only on the checklist the item recorded.
* ``pull_request_head`` — a pull request got a head commit (``pull_request.opened`` /
  ``synchronize`` / ``reopened``, and ``edited``, which can link it to an item): the
  ``loopgate`` check of the items it delivers is
  published on it again (issue 11 §1); a head the vouching gates did not cover sends its
  items back (issue 19 §3).
* ``merge_group`` — a merge queue asks for the required checks on a group's commit
  (``merge_group.checks_requested``; issue 19 §4, platform-facts F1): ``ref`` is the pull
  request its ``head_ref`` names, ``head_sha``/``base_sha``/``head_ref`` as sent.
  ``merge_group.destroyed`` is dropped quietly (``merge-group-destroyed``).

Everything else is :class:`Dropped` with a kebab-case reason the caller logs.
The same helpers (:func:`is_quiz_tick`, :func:`quiz_key`, :func:`comment_from_rest`) are
used by the poller so both ingresses produce identical keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bridges.github.webhook import Delivery
from bridges.ingress.kinds import (
    CHECKLIST_EDITED,
    COMMENT,
    MERGE_GROUP,
    PULL_REQUEST_HEAD,
    QUIZ_ATTESTATION,
    QUIZ_MARKER,
    START,
    Dropped,
    as_actor,
    body_hash,
    checklist_key,
    classify_comment,
    comment_key,
    head_key,
    is_quiz_tick,
    is_self_authored,
    merge_group_key,
    quiz_key,
    start_key,
)
from engine.identity import Actor
from engine.mergegate import queue_pulls
from engine.ports import Comment
from engine.refs import WorkItemRef

__all__ = [
    "COMMENT",
    "QUIZ_ATTESTATION",
    "START",
    "CHECKLIST_EDITED",
    "PULL_REQUEST_HEAD",
    "MERGE_GROUP",
    "merge_group_key",
    "head_key",
    "QUIZ_MARKER",
    "Dropped",
    "RouterConfig",
    "route",
    "is_quiz_tick",
    "quiz_key",
    "body_hash",
    "comment_key",
    "edited_key",
    "checklist_key",
    "start_key",
    "comment_from_rest",
    "is_self_authored",
    "as_actor",
    "classify_comment",
    "previous_body",
]

@dataclass(frozen=True)
class RouterConfig:
    """What routing needs from loopgate.yaml.

    Attributes:
        repos: watched repositories as ``owner/repo`` (compared case-insensitively).
        start_label: the label whose addition starts a work item.
        bot: loopgate's own identity (``Actor("")`` if unknown); its comments count as
            self-authored even without the marker.
    """

    repos: frozenset[str]
    start_label: str = "loop:start"
    bot: Actor = Actor("")

    @classmethod
    def build(cls, repos: Iterable[str], start_label: str,
              bot_login: Actor | str = "") -> RouterConfig:
        """Normalise ``repos`` to lower case; ``bot_login`` is loopgate's
        :class:`~engine.identity.Actor` or a login (``name[bot]`` for an App)."""
        return cls(frozenset(r.lower() for r in repos), start_label, as_actor(bot_login))

    def watches(self, full_name: str) -> bool:
        """True when ``owner/repo`` is configured."""
        return full_name.lower() in self.repos


def comment_from_rest(raw: Mapping[str, Any], issue_number: int = 0, *,
                      as_read: bool = True) -> Comment:
    """Build a :class:`Comment` from a REST or webhook ``comment`` object.

    Args:
        raw: the comment JSON (``id``, ``node_id``, ``user.login``, ``body``, ...).
        issue_number: the issue/PR number when known; otherwise read from ``issue_url``.
        as_read: the body is the comment as GitHub holds it now, which someone else may
            have edited (:attr:`Comment.as_read`, issue 19 §1): True unless the object is
            an ``issue_comment.created`` payload, whose body is the author's as created.
    """
    author = Actor.from_rest(raw.get("user"))
    number = issue_number or _number_from_url(str(raw.get("issue_url") or ""))
    return Comment(
        id=int(raw["id"]),
        author=author.login,
        body=str(raw.get("body") or ""),
        created_at=str(raw.get("created_at") or ""),
        updated_at=str(raw.get("updated_at") or ""),
        node_id=str(raw.get("node_id") or ""),
        url=str(raw.get("html_url") or ""),
        issue_number=number,
        author_type=author.kind,
        author_id=author.id,
        as_read=as_read,
    )


def _number_from_url(url: str) -> int:
    tail = url.rstrip("/").rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _ref(payload: Mapping[str, Any]) -> WorkItemRef | None:
    repo = payload.get("repository") or {}
    issue = payload.get("issue") or {}
    full = str(repo.get("full_name") or "")
    if "/" not in full or not isinstance(issue.get("number"), int):
        return None
    owner, name = full.split("/", 1)
    return WorkItemRef(owner, name, issue["number"])


def _routed(delivery: Delivery, kind: str, **data: Any) -> Delivery:
    return Delivery(delivery.delivery_id, delivery.source, kind, delivery.route_key, data)


def _comment_created(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    payload = delivery.data
    ref = _ref(payload)
    # A created payload holds the body as its author wrote it (issue 19 §1).
    comment = comment_from_rest(payload.get("comment") or {}, ref.number if ref else 0,
                                as_read=False)
    kind = classify_comment(comment, cfg.bot, edited=False)
    if isinstance(kind, Dropped):
        return kind
    is_pr = bool((payload.get("issue") or {}).get("pull_request"))
    return _routed(delivery, COMMENT, ref=ref, comment=comment, key=comment_key(comment.id),
                   pull_request=is_pr)


def _comment_edited(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    payload = delivery.data
    ref = _ref(payload)
    comment = comment_from_rest(payload.get("comment") or {}, ref.number if ref else 0)
    kind = classify_comment(comment, cfg.bot, edited=True,
                            previous_body=previous_body(payload))
    is_pr = bool((payload.get("issue") or {}).get("pull_request"))
    if kind == Dropped("human-edit-ignored"):
        return _edited_by_other(delivery, ref, comment, is_pr) or kind
    if isinstance(kind, Dropped):
        return kind
    if kind == CHECKLIST_EDITED:
        return _routed(delivery, CHECKLIST_EDITED, ref=ref, comment=comment,
                       key=checklist_key(comment.id, comment.body), pull_request=is_pr)
    return _routed(delivery, QUIZ_ATTESTATION, ref=ref, comment_id=comment.id,
                   node_id=comment.node_id, url=comment.url,
                   key=quiz_key(comment.id, comment.body, comment.updated_at),
                   pull_request=is_pr)


def edited_key(comment_id: int, body: str) -> str:
    """The de-duplication key of a person's comment edited by someone else:
    ``edited:<id>:<sha256(body)[:16]>``."""
    return f"edited:{comment_id}:{body_hash(body)}"


def _edited_by_other(delivery: Delivery, ref: WorkItemRef | None, comment: Comment,
                     is_pr: bool) -> Delivery | None:
    """A person's comment edited by someone other than its author (the payload's ``sender``
    is not the comment's ``user``, platform-facts A5/B6): routed as a ``comment`` carrying
    :attr:`Comment.edited_by`, so the gate names why it does not count (issue 19 §1).
    None for the author's own edit (still ignored, as before)."""
    sender = Actor.from_rest(delivery.data.get("sender"))
    if sender.same_as(comment.actor) and sender.known:
        return None
    edited = replace(comment, as_read=False, edited_by=sender)
    return _routed(delivery, COMMENT, ref=ref, comment=edited,
                   key=edited_key(comment.id, comment.body), pull_request=is_pr)


def previous_body(payload: Mapping[str, Any]) -> str | None:
    """An ``issue_comment.edited`` payload's ``changes.body.from``.

    Args:
        payload: the webhook payload.

    Returns:
        The body before the edit, or None when the payload does not say (no ``changes``,
        or a non-string ``from``).
    """
    changes = payload.get("changes")
    body = changes.get("body") if isinstance(changes, Mapping) else None
    before = body.get("from") if isinstance(body, Mapping) else None
    return before if isinstance(before, str) else None


def _comment_deleted(delivery: Delivery, cfg: RouterConfig) -> Dropped:
    comment = comment_from_rest((delivery.data.get("comment") or {}) | {"id": 0})
    own = is_self_authored(comment, cfg.bot)
    return Dropped("self-authored-deleted" if own else "comment-deleted")


def _issue_labeled(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    payload = delivery.data
    label = str((payload.get("label") or {}).get("name") or "")
    if label != cfg.start_label:
        return Dropped("not-start-label")
    if (payload.get("issue") or {}).get("pull_request"):
        return Dropped("pull-request")
    ref = _ref(payload)
    sender = str((payload.get("sender") or {}).get("login") or "")
    if ref is None:
        return Dropped("no-issue")
    return _routed(delivery, START, ref=ref, key=start_key(ref), by=sender)


def _pull_request_head(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    payload = delivery.data
    pull = payload.get("pull_request") or {}
    full = str((payload.get("repository") or {}).get("full_name") or "")
    number = payload.get("number", pull.get("number"))
    sha = str((pull.get("head") or {}).get("sha") or "")
    if "/" not in full or not isinstance(number, int) or not sha:
        return Dropped("no-pull-request")
    owner, name = full.split("/", 1)
    ref = WorkItemRef(owner, name, number)
    return _routed(delivery, PULL_REQUEST_HEAD, ref=ref, head_sha=sha,
                   key=head_key(ref, sha), pull_request=True)


def _pull_request_edited(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    # Issue 19 §3: an edited body can start delivering an item ("Closes #7" added after
    # the gate passed): the same head, so the key names the body too, and the tracker's
    # cached items of the pull request are read afresh.
    routed = _pull_request_head(delivery, cfg)
    if isinstance(routed, Dropped):
        return routed
    body = str((delivery.data.get("pull_request") or {}).get("body") or "")
    return _routed(delivery, PULL_REQUEST_HEAD, **{**routed.data, "fresh": True,
                                                   "key": f"{routed.data['key']}:body:"
                                                          f"{body_hash(body)}"})


def _merge_group(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    # Issue 19 §4: OpenAPI WebhookMergeGroupChecksRequested: merge_group {head_sha,
    # head_ref, base_sha, base_ref, head_commit}; the check goes on head_sha.
    payload = delivery.data
    group = payload.get("merge_group") or {}
    full = str((payload.get("repository") or {}).get("full_name") or "")
    sha = str(group.get("head_sha") or "")
    head_ref = str(group.get("head_ref") or "")
    numbers = queue_pulls(head_ref)
    if "/" not in full or not _SHA.match(sha) or not numbers:
        return Dropped("no-merge-group")
    owner, name = full.split("/", 1)
    return _routed(delivery, MERGE_GROUP, ref=WorkItemRef(owner, name, numbers[0]),
                   head_sha=sha, base_sha=str(group.get("base_sha") or ""),
                   head_ref=head_ref, key=merge_group_key(full, sha))


def _merge_group_destroyed(delivery: Delivery, cfg: RouterConfig) -> Dropped:
    # merged | dequeued | invalidated: nothing to report (platform-facts F1).
    return Dropped("merge-group-destroyed")


_SHA = re.compile(r"^[0-9a-f]{40}$")

_Handler = Callable[[Delivery, RouterConfig], "Delivery | Dropped"]

#: Handlers keyed by ``event.action`` (gidgethub/probot style).
ROUTES: Mapping[str, _Handler] = {
    "issue_comment.created": _comment_created,
    "issue_comment.edited": _comment_edited,
    "issue_comment.deleted": _comment_deleted,
    "issues.labeled": _issue_labeled,
    "pull_request.opened": _pull_request_head,
    "pull_request.synchronize": _pull_request_head,
    "pull_request.reopened": _pull_request_head,
    "pull_request.edited": _pull_request_edited,
    "merge_group.checks_requested": _merge_group,
    "merge_group.destroyed": _merge_group_destroyed,
}


def route(delivery: Delivery, cfg: RouterConfig) -> Delivery | Dropped:
    """Map a parsed webhook delivery to a routed delivery, or say why it is dropped.

    Args:
        delivery: from :func:`bridges.github.webhook.parse_delivery`.
        cfg: watched repositories, start label, bot login.

    Returns:
        A routed :class:`Delivery` (``event`` = ``comment`` | ``quiz_attestation`` |
        ``start``; ``data`` holds ``ref`` and ``key``), or :class:`Dropped`.
    """
    if delivery.event == "ping":
        return Dropped("ping")
    handler = ROUTES.get(delivery.route_key)
    if handler is None:
        return Dropped("unhandled-event")
    full = str((delivery.data.get("repository") or {}).get("full_name") or "")
    if not cfg.watches(full):
        return Dropped("not-watched")
    routed = handler(delivery, cfg)
    if isinstance(routed, Delivery) and routed.data.get("ref") is None:
        return Dropped("no-issue")
    return routed
