"""Events API retries handled once (issue 12 §6).

Slack redelivers an event it thinks was not acknowledged, with the same ``event_id`` and
an ``X-Slack-Retry-Num`` header (Events API, "Retries"); in Socket Mode a retry carries
``retry_attempt``. Both modes go through this global Bolt middleware: an ``event_callback``
whose ``event_id`` was seen before is acknowledged and dropped, so an ``app_mention``
redelivery never posts its reply twice.

The seen ids live in the bridge's existing ``github_seen`` table (scope ``slack``, kind
``event``, capped) beside the engine's data, so a restart between the first delivery and
its retry still drops the retry.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from slack_bolt import BoltResponse

__all__ = ["SCOPE", "KIND", "CAP", "first_delivery", "dedupe_events"]

log = logging.getLogger(__name__)

SCOPE = "slack"
KIND = "event"
#: Event ids kept; Slack retries within minutes, so this covers days of events.
CAP = 5000

_GUARD = threading.Lock()


def first_delivery(store: Any, event_id: str) -> bool:
    """Record ``event_id``; True the first time it is seen, False for a redelivery.

    Args:
        store: the engine store (its SQLite file holds the seen ids).
        event_id: the Events API ``event_id`` (``Ev…``).

    Returns:
        Whether this delivery is the first (the check and the mark are one step under a
        process lock, so two concurrent deliveries of one id pass once).
    """
    from bridges.ingress.bridge_state import bridge_state

    with _GUARD:
        state = _STATES.get(store)
        if state is None:
            state = _STATES[store] = bridge_state(store)
        if state.seen(SCOPE, KIND, [event_id]):
            return False
        state.mark_seen(SCOPE, KIND, [event_id], CAP)
        return True


# One bridge state per store (its constructor applies migrations), forgotten with the store.
_STATES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def dedupe_events(req: Any, body: Mapping[str, Any], context: Mapping[str, Any],
                  next: Callable[[], Any]) -> Any:  # noqa: A002 - Bolt's name
    """Global Bolt middleware: drop a redelivered ``event_callback`` (ack 200, no listener).

    Returns:
        ``BoltResponse(200)`` for a redelivery; otherwise what ``next()`` returns.
    """
    event_id = str(body.get("event_id") or "") if isinstance(body, Mapping) else ""
    if body.get("type") != "event_callback" or not event_id:
        return next()
    if first_delivery(context["services"].store, event_id):
        return next()
    retry = (req.headers.get("x-slack-retry-num") or ["?"])[0] if req is not None else "?"
    log.info("slack event %s redelivered (retry %s): already handled", event_id, retry)
    return BoltResponse(status=200, body="")
