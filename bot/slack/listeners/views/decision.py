"""The decision modal's submission (issue 12 §1, "Bad input").

Slack needs the ack within 3 s (platform-facts §C1), and a modal error must travel in the
ack (``response_action: errors``), so only what the local store can tell is checked before
it: a form that does not parse, empty comments, an unknown item, a gate that moved, an
unlinked clicker — the modal says why under the text box and nothing changes (one log
line). The gate's approval rule may read GitHub (author, pull requests, team membership),
so it runs after the ack: the modal closes, the decision is fed to the gate, and a
refusal reaches the person as an ephemeral message (the message is rewritten when the
gate moved meanwhile).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from bot.slack.approval_clicks import check_gate
from bot.slack.blocks import ids
from bot.slack.blocks.approval import GateRef
from bot.slack.listeners.actions.approve import MODAL_OUTCOMES, finish

__all__ = ["on_decision_submit", "Submission", "read_submission"]

log = logging.getLogger(__name__)


class Submission:
    """A parsed submission: gate, outcome, text, the message to update, the user."""

    def __init__(self, gate: GateRef, outcome: str, text: str, channel: str, ts: str,
                 user: str) -> None:
        self.gate, self.outcome, self.text = gate, outcome, text
        self.channel, self.ts, self.user = channel, ts, user


def read_submission(body: Mapping[str, Any]) -> Submission:
    """Parse a ``view_submission`` of the decision modal.

    Raises:
        ValueError: the private metadata or the outcome does not parse.
    """
    view = body.get("view") or {}
    try:
        meta = json.loads(str(view.get("private_metadata") or ""))
    except json.JSONDecodeError:
        raise ValueError("the modal's metadata is not JSON") from None
    if not isinstance(meta, dict) or meta.get("outcome") not in MODAL_OUTCOMES.values():
        raise ValueError("the modal names no outcome")
    values = ((view.get("state") or {}).get("values") or {})
    field = (values.get(ids.BLOCK_DECISION_TEXT) or {}).get(ids.ACTION_DECISION_TEXT) or {}
    return Submission(GateRef.parse(str(meta.get("gate") or "")), str(meta["outcome"]),
                      str(field.get("value") or "").strip(), str(meta.get("channel") or ""),
                      str(meta.get("ts") or ""), str((body.get("user") or {}).get("id") or ""))


def _error(ack: Callable[..., Any], text: str) -> None:
    ack(response_action="errors", errors={ids.BLOCK_DECISION_TEXT: text})


def on_decision_submit(ack: Callable[..., Any], body: dict[str, Any], client: Any,
                       context: Mapping[str, Any]) -> None:
    """Bolt listener of the decision modal's ``view_submission``."""
    services = context["services"]
    try:
        sub = read_submission(body)
    except ValueError as exc:
        log.warning("decision modal refused: %s", exc)
        _error(ack, "loopgate could not read this form; nothing changed.")
        return
    if not sub.text:
        log.info("decision modal for %s %s refused: empty comments", sub.gate.ref,
                 sub.gate.node)
        _error(ack, "Comments are required for this answer.")
        return
    check = check_gate(services, sub.gate, sub.user)  # no GitHub read
    if not check.ok:
        log.info("decision modal for %s %s refused for %s: %s", sub.gate.ref, sub.gate.node,
                 sub.user, check.code)
        _error(ack, check.message[:300])
        return
    ack()
    finish(services, client, sub.gate, sub.user, sub.outcome, sub.text, sub.channel, sub.ts)
