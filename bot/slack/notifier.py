"""The Slack notifier: a persisted outbox the Slack worker drains (issue 4 §1).

:class:`OutboxNotifier` implements :class:`engine.ports.Notifier`. The engine calls it from
inside its write transaction, so the event is queued through the transaction's connection
(:meth:`bot.slack.slack_tables.SlackOutbox.queue`) and commits, or rolls back, with the
transition that produced it: a notice is never sent for a transition that did not happen,
and a transition never loses its notice. Nothing here talks to Slack, so a Slack outage
never blocks the GitHub side; :class:`bot.slack.worker.SlackWorker` sends and retries.

The Slack tables (schema: :mod:`bot.slack.slack_schema`; reads and writes:
:mod:`bot.slack.slack_tables`) hold every statement; this module holds none (issue 20 §2).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.slack.slack_schema import ensure_slack_tables, iso
from bot.slack.slack_tables import SlackOutbox
from engine.refs import WorkItemRef

if TYPE_CHECKING:
    from engine.store.base import DatabaseStore

__all__ = ["OutboxNotifier"]

log = logging.getLogger(__name__)


def _json_default(value: Any) -> Any:
    # Event data is JSON-shaped; anything else (a dataclass, a tuple) is made readable.
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


class OutboxNotifier:
    """:class:`engine.ports.Notifier` queueing each event in the Slack outbox.

    Args:
        store: the store holding the Slack tables (SQLite or PostgreSQL); inside the
            engine's transaction its session is the transaction's own.
    """

    def __init__(self, store: DatabaseStore) -> None:
        self.store = store
        self.outbox = SlackOutbox(store)
        ensure_slack_tables(store)

    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Queue ``event`` about ``ref``. Never raises: a failure is logged.

        Args:
            ref: the work item.
            event: the event name (``quiz-pending``, ``phase-selection-done`` ...).
            data: JSON-shaped event data.
        """
        try:
            text = json.dumps(dict(data or {}), sort_keys=True, default=_json_default)
            self.outbox.queue(ref, str(event), text, iso())
        except Exception as exc:  # noqa: BLE001 - the Notifier contract: never raise
            log.error("slack outbox: could not queue %s for %s: %s", event, ref,
                      type(exc).__name__)
