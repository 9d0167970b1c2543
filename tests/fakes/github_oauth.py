"""The fake GitHub's web sign-in (issue 22 §2): the web application flow of GitHub Apps and
OAuth apps, answered on the fake's root as github.com answers it (``webUrl`` = the fake's
URL).

What it does like GitHub (docs.github.com "Generating a user access token for a GitHub
App", "Authorizing OAuth apps", "Troubleshooting authorization request errors",
"Troubleshooting OAuth app access token request errors"; platform-facts F6):

* ``GET /login/oauth/authorize?client_id&redirect_uri&state``: an unknown ``client_id`` is
  a 404 page. A ``redirect_uri`` other than the registered Callback URL sends the browser to
  the registered one with ``error=redirect_uri_mismatch``. Nobody signed in to github.com
  (:meth:`FakeGitHub.oauth_as` None): GitHub's sign-in form (200 HTML), nothing else
  happens. The person declines: 302 to the callback with ``error=access_denied``,
  ``error_description`` and ``error_uri``; they authorize: 302 with ``code`` (20 hex
  characters, good for 10 minutes and for one exchange). ``state`` comes back unchanged
  whenever it was given.
* ``POST /login/oauth/access_token`` (form or JSON body: ``client_id``, ``client_secret``,
  ``code``, optional ``redirect_uri``): errors are answered with status **200** and an
  ``error`` document — ``incorrect_client_credentials``, ``redirect_uri_mismatch``,
  ``bad_verification_code`` (unknown, expired or already used code) — as JSON with
  ``Accept: application/json``, else form-encoded. A success is ``{access_token:
  "ghu_…", expires_in: 28800, refresh_token: "ghr_…", refresh_token_expires_in: 15897600,
  scope: "", token_type: "bearer"}`` for a GitHub App with expiring user tokens (the
  default), ``{access_token, scope, token_type}`` otherwise.
* The token is a user token: ``GET /user`` answers its owner, and a private repository
  the owner cannot read answers 404 to it (:meth:`FakeGitHub.set_private`).
* ``DELETE /applications/{client_id}/token`` (Basic auth with the client id and secret,
  ``{"access_token"}``) revokes it: 204, then 401 Bad credentials wherever it is used.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import parse_qs, urlencode

__all__ = ["FakeOAuth", "OAUTH_PATHS", "AUTHORIZE", "ACCESS_TOKEN", "REVOKE", "CODE_SECONDS"]

AUTHORIZE = "/login/oauth/authorize"
ACCESS_TOKEN = "/login/oauth/access_token"
OAUTH_PATHS = frozenset({AUTHORIZE, ACCESS_TOKEN})
#: ``DELETE /applications/{client_id}/token`` (on the API): Basic auth, not a token.
REVOKE = re.compile(r"^/applications/(?P<client_id>[^/]+)/token/?$")
#: A code's lifetime (GitHub: 10 minutes).
CODE_SECONDS = 600
_TROUBLE = "https://docs.github.com/apps/managing-oauth-apps/"
_ERRORS = {
    "access_denied": ("The user has denied your application access.",
                      _TROUBLE + "troubleshooting-authorization-request-errors/#access-denied"),
    "redirect_uri_mismatch": (
        "The redirect_uri MUST match the registered callback URL for this application.",
        _TROUBLE + "troubleshooting-authorization-request-errors/#redirect-uri-mismatch"),
    "incorrect_client_credentials": (
        "The client_id and/or client_secret passed are incorrect.",
        _TROUBLE + "troubleshooting-oauth-app-access-token-request-errors/"
                   "#incorrect-client-credentials"),
    "bad_verification_code": (
        "The code passed is incorrect or expired.",
        _TROUBLE + "troubleshooting-oauth-app-access-token-request-errors/"
                   "#bad-verification-code"),
}


class FakeOAuth:
    """The sign-in state of one :class:`tests.fakes.github.FakeGitHub`.

    Attributes:
        clients: client id -> ``{secret, callback, expiring}``.
        user: who is signed in to github.com in the browser (None: nobody).
        approve: whether that person authorizes the app.
        codes: code -> ``{client_id, login, redirect_uri, expires, used}``.
        issued: the tokens minted, in order (``(login, token)``).
        revoked: the tokens revoked (:meth:`revoke`), in order.
    """

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self.clients: dict[str, dict[str, Any]] = {}
        self.user: str | None = None
        self.approve = True
        self.codes: dict[str, dict[str, Any]] = {}
        self.issued: list[tuple[str, str]] = []
        self.revoked: list[str] = []

    def answer(self, method: str, path: str, query: Mapping[str, str], body: bytes,
               headers: Any) -> Any:
        """The response to one request on :data:`OAUTH_PATHS` (the caller holds the
        fake's lock)."""
        from tests.fakes.github import _Response

        if path == AUTHORIZE and method == "GET":
            return self._authorize(query)
        if path == ACCESS_TOKEN and method == "POST":
            form = _form(body, str(headers.get("Content-Type") or ""))
            doc = self._exchange(form)
            if "json" in str(headers.get("Accept") or ""):
                return _Response(200, doc)
            return _Response(200, raw=urlencode(doc).encode(), headers={
                "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
        return _Response(404, {"message": "Not Found"})

    def revoke(self, client_id: str, authorization: str, body: bytes) -> Any:
        """``DELETE /applications/{client_id}/token`` with Basic authentication (the
        client id and secret) and ``{"access_token"}``: 204 and the token stops working
        (docs.github.com REST "Delete an app token"). Credentials that are not the app's,
        or a token it did not issue, are refused with 404 Not Found (the fake's
        simplification: nothing is revoked either way GitHub refuses)."""
        from tests.fakes.github import _Response

        client = self.clients.get(client_id)
        scheme, _, encoded = authorization.partition(" ")
        try:
            given = base64.b64decode(encoded).decode() if scheme.lower() == "basic" else ""
            token = str(json.loads(body or b"{}").get("access_token") or "")
        except (ValueError, AttributeError):
            given, token = "", ""
        issued = {t for _, t in self.issued}
        if client is None or given != f"{client_id}:{client['secret']}" or token not in issued:
            return _Response(404, {"message": "Not Found",
                                   "documentation_url": "https://docs.github.com/rest"})
        self.fake.user_tokens.pop(token, None)
        self.revoked.append(token)
        return _Response(204)

    # -- the authorize page --------------------------------------------------------------
    def _authorize(self, query: Mapping[str, str]) -> Any:
        client = self.clients.get(query.get("client_id", ""))
        if client is None:
            return _page(404, "Page not found")
        callback = str(client["callback"])
        state = {"state": query["state"]} if "state" in query else {}
        given = query.get("redirect_uri")
        if given is not None and given != callback:
            return _redirect(callback, {**_error("redirect_uri_mismatch"), **state})
        if self.user is None:
            return _page(200, "Sign in to GitHub")
        if not self.approve:
            return _redirect(callback, {**_error("access_denied"), **state})
        code = secrets.token_hex(10)
        self.codes[code] = {"client_id": query["client_id"], "login": self.user,
                            "redirect_uri": given, "expires": time.monotonic() + CODE_SECONDS,
                            "used": False}
        return _redirect(callback, {"code": code, **state})

    # -- the token exchange --------------------------------------------------------------
    def _exchange(self, form: Mapping[str, str]) -> dict[str, Any]:
        client = self.clients.get(form.get("client_id", ""))
        if client is None or not secrets.compare_digest(str(client["secret"]),
                                                        form.get("client_secret", "")):
            return _error("incorrect_client_credentials")
        if "redirect_uri" in form and form["redirect_uri"] != client["callback"]:
            return _error("redirect_uri_mismatch")
        grant = self.codes.get(form.get("code", ""))
        if (grant is None or grant["used"] or grant["client_id"] != form["client_id"]
                or grant["expires"] <= time.monotonic()):
            return _error("bad_verification_code")
        grant["used"] = True  # one exchange per code
        return self._mint(str(grant["login"]), bool(client["expiring"]))

    def _mint(self, login: str, expiring: bool) -> dict[str, Any]:
        token = "ghu_" + secrets.token_hex(18)
        self.fake.user_tokens[token] = login
        self.issued.append((login, token))
        doc: dict[str, Any] = {"access_token": token, "scope": "", "token_type": "bearer"}
        if expiring:
            doc.update(expires_in=28800, refresh_token="ghr_" + secrets.token_hex(38),
                       refresh_token_expires_in=15897600)
        return doc


def _form(body: bytes, content_type: str) -> dict[str, str]:
    if "json" in content_type:
        try:
            doc = json.loads(body or b"{}")
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}
    return {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def _error(code: str) -> dict[str, str]:
    description, uri = _ERRORS[code]
    return {"error": code, "error_description": description, "error_uri": uri}


def _redirect(callback: str, params: Mapping[str, str]) -> Any:
    from tests.fakes.github import _Response

    joiner = "&" if "?" in callback else "?"
    return _Response(302, raw=b"", headers={"Location": callback + joiner + urlencode(params),
                                            "Content-Type": "text/html; charset=utf-8"})


def _page(status: int, title: str) -> Any:
    from tests.fakes.github import _Response

    html = (f"<!doctype html><html><head><title>{escape(title)} · GitHub</title></head>"
            f"<body><h1>{escape(title)}</h1></body></html>")
    return _Response(status, raw=html.encode(), headers={
        "Content-Type": "text/html; charset=utf-8"})
