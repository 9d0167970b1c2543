"""The Execute button of the phase-selection card (issue 4 §3).

Ack at once; then read the selection from the message state, map the clicker to a GitHub
login and hand the gate a typed :class:`engine.events.Selection` (the rows as ticked, by
that login, ``via: slack``; issue 20 §1), which the gate records as it records a reply
carrying the execute keyword and the checklist. The engine posts its confirmation comment on
the issue; the card is rewritten into the read-only confirmation. A clicker who is not
linked or not authorized selects nothing (ephemeral refusal + ``slack.execute_refused``
in the item's event log); a second click, or a click after someone answered on GitHub,
gets "already selected by @x" and changes nothing (first answer wins).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.slack.approval_clicks import VIA
from bot.slack.blocks import ids
from bot.slack.blocks.card import phase_selection_node_id, selection_from_state, status_card
from bot.slack.blocks.escaping import slack_text
from bot.slack.blocks.mirror import initial_state
from bot.slack.click_lock import item_lock
from bot.slack.slack_identity import resolve_login
from bot.slack.slack_tables import card_redraw_owed, load_thread, save_thread
from engine import events as ev
from engine.checksummary import details_page
from engine.errors import WorkItemRefError
from engine.ports import IssueInfo, TrackerError
from engine.refs import WorkItemRef
from engine.settings import normalize_login

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["Click", "ExecuteOutcome", "on_execute", "execute", "parse_click", "REFUSED_EVENT"]

log = logging.getLogger(__name__)

#: The event-log kind of a refused click.
REFUSED_EVENT = "slack.execute_refused"


def _replicas_lock(services: Services, ref: WorkItemRef) -> AbstractContextManager[Any]:
    # Replicas on PostgreSQL (issue 15 §3): clicks on one card at different replicas are
    # handled one after the other too (an advisory lock on the item; none on SQLite).
    return services.store.exclusive(f"execute:{ref}")


@dataclass(frozen=True)
class Click:
    """What an Execute ``block_actions`` payload says.

    Attributes:
        user: the clicker's Slack user id.
        channel: the channel of the card.
        ts: the card message's ts.
        ref: the work item (the button's value).
        values: ``state.values`` of the message.
        revision: the highest block-id revision among the message's blocks.
        interactive: the message still shows the Execute button.
    """

    user: str
    channel: str
    ts: str
    ref: WorkItemRef
    values: Mapping[str, Any] = field(default_factory=dict)
    revision: int = 0
    interactive: bool = True


@dataclass(frozen=True)
class ExecuteOutcome:
    """The result of one click.

    Attributes:
        code: ``selected``, ``already-selected``, ``not-linked``, ``not-authorized``,
            ``not-started``, ``not-waiting``, ``stale-card`` (the GitHub checklist changed
            since the clicked drawing) or ``not-accepted``.
        message: the sentence told to the clicker (ephemeral) when not ``selected``.
        decision: the phase-selection decision in force, if any.
        login: the clicker's GitHub login, if linked.
    """

    code: str
    message: str
    decision: Mapping[str, Any] | None = None
    login: str = ""


def parse_click(body: Mapping[str, Any]) -> Click:
    """Read a ``block_actions`` payload of the Execute button.

    Raises:
        WorkItemRefError: the button carries no work item reference.
    """
    container = body.get("container") or {}
    message = body.get("message") or {}
    action: dict[str, Any] = next((a for a in body.get("actions") or ()
                   if a.get("action_id") == ids.ACTION_EXECUTE), {})
    revisions = [p.revision for p in (ids.parse_block_id(str(b.get("block_id") or ""))
                                      for b in message.get("blocks") or ()) if p]
    interactive = any(str(b.get("block_id") or "").startswith(ids.BLOCK_EXECUTE)
                      for b in message.get("blocks") or ())
    return Click(
        user=str((body.get("user") or {}).get("id") or ""),
        channel=str((body.get("channel") or {}).get("id") or container.get("channel_id") or ""),
        ts=str(message.get("ts") or container.get("message_ts") or ""),
        ref=WorkItemRef.parse(str(action.get("value") or "")),
        # A checkbox block missing from the state keeps what the card showed (its
        # initial_options: the GitHub checklist's rows after a redraw, issue 14 §15).
        values={**initial_state(message.get("blocks")),
                **((body.get("state") or {}).get("values") or {})},
        revision=max(revisions, default=0),
        interactive=interactive or not message.get("blocks"),
    )


def on_execute(ack: Callable[..., Any], body: dict[str, Any], client: Any,
               context: Mapping[str, Any]) -> None:
    """Bolt listener: ack, then :func:`execute`."""
    ack()
    execute(context["services"], client, body)


def execute(services: Services, client: Any, body: Mapping[str, Any]) -> ExecuteOutcome:
    """Handle one Execute click (after the ack).

    Args:
        services: the wired services.
        client: the Slack WebClient.
        body: the ``block_actions`` payload.

    Returns:
        What happened; the clicker was told (ephemeral) unless it was ``selected``.
    """
    try:
        click = parse_click(body)
    except WorkItemRefError:
        user = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id") or "")
        outcome = ExecuteOutcome("not-started", "This card names no work item.")
        client.chat_postEphemeral(channel=channel, user=user, text=slack_text(outcome.message))
        return outcome
    with item_lock(click.ref), _replicas_lock(services, click.ref):
        outcome = _decide(services, click)
    if outcome.decision and (outcome.code == "selected" or click.interactive):
        _rewrite_card(services, client, click, outcome.decision)
    if outcome.code != "selected":
        client.chat_postEphemeral(channel=click.channel, user=click.user,
                                  text=slack_text(outcome.message))
    return outcome


def _already(ref: WorkItemRef, decision: Mapping[str, Any]) -> ExecuteOutcome:
    by = str(decision.get("by") or "someone")
    via = f" (via {decision['via']})" if decision.get("via") else ""
    return ExecuteOutcome("already-selected",
                          f"Phase selection of {ref} was already selected by {by}{via}; "
                          "nothing changed.", decision)


def _decide(services: Services, click: Click) -> ExecuteOutcome:
    ref = click.ref
    node_id = phase_selection_node_id(services.graph)
    state = services.store.load(ref)
    if state is None:
        return ExecuteOutcome("not-started", f"{ref} is not started.")
    if state.decisions.get(node_id):
        return _already(ref, state.decisions[node_id])
    login = resolve_login(services, click.user) or ""
    if not login:
        return _refuse(services, click, "", "not-linked",
                       "Your Slack account is not linked to a GitHub login, so nothing was "
                       "selected. Run `/loop link <github-login>` first.")
    if not services.settings.is_authorized(login):
        return _refuse(services, click, login, "not-authorized",
                       f"@{login} is not an authorized user for this work item, so nothing "
                       "was selected.")
    if state.current_node != node_id:
        return ExecuteOutcome("not-waiting", f"{ref} is not waiting at {node_id} "
                              f"(it is at {state.current_node or 'no node'}).", login=login)
    stale = _stale_card(services, click)
    if stale:
        return ExecuteOutcome("stale-card", stale, login=login)
    selection = selection_from_state(services.graph, click.values)
    # Bound to node_id: a GitHub reply handled since the load above is not answered twice.
    result = services.runtime.advance(ref, ev.Selection(
        node_id, login, tuple(selection.skips), tuple(selection.opt_ins),
        selection.explainer_on, via=VIA))
    made = result.visit.decision if isinstance(result, ev.Moved) and result.visit else None
    if made is not None and normalize_login(made.by) == login:
        log.info("phase selection of %s executed from Slack by @%s (%s)", ref, login,
                 click.user)
        return ExecuteOutcome("selected", "", made.to_json(), login)
    decision = result.state.decisions.get(node_id)
    if decision:  # someone else's answer was first (a GitHub reply handled meanwhile)
        return _already(ref, decision)
    return ExecuteOutcome("not-accepted", "The gate did not take the selection: "
                          f"{result.reason or 'no reason was given'}.", login=login)


def _stale_card(services: Services, click: Click) -> str:
    """Why the clicked drawing of the card no longer shows the GitHub checklist ("" when
    it does): the card was redrawn since (a higher revision is recorded), or a redraw for
    a checklist edited on GitHub was not sent yet (queued, or refused by Slack: then only
    a reply on GitHub selects; issue 14 §15)."""
    thread = load_thread(services.store, click.ref)
    redrawn = (thread is not None and thread["kind"] == "card" and thread["ts"] == click.ts
               and click.revision < int(thread["revision"]))
    # Unsent includes a redraw Slack refused for good: fail closed (GitHub still answers).
    if not redrawn and not card_redraw_owed(services.store, click.ref):
        return ""
    return (f"The phase-selection checklist of {click.ref} was changed on GitHub after this "
            "card was drawn, so nothing was selected. The card is redrawn with the "
            "checklist's rows: check them and click Execute again.")


def _refuse(services: Services, click: Click, login: str, code: str,
            message: str) -> ExecuteOutcome:
    log.info("execute on %s refused for %s: %s", click.ref, click.user, code)
    with services.store.transaction(click.ref) as tx:
        tx.log(REFUSED_EVENT, {"slackUser": click.user, "login": login, "reason": code})
    return ExecuteOutcome(code, message, None, login)


def _issue_info(services: Services, ref: WorkItemRef) -> IssueInfo:
    try:
        return services.ports.tracker.issue_info(ref)
    except TrackerError:
        return IssueInfo(ref=ref, title="", url="", author="")


def _rewrite_card(services: Services, client: Any, click: Click,
                  decision: Mapping[str, Any]) -> None:
    """The card becomes the read-only confirmation (fresh block ids: a new revision)."""
    store = services.store
    thread = load_thread(store, click.ref)
    parent = thread is None or thread["ts"] == click.ts
    revision = max(click.revision, thread["revision"] if thread and parent else 0) + 1
    state = store.load(click.ref)
    if state is None:  # started just before this rewrite; never gone after it
        return
    info = _issue_info(services, click.ref)
    blocks = status_card(services.graph, info, current_node=state.current_node,
                         status=state.status, decision=decision, revision=revision,
                         page_url=details_page(services.settings.public_url, click.ref))
    client.chat_update(channel=click.channel, ts=click.ts,
                       text=slack_text(f"Phase selection of {click.ref} made by "
                                       f"{decision.get('by')}"),
                       blocks=[b.to_dict() for b in blocks])
    if parent:
        save_thread(store, click.ref, channel=click.channel, ts=click.ts, revision=revision,
                    kind="status", node=state.current_node, author=info.author)
