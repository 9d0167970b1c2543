"""The webhook receiver: a Flask blueprint with ``POST /github/webhook`` and ``GET /healthz``.

Order of work for one request (issue 3 §3):

1. read the raw body (nothing has parsed it yet);
2. verify ``X-Hub-Signature-256`` over those bytes — missing or wrong → ``401`` and
   nothing else happens (no JSON parsing, no logging of the payload);
3. parse headers + JSON into a :class:`~bridges.github.webhook.Delivery`;
4. de-duplicate on ``X-GitHub-Delivery`` (queued or handled, persisted by the
   dispatcher) → ``200 {"status": "duplicate"}``;
5. ``ping`` → ``200``; route by ``event.action``; a dropped delivery → ``200`` with its
   reason; otherwise keep the raw delivery in the persisted inbox, queue it for the
   dispatcher and answer ``202`` at once, well inside GitHub's 10 s.

GitHub does not redeliver a delivery it got a ``2xx`` for, so a ``202`` is a promise: the
inbox row goes only once the dispatcher handled the delivery, and :func:`replay_inbox`
queues what a killed process had acknowledged but not handled.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, jsonify, request

from bridges.dispatcher import Dispatcher
from bridges.github.errors import PayloadError, SignatureError
from bridges.github.router import Dropped, RouterConfig, route
from bridges.github.webhook import parse_delivery, verify_signature

__all__ = ["webhook_blueprint", "health_blueprint", "replay_inbox", "WEBHOOK_PATH",
           "HEALTH_PATH"]

logger = logging.getLogger(__name__)

WEBHOOK_PATH = "/github/webhook"
HEALTH_PATH = "/healthz"


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
                               request.headers.get("X-GitHub-Delivery", "-"), exc)
                return _answer(401, error="invalid signature")
        return _receive(dispatcher, router_config, body)

    return bp


def _receive(dispatcher: Dispatcher, router_config: RouterConfig, body: bytes) -> Response:
    try:
        delivery = parse_delivery(request.headers, body)
    except PayloadError as exc:
        logger.warning("webhook bad delivery: %s", exc)
        return _answer(400, error=str(exc))
    if dispatcher.known(delivery.delivery_id):
        logger.info("delivery=%s source=github kind=%s result=duplicate reason=delivery-id",
                    delivery.delivery_id, delivery.route_key)
        return _answer(200, status="duplicate")
    try:
        routed = route(delivery, router_config)
    except (KeyError, TypeError, ValueError) as exc:
        # Signed but malformed (e.g. a comment id that is not a number): the sender's fault.
        logger.warning("delivery=%s source=github kind=%s result=refused reason=bad-payload "
                       "error=%s", delivery.delivery_id, delivery.route_key, type(exc).__name__)
        return _answer(400, error=f"malformed {delivery.route_key} payload")
    if isinstance(routed, Dropped):
        logger.info("delivery=%s source=github kind=%s result=dropped reason=%s",
                    delivery.delivery_id, delivery.route_key, routed.reason)
        return _answer(200, status="ignored", reason=routed.reason)
    dispatcher.state.inbox_put(delivery.delivery_id, delivery.event, body)
    dispatcher.submit(routed)
    return _answer(202, status="queued", kind=routed.event)


def replay_inbox(dispatcher: Dispatcher, router_config: RouterConfig) -> int:
    """Queue again the webhook deliveries a previous process answered but did not handle.

    Each kept delivery is parsed and routed again (the same pure functions as on
    arrival); one the dispatcher already handled, or one that no longer routes, is
    forgotten.

    Args:
        dispatcher: the dispatcher (its worker removes each row once handled).
        router_config: watched repositories, start label, bot login.

    Returns:
        How many deliveries were queued.
    """
    queued = 0
    for delivery_id, event, body in dispatcher.state.inbox_pending():
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id}
        try:
            delivery = parse_delivery(headers, body)
        except PayloadError as exc:
            logger.warning("delivery=%s kept in the inbox is unreadable: %s", delivery_id, exc)
            dispatcher.state.inbox_done(delivery_id)
            continue
        routed = route(delivery, router_config)
        if dispatcher.known(delivery_id) or isinstance(routed, Dropped):
            dispatcher.state.inbox_done(delivery_id)
            continue
        logger.info("delivery=%s source=github kind=%s replayed from the inbox",
                    delivery_id, routed.event)
        dispatcher.submit(routed)
        queued += 1
    return queued
