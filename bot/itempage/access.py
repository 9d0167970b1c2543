"""Who may see a work item's details page: sign in with GitHub, and the person's own token
checked against the repository (issue 22 §2; platform-facts F6).

The flow is GitHub's web application flow: ``GET <webUrl>/login/oauth/authorize`` with the
client id, the redirect URI and an unguessable ``state``; GitHub sends the person back with
``code`` and the same ``state``; ``POST <webUrl>/login/oauth/access_token`` (``Accept:
application/json``) trades the code for a user token; ``GET /user`` names the person
(docs.github.com "Generating a user access token for a GitHub App"; the OAuth app flow is
the same). Access: ``GET /repos/{owner}/{repo}`` with the person's token answers 404 when
they cannot see it (platform-facts F6). A GitHub App's user token reaches what both the
person and the App can, so a repository the App is not installed on reads as not readable
(fail closed); no OAuth scope is asked for.

Where the user token lives: inside the session cookie, sealed (encrypted and signed with
Fernet: AES-128-CBC + HMAC-SHA256, keys derived from ``server.signIn.sessionSecretEnv``).
Nothing is kept in the server's memory or database, so ``serve`` replicas sharing one
PostgreSQL (issue 15) and a restarted ``serve`` honour the same sign-in, and no new table
holds tokens. The cookie is HttpOnly (no script reads it), expires with the session
(``sessionHours``, never later than the token itself), and the token is never logged or
put in a message. Signing out revokes the token at GitHub (best effort) and drops the
cookie; otherwise the token expires at GitHub (8 hours for a GitHub App's expiring user
tokens).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from urllib.parse import unquote, urlencode, urljoin, urlsplit

import requests
from cryptography.fernet import Fernet, InvalidToken

from engine.errors import ConfigError

__all__ = ["SignIn", "Sealer", "Session", "GitHubUsers", "Grant", "SignInRefused",
           "GitHubUnavailable", "TokenRejected", "AccessCache", "Verdict", "Gatekeeper",
           "safe_next", "fingerprint", "MIN_SECRET_CHARS", "STATE_SECONDS"]

logger = logging.getLogger(__name__)

#: The session secret's minimum length (characters): a short one could be guessed.
MIN_SECRET_CHARS = 32
#: How long a started sign-in may take on GitHub's page (seconds); GitHub's own codes
#: expire after 10 minutes too.
STATE_SECONDS = 600
#: Redirects GitHub answers on the REST API: 301 permanent (a renamed or transferred
#: repository), 302 and 307 temporary (docs.github.com REST "Troubleshooting" and "Best
#: practices for using the REST API": follow redirects); 308 read the same way.
_REDIRECTS = (301, 302, 307, 308)

#: Seconds any call to GitHub may take before the page answers 503.
TIMEOUT = 10.0
_API_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "loopgate"}


@dataclass(frozen=True)
class SignIn:
    """The ``server.signIn`` configuration, secrets read.

    Attributes:
        client_id: the App's (or OAuth app's) client id.
        client_secret: its client secret (from ``clientSecretEnv``; never shown).
        session_secret: the cookie key material (from ``sessionSecretEnv``; never shown).
        web_url: GitHub's web address (``https://github.com``), no trailing slash.
        api_url: the REST base (``github.apiUrl``), no trailing slash.
        public_url: ``server.publicUrl``, no trailing slash.
        session_seconds: how long a sign-in lasts.
        access_cache_seconds: how long a can-read answer is reused.
    """

    client_id: str
    client_secret: str = field(repr=False)
    session_secret: str = field(repr=False)
    web_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    public_url: str = ""
    session_seconds: float = 8 * 3600.0
    access_cache_seconds: float = 60.0

    @property
    def redirect_uri(self) -> str:
        """``<publicUrl>/auth/callback``: the App's registered Callback URL."""
        return f"{self.public_url}/auth/callback"

    @property
    def secure(self) -> bool:
        """True when people reach loopgate over https: cookies are then ``Secure``."""
        return self.public_url.lower().startswith("https://")

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` of :attr:`public_url` (what browsers send as Origin)."""
        parts = urlsplit(self.public_url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    @classmethod
    def from_config(cls, config: Any, environ: Mapping[str, str] | None = None
                    ) -> SignIn | None:
        """Read ``server.signIn`` of a :class:`bot.config.Config`.

        Returns:
            None when sign-in is not configured (no ``server.signIn.clientId``).

        Raises:
            ConfigError: ``server.publicUrl`` is unset, or an environment variable it names
                is unset or (the session secret) shorter than :data:`MIN_SECRET_CHARS`; the
                message names the key or variable, never a value.
        """
        env = os.environ if environ is None else environ
        server = config.section("server")
        section = server.get("signIn") or {}
        if not section.get("clientId"):
            return None
        public = str(server.get("publicUrl") or "").rstrip("/")
        if not public:
            raise ConfigError("server.signIn needs server.publicUrl: GitHub sends people "
                              "back to <publicUrl>/auth/callback")
        secret = _env(env, str(section["clientSecretEnv"]), "server.signIn.clientSecretEnv")
        key = _env(env, str(section["sessionSecretEnv"]), "server.signIn.sessionSecretEnv")
        if len(key) < MIN_SECRET_CHARS:
            raise ConfigError(f"the session secret in {section['sessionSecretEnv']} is "
                              f"shorter than {MIN_SECRET_CHARS} characters: use a random one "
                              "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
        github = config.section("github")
        return cls(str(section["clientId"]), secret, key,
                   str(section.get("webUrl") or "https://github.com").rstrip("/"),
                   str(github.get("apiUrl") or "https://api.github.com").rstrip("/"), public,
                   float(section.get("sessionHours") or 8) * 3600.0,
                   float(section.get("accessCacheSeconds", 60)))


def _env(env: Mapping[str, str], name: str, key: str) -> str:
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"sign-in is configured (server.signIn) but the environment "
                          f"variable {name} ({key}) is not set")
    return value


class Sealer:
    """Encrypts and signs small JSON documents for cookies (Fernet), one key per purpose
    derived from the session secret, so a sealed sign-in state never opens as a session.

    Args:
        secret: the session secret.
    """

    def __init__(self, secret: str) -> None:
        self._secret = secret.encode("utf-8")
        self._keys: dict[str, Fernet] = {}

    def _fernet(self, purpose: str) -> Fernet:
        if purpose not in self._keys:
            digest = hmac.new(self._secret, f"loopgate {purpose}".encode(),
                              hashlib.sha256).digest()
            self._keys[purpose] = Fernet(base64.urlsafe_b64encode(digest))
        return self._keys[purpose]

    def seal(self, purpose: str, document: Mapping[str, Any]) -> str:
        """The sealed text of ``document`` (ASCII, cookie-safe)."""
        data = json.dumps(dict(document), separators=(",", ":")).encode("utf-8")
        return self._fernet(purpose).encrypt(data).decode("ascii")

    def open(self, purpose: str, text: str | None, max_age: float) -> dict[str, Any] | None:
        """The document sealed for ``purpose`` no more than ``max_age`` seconds ago; None
        when ``text`` is missing, forged, sealed for another purpose or too old."""
        if not text:
            return None
        try:
            data = self._fernet(purpose).decrypt(text.encode("ascii"), ttl=int(max_age))
            document = json.loads(data)
        except (InvalidToken, UnicodeError, ValueError):
            return None
        return document if isinstance(document, dict) else None


@dataclass(frozen=True)
class Session:
    """A signed-in person.

    Attributes:
        login: their GitHub login (as ``GET /user`` spells it).
        token: their user token (never shown).
        expires: when the session ends (epoch seconds).
    """

    login: str
    token: str = field(repr=False)
    expires: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The sealed cookie's document."""
        return {"l": self.login, "t": self.token, "x": self.expires}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], now: float) -> Session | None:
        """The session in a cookie document; None when malformed or expired at ``now``."""
        login, token, expires = doc.get("l"), doc.get("t"), doc.get("x")
        if not (isinstance(login, str) and login and isinstance(token, str) and token
                and isinstance(expires, (int, float))) or expires <= now:
            return None
        return cls(login, token, float(expires))


class SignInRefused(Exception):
    """GitHub refused the sign-in (its ``error`` code, e.g. ``access_denied``,
    ``bad_verification_code``, ``incorrect_client_credentials``)."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(f"{code}: {description}" if description else code)
        self.code = code
        self.description = description


class GitHubUnavailable(Exception):
    """GitHub did not answer (network, 5xx, a rate limit): fail closed, 503."""


class TokenRejected(Exception):
    """GitHub no longer accepts the person's token (401): they must sign in again."""


@dataclass(frozen=True)
class Grant:
    """A user token from the code exchange: ``expires_in`` seconds (None: no expiry)."""

    token: str = field(repr=False)
    expires_in: float | None = None


class GitHubUsers:
    """The calls made with a person's credentials (never loopgate's own).

    Args:
        signin: the configuration.
        http: the ``requests`` module or a session-like object with ``request``.
    """

    def __init__(self, signin: SignIn, http: Any = requests) -> None:
        self._signin = signin
        self._http = http

    def authorize_url(self, state: str) -> str:
        """Where to send the person: ``<webUrl>/login/oauth/authorize?client_id&redirect_uri
        &state``."""
        query = urlencode({"client_id": self._signin.client_id,
                           "redirect_uri": self._signin.redirect_uri, "state": state})
        return f"{self._signin.web_url}/login/oauth/authorize?{query}"

    def exchange(self, code: str) -> Grant:
        """Trade the callback's ``code`` for the person's token.

        Raises:
            SignInRefused: GitHub's error document (it answers them with status 200).
            GitHubUnavailable: no usable answer.
        """
        form = {"client_id": self._signin.client_id,
                "client_secret": self._signin.client_secret, "code": code,
                "redirect_uri": self._signin.redirect_uri}
        answer = self._call("POST", f"{self._signin.web_url}/login/oauth/access_token",
                            data=form, headers={"Accept": "application/json",
                                                "User-Agent": "loopgate"})
        doc = _json(answer)
        if answer.status_code >= 500 or answer.status_code == 429 or doc is None:
            raise GitHubUnavailable(f"the token exchange answered {answer.status_code}")
        if doc.get("error"):
            raise SignInRefused(str(doc["error"]), str(doc.get("error_description") or ""))
        token = doc.get("access_token")
        if answer.status_code != 200 or not isinstance(token, str) or not token:
            raise GitHubUnavailable(f"the token exchange answered {answer.status_code} "
                                    "without a token")
        expires = doc.get("expires_in")
        return Grant(token, float(expires) if isinstance(expires, (int, float)) else None)

    def login(self, token: str) -> str:
        """The token's owner (``GET /user``).

        Raises:
            TokenRejected: 401.
            GitHubUnavailable: any other failure.
        """
        answer = self._api(token, "/user")
        doc = _json(answer)
        if answer.status_code == 200 and doc and isinstance(doc.get("login"), str):
            return str(doc["login"])
        raise GitHubUnavailable(f"GET /user answered {answer.status_code}")

    def can_read(self, token: str, owner: str, repo: str) -> bool:
        """Whether the token's owner can see ``owner/repo`` (:meth:`access`'s first half).

        Raises:
            TokenRejected: 401.
            GitHubUnavailable: a rate limit, 5xx or no answer (fail closed).
        """
        return self.access(token, owner, repo)[0]

    def access(self, token: str, owner: str, repo: str) -> tuple[bool, bool]:
        """``(read, write)`` for the token's owner and ``owner/repo``, from one
        ``GET /repos/{owner}/{repo}`` with their token: 200 can read — and can write when
        the answer's ``permissions`` for the signed-in person has ``push``, ``maintain`` or
        ``admin`` true (docs.github.com REST "Get a repository"); 404 (private and not
        theirs, or no such repository) or a 403 without a rate limit (e.g. an
        organisation's SSO not authorized): neither. A renamed (or transferred) repository
        answers 301 with a ``Location`` on the API, its address by id: that one redirect is
        followed, with the person's token, only to the same API host and path prefix, and
        the same rule read from its answer.

        Raises:
            TokenRejected: 401.
            GitHubUnavailable: a rate limit, 5xx or no answer, a redirect to anywhere else
                or a second redirect (fail closed).
        """
        answer = self._api(token, f"/repos/{owner}/{repo}")
        if answer.status_code in _REDIRECTS:
            answer = self._get(token, self._redirect_target(answer))
            if answer.status_code in _REDIRECTS:
                raise GitHubUnavailable("GET /repos/{owner}/{repo} was redirected twice")
        if answer.status_code == 200:
            granted = (_json(answer) or {}).get("permissions")
            return True, isinstance(granted, dict) and any(
                granted.get(k) is True for k in ("push", "maintain", "admin"))
        if answer.status_code == 404 or (answer.status_code == 403
                                          and not _rate_limited(answer)):
            return False, False
        raise GitHubUnavailable(f"GET /repos/{{owner}}/{{repo}} answered {answer.status_code}")

    def revoke(self, token: str) -> bool:
        """Revoke the person's token at GitHub (``DELETE /applications/{client_id}/token``,
        Basic authentication with the client id and secret; docs.github.com REST "Delete an
        app token"), so a copy of a signed-out session cookie opens nothing.

        Returns:
            True when GitHub answered 204; False otherwise (logged, never raised: signing
            out still drops the cookie).
        """
        try:
            answer = self._http.request(
                "DELETE", f"{self._signin.api_url}/applications/{self._signin.client_id}/token",
                auth=(self._signin.client_id, self._signin.client_secret),
                json={"access_token": token}, headers=_API_HEADERS, timeout=TIMEOUT,
                allow_redirects=False)
        except requests.RequestException as exc:
            logger.warning("sign-out: GitHub did not answer the revocation (%s)",
                           type(exc).__name__)
            return False
        if answer.status_code != 204:
            logger.warning("sign-out: GitHub answered %s to the revocation", answer.status_code)
        return bool(answer.status_code == 204)

    def _api(self, token: str, path: str) -> Any:
        return self._get(token, f"{self._signin.api_url}{path}")

    def _get(self, token: str, url: str) -> Any:
        answer = self._call("GET", url,
                            headers={**_API_HEADERS, "Authorization": f"Bearer {token}"})
        if answer.status_code == 401:
            raise TokenRejected("GitHub no longer accepts this sign-in")
        return answer

    def _redirect_target(self, answer: Any) -> str:
        """Where a redirect points, when it stays on the API (same scheme, host and port,
        under the API's path: GitHub Enterprise Server's ``/api/v3`` too); the person's
        token is never sent anywhere else.

        Raises:
            GitHubUnavailable: no ``Location``, or one off the API (fail closed: 503).
        """
        base = urlsplit(self._signin.api_url)
        location = str(answer.headers.get("Location") or "").strip()
        target = urlsplit(urljoin(self._signin.api_url + "/", location)) if location else None
        prefix = base.path.rstrip("/") + "/"
        if target is None or (target.scheme.lower(), target.netloc.lower()) != (
                base.scheme.lower(), base.netloc.lower()) or not target.path.startswith(prefix) \
                or _dot_segments(target.path):
            raise GitHubUnavailable(f"GitHub answered {answer.status_code} with a redirect "
                                    "off its API: not followed")
        return target.geturl()

    def _call(self, method: str, url: str, **kwargs: Any) -> Any:
        try:
            return self._http.request(method, url, timeout=TIMEOUT, allow_redirects=False,
                                      **kwargs)
        except requests.RequestException as exc:
            # The exception's text can hold the URL, never a token (headers and the form
            # body are not part of it); only its type is kept.
            raise GitHubUnavailable(f"GitHub did not answer ({type(exc).__name__})") from None


def _json(answer: Any) -> dict[str, Any] | None:
    try:
        doc = answer.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _rate_limited(answer: Any) -> bool:
    headers = answer.headers
    return headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers


class AccessCache:
    """Can-read answers per (person, owner, repo), reused for ``seconds`` (a refusal too:
    a person who just lost access keeps it at most that long). The person is named by
    :func:`fingerprint` of their token, so a sign-out (:meth:`forget`) ends what was
    cached for that sign-in. Bounded: the oldest entries go first past ``size``.
    Thread-safe.

    Args:
        seconds: how long an answer is reused (0: never).
        size: the most entries kept.
        clock: a monotonic clock (tests).
    """

    def __init__(self, seconds: float, size: int = 4096,
                 clock: Any = time.monotonic) -> None:
        self._seconds = seconds
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, str], tuple[bool, float]] = {}

    def get(self, login: str, owner: str, repo: str) -> bool | None:
        """The reused answer, or None when there is none still fresh."""
        key = (login.lower(), owner.lower(), repo.lower())
        with self._lock:
            found = self._answers.get(key)
            if found is None or found[1] <= self._clock():
                self._answers.pop(key, None)
                return None
            return found[0]

    def forget(self, login: str) -> None:
        """Drop every answer cached for ``login`` (a token's :func:`fingerprint`)."""
        with self._lock:
            for key in [k for k in self._answers if k[0] == login.lower()]:
                del self._answers[key]

    def put(self, login: str, owner: str, repo: str, allowed: bool) -> None:
        """Remember GitHub's answer."""
        if self._seconds <= 0:
            return
        key = (login.lower(), owner.lower(), repo.lower())
        with self._lock:
            self._answers.pop(key, None)
            while len(self._answers) >= self._size:
                self._answers.pop(next(iter(self._answers)))
            self._answers[key] = (allowed, self._clock() + self._seconds)


class Verdict(Enum):
    """What a signed-in person may do with a repository's items."""

    READ = "read"  #: they can read the repository
    DENIED = "denied"  #: they cannot, or it does not exist (the same 403)
    EXPIRED = "expired"  #: GitHub refused their token: sign in again
    UNAVAILABLE = "unavailable"  #: GitHub did not answer: 503, fail closed


SESSION = "session"
STATE = "state"


class Gatekeeper:
    """Sessions and access for the page and ``/api/simulate``.

    Args:
        signin: the configuration.
        users: the GitHub calls (default: over ``requests``).
        clock: wall-clock seconds (tests).
    """

    def __init__(self, signin: SignIn, users: GitHubUsers | None = None,
                 clock: Any = time.time) -> None:
        self.signin = signin
        self.users = users or GitHubUsers(signin)
        self.sealer = Sealer(signin.session_secret)
        self.cache = AccessCache(signin.access_cache_seconds)
        self.writers = AccessCache(signin.access_cache_seconds)
        self._clock = clock

    def cookie(self, name: str) -> str:
        """The cookie's name: ``__Host-`` prefixed over https (the browser then insists on
        Secure, Path=/ and no Domain, so no sibling host can plant one)."""
        return f"__Host-loopgate-{name}" if self.signin.secure else f"loopgate-{name}"

    def session(self, cookie: str | None) -> Session | None:
        """The session sealed in ``cookie``; None when absent, forged or expired."""
        doc = self.sealer.open(SESSION, cookie, self.signin.session_seconds)
        return Session.from_json(doc, self._clock()) if doc is not None else None

    def new_session(self, login: str, grant: Grant) -> tuple[Session, str, int]:
        """``(session, sealed cookie value, max-age seconds)`` for a completed sign-in:
        the shorter of ``sessionHours`` and the token's own lifetime."""
        seconds = self.signin.session_seconds
        if grant.expires_in is not None:
            seconds = min(seconds, max(grant.expires_in - 60.0, 60.0))
        session = Session(login, grant.token, self._clock() + seconds)
        return session, self.sealer.seal(SESSION, session.to_json()), int(seconds)

    def sign_out(self, session: Session) -> bool:
        """Forget the session's cached answers and revoke its token at GitHub; True when
        GitHub confirmed the revocation. (Another ``serve`` replica may reuse its own cached
        answer for at most ``accessCacheSeconds``.)"""
        self.cache.forget(fingerprint(session.token))
        self.writers.forget(fingerprint(session.token))
        return self.users.revoke(session.token)

    def verdict(self, session: Session, owner: str, repo: str) -> Verdict:
        """Whether ``session``'s person can read ``owner/repo`` (cached per sign-in and
        repository for ``accessCacheSeconds``; failures are never cached)."""
        who = fingerprint(session.token)
        known = self.cache.get(who, owner, repo)
        if known is not None:
            return Verdict.READ if known else Verdict.DENIED
        try:
            allowed, writes = self.users.access(session.token, owner, repo)
        except TokenRejected:
            return Verdict.EXPIRED
        except GitHubUnavailable as exc:
            logger.warning("item page: could not check %s's access to %s/%s: %s",
                           session.login, owner, repo, exc)
            return Verdict.UNAVAILABLE
        self.cache.put(who, owner, repo, allowed)
        self.writers.put(who, owner, repo, writes)
        return Verdict.READ if allowed else Verdict.DENIED


    def may_write(self, session: Session, owner: str, repo: str) -> bool | None:
        """Whether ``session``'s person has write access to ``owner/repo`` (cached like
        :meth:`verdict`); None when GitHub did not answer or refused the token (the
        caller fails closed)."""
        who = fingerprint(session.token)
        known = self.writers.get(who, owner, repo)
        if known is not None:
            return known
        try:
            allowed = self.users.access(session.token, owner, repo)[1]
        except (TokenRejected, GitHubUnavailable) as exc:
            logger.warning("item page: could not check %s's write access to %s/%s: %s",
                           session.login, owner, repo, exc)
            return None
        self.writers.put(who, owner, repo, allowed)
        return allowed


def fingerprint(token: str) -> str:
    """A short, one-way name of a token (cache keys: the token itself is never kept
    outside the sealed cookie)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")


def safe_next(value: str | None) -> str | None:
    """``value`` when it is a local path (``/items/...``, query allowed) to send a person
    back to after sign-in; None for anything that could leave this site (``//host``,
    ``https://...``, backslashes, spaces or control characters): no open redirect."""
    if not value or len(value) > 2048 or not value.startswith("/") or value.startswith("//"):
        return None
    if _UNSAFE.search(value):
        return None
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return None
    return value


def _dot_segments(path: str) -> bool:
    """True when ``path`` has a ``.`` or ``..`` segment, percent-encoded or not: urljoin
    removes the plain ones, but ``%2e%2e`` survives it, requests decodes it to ``..`` and
    the server resolves it (RFC 3986 §5.2.4), so a Location under the API's prefix as
    written could still reach a path off it."""
    return any(unquote(part) in (".", "..") for part in path.split("/"))
