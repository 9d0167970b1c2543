"""Requests from another Slack workspace or app are ignored (issue 19 §6).

A signature (HTTP) or the Socket Mode connection proves a request comes from Slack for an
app holding our secret, not that it comes from *our* workspace and *our* app: an app
installed in a second workspace, or an org-wide install, delivers that workspace's clicks
and commands too. With ``slack.teamId`` and ``slack.appId`` set, a Bolt global middleware
compares the payload's workspace (Bolt's ``context.team_id``, read from ``team.id``,
``team_id``, ``authorizations[0].team_id``, ``user.team_id`` or
``view.app_installed_team_id`` as the payload kind has it) and its ``api_app_id`` (every
Events API, interactivity and slash-command payload carries one: Slack's payload
references, platform facts C9) with them. A mismatch is logged once (``slack.foreign_request``)
and acknowledged without running any listener; a slash command, the one kind whose ack
Slack shows, gets one ephemeral line. HTTP and Socket Mode run the same middleware.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from slack_bolt import BoltContext, BoltResponse

from bot.slack.blocks.escaping import slack_text

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["origin_middleware", "FOREIGN_REPLY", "mismatch"]

log = logging.getLogger(__name__)

#: The ephemeral a slash command from another workspace or app gets.
FOREIGN_REPLY = ("This loopgate serves another Slack workspace: nothing was done. "
                 "Ask your workspace's admin for its own loopgate.")


def mismatch(expected_team: str, expected_app: str, team: str | None,
             app: str | None) -> str:
    """Why a request is not ours ("" when it is): ``team_id T… is not slack.teamId`` or
    ``api_app_id A… is not slack.appId``. An unset expectation is not checked; a payload
    that names no team or app while one is expected does not match (fail closed)."""
    if expected_team and (team or "") != expected_team:
        return f"team_id {team or '(none)'} is not slack.teamId"
    if expected_app and (app or "") != expected_app:
        return f"api_app_id {app or '(none)'} is not slack.appId"
    return ""


def origin_middleware(services: Services) -> Callable[..., Any]:
    """The Bolt global middleware checking ``slack.teamId`` / ``slack.appId`` of
    ``services.config`` (read per request; both unset = every request passes).

    Returns:
        A function Bolt calls as ``(body, context, next)``: it calls ``next()`` for our
        workspace and app, else returns the ack itself (a 200; for a slash command with
        an ephemeral text) so no listener runs.
    """
    def check(body: Mapping[str, Any], context: BoltContext,
              next: Callable[[], Any]) -> Any:  # noqa: A002 - Bolt's name
        slack = services.config.section("slack")
        team, app = str(slack.get("teamId") or ""), str(slack.get("appId") or "")
        if not team and not app:
            return next()
        why = mismatch(team, app, context.team_id, _app_id(body))
        if not why:
            return next()
        kind = _kind(body)
        log.warning("slack request from another workspace or app ignored: %s (%s)", why, kind,
                    extra={"event": "slack.foreign_request", "kind": kind})
        if kind == "slash_command":
            return BoltResponse(status=200, body={"response_type": "ephemeral",
                                                  "text": slack_text(FOREIGN_REPLY)})
        return BoltResponse(status=200, body="")

    return check


def _app_id(body: Mapping[str, Any]) -> str | None:
    value = body.get("api_app_id")
    if value is None and isinstance(body.get("view"), Mapping):
        value = body["view"].get("app_id")
    return str(value) if value else None


def _kind(body: Mapping[str, Any]) -> str:
    if "command" in body:
        return "slash_command"
    return str(body.get("type") or "unknown")
