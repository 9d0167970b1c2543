"""Slack user → GitHub login (issue 4 §2).

Two sources, in this order: ``slack.identities`` in loopgate.yaml, then self-service links
stored in SQLite. A self-service link cannot be forged from Slack alone: ``/loop link
<github-login>`` hands out a one-time code bound to that login, and the link holds only
once *that* GitHub user comments ``loopgate link <code>`` on an issue of a configured
repository within 15 minutes (seen by the poller or the webhook, which call
:func:`confirm_link_from_comment` for every human comment through
``dispatcher.comment_observers``). Authorization is always decided on the GitHub login
against ``authorizedUsers``, never on the Slack identity.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.slack.slack_schema import iso
from bot.slack.slack_tables import (
    issue_link_code,
    linked_login,
    linked_users,
    redeem_link_code,
    remove_link,
)
from engine.authorship import LINK_LINE, has_link_code, needs_check, screen
from engine.ports import Comment
from engine.refs import WorkItemRef
from engine.settings import normalize_login

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = [
    "LINK_TTL",
    "LinkCode",
    "LinkError",
    "valid_login",
    "create_link_code",
    "confirm_link_from_comment",
    "comment_observer",
    "resolve_login",
    "slack_users_for_login",
    "unlink",
]

log = logging.getLogger(__name__)

#: How long a link code stays valid (issue 4 §2).
LINK_TTL = timedelta(minutes=15)
# No 0/O/1/I: the code is read from Slack and typed into GitHub.
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_CODE_LENGTH = 10
_LINK_LINE = LINK_LINE  # one reading of link codes with the engine's authorship rule
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")


class LinkError(ValueError):
    """A link request was refused; the message says why in one sentence."""


@dataclass(frozen=True)
class LinkCode:
    """A one-time link code.

    Attributes:
        code: the code to comment (``loopgate link <code>``).
        github_login: the login the code is bound to.
        expires_at: ISO-8601 UTC expiry.
    """

    code: str
    github_login: str
    expires_at: str


def valid_login(login: str) -> bool:
    """True for a syntactically valid GitHub login (a leading ``@`` is allowed)."""
    return bool(_LOGIN.match((login or "").strip().lstrip("@")))


def _now(services: Services) -> datetime:
    return services.ports.clock.now()


def create_link_code(services: Services, slack_user_id: str, github_login: str) -> LinkCode:
    """Issue a one-time code linking ``slack_user_id`` to ``github_login`` once confirmed.

    Earlier unused codes of the same Slack user are withdrawn.

    Args:
        services: the wired services (store, clock).
        slack_user_id: the Slack user asking (``U…``).
        github_login: the GitHub login to link.

    Returns:
        The code and its expiry.

    Raises:
        LinkError: the login is not a valid GitHub login, or the Slack user id is empty.
    """
    if not slack_user_id:
        raise LinkError("the Slack user is unknown")
    if not valid_login(github_login):
        raise LinkError(f"{github_login!r} is not a GitHub login")
    login = normalize_login(github_login)
    code = "".join(secrets.choice(_ALPHABET) for _ in range(_CODE_LENGTH))
    now = _now(services)
    expires = iso(now + LINK_TTL)
    issue_link_code(services.store, code, slack_user_id, login, created_at=iso(now),
                    expires_at=expires)
    return LinkCode(code, login, expires)


def _configured_repo(services: Services, ref: WorkItemRef) -> bool:
    repos = [r.lower() for r in services.config.section("github").get("repos") or ()]
    return not repos or ref.repo_full_name.lower() in repos


def confirm_link_from_comment(services: Services, ref: WorkItemRef, comment: Comment) -> str | None:
    """Complete a link when ``comment`` is ``loopgate link <code>`` by the code's login.

    Called by the GitHub dispatcher for each human comment. Refused (None, logged) when
    the comment is self-authored, the repository is not configured, the code is unknown,
    used or expired, or the author is not the login the code was issued for — and when
    the code is not the author's own words: GitHub shows someone else edited the comment,
    or could not tell (issue 19 §1, :func:`engine.authorship.screen`; the person posts the
    code again).

    Args:
        services: the wired services.
        ref: the issue the comment is on.
        comment: the comment as the tracker holds it.

    Returns:
        The Slack user id now linked, or None.
    """
    match = _LINK_LINE.search(comment.body or "")
    if match is None or comment.self_authored:
        return None
    if not _configured_repo(services, ref):
        log.info("link code on %s ignored: not a configured repository", ref)
        return None
    if not _own_words(services, ref, comment):
        return None
    code = match["code"].upper()
    author = normalize_login(comment.author)
    now = iso(_now(services))
    linked = redeem_link_code(services.store, code, now=now,
                              via=f"comment {comment.id} on {ref}",
                              refuse=lambda row: _refusal(row, author, now))
    if isinstance(linked, str):
        log.info("link code on %s by @%s refused: %s", ref, author or "unknown", linked)
        return None
    slack_user, login = linked
    log.info("slack user %s linked to @%s (comment %s on %s)", slack_user, login, comment.id, ref)
    return slack_user


def _own_words(services: Services, ref: WorkItemRef, comment: Comment) -> bool:
    """True when the link code counts as the comment author's (issue 19 §1); otherwise one
    structured log line says why."""
    if not needs_check(comment):  # the author's words as created (a webhook, offline)
        return True
    result = screen([comment], services.ports.tracker, matters=has_link_code)
    if result.counted:
        return True
    reason = (result.not_counted[0].reason if result.not_counted
              else f"{result.unverified}; post the code again")
    log.warning("link code on %s by @%s refused: %s", ref, comment.author or "unknown", reason,
                extra={"event": "slack.link_refused", "item": str(ref),
                       "commentId": comment.id, "reason": reason})
    return False


def _refusal(row: Any, author: str, now: str) -> str:
    if row is None:
        return "unknown code"
    _user, login, expires_at, used_at = row
    if used_at:
        return "code already used"
    if now > expires_at:
        return "code expired"
    if not author or author != login:
        return f"code was issued for @{login}"
    return ""


def comment_observer(services: Services) -> Callable[[WorkItemRef, Comment], None]:
    """``(ref, comment) -> None`` for ``dispatcher.comment_observers`` (never raises)."""

    def observe(ref: WorkItemRef, comment: Comment) -> None:
        try:
            confirm_link_from_comment(services, ref, comment)
        except Exception:  # noqa: BLE001 - an observer must not break comment dispatch
            log.exception("link confirmation failed on %s", ref)

    return observe


def _identities(services: Services) -> dict[str, str]:
    return dict(services.config.section("slack").get("identities") or {})


def resolve_login(services: Services, slack_user_id: str) -> str | None:
    """The GitHub login of ``slack_user_id``: ``slack.identities`` first, then a confirmed
    link; None when neither knows the user."""
    configured = _identities(services).get(slack_user_id)
    if configured:
        return normalize_login(configured)
    return linked_login(services.store, slack_user_id)


def slack_users_for_login(services: Services, login: str) -> list[str]:
    """Every Slack user id mapped to GitHub ``login`` (config and links), sorted."""
    name = normalize_login(login)
    if not name:
        return []
    users = {u for u, lg in _identities(services).items() if normalize_login(lg) == name}
    users.update(linked_users(services.store, name))
    return sorted(users)


def unlink(services: Services, slack_user_id: str) -> bool:
    """Remove ``slack_user_id``'s stored link and pending codes.

    Returns:
        True when a stored link was removed (a ``slack.identities`` entry in loopgate.yaml
        is configuration and stays).
    """
    return remove_link(services.store, slack_user_id)
