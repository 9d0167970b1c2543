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

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.datastructures import EnvironHeaders

from bridges.github.errors import PayloadError, SignatureError
from bridges.github.router import Dropped, RouterConfig, route
from bridges.github.webhook import (
    MAX_BODY_BYTES,
    MAX_DELIVERY_ID,
    HeaderItems,
    header,
    parse_delivery,
    verify_signature,
)
from bridges.ingress.ack_first import WsgiApp
from bridges.ingress.dispatcher import Dispatcher
from bridges.ingress.inbox import HANDLED, HELD, OWED, InboxError, adopt_legacy_inbox
from engine.errors import LoopgateError

__all__ = ["WebhookEndpoint", "webhook_blueprint", "health_blueprint", "replay_inbox",
           "replay_loop", "WEBHOOK_PATH", "HEALTH_PATH", "REPLAY_SECONDS"]

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


class WebhookEndpoint:
    """``POST /github/webhook`` as a plain function of headers and body, free of any web
    framework, so ``serve`` answers it straight from WSGI (:meth:`wsgi`).

    Why not a Flask route: an ack is what a burst of deliveries waits on, and Flask's
    request machinery (context, URL map, ``jsonify``) was about half of an ack's CPU time;
    on a loaded 2-core machine every such millisecond queues the next sender (issue 21
    §1, docs/benchmarks.md). The Flask route (:func:`webhook_blueprint`) answers with the
    same function.

    Args:
        dispatcher: where routed deliveries are queued (its worker must be running).
        router_config: watched repositories, start label, bot login.
        secret: the webhook secret; None only together with ``insecure``.
        insecure: accept unsigned deliveries (``--insecure-webhooks``; development only).
        max_body: the largest body read (bytes); a larger one is answered ``413`` unread.

    Raises:
        SignatureError: no secret and not ``insecure`` (the receiver refuses to start).
    """

    def __init__(self, dispatcher: Dispatcher, router_config: RouterConfig, *,
                 secret: str | None, insecure: bool = False,
                 max_body: int = MAX_BODY_BYTES) -> None:
        if not secret and not insecure:
            raise SignatureError("no webhook secret: refusing to start the receiver "
                                 "(set the secret's variable or pass --insecure-webhooks)")
        self.dispatcher = dispatcher
        self.router_config = router_config
        self.secret = secret or None
        self.max_body = max_body

    def answer(self, headers: HeaderItems, body: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one delivery (the steps of this module's docstring).

        Args:
            headers: the request headers (any case).
            body: the raw body, exactly as received.

        Returns:
            ``(HTTP status, JSON body)``: 401 bad signature, 400 bad delivery, 200
            ignored/duplicate/ping, 202 queued, 503 not stored.
        """
        return self.refused(headers, body) or _receive(
            self.dispatcher, self.router_config, headers, body, signed=bool(self.secret))

    def refused(self, headers: HeaderItems, body: bytes) -> tuple[int, dict[str, Any]] | None:
        """``(401, ...)`` when a secret is set and the signature does not hold, else None."""
        if not self.secret:
            return None
        try:
            verify_signature(headers, body, self.secret)
        except SignatureError as exc:
            logger.warning("webhook refused delivery=%s: %s",
                           header(headers, "X-GitHub-Delivery")[:MAX_DELIVERY_ID], exc)
            return 401, {"error": "invalid signature"}
        return None

    def wsgi(self, app: WsgiApp) -> WsgiApp:
        """Wrap a WSGI app so ``POST`` :data:`WEBHOOK_PATH` is answered here; every other
        request (a ``GET`` of the path too: Flask's 405) goes to ``app``. A request whose
        signature holds is an ack in hand for the dispatcher's acks-first pause (from
        the check until its response is closed); a refused one is not.

        Args:
            app: the WSGI app (``flask_app.wsgi_app``).

        Returns:
            The wrapped WSGI app.
        """
        acks = self.dispatcher.acks

        def serve(environ: dict[str, Any], start_response: Callable[..., Any]
                  ) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != WEBHOOK_PATH or environ.get("REQUEST_METHOD") != "POST":
                return app(environ, start_response)
            length = _content_length(environ)
            if length is None or length > self.max_body:
                return _respond(start_response, *(
                    (400, {"error": "the Content-Length is not a number"}) if length is None
                    else (413, {"error": "the body is larger than GitHub sends"})))
            headers = EnvironHeaders(environ)
            body = environ["wsgi.input"].read(length)
            refused = self.refused(headers, body)
            if refused is not None:
                return _respond(start_response, *refused)
            acks.enter()
            try:
                answer = _receive(self.dispatcher, self.router_config, headers, body,
                                  signed=bool(self.secret))
                return acks.leave_on_close(_respond(start_response, *answer))
            except BaseException:
                acks.leave()
                raise

        return serve


def _respond(start_response: Callable[..., Any], code: int, doc: Mapping[str, Any]
             ) -> list[bytes]:
    payload = _json_body(doc)
    start_response(f"{code} {HTTPStatus(code).phrase}",
                   [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


def webhook_blueprint(dispatcher: Dispatcher, router_config: RouterConfig, *,
                      secret: str | None, insecure: bool = False) -> Blueprint:
    """The GitHub webhook endpoint as a Flask route (the same :class:`WebhookEndpoint`).

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
    endpoint = WebhookEndpoint(dispatcher, router_config, secret=secret, insecure=insecure)
    bp = Blueprint("loopgate_github", __name__)

    @bp.post(WEBHOOK_PATH)
    def github_webhook() -> Response:
        code, doc = endpoint.answer(request.headers, request.get_data(cache=False))
        return _answer(code, **doc)

    return bp


def _content_length(environ: Mapping[str, Any]) -> int | None:
    """The body's length in bytes (waitress sets it after de-chunking too): 0 when absent
    (a request with neither a length nor chunking has no body, RFC 9112 §6.3); None when
    it is not a number."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or "0")
    except ValueError:
        return None
    return length if length >= 0 else None


def _json_body(doc: Mapping[str, Any]) -> bytes:
    """The bytes Flask's ``jsonify`` writes (sorted keys, compact, a final newline)."""
    return (json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")


def _receive(dispatcher: Dispatcher, router_config: RouterConfig, headers: HeaderItems,
             body: bytes, *, signed: bool) -> tuple[int, dict[str, Any]]:
    try:
        delivery = parse_delivery(headers, body)
    except PayloadError as exc:
        logger.warning("webhook bad delivery: %s", exc)
        return 400, {"error": str(exc)}
    try:
        if signed:  # only GitHub can sign: its installation id saves a lookup (issue 9 §2)
            _learn_installation(dispatcher, delivery.data)
        routed = route(delivery, router_config)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # Signed but malformed (e.g. a comment id that is not a number): the sender's fault.
        logger.warning("delivery=%s source=github kind=%s result=refused reason=bad-payload "
                       "error=%s", delivery.delivery_id, delivery.route_key, type(exc).__name__)
        return 400, {"error": f"malformed {delivery.route_key} payload"}
    if isinstance(routed, Dropped):
        logger.info("delivery=%s source=github kind=%s result=dropped reason=%s",
                    delivery.delivery_id, delivery.route_key, routed.reason)
        return 200, {"status": "ignored", "reason": routed.reason}
    try:
        kept = dispatcher.inbox.put(delivery.delivery_id, delivery.event, body)
    except InboxError as exc:  # not kept, so no 2xx: GitHub marks it failed, to redeliver
        logger.error("delivery=%s source=github kind=%s result=refused reason=inbox-error "
                     "error=%s", delivery.delivery_id, routed.event, exc)
        return 503, {"error": "the delivery could not be stored"}
    if kept in (HANDLED, HELD) or (kept == OWED and dispatcher.in_flight(delivery.delivery_id)):
        logger.info("delivery=%s source=github kind=%s result=duplicate reason=delivery-id",
                    delivery.delivery_id, delivery.route_key)
        return 200, {"status": "duplicate"}
    if not dispatcher.offer(routed):
        # Kept in the inbox all the same: the replay queues it once there is room.
        logger.warning("delivery=%s source=github kind=%s kept for the replay: the "
                       "dispatcher's queue is full or stopping", delivery.delivery_id,
                       routed.event)
    return 202, {"status": "queued", "kind": routed.event}


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
