"""The approval gates' buttons (issue 12 §1).

**Approve** feeds the gate at once; **Approve with comments** and **Request changes** open
a modal for the text (its submission is :mod:`bot.slack.listeners.views.decision`). Every
listener acks first. A click that cannot go on — a value that does not parse, an unknown
item, a gate that moved (outdated message), an unlinked or unauthorized clicker — gets an
ephemeral sentence and one log line, and nothing changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from bot.slack.approval_clicks import Decided, check_gate, decide, gate_decision, gate_visit
from bot.slack.blocks import ids
from bot.slack.blocks.approval import GateRef, approval_done_message, decision_modal
from bot.slack.blocks.escaping import slack_text
from bot.slack.home_tab import refresh_homes
from bot.slack.slack_tables import approval_message_revision, mark_approval_message_done
from engine.checksummary import details_page

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["on_approve", "on_open_modal", "parse_gate_click", "finish", "rewrite_message",
           "MODAL_OUTCOMES"]

log = logging.getLogger(__name__)

#: Button action id -> the outcome whose modal it opens.
MODAL_OUTCOMES = {ids.ACTION_APPROVE_COMMENTS: "approved-with-comments",
                  ids.ACTION_REQUEST_CHANGES: "changes-requested"}


def _where(body: Mapping[str, Any]) -> tuple[str, str, str]:
    container = body.get("container") or {}
    message = body.get("message") or {}
    user = str((body.get("user") or {}).get("id") or "")
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    ts = str(message.get("ts") or container.get("message_ts") or "")
    return user, channel, ts


def parse_gate_click(body: Mapping[str, Any]) -> GateRef:
    """The gate visit a button click names.

    Raises:
        ValueError: the button's value does not parse.
    """
    action: dict[str, Any] = next(iter(body.get("actions") or ()), {}) or {}
    return GateRef.parse(str(action.get("value") or ""))


def _ephemeral(client: Any, channel: str, user: str, text: str) -> None:
    client.chat_postEphemeral(channel=channel, user=user, text=slack_text(text))


def _clicked_gate(body: dict[str, Any], client: Any, channel: str, user: str) -> GateRef | None:
    # The click's gate, or None after telling the clicker the button could not be read.
    try:
        return parse_gate_click(body)
    except ValueError as exc:
        log.warning("approval click refused: %s", exc)
        _ephemeral(client, channel, user, "This button names no gate loopgate can read; "
                   "nothing changed.")
        return None


def on_approve(ack: Callable[..., Any], body: dict[str, Any], client: Any,
               context: Mapping[str, Any]) -> None:
    """Bolt listener of **Approve**: ack, then decide ``approved``."""
    ack()
    user, channel, ts = _where(body)
    gate = _clicked_gate(body, client, channel, user)
    if gate is None:
        return
    finish(context["services"], client, gate, user, "approved", "", channel, ts)


def finish(services: Services, client: Any, gate: GateRef, user: str, outcome: str, text: str,
           channel: str, ts: str) -> Decided:
    """Decide, then rewrite the message (decided or outdated) or tell the clicker why not.

    Returns:
        The :class:`~bot.slack.approval_clicks.Decided` result.
    """
    result = decide(services, gate, user, outcome, text)
    if result.code in ("decided", "already-decided", "outdated") and channel and ts:
        rewrite_message(services, client, gate, channel, ts)
    if result.code != "decided":
        _ephemeral(client, channel, user, result.message)
    if result.code in ("decided", "waiting"):
        # The item moved, or it no longer waits on the clicker whose approval now counts
        # (issue 12 §3 with issue 11 §2's counts).
        # Best-effort: the decision is recorded whatever a Home tab does.
        refresh_homes(services, client, gate.ref)
    return result


def rewrite_message(services: Services, client: Any, gate: GateRef, channel: str, ts: str) -> None:
    """Rewrite the gate's message read-only with the recorded outcome (fresh revision)."""
    state = services.store.load(gate.ref)
    if state is None:
        return
    recorded = approval_message_revision(services.store, gate.ref, gate.node, channel, ts)
    revision = (recorded or 0) + 1
    decision = gate_decision(state, gate)  # the visit the message was for (issue 19 §2)
    url = _item_url(services, gate)
    visit = gate_visit(state, gate)
    text, blocks = approval_done_message(gate, decision, item_url=url, revision=revision,
                                         moved_to=state.current_node,
                                         visit=visit.number if visit is not None else 0,
                                         page_url=details_page(services.settings.public_url,
                                                               gate.ref))
    client.chat_update(channel=channel, ts=ts, text=slack_text(text),
                       blocks=[b.to_dict() for b in blocks])
    if recorded is not None:
        mark_approval_message_done(services.store, gate.ref, gate.node, channel, ts,
                                   revision=revision, gate=gate.value())


def _item_url(services: Services, gate: GateRef) -> str:
    try:
        return services.ports.tracker.issue_info(gate.ref).url
    except Exception:  # noqa: BLE001 - a link is a nicety
        return ""


def on_open_modal(ack: Callable[..., Any], body: dict[str, Any], client: Any,
                  context: Mapping[str, Any]) -> None:
    """Bolt listener of **Approve with comments** / **Request changes**: ack, check what
    the local store can tell (unknown item, gate moved, unlinked clicker), then open the
    modal at once: its ``trigger_id`` is good for 3 s and one use (platform-facts §C1), so
    the gate's approval rule, which may read GitHub, is applied on submission instead."""
    ack()
    user, channel, ts = _where(body)
    action: dict[str, Any] = next(iter(body.get("actions") or ()), {}) or {}
    outcome = MODAL_OUTCOMES.get(str(action.get("action_id") or ""), "")
    gate = _clicked_gate(body, client, channel, user)
    if gate is None:
        return
    check = check_gate(context["services"], gate, user)
    if not check.ok:
        log.info("approval modal for %s %s refused for %s: %s", gate.ref, gate.node, user,
                 check.code)
        if check.code == "outdated" and channel and ts:
            rewrite_message(context["services"], client, gate, channel, ts)
        _ephemeral(client, channel, user, check.message)
        return
    try:
        client.views_open(trigger_id=str(body.get("trigger_id") or ""),
                          view=decision_modal(gate, outcome, channel=channel, ts=ts))
    except SlackApiError as exc:  # e.g. expired_trigger_id: Slack was slow to deliver
        log.warning("approval modal for %s %s not opened for %s: %s", gate.ref, gate.node,
                    user, exc.response.get("error"))
        _ephemeral(client, channel, user, "loopgate could not open the form in time; "
                   "nothing changed. Click the button again.")
