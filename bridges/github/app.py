"""Credentials for GitHub: a static token, or a GitHub App and its installation tokens.

Two :class:`TokenSource` implementations hand the REST client (PyGithub) and the GraphQL
transport (gql over ``requests``) the token for the repository a request is about:

* :class:`StaticToken` — ``github.tokenEnv``: one token for everything (token mode);
* :class:`AppInstallations` — ``github.app: {appId, privateKeyEnv, installationId?}``.
  The App signs a JWT (RS256, PyGithub's :class:`github.Auth.AppAuth`) and trades it for an
  *installation token* (``POST /app/installations/{id}/access_tokens`` through
  :class:`github.GithubIntegration`), valid for one hour. The installation of a repository
  is ``GET /repos/{o}/{r}/installation`` (JWT) unless ``installationId`` is configured, so
  repositories in several organisations work: one token per installation, and each request
  uses the installation of the repository its path names (``/repos/{o}/{r}/…``).

Why not PyGithub's :class:`github.Auth.AppInstallationAuth` directly: it refreshes a token
20 s before its expiry by the local clock and cannot be told that GitHub refused a token
(revoked, or the clocks disagree). Here a token is refreshed :data:`REFRESH_MARGIN` seconds
before ``expires_at``, and a refused token is dropped (:meth:`TokenSource.refresh`) so the
caller retries once with a fresh one; a second refusal fails the call (the gate waits).

The repository a request is about travels in a context variable (:func:`repository_scope`),
set by the clients around each call. Secrets never reach a log line or an exception
message: messages name the *setting* (``github.app.privateKeyEnv``), never a value, and
PyGithub's debug log of a token response is withheld (:class:`_WithholdTokenResponses`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github import Auth, GithubException, GithubIntegration

from bridges.github.errors import CredentialsError
from engine.errors import ConfigError

__all__ = [
    "REFRESH_MARGIN",
    "TokenSource",
    "StaticToken",
    "AppCredentials",
    "AppInstallations",
    "PyGithubAuth",
    "RequestsAuth",
    "repository_scope",
    "current_repository",
    "repository_of",
    "load_private_key",
    "token_source_from_config",
]

logger = logging.getLogger(__name__)

#: Seconds before an installation token's ``expires_at`` at which a new one is minted (at
#: most a quarter of the token's lifetime).
REFRESH_MARGIN = 300.0

_REPOSITORY: contextvars.ContextVar[str] = contextvars.ContextVar("loopgate_github_repo",
                                                                 default="")
_REPO_PATH = re.compile(r"/repos/([^/?#]+)/([^/?#]+)")
_SETTING_APP_ID = "github.app.appId"
_SETTING_KEY = "github.app.privateKeyEnv"
_SETTING_INSTALLATION = "github.app.installationId"
_SETTING_REPOS = "github.repos"


# -- the repository a request is about ------------------------------------------------------
def repository_of(path: str) -> str:
    """The ``owner/repo`` (lower case) a REST path or URL names, or "".

    Args:
        path: ``/repos/{o}/{r}/…``, an absolute URL (a ``Link`` page), or a GHES path with
            an ``/api/v3`` prefix.
    """
    match = _REPO_PATH.search(urlsplit(path).path if "://" in path else path)
    return f"{match.group(1)}/{match.group(2)}".lower() if match else ""


@contextlib.contextmanager
def repository_scope(repo: str) -> Iterator[None]:
    """Within the block, requests are about ``repo`` (``owner/name``; "" = none).

    An empty ``repo`` keeps an enclosing scope (a nested call without a repository).
    """
    if not repo:
        yield
        return
    token = _REPOSITORY.set(repo.lower())
    try:
        yield
    finally:
        _REPOSITORY.reset(token)


def current_repository() -> str:
    """The repository of the innermost :func:`repository_scope`, or ""."""
    return _REPOSITORY.get()


# -- token sources ------------------------------------------------------------------------
class TokenSource(Protocol):
    """Where the clients get the token for a request (see the module docstring)."""

    @property
    def identity(self) -> str:
        """A one-way digest naming (server, credentials): a cache key, never a secret."""
        ...

    def token(self, repo: str = "") -> str:
        """The token for a request about ``repo`` ("" = no repository)."""
        ...

    def refresh(self, repo: str, refused: str) -> bool:
        """GitHub refused ``refused``: drop it. Returns True when a retry can use another
        token (an App mints a new one), False when retrying is pointless (a static token)."""
        ...

    def scopes(self) -> list[str]:
        """One repository per credential that can see something different ("" for one
        credential that sees everything): a node-id lookup asks each in turn."""
        ...

    def learn(self, repo: str, installation_id: int) -> None:
        """A signed webhook delivery named ``repo``'s App installation (issue 9 §2: use
        ``installation.id``); a source without installations ignores it."""
        ...

    @property
    def app_id(self) -> int | None:
        """The GitHub App's numeric id (``github.app.appId``): a check run is loopgate's
        own only when its ``app.id`` is this one (platform-facts F2, issue 19 §3); None in
        token mode, where loopgate publishes commit statuses and owns no check run."""
        ...


class StaticToken:
    """Token mode: one token (``github.tokenEnv``) for every request.

    Args:
        api_url: the REST base URL (part of :attr:`identity`).
        token: the token (never logged).
    """

    def __init__(self, api_url: str, token: str) -> None:
        self._token = token
        self.identity = hashlib.sha256(f"{api_url.rstrip('/')}\0{token}".encode()).hexdigest()[:16]
        #: No App behind a token (:attr:`TokenSource.app_id`).
        self.app_id: int | None = None

    def token(self, repo: str = "") -> str:
        """The one token, whatever ``repo`` is."""
        return self._token

    def refresh(self, repo: str, refused: str) -> bool:
        """A static token cannot be renewed: always False."""
        return False

    def scopes(self) -> list[str]:
        """One credential: ``[""]``."""
        return [""]

    def learn(self, repo: str, installation_id: int) -> None:
        """Token mode has no installations: nothing to learn."""
        return None


def _secret_env(variable: str) -> str:
    value = os.environ.get(variable, "")
    if not value.strip():
        raise ConfigError(f"{_SETTING_KEY}: the environment variable {variable} is unset or "
                          "empty; set it to the App's private key (PEM text, or the path of "
                          "the .pem file)")
    return value.strip()


def _pem_text(variable: str, value: str) -> str:
    if "-----BEGIN" in value:
        # A PEM squeezed onto one line with literal "\n" (a common .env form) is accepted.
        return value.replace("\\n", "\n") if "\n" not in value else value
    try:
        return Path(os.path.expanduser(value)).read_text("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(
            f"{_SETTING_KEY}: the environment variable {variable} holds neither a PEM "
            f"private key nor the path of a readable key file ({type(exc).__name__})"
        ) from None


def load_private_key(variable: str) -> str:
    """Read the App's private key from the environment variable named by
    ``github.app.privateKeyEnv`` and check that it is an RSA private key in PEM form.

    Args:
        variable: the variable's name.

    Returns:
        The PEM text (the variable's value, or the content of the file it names).

    Raises:
        ConfigError: the variable is unset, names an unreadable file, or holds no PEM RSA
            private key. The message names the setting and the variable, never the value.
    """
    text = _pem_text(variable, _secret_env(variable))
    try:
        key = serialization.load_pem_private_key(text.encode("utf-8"), password=None)
    except (ValueError, TypeError) as exc:
        problem = "is encrypted" if isinstance(exc, TypeError) else "is malformed"
        raise ConfigError(f"{_SETTING_KEY}: the private key in {variable} {problem} (GitHub "
                          "gives an unencrypted PEM file: download a new key)") from None
    except Exception as exc:  # cryptography's UnsupportedAlgorithm and kin
        raise ConfigError(f"{_SETTING_KEY}: the private key in {variable} cannot be read "
                          f"({type(exc).__name__})") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(f"{_SETTING_KEY}: the key in {variable} is not an RSA key "
                          "(GitHub Apps sign with RS256)")
    return text


@dataclass(frozen=True)
class AppCredentials:
    """``github.app`` with the private key read.

    Attributes:
        app_id: the App's numeric id (``appId``).
        private_key: the PEM text (not shown by ``repr``).
        key_env: the variable the key came from (for messages).
        installation_id: ``installationId`` when configured, else None.
    """

    app_id: int
    private_key: str = field(repr=False)
    key_env: str = ""
    installation_id: int | None = None

    @classmethod
    def from_section(cls, app: Mapping[str, Any]) -> AppCredentials:
        """Build from loopgate.yaml's ``github.app`` mapping (already schema-checked).

        Raises:
            ConfigError: the key cannot be read (see :func:`load_private_key`).
        """
        variable = str(app.get("privateKeyEnv") or "")
        installation = app.get("installationId")
        return cls(int(app["appId"]), load_private_key(variable), variable,
                   int(installation) if installation is not None else None)


@dataclass
class _Token:
    value: str = field(repr=False)
    expires_at: datetime
    refresh_at: datetime


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, Mapping) else {}
    return str(data.get("message") or "").strip()[:200]


class AppInstallations:
    """App mode: JWTs for the App endpoints, installation tokens for everything else.

    Args:
        api_url: the REST base URL.
        credentials: the App's id, key and optional installation id.
        repos: the configured repositories (``github.repos``); the first one's installation
            is used for requests about no repository (``GET /users/{login}``, GraphQL).
        timeout: seconds per HTTP request.
        refresh_margin: mint a new token this many seconds before the old one expires (at
            most a quarter of its lifetime).
        clock: the current UTC time (tests).
    """

    def __init__(self, api_url: str, credentials: AppCredentials, repos: Sequence[str] = (), *,
                 timeout: int = 15, refresh_margin: float = REFRESH_MARGIN,
                 clock: Callable[[], datetime] | None = None) -> None:
        _withhold_token_responses()
        self.api_url = api_url.rstrip("/")
        self.app_id = credentials.app_id
        self.key_env = credentials.key_env
        self.configured_installation = credentials.installation_id
        self.repos = tuple(r.lower() for r in repos)
        self.identity = hashlib.sha256(
            f"{self.api_url}\0app\0{credentials.app_id}".encode()).hexdigest()[:16]
        self._integration = GithubIntegration(
            auth=Auth.AppAuth(credentials.app_id, credentials.private_key),
            base_url=self.api_url, timeout=timeout, seconds_between_requests=None,
            seconds_between_writes=None)
        self._margin = timedelta(seconds=refresh_margin)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._installations: dict[str, int] = {}
        self._tokens: dict[int, _Token] = {}
        #: How many installation tokens were minted (tests, logs).
        self.minted = 0

    @classmethod
    def from_config(cls, section: Mapping[str, Any], **kwargs: Any) -> AppInstallations:
        """Build from loopgate.yaml's ``github`` section (``app``, ``apiUrl``, ``repos``).

        Raises:
            ConfigError: the private key cannot be read.
        """
        return cls(str(section.get("apiUrl") or "https://api.github.com"),
                   AppCredentials.from_section(section["app"]), section.get("repos") or (),
                   **kwargs)

    # -- the App -------------------------------------------------------------------------
    def _jwt_refused(self, what: str, exc: GithubException) -> CredentialsError:
        message = _message(exc)
        if "claim" in message:  # 'exp'/'iat' refused: the clocks disagree, not the App
            return CredentialsError(
                exc.status, f"{what}: GitHub refused the App's JWT as issued at the wrong "
                f"time ({exc.status} {message}); this machine's clock disagrees with GitHub's",
                setting="github.app")
        return CredentialsError(
            exc.status,
            f"{what}: GitHub refused the App's JWT ({exc.status} {message}); "
            f"{_SETTING_APP_ID} ({self.app_id}) and the private key in {self.key_env} must "
            "belong to the same GitHub App", setting=_SETTING_APP_ID)

    def app(self) -> dict[str, Any]:
        """``GET /app`` with the App's JWT: ``{"id", "slug", "name"}``.

        Raises:
            CredentialsError: the JWT was refused (wrong ``appId`` or key; setting
                ``github.app.appId``), or GitHub could not be reached.
        """
        try:
            found = self._integration.get_app()
            return {"id": found.id, "slug": found.slug, "name": found.name}
        except GithubException as exc:
            if exc.status in (401, 404):
                raise self._jwt_refused("read the App (GET /app)", exc) from None
            raise CredentialsError(exc.status, f"read the App (GET /app): GitHub answered "
                                   f"{exc.status} {_message(exc)}".rstrip()) from None
        except requests.RequestException as exc:
            raise CredentialsError(0, f"read the App (GET /app): GitHub unreachable "
                                   f"({type(exc).__name__})") from None

    # -- installations -------------------------------------------------------------------
    def learn(self, repo: str, installation_id: int) -> None:
        """Remember that ``repo``'s installation is ``installation_id`` (a webhook
        delivery's ``installation.id``); ignored when ``installationId`` is configured."""
        if self.configured_installation is None and repo:
            with self._lock:
                self._installations[repo.lower()] = int(installation_id)

    def installation_for(self, repo: str = "") -> int:
        """The installation id for requests about ``repo`` ("" = the default one).

        Raises:
            CredentialsError: the App is not installed on the repository (setting
                ``github.repos``) or its JWT was refused (``github.app.appId``).
        """
        if self.configured_installation is not None:
            return self.configured_installation
        repo = (repo or (self.repos[0] if self.repos else "")).lower()
        if not repo:
            raise CredentialsError(0, "no repository to find the App's installation by: set "
                                   f"{_SETTING_REPOS} or {_SETTING_INSTALLATION}",
                                   setting=_SETTING_REPOS)
        with self._lock:
            known = self._installations.get(repo)
        if known is not None:
            return known
        found = self._lookup_installation(repo)
        with self._lock:
            self._installations[repo] = found
        return found

    def _lookup_installation(self, repo: str) -> int:
        owner, name = repo.split("/", 1)
        try:
            return int(self._integration.get_repo_installation(owner, name).id)
        except GithubException as exc:
            if exc.status == 404 and _message(exc).lower() != "integration not found":
                raise CredentialsError(
                    404, f"the GitHub App {self.app_id} is not installed on {repo}: install it "
                    f"there, or remove the repository from {_SETTING_REPOS}",
                    setting=_SETTING_REPOS) from None
            if exc.status in (401, 404):
                raise self._jwt_refused(f"find the App's installation on {repo}", exc) from None
            raise CredentialsError(exc.status, f"find the App's installation on {repo}: GitHub "
                                   f"answered {exc.status} {_message(exc)}".rstrip()) from None
        except requests.RequestException as exc:
            raise CredentialsError(0, f"find the App's installation on {repo}: GitHub "
                                   f"unreachable ({type(exc).__name__})") from None

    # -- tokens --------------------------------------------------------------------------
    def token(self, repo: str = "") -> str:
        """A valid installation token for requests about ``repo`` (minted when none is
        cached or the cached one expires within the refresh margin).

        Raises:
            CredentialsError: no installation, or GitHub refused to mint a token.
        """
        installation = self.installation_for(repo or current_repository())
        with self._lock:
            held = self._tokens.get(installation)
            if held is not None and held.refresh_at > self._clock():
                return held.value
            try:
                held = self._mint(installation)
            except CredentialsError as exc:
                if exc.status == 404:
                    self._forget(installation)
                raise
            self._tokens[installation] = held
            return held.value

    def _forget(self, installation: int) -> None:
        # The installation is gone (uninstalled, revoked): its repositories are looked up
        # again next time, so a re-installation (a new id) is found without a restart.
        for repo in [r for r, i in self._installations.items() if i == installation]:
            del self._installations[repo]

    def _installation_setting(self) -> str:
        return _SETTING_INSTALLATION if self.configured_installation is not None \
            else _SETTING_REPOS

    def _mint(self, installation: int) -> _Token:
        what = f"mint a token for installation {installation} of the GitHub App {self.app_id}"
        try:
            granted = self._integration.get_access_token(installation)
        except GithubException as exc:
            raise self._mint_refused(what, installation, exc) from None
        except requests.RequestException as exc:
            raise CredentialsError(0, f"{what}: GitHub unreachable "
                                   f"({type(exc).__name__})") from None
        self.minted += 1
        now = self._clock()
        expires = granted.expires_at or (now + timedelta(hours=1))
        # GitHub's tokens live an hour; one that lives less is refreshed a quarter of its
        # lifetime before it expires, so it is still used for most of its life.
        margin = min(self._margin, max(expires - now, timedelta(0)) / 4)
        logger.info("github app=%s installation=%s token minted, expires_at=%s", self.app_id,
                    installation, expires.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return _Token(granted.token, expires, expires - margin)

    def _mint_refused(self, what: str, installation: int, exc: GithubException
                      ) -> CredentialsError:
        message = _message(exc)
        if exc.status == 401 or message.lower() == "integration not found":
            return self._jwt_refused(what, exc)
        if exc.status == 404:
            return CredentialsError(404, f"{what}: the installation does not exist (the App "
                                    "was uninstalled, or the installation revoked)",
                                    setting=self._installation_setting())
        if exc.status == 403:
            return CredentialsError(403, f"{what}: GitHub answered 403 {message}; a "
                                    "suspended installation?", setting=self._installation_setting())
        return CredentialsError(exc.status, f"{what}: GitHub answered {exc.status} "
                                f"{message}".rstrip())

    def refresh(self, repo: str, refused: str) -> bool:
        """Drop ``refused`` if it is still the cached token of ``repo``'s installation, so
        the next :meth:`token` mints a new one. Always True: a retry gets a new token."""
        try:
            installation = self.installation_for(repo or current_repository())
        except CredentialsError:
            return True
        with self._lock:
            held = self._tokens.get(installation)
            if held is not None and held.value == refused:
                del self._tokens[installation]
                logger.warning("github app=%s installation=%s token refused by GitHub; "
                               "minting a new one", self.app_id, installation)
        return True

    def scopes(self) -> list[str]:
        """One configured repository per distinct installation (the first configured
        repository first); ``[""]`` when ``installationId`` is configured."""
        if self.configured_installation is not None or not self.repos:
            return [""]
        seen: dict[int, str] = {}
        for repo in self.repos:
            try:
                seen.setdefault(self.installation_for(repo), repo)
            except CredentialsError:
                continue
        return list(seen.values()) or [""]

    # -- start-up check --------------------------------------------------------------------
    def verify(self) -> list[str]:
        """Check everything a run will need, before anything is polled: the App (JWT), the
        installation of every configured repository, and one token per installation.

        Returns:
            One line per installation (``installation N: owner/repo, ...``), no secrets.

        Raises:
            ConfigError: naming the setting to fix (``github.app.appId``,
                ``github.app.installationId``, ``github.repos``).
        """
        try:
            self.app()
            by_installation: dict[int, list[str]] = {}
            for repo in self.repos or ("",):
                by_installation.setdefault(self.installation_for(repo), []).append(repo)
            for installation in by_installation:
                with self._lock:
                    self._tokens[installation] = self._mint(installation)
        except CredentialsError as exc:
            raise ConfigError(f"{exc.setting or 'github.app'}: {exc}") from None
        return [f"installation {i}: {', '.join(r for r in repos if r) or '(all)'}"
                for i, repos in by_installation.items()]


def token_source_from_config(section: Mapping[str, Any], token_env: Callable[[str], str]
                             ) -> TokenSource:
    """The token source loopgate.yaml's ``github`` section asks for.

    Args:
        section: the ``github`` section (defaults filled in).
        token_env: reads the token variable (``github.tokenEnv``) in token mode.

    Raises:
        ConfigError: a credential is missing or unreadable (the message names the setting).
    """
    if section.get("app"):
        return AppInstallations.from_config(section)
    api_url = str(section.get("apiUrl") or "https://api.github.com")
    return StaticToken(api_url, token_env(str(section.get("tokenEnv") or "GITHUB_TOKEN")))


# -- adapters for the two HTTP clients --------------------------------------------------------
class _Handed(threading.local):
    last: str = ""


class PyGithubAuth(Auth.Auth):
    """PyGithub authentication that asks a :class:`TokenSource` for each request's token
    (the repository comes from :func:`repository_scope`).

    Args:
        source: the token source.
    """

    def __init__(self, source: TokenSource) -> None:
        self.source = source
        self._handed = _Handed()

    @property
    def token_type(self) -> str:
        """``token`` (GitHub accepts installation tokens and PATs under it)."""
        return "token"

    @property
    def token(self) -> str:
        """The current token for the scoped repository (remembered per thread, so a
        refusal can name the token that was refused)."""
        value = self.source.token(current_repository())
        self._handed.last = value
        return value

    @property
    def last(self) -> str:
        """The token this thread was last handed ("" before any)."""
        return self._handed.last

    @property
    def _masked_token(self) -> str:
        return "token (removed)"


class RequestsAuth(requests.auth.AuthBase):
    """``requests`` authentication for gql's transport: ``Authorization: bearer <token>``
    with the token a :class:`TokenSource` gives for the scoped repository, per request.

    Args:
        source: the token source.
    """

    def __init__(self, source: TokenSource) -> None:
        self.source = source
        self._handed = _Handed()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        value = self.source.token(current_repository())
        self._handed.last = value
        request.headers["Authorization"] = f"bearer {value}"
        return request

    @property
    def last(self) -> str:
        """The token this thread was last handed ("" before any)."""
        return self._handed.last


# -- logs ------------------------------------------------------------------------------------
class _WithholdTokenResponses(logging.Filter):
    """PyGithub logs every response body at DEBUG; the one answering
    ``POST …/access_tokens`` holds an installation token. Its body is withheld."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any("access_tokens" in str(a) for a in args[:4]):
            record.args = (*args[:-1], "(installation token response withheld)")
        return True


_FILTER = _WithholdTokenResponses()


def _withhold_token_responses() -> None:
    requester_log = logging.getLogger("github.Requester")
    if _FILTER not in requester_log.filters:
        requester_log.addFilter(_FILTER)
