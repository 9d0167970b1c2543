"""``POST /api/simulate`` (issue 24 §4): ``loopgate simulate`` over HTTP, for people who
can read the item's repository (signed in with GitHub, as for the details page).

Request (``Content-Type: application/json``)::

    {"item": "acme/widgets#7", "approve": "human-approval", "as": "bob",
     "outcome": "approved"}                      # what if bob approves?
    {"item": "acme/widgets#7", "push": {"12": "0123abc"}}   # what if PR 12 got 0123abc?
    {"item": "acme/widgets#7", "codeownersChange": ["web/app.ts"]}  # who would own it?

``codeownersChange`` (a list of repository paths, as ``--codeowners-change``) goes alone
or with ``approve`` or ``push``: the pull requests are taken to change those files too,
and the answer's ``codeOwners`` says who owns them at the gate.

``as`` defaults to the signed-in person; ``outcome`` to ``approved``
(:data:`engine.simulate.DECISION_WORDS`). The answer is
:meth:`engine.simulate.Simulation.to_json` — the document ``loopgate simulate --format
json`` prints — from the same engine code on a copy of the item's state: nothing is written
to the store, the outbox or GitHub.

Answers: 200 the simulation; 400 a body that does not read (one line, ``{"error"}``); 401
not signed in; 403 cannot read the repository (or it does not exist), or an ``Origin``
that is not this server; 404 no started work item there (``code``: ``not-started``); 413
a body over 16 KiB; 415 not JSON; 500 the stored item cannot be read
(:class:`engine.errors.UnreadableItemError`: the request is fine, the stored data is not,
and asking again will not mend it — as the details page answers,
:func:`bot.itempage.routes.unreadable_item`; the ``error`` names the item and the part at
fault, never a stored value); 503 GitHub did not answer (the access check or a read the
rules need; fail closed).

Whose answer: ``as`` another person is simulated only for people with write access to
the repository (GitHub's ``permissions.push``/``maintain``/``admin`` for the signed-in
person); a reader may ask only about their own answer (403 otherwise). The rules read GitHub
with loopgate's own token — team memberships among them — so an answer for any login would
let every reader of a public repository learn who is in a team. Each person may ask
:data:`PER_MINUTE` times a minute (429 with ``Retry-After`` past it): every answer spends
GitHub requests of loopgate's budget.

Cross-site requests: the session cookie is ``SameSite=Lax``, so a browser never sends it
with another site's POST; and only ``application/json`` bodies are taken, which a
cross-site form cannot send and a cross-site script can only send after a CORS preflight
this server never answers. A request naming another ``Origin`` is refused as well.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flask import Blueprint, jsonify, request
from werkzeug.wrappers import Response as BaseResponse

from bot.itempage.access import Gatekeeper, Session
from bot.itempage.routes import (
    NOT_CONFIGURED,
    access_refusal,
    current_session,
    refusal,
    secure_headers,
    sign_in_needed,
    unreadable_item,
)
from engine import simulate
from engine.errors import ClaimRefused, LoopgateError, UnreadableItemError, WorkItemRefError
from engine.outcomes import APPROVED
from engine.ports import TrackerError
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["simulate_blueprint", "SimulateRequest", "parse_request", "MAX_BODY", "PER_MINUTE",
           "Throttle"]

#: The surface a simulated decision is made on (its echo says "from the web").
WEB_VIA = "web"

#: The largest body taken (bytes).
MAX_BODY = 16 * 1024
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


#: Simulations one signed-in person may ask for per minute (each spends GitHub requests).
PER_MINUTE = 20


class Throttle:
    """At most ``limit`` requests per person in any ``window`` seconds (in memory, per
    process; thread-safe).

    Args:
        limit: requests allowed per window.
        window: seconds.
        clock: monotonic seconds (tests).
    """

    def __init__(self, limit: int = PER_MINUTE, window: float = 60.0,
                 clock: Any = time.monotonic) -> None:
        self._limit = limit
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}

    def wait(self, who: str) -> float:
        """0 when ``who`` may go now (and counts the request), else the seconds until they
        may."""
        now = self._clock()
        with self._lock:
            recent = [t for t in self._seen.get(who.lower(), ()) if t > now - self._window]
            if len(recent) >= self._limit:
                self._seen[who.lower()] = recent
                return float(max(0.0, recent[0] + self._window - now))
            recent.append(now)
            self._seen[who.lower()] = recent
            if len(self._seen) > 10_000:  # forget the quiet ones
                self._seen = {k: v for k, v in self._seen.items() if v[-1] > now - self._window}
            return 0.0


class BadRequest(ValueError):
    """A body that does not read; the message is the one line answered."""


class SimulateRequest:
    """A parsed body.

    Attributes:
        ref: the work item.
        node: the gate approved ("" for a push).
        login: who decides ("" for a push).
        outcome: the decision's outcome.
        heads: ``[(pull number, sha)]`` for a push (empty for a decision).
        changes: ``codeownersChange``'s paths (issue 24 §4; empty when not asked).
    """

    def __init__(self, ref: WorkItemRef, node: str = "", login: str = "",
                 outcome: str = APPROVED, heads: list[tuple[int, str]] | None = None,
                 changes: tuple[str, ...] = ()) -> None:
        self.ref = ref
        self.node = node
        self.login = login
        self.outcome = outcome
        self.heads = heads or []
        self.changes = changes


def parse_request(body: Any, graph: Any, viewer: str) -> SimulateRequest:
    """Read a body (the module's docstring).

    Raises:
        BadRequest: one line naming the key at fault.
    """
    if not isinstance(body, Mapping):
        raise BadRequest("the body must be a JSON object")
    unknown = sorted(set(body) - {"item", "approve", "as", "outcome", "push",
                                  "codeownersChange"})
    if unknown:
        raise BadRequest(f"unknown key {unknown[0]!r} (item, approve, as, outcome, push, "
                         "codeownersChange)")
    try:
        ref = WorkItemRef.parse_any(str(body.get("item") or ""))
    except WorkItemRefError as exc:
        raise BadRequest(f"item: {exc}") from None
    changes = _changes(body.get("codeownersChange"))
    if body.get("approve") and body.get("push") or not (
            body.get("approve") or body.get("push") or changes):
        raise BadRequest("give either approve (a gate, with as and outcome) or push, "
                         "or codeownersChange")
    if body.get("push"):
        return SimulateRequest(ref, heads=_heads(body["push"]), changes=changes)
    if not body.get("approve"):
        return SimulateRequest(ref, changes=changes)
    asked = _decision(ref, body, graph, viewer)
    asked.changes = changes
    return asked


def _changes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) \
            or len(value) > 100:
        raise BadRequest("codeownersChange: expected a list of at most 100 repository paths")
    try:
        return tuple(dict.fromkeys(simulate.change_path(v) for v in value))
    except ValueError as exc:
        raise BadRequest(f"codeownersChange: {exc}") from None


def _decision(ref: WorkItemRef, body: Mapping[str, Any], graph: Any,
              viewer: str) -> SimulateRequest:
    node = body.get("approve")
    if not isinstance(node, str) or not graph.has_node(node):
        raise BadRequest(f"approve: {node!r} is not a node of the graph")
    login = body.get("as", viewer)
    login = login[1:] if isinstance(login, str) and login.startswith("@") else login
    if not isinstance(login, str) or not _LOGIN.match(login):
        raise BadRequest(f"as: {login!r} is not a GitHub login")
    outcome = body.get("outcome", APPROVED)
    if outcome not in simulate.DECISION_WORDS:
        raise BadRequest(f"outcome: {outcome!r} is not one of "
                         f"{', '.join(sorted(simulate.DECISION_WORDS))}")
    return SimulateRequest(ref, node, login, str(outcome))


def _heads(value: Any) -> list[tuple[int, str]]:
    if not isinstance(value, Mapping):
        raise BadRequest('push: expected {"PULL": "SHA", ...}')
    heads = []
    for number, sha in value.items():
        text = str(sha).strip().lower() if isinstance(sha, str) else ""
        if not str(number).isdigit() or int(number) < 1 or not _SHA.match(text):
            raise BadRequest(f"push: {number!r}: {sha!r} is not a pull request number and a "
                             "commit sha")
        heads.append((int(number), text))
    return heads


def simulate_blueprint(services: Services, gate: Gatekeeper | None,
                       throttle: Throttle | None = None) -> Blueprint:
    """The blueprint of ``POST /api/simulate`` (``gate`` None: 404).

    Args:
        services: the wired services (graph, store, ports, settings).
        gate: sessions and access, or None when sign-in is not configured.
        throttle: requests per person (default :data:`PER_MINUTE` a minute).
    """
    bp = Blueprint("simulate_api", __name__)
    limit = throttle or Throttle()
    bp.after_request(secure_headers)

    @bp.post("/api/simulate")
    def simulate_route() -> BaseResponse:
        if gate is None:
            return refusal(404, "Not found", NOT_CONFIGURED, as_json=True)
        refused = _request_refusal(gate)
        if refused is not None:
            return refused
        session = current_session(gate)
        if session is None:
            return sign_in_needed(gate, as_json=True)
        return _answer(services, gate, session, limit)

    return bp


def _request_refusal(gate: Gatekeeper) -> BaseResponse | None:
    if (request.content_length or 0) > MAX_BODY:
        return refusal(413, "Too large", f"the body is over {MAX_BODY} bytes", as_json=True)
    if request.mimetype != "application/json":
        return refusal(415, "Not JSON", "send Content-Type: application/json", as_json=True)
    origin = request.headers.get("Origin")
    if origin is not None and origin.rstrip("/").lower() != gate.signin.origin:
        return refusal(403, "Not allowed", "a request from another site", as_json=True)
    return None


def _whose_refusal(gate: Gatekeeper, session: Session,
                   asked: SimulateRequest) -> BaseResponse | None:
    # Another person's answer only for people who can write to the repository (the
    # module's docstring: the rules read team memberships with loopgate's token).
    if not asked.login or asked.login.lower() == session.login.lower():
        return None
    allowed = gate.may_write(session, asked.ref.owner, asked.ref.repo)
    if allowed is None:
        return refusal(503, "GitHub unavailable", "GitHub did not say whether you can write "
                       "to the repository; try again later", as_json=True)
    if not allowed:
        return refusal(403, "Not allowed", "only people with write access to the repository "
                       "may simulate another person's answer; leave out as, or give your own "
                       "login", as_json=True)
    return None


def _throttle_refusal(throttle: Throttle, session: Session) -> BaseResponse | None:
    seconds = throttle.wait(session.login)
    if not seconds:
        return None
    response = refusal(429, "Too many requests", f"at most {PER_MINUTE} simulations a "
                       "minute; try again shortly", as_json=True)
    response.headers["Retry-After"] = str(max(1, math.ceil(seconds)))
    return response


def _answer(services: Services, gate: Gatekeeper, session: Session,
            throttle: Throttle) -> BaseResponse:
    try:
        asked = parse_request(request.get_json(silent=True), services.graph, session.login)
    except BadRequest as exc:
        return refusal(400, "Bad request", str(exc), as_json=True)
    refused = access_refusal(gate, session, asked.ref.owner, asked.ref.repo, as_json=True)
    if refused is None:
        refused = _whose_refusal(gate, session, asked)
    if refused is None:
        refused = _throttle_refusal(throttle, session)
    if refused is not None:
        return refused
    try:
        result = _run(services, asked)
    except ClaimRefused as exc:
        response = jsonify({"error": f"loopgate has no started work item {asked.ref}",
                            "code": exc.code})
        response.status_code = 404
        return response
    except TrackerError as exc:
        return refusal(503, "GitHub unavailable", f"a read the rules need failed: {exc}",
                       as_json=True)
    except UnreadableItemError as exc:  # before LoopgateError: not the request's fault
        return unreadable_item(exc, "simulate", as_json=True)
    except LoopgateError as exc:
        return refusal(400, "Bad request", str(exc), as_json=True)
    return jsonify(result.to_json())


def _run(services: Services, asked: SimulateRequest) -> simulate.Simulation:
    if asked.node:
        return simulate.simulate_decision(services.graph, services.store, services.ports,
                                          services.settings, asked.ref, asked.login,
                                          asked.node, asked.outcome, asked.changes,
                                          via=WEB_VIA)
    if asked.heads:
        return simulate.simulate_push(services.graph, services.store, services.ports,
                                      services.settings, asked.ref, asked.heads,
                                      asked.changes)
    return simulate.simulate_changes(services.graph, services.store, services.ports,
                                     services.settings, asked.ref, asked.changes)
