"""The details page's routes (issue 22 §2): sign in with GitHub and
``GET /items/<owner>/<repo>/<n>``.

* ``GET /auth/login?next=PATH`` — a fresh ``state`` sealed in a 10-minute cookie bound to
  this browser, then 302 to GitHub's ``/login/oauth/authorize`` (platform-facts F6).
* ``GET /auth/callback?code&state`` — GitHub's answer: ``error`` (e.g. ``access_denied``)
  is a 403; a ``state`` that is not this browser's is refused; the code is traded for the
  person's token, ``GET /user`` names them, and a sealed session cookie (HttpOnly,
  SameSite=Lax, Secure over https, expiring) is set; then 302 back to ``next`` (a local
  path only: no open redirect).
* ``POST /auth/logout`` — revokes the session's token at GitHub (best effort) and drops the
  session cookie.
* ``GET /items/<owner>/<repo>/<n>[?pending=1]`` — not signed in: 302 to ``/auth/login``
  (a JSON request: 401 JSON). A person whose token cannot read the repository, or a
  repository that does not exist: the same 403, nothing of the item. GitHub not answering
  the check: 503 (fail closed). A readable repository without such a loopgate item: 404.
  A stored item that cannot be read (:class:`engine.errors.UnreadableItemError`): 500
  naming the item and the part at fault, never a stored value (:func:`unreadable_item`).
  Else the page (:func:`bot.itempage.view.render_page`), or its model as JSON for
  ``Accept: application/json``.

Every answer carries the page's Content-Security-Policy, ``X-Content-Type-Options:
nosniff``, ``Referrer-Policy: no-referrer`` (the callback's ``code`` never leaves in a
Referer) and ``Cache-Control: no-store``. Without ``server.signIn`` every route answers 404.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from flask import Blueprint, Flask, Response, jsonify, redirect, request
from werkzeug.wrappers import Response as BaseResponse

from bot.itempage import view
from bot.itempage.access import (
    SESSION,
    STATE,
    STATE_SECONDS,
    Gatekeeper,
    GitHubUnavailable,
    GitHubUsers,
    Session,
    SignIn,
    SignInRefused,
    TokenRejected,
    Verdict,
    safe_next,
)
from engine.errors import UnreadableItemError, WorkItemRefError
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["register_item_pages", "item_blueprint", "secure_headers", "refusal",
           "unreadable_item", "wants_json", "NOT_CONFIGURED"]

logger = logging.getLogger(__name__)

NOT_CONFIGURED = ("Sign-in with GitHub is not configured on this loopgate (server.signIn), "
                  "so it shows no details pages.")
_DENIED = ("You cannot see this page: sign in with a GitHub account that can read the "
           "repository.")
_UNAVAILABLE = "GitHub did not answer while checking your access. Try again in a minute."
_NO_ITEM = "loopgate has no work item here."
_TRUE = frozenset({"1", "true", "yes", "on"})
#: What is kept of a callback's ``error`` when it is shown (GitHub's codes are snake_case).
_ERROR_CODE = re.compile(r"[^a-z_]")


def register_item_pages(app: Flask, services: Services, *,
                        environ: Mapping[str, str] | None = None,
                        users: GitHubUsers | None = None) -> Gatekeeper | None:
    """Add the details page, the sign-in routes and ``POST /api/simulate`` to ``app`` when
    ``server.publicUrl`` or ``server.signIn`` is configured (``build_wsgi_app``).

    Args:
        app: the Flask app of ``serve``.
        services: the wired :class:`bot.services.Services`.
        environ: where the secrets' variables are read (default ``os.environ``).
        users: the GitHub calls (tests).

    Returns:
        The :class:`~bot.itempage.access.Gatekeeper`, or None (routes answering 404, or
        none added when neither key is set).

    Raises:
        ConfigError: sign-in is configured and a secret's variable is unset or too short,
            or ``server.publicUrl`` is unset.
    """
    from bot.itempage.simulate_api import simulate_blueprint

    signin = SignIn.from_config(services.config, environ)
    if signin is None and not services.config.section("server").get("publicUrl"):
        return None
    gate = Gatekeeper(signin, users) if signin is not None else None
    app.register_blueprint(item_blueprint(services, gate))
    app.register_blueprint(simulate_blueprint(services, gate))
    return gate


def secure_headers(response: BaseResponse) -> BaseResponse:
    """The headers every answer of these routes carries (see the module's docstring)."""
    response.headers["Content-Security-Policy"] = view.CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    response.vary.update(("Accept", "Cookie"))
    return response


def wants_json() -> bool:
    """True when the request prefers ``application/json`` over HTML."""
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def refusal(status: int, title: str, message: str, *, as_json: bool) -> BaseResponse:
    """A status page (:func:`bot.itempage.view.render_status_page`), or ``{"error":
    message}`` for a JSON request; nothing of any item either way."""
    if as_json:
        response = jsonify({"error": message})
    else:
        response = Response(view.render_status_page(status, title, message),
                            mimetype="text/html")
    response.status_code = status
    if status == 503:
        response.headers["Retry-After"] = "30"
    return response


def unreadable_item(error: UnreadableItemError, where: str, *,
                    as_json: bool) -> BaseResponse:
    """The answer when the stored item asked about cannot be read: 500, a status page or
    ``{"error": message}``, the message naming the item's stored key and the part at
    fault (:attr:`UnreadableItemError.detail`, which never quotes a stored value); one
    warning line (``<where>: <error>``) for the operator.

    Why 500: the request is fine (not a 4xx: nothing the person sends differently would
    help) and the stored data is not, until an operator repairs it (``loopgate check``
    names the item and the part) — so not 503 either, which says "temporarily" and comes
    with ``Retry-After``: asking again would only fail again.
    """
    logger.warning("%s: %s", where, error)
    return refusal(500, "Unreadable work item",
                   f"loopgate cannot read its stored work item {error.key}: {error.detail}; "
                   "an operator must repair it (loopgate check names it)", as_json=as_json)


def _cookie(response: BaseResponse, gate: Gatekeeper, name: str, value: str, age: int) -> None:
    response.set_cookie(gate.cookie(name), value, max_age=age, path="/",
                        secure=gate.signin.secure, httponly=True, samesite="Lax")


def _drop_cookie(response: BaseResponse, gate: Gatekeeper, name: str) -> None:
    response.delete_cookie(gate.cookie(name), path="/", secure=gate.signin.secure,
                           httponly=True, samesite="Lax")


def sign_in_needed(gate: Gatekeeper, *, as_json: bool) -> BaseResponse:
    """302 to ``/auth/login?next=<this page>``; a JSON request gets 401 JSON naming it."""
    query = request.query_string.decode("latin-1")
    here = request.path + (f"?{query}" if query else "")
    target = f"{gate.signin.public_url}/auth/login?next={quote(here, safe='/')}"
    if as_json:
        response = jsonify({"error": "sign in with GitHub first", "signIn": target})
        response.status_code = 401
        return response
    return redirect(target, 302)


def current_session(gate: Gatekeeper) -> Session | None:
    """The request's session, or None."""
    return gate.session(request.cookies.get(gate.cookie(SESSION)))


def access_refusal(gate: Gatekeeper, session: Session, owner: str, repo: str, *,
                   as_json: bool) -> BaseResponse | None:
    """None when ``session`` may read ``owner/repo``; else the answer: 403 (cannot read,
    or no such repository), 503 (GitHub did not answer), or sign in again (token
    refused)."""
    verdict = gate.verdict(session, owner, repo)
    if verdict is Verdict.READ:
        return None
    if verdict is Verdict.DENIED:
        return refusal(403, "Not allowed", _DENIED, as_json=as_json)
    if verdict is Verdict.UNAVAILABLE:
        return refusal(503, "GitHub unavailable", _UNAVAILABLE, as_json=as_json)
    response = sign_in_needed(gate, as_json=as_json)
    _drop_cookie(response, gate, SESSION)
    return response


def _item_ref(owner: str, repo: str, number: int) -> WorkItemRef | None:
    if repo in {".", ".."}:  # never a repository name; never a path to send to GitHub
        return None
    try:
        return WorkItemRef.parse(f"{owner}/{repo}#{number}")
    except WorkItemRefError:
        return None


def item_blueprint(services: Services, gate: Gatekeeper | None) -> Blueprint:
    """The blueprint of ``/auth/*`` and ``/items/...`` (``gate`` None: all 404).

    Args:
        services: the wired services (``store``, ``graph`` for the page's model).
        gate: sessions and access, or None when sign-in is not configured.
    """
    bp = Blueprint("itempage", __name__)
    bp.after_request(secure_headers)
    flow = _SignInFlow(gate) if gate is not None else None

    @bp.get("/auth/login")
    def login() -> BaseResponse:
        return flow.start() if flow else _not_configured()

    @bp.get("/auth/callback")
    def callback() -> BaseResponse:
        return flow.finish() if flow else _not_configured()

    # POST: a link or a redirect from another site cannot sign anyone out (the session
    # cookie is SameSite=Lax, so a cross-site POST arrives without it).
    @bp.post("/auth/logout")
    def logout() -> BaseResponse:
        return flow.logout() if flow else _not_configured()

    @bp.get("/items/<owner>/<repo>/<int:number>")
    def item(owner: str, repo: str, number: int) -> BaseResponse:
        if gate is None:
            return _not_configured()
        return _item_page(services, gate, owner, repo, number)

    return bp


def _not_configured() -> BaseResponse:
    return refusal(404, "Not found", NOT_CONFIGURED, as_json=wants_json())


def _item_page(services: Services, gate: Gatekeeper, owner: str, repo: str,
               number: int) -> BaseResponse:
    as_json = wants_json()
    ref = _item_ref(owner, repo, number)
    if ref is None:
        return refusal(404, "Not found", _NO_ITEM, as_json=as_json)
    session = current_session(gate)
    if session is None:
        return sign_in_needed(gate, as_json=as_json)
    refused = access_refusal(gate, session, ref.owner, ref.repo, as_json=as_json)
    if refused is not None:
        return refused
    try:
        model = view.page_model(services, ref)
    except UnreadableItemError as exc:
        return unreadable_item(exc, "item page", as_json=as_json)
    if model is None:
        return refusal(404, "Not found", _NO_ITEM, as_json=as_json)
    if as_json:
        return jsonify(model)
    pending = request.args.get("pending", "").lower() in _TRUE
    html = view.render_page(model, pending_only=pending, viewer=session.login)
    return Response(html, mimetype="text/html")


class _SignInFlow:
    """The three ``/auth`` routes over one :class:`Gatekeeper`."""

    def __init__(self, gate: Gatekeeper) -> None:
        self.gate = gate

    def start(self) -> BaseResponse:
        """``/auth/login``: seal a fresh state (and ``next``) in a cookie, go to GitHub."""
        state = secrets.token_urlsafe(32)
        back = safe_next(request.args.get("next")) or ""
        response = redirect(self.gate.users.authorize_url(state), 302)
        _cookie(response, self.gate, STATE,
                self.gate.sealer.seal(STATE, {"s": state, "n": back}), STATE_SECONDS)
        return response

    def finish(self) -> BaseResponse:
        """``/auth/callback``: check GitHub's answer and this browser's state, trade the
        code, set the session."""
        error = request.args.get("error")
        if error:
            return self._refused(error)
        started = self.gate.sealer.open(STATE, request.cookies.get(self.gate.cookie(STATE)),
                                        STATE_SECONDS)
        if started is None:
            return self._end(refusal(400, "Sign-in expired", "This sign-in expired or was "
                                     "started in another browser: sign in again.",
                                     as_json=False))
        if not hmac.compare_digest(str(started.get("s", "")).encode(),
                                   request.args.get("state", "").encode()):
            logger.warning("sign-in: a callback's state did not match its browser's")
            return self._end(refusal(403, "Sign-in refused", "The sign-in could not be "
                                     "verified for this browser: sign in again.",
                                     as_json=False))
        code = request.args.get("code", "")
        if not code:
            return self._end(refusal(400, "Sign-in incomplete", "GitHub sent no code: "
                                     "sign in again.", as_json=False))
        return self._signed_in(code, safe_next(str(started.get("n") or "")))

    def _signed_in(self, code: str, back: str | None) -> BaseResponse:
        try:
            grant = self.gate.users.exchange(code)
            login = self.gate.users.login(grant.token)
        except SignInRefused as exc:
            logger.info("sign-in: GitHub refused the code (%s)", exc.code)
            return self._end(refusal(403, "Sign-in refused",
                                     f"GitHub refused the sign-in ({exc.code}).",
                                     as_json=False))
        except TokenRejected:
            return self._end(refusal(403, "Sign-in refused", "GitHub refused the new "
                                     "sign-in's token.", as_json=False))
        except GitHubUnavailable as exc:
            logger.warning("sign-in: %s", exc)
            return self._end(refusal(503, "GitHub unavailable", "GitHub did not answer "
                                     "while signing you in. Try again in a minute.",
                                     as_json=False))
        _, sealed, age = self.gate.new_session(login, grant)
        logger.info("sign-in: %s signed in", login)
        if back:
            response = redirect(f"{self.gate.signin.public_url}{back}", 302)
        else:
            response = Response(view.render_status_page(200, "Signed in",
                                                        f"Signed in as @{login}."),
                                mimetype="text/html")
        _cookie(response, self.gate, SESSION, sealed, age)
        return self._end(response)

    def _refused(self, error: str) -> BaseResponse:
        message = ("You did not authorize loopgate on GitHub, so it cannot show you this "
                   "page." if error == "access_denied"
                   else f"GitHub refused the sign-in ({_ERROR_CODE.sub('', error)[:60]}).")
        return self._end(refusal(403, "Sign-in refused", message, as_json=False))

    def _end(self, response: BaseResponse) -> BaseResponse:
        _drop_cookie(response, self.gate, STATE)  # a state is good for one callback
        return response

    def logout(self) -> BaseResponse:
        """``POST /auth/logout``: revoke the session's token at GitHub (best effort) and drop the
        session cookie."""
        session = current_session(self.gate)
        if session is not None:
            revoked = self.gate.sign_out(session)
            logger.info("sign-out: %s signed out (token revoked: %s)", session.login,
                        "yes" if revoked else "no")
        response = Response(view.render_status_page(200, "Signed out", "You are signed out "
                                                    "of loopgate."), mimetype="text/html")
        _drop_cookie(response, self.gate, SESSION)
        return response
