"""The Confirm button of an operator request (issue 19 §5).

The click is acked at once (platform facts C1); then it becomes a typed
:class:`engine.events.Confirmation` by the clicker's linked GitHub login (``via: slack``)
handed to ``Runtime.advance`` (issue 20 §1) — so the runtime's one rule authorizes it, as
it does a ``the-loop confirm <id>`` reply (each gate's approvers, teams,
``preventSelfApproval``), and records who confirmed and how. An
unlinked clicker, an unknown or settled request and a refused confirmation each get one
ephemeral line; a confirmation rewrites the message read-only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bot.slack.approval_clicks import VIA
from bot.slack.blocks.escaping import slack_text
from bot.slack.blocks.operator_blocks import does, operator_confirmed_message, parse_request_value
from bot.slack.click_lock import item_lock
from bot.slack.slack_identity import resolve_login
from engine import events as ev
from engine import operator
from engine.refs import WorkItemRef
from engine.settings import normalize_login

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["on_operator_confirm", "confirm"]

log = logging.getLogger(__name__)


def _where(body: Mapping[str, Any]) -> tuple[str, str, str, str]:
    container = body.get("container") or {}
    message = body.get("message") or {}
    user = str((body.get("user") or {}).get("id") or "")
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    ts = str(message.get("ts") or container.get("message_ts") or "")
    action: dict[str, Any] = next(iter(body.get("actions") or ()), {}) or {}
    return user, channel, ts, str(action.get("value") or "")


def confirm(services: Services, ref: WorkItemRef, request_id: str,
            slack_user: str) -> tuple[str, str, dict[str, Any]]:
    """Feed a Confirm click to the runtime as the clicker's linked login.

    Returns:
        ``(code, message, request)``: ``confirmed`` (message ""), ``not-linked``,
        ``unknown-request`` (none pending with that id) or ``refused`` (the runtime's
        reason); ``request`` is the stored document after the click ({} when unknown).
    """
    login = resolve_login(services, slack_user) or ""
    if not login:
        return ("not-linked", "Your Slack account is not linked to a GitHub login, so "
                "nothing was confirmed. Run `/loop link <github-login>` first.", {})
    with item_lock(ref):
        state = services.store.load(ref)
        if state is None or request_id not in operator.pending_requests(state):
            return ("unknown-request", f"Operator request {request_id} on {ref} is not "
                    "pending (already confirmed, or unknown); nothing changed.", {})
        after = services.runtime.advance(ref, ev.Confirmation(request_id, login, VIA)).state
    request = dict((after.surface.get(operator.SURFACE_KEY) or {}).get(request_id) or {})
    confirmed = request.get("confirmed") or {}
    if request.get("status") == operator.CONFIRMED and \
            normalize_login(str(confirmed.get("by") or "")) == normalize_login(login):
        log.info("%s operator request %s confirmed from Slack by @%s (%s)", ref, request_id,
                 login, slack_user)
        return "confirmed", "", request
    said = [r for r in request.get("refused") or () if r.get("by") == normalize_login(login)]
    reason = str(said[-1].get("reason")) if said else "it was not counted"
    return ("refused", f"@{login} cannot confirm operator request {request_id} "
            f"({does(request)}): {reason}. Nothing changed.", request)


def on_operator_confirm(ack: Callable[..., Any], body: dict[str, Any], client: Any,
                        context: Mapping[str, Any]) -> None:
    """Bolt listener of **Confirm**: ack, then confirm (see :func:`confirm`)."""
    ack()
    user, channel, ts, value = _where(body)
    try:
        ref, request_id = parse_request_value(value)
    except ValueError:
        client.chat_postEphemeral(channel=channel, user=user, text=slack_text(
            "This button names no operator request; nothing changed."))
        return
    code, message, request = confirm(context["services"], ref, request_id, user)
    if code == "confirmed" and channel and ts:
        text, blocks = operator_confirmed_message(ref, request)
        client.chat_update(channel=channel, ts=ts, text=slack_text(text),
                           blocks=[b.to_dict() for b in blocks])
        return
    client.chat_postEphemeral(channel=channel, user=user, text=slack_text(message))
