"""The webhook receiver: a Flask blueprint with ``POST /github/webhook`` and ``GET /healthz``.

Order of work for one request (issue 3 §3, issue 10 §3):

1. read the raw body (nothing has parsed it yet);
2. verify ``X-Hub-Signature-256`` over those bytes — missing or wrong → ``401`` and
   nothing else happens (no JSON parsing, no logging of the payload);
3. parse headers + JSON into a :class:`~bridges.ingress.delivery.Delivery`;
4. ``ping`` → ``200``; route by ``event.action`` (pure); a dropped delivery → ``200`` with
   its reason;
5. keep the raw delivery in the webhook inbox (:mod:`bridges.ingress.inbox`: ONE statement
   on a SQLite file of its own, never the state database's lock): one handled already
   (``X-GitHub-Delivery`` seen) → ``200 {"status": "duplicate"}``; otherwise offer it to
   the dispatcher's queue without blocking and answer ``202`` at once, well inside
   GitHub's 10 s, whatever item transaction holds the state database.

GitHub does not redeliver a delivery it got a ``2xx`` for, so a ``202`` is a promise: the
inbox row stays owed until the dispatcher handled the delivery for good, and
:func:`replay_inbox` (at start and every 60 s, :func:`replay_loop`) queues what is owed
and not in hand: what a killed process acknowledged, what a full queue refused, what
ended ``retry``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, jsonify, request

from bridges.github.errors import PayloadError, SignatureError
from bridges.github.router import Dropped, RouterConfig, route
from bridges.github.webhook import MAX_DELIVERY_ID, parse_delivery, verify_signature
from bridges.ingress.dispatcher import Dispatcher
from bridges.ingress.inbox import HANDLED, HELD, OWED, InboxError, adopt_legacy_inbox
from engine.errors import LoopgateError

__all__ = ["webhook_blueprint", "health_blueprint", "replay_inbox", "replay_loop",
           "WEBHOOK_PATH", "HEALTH_PATH", "REPLAY_SECONDS"]

logger = logging.getLogger(__name__)

WEBHOOK_PATH = "/github/webhook"
HEALTH_PATH = "/healthz"

#: Seconds between replays of the deliveries still owed (e.g. a rate-limited lookup): with
#: the poller off nothing else would retry them.
REPLAY_SECONDS = 60.0


def _answer(code: int, **body: Any) -> Response:
    response = jsonify(body)
    response.status_code = code
    return response


def health_blueprint(dispatcher: Dispatcher | None = None) -> Blueprint:
    """``GET /healthz``: ``200 {"ok": true, "dispatcher": <worker alive>}``."""
    bp = Blueprint("loopgate_health", __name__)

    @bp.get(HEALTH_PATH)
    def healthz() -> Response:
        running = dispatcher.running if dispatcher is not None else None
        return _answer(200, ok=True, dispatcher=running)

    return bp


def webhook_blueprint(dispatcher: Dispatcher, router_config: RouterConfig, *,
                      secret: str | None, insecure: bool = False) -> Blueprint:
    """The GitHub webhook endpoint.

    Args:
        dispatcher: where routed deliveries are queued (its worker must be running).
        router_config: watched repositories, start label, bot login.
        secret: the webhook secret; None only together with ``insecure``.
        insecure: accept unsigned deliveries (``--insecure-webhooks``; development only).

    Returns:
        A blueprint serving ``POST /github/webhook``.

    Raises:
        SignatureError: no secret and not ``insecure`` (the receiver refuses to start).
    """
    if not secret and not insecure:
        raise SignatureError("no webhook secret: refusing to start the receiver "
                             "(set the secret's variable or pass --insecure-webhooks)")
    bp = Blueprint("loopgate_github", __name__)

    @bp.post(WEBHOOK_PATH)
    def github_webhook() -> Response:
        body = request.get_data(cache=False)
        if secret:
            try:
                verify_signature(request.headers, body, secret)
            except SignatureError as exc:
                logger.warning("webhook refused delivery=%s: %s",
                               request.headers.get("X-GitHub-Delivery", "-")[:MAX_DELIVERY_ID],
                               exc)
                return _answer(401, error="invalid signature")
        return _receive(dispatcher, router_config, body, signed=bool(secret))

    return bp


def _receive(dispatcher: Dispatcher, router_config: RouterConfig, body: bytes, *,
             signed: bool) -> Response:
    try:
        delivery = parse_delivery(request.headers, body)
    except PayloadError as exc:
        logger.warning("webhook bad delivery: %s", exc)
        return _answer(400, error=str(exc))
    try:
        if signed:  # only GitHub can sign: its installation id saves a lookup (issue 9 §2)
            _learn_installation(dispatcher, delivery.data)
        routed = route(delivery, router_config)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # Signed but malformed (e.g. a comment id that is not a number): the sender's fault.
        logger.warning("delivery=%s source=github kind=%s result=refused reason=bad-payload "
                       "error=%s", delivery.delivery_id, delivery.route_key, type(exc).__name__)
        return _answer(400, error=f"malformed {delivery.route_key} payload")
    if isinstance(routed, Dropped):
        logger.info("delivery=%s source=github kind=%s result=dropped reason=%s",
                    delivery.delivery_id, delivery.route_key, routed.reason)
        return _answer(200, status="ignored", reason=routed.reason)
    try:
        kept = dispatcher.inbox.put(delivery.delivery_id, delivery.event, body)
    except InboxError as exc:  # not kept, so no 2xx: GitHub marks it failed, to redeliver
        logger.error("delivery=%s source=github kind=%s result=refused reason=inbox-error "
                     "error=%s", delivery.delivery_id, routed.event, exc)
        return _answer(503, error="the delivery could not be stored")
    if kept in (HANDLED, HELD) or (kept == OWED and dispatcher.in_flight(delivery.delivery_id)):
        logger.info("delivery=%s source=github kind=%s result=duplicate reason=delivery-id",
                    delivery.delivery_id, delivery.route_key)
        return _answer(200, status="duplicate")
    if not dispatcher.offer(routed):
        # Kept in the inbox all the same: the replay queues it once there is room.
        logger.warning("delivery=%s source=github kind=%s kept for the replay: the "
                       "dispatcher's queue is full or stopping", delivery.delivery_id,
                       routed.event)
    return _answer(202, status="queued", kind=routed.event)


def _learn_installation(dispatcher: Dispatcher, payload: Mapping[str, Any]) -> None:
    installation = payload.get("installation")
    repo = (payload.get("repository") or {}).get("full_name")
    if isinstance(installation, Mapping) and isinstance(installation.get("id"), int) and repo:
        dispatcher.learn_installation(str(repo), int(installation["id"]))


def replay_inbox(dispatcher: Dispatcher, router_config: RouterConfig) -> int:
    """Queue again the webhook deliveries the inbox still owes and nobody has in hand.

    Each owed delivery is parsed and routed again (the same pure functions as on
    arrival); one the dispatcher already handled (its own record, e.g. before a crash
    between handling and the inbox mark), or one that no longer routes, is marked done.

    Args:
        dispatcher: the dispatcher (its worker marks each delivery done once handled).
        router_config: watched repositories, start label, bot login.

    Returns:
        How many deliveries were queued.
    """
    queued = 0
    inbox = dispatcher.inbox
    for entry in inbox.owed():
        if dispatcher.in_flight(entry.delivery_id):
            continue
        headers = {"X-GitHub-Event": entry.event, "X-GitHub-Delivery": entry.delivery_id}
        try:
            delivery = parse_delivery(headers, entry.body)
            routed = route(delivery, router_config)
        except (PayloadError, KeyError, TypeError, ValueError, AttributeError) as exc:
            logger.warning("delivery=%s kept in the inbox is unreadable: %s",
                           entry.delivery_id, exc)
            inbox.done(entry.delivery_id, "unreadable")
            continue
        if isinstance(routed, Dropped) or dispatcher.known(entry.delivery_id):
            inbox.done(entry.delivery_id, "duplicate")
            continue
        logger.info("delivery=%s source=github kind=%s replayed from the inbox",
                    entry.delivery_id, routed.event)
        dispatcher.submit(routed)
        queued += 1
    return queued


def replay_loop(dispatcher: Dispatcher, router_config: RouterConfig, stop: threading.Event,
                *, every: float = REPLAY_SECONDS) -> None:
    """Replay the inbox at once, then every ``every`` seconds, until ``stop`` is set.

    The body of the supervised ``inbox-replay`` thread of ``loopgate serve``: the first
    pass queues what a previous process acknowledged and did not handle; later passes
    re-try what is still owed (issue 3: a limited query makes the gate wait and is
    retried), so webhooks-only mode retries without a restart.

    Args:
        dispatcher: the running dispatcher.
        router_config: watched repositories, start label, bot login.
        stop: set it to end the loop (checked between passes).
        every: seconds between passes.
    """
    try:
        adopt_legacy_inbox(dispatcher.store, dispatcher.inbox)
    except LoopgateError as exc:  # the rows stay where they are; the next start tries again
        logger.warning("could not move the legacy webhook inbox: %s", exc)
    while not stop.is_set():
        try:
            queued = replay_inbox(dispatcher, router_config)
        except LoopgateError as exc:  # e.g. a locked file: the next pass tries again
            logger.warning("inbox replay failed: %s", exc)
            queued = 0
        if queued:
            logger.info("re-tried %d webhook deliveries still owed", queued)
        stop.wait(every)
