"""``/loop check [owner/repo#N]`` (issue 4 §5)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.slack.blocks.card import phase_selection_node_id
from bot.slack.blocks.report_blocks import check_report_blocks, item_list_blocks
from bot.slack.listeners.commands.pasted_refs import parse_item
from bot.slack.listeners.commands.replies import Reply
from bot.slack.slack_identity import resolve_login
from bot.slack.slack_tables import thread_authors
from engine.errors import UnreadableItemError
from engine.refs import WorkItemRef
from engine.report import build_report
from engine.settings import normalize_login

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["check_item", "my_items", "run_check", "item_owners", "involved_states",
           "left_out"]

log = logging.getLogger(__name__)

_AUTHOR_KEYS = ("issueAuthor", "author")


def run_check(services: Services, user: str, args: Sequence[str]) -> Reply:
    """``/loop check`` with zero or one argument."""
    if not args:
        return my_items(services, user)
    if len(args) > 1:
        return Reply("Usage: `/loop check owner/repo#N` (or `/loop check` for your items).")
    return check_item(services, parse_item(args[0]))


def check_item(services: Services, ref: WorkItemRef) -> Reply:
    """The Block Kit report of one work item.

    Raises:
        WorkItemRefError: never here (the ref is parsed); kept for symmetry of callers.
    """
    state = services.store.load(ref)
    if state is None:
        return Reply(f"{ref} is not started.")
    report = build_report(services.graph, state)
    text = (f"{ref}: at {report['currentNode'] or '—'} ({report['status']}), "
            f"{'ok' if report['ok'] else str(len(report['unmet'])) + ' unmet'}")
    return Reply(text, [b.to_dict() for b in check_report_blocks(report)])


def _recorded_authors(services: Services) -> dict[str, str]:
    return {item: normalize_login(author)
            for item, author in thread_authors(services.store).items()}


def item_owners(services: Services, state: Any, authors: dict[str, str] | None = None) -> set[str]:
    """The logins that own a work item: who executed its phase selection and the issue's
    author (as recorded when the card was posted, or in the item's surface)."""
    node_id = phase_selection_node_id(services.graph)
    authors = _recorded_authors(services) if authors is None else authors
    by = normalize_login(str((state.decisions.get(node_id) or {}).get("by") or ""))
    author = authors.get(str(state.ref)) or next(
        (normalize_login(str(state.surface[k])) for k in _AUTHOR_KEYS
         if state.surface.get(k)), "")
    return {lg for lg in (by, author) if lg}


def left_out(key: str, error: UnreadableItemError) -> None:
    """``load_all``'s ``on_unreadable`` for the Slack views that list every item (``/loop
    check``, the Home tab): the item is left out of the view, and one warning line names
    its stored key and why (``loopgate check --all`` shows it, and exits 3)."""
    log.warning("work item %s left out of the Slack view: it cannot be read: %s", key,
                error.detail)


def involved_states(services: Services, login: str) -> list[Any]:
    """The states of the work items ``login`` owns (:func:`item_owners`), store order; an
    item that cannot be read is left out (:func:`left_out`)."""
    authors = _recorded_authors(services)
    return [state for state in services.store.load_all(left_out)
            if login in item_owners(services, state, authors)]


def my_items(services: Services, user: str) -> Reply:
    """The caller's work items: those whose phase selection they executed, or whose issue
    they authored (as recorded when the card was posted, or in the item's surface)."""
    login = resolve_login(services, user)
    if not login:
        return Reply("Your Slack account is not linked to a GitHub login yet: "
                     "run `/loop link <github-login>` first.")
    items = [(str(state.ref), state.current_node, state.status)
             for state in involved_states(services, login)]
    text = f"{len(items)} work item(s) involve @{login}."
    return Reply(text, [b.to_dict() for b in item_list_blocks(login, items)])
