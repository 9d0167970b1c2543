"""The GitHub App side of the loopback fake GitHub (:mod:`tests.fakes.github`).

What it does like GitHub (GitHub Docs: "Authenticating as a GitHub App", "Generating a
JSON Web Token (JWT) for a GitHub App", REST "Apps"; error texts as GitHub answers them):

* **JWTs** (``Authorization: Bearer <jwt>``) are verified: RS256 with the App's public key,
  ``iss`` = the App id, ``exp`` in the future and at most 10 minutes after ``iat``, ``iat``
  not in the future — all against the fake's clock (GitHub's clock), so a test can make a
  JWT look expired by moving that clock. Refusals are ``401`` with GitHub's messages
  (``A JSON web token could not be decoded``, ``'Expiration time' claim ('exp') must be a
  numeric value representing the future time at which the assertion expires``); an ``iss``
  naming no App is ``404 Integration not found``. A JWT is accepted on the App endpoints
  only; anything else there is ``401 A JSON web token could not be decoded``.
* ``GET /app`` (id, slug, name …), ``GET /repos/{o}/{r}/installation`` (``404`` when the
  App is not installed there), ``POST /app/installations/{id}/access_tokens`` (a
  ``ghs_…`` token, ``expires_at`` one hour ahead unless the test asks for less; ``404``
  for an unknown or revoked installation), ``GET /users/{login}`` (``name[bot]`` is a
  ``Bot``).
* **Installation tokens** work on REST and GraphQL until ``expires_at`` (then ``401 Bad
  credentials``) and see only their installation's repositories (others: REST ``404``,
  GraphQL ``null`` + ``NOT_FOUND``); ``GET /user`` is ``403 Resource not accessible by
  integration``. Comments and edits made with one are authored by ``<slug>[bot]``
  (``type: Bot``; GraphQL ``Bot`` ``<slug>``).
* :meth:`FakeApp.revoke` uninstalls an installation: its tokens stop working at once.

Use it from a test::

    key = generate_private_key()
    app = FakeApp(key, app_id=4242, slug="loopgate")
    with FakeGitHub(app=app) as gh:
        gh.create_repo("acme/widgets")
        app.install("acme")
        ...  # loopgate: github.app {appId: 4242, privateKeyEnv: VAR}, VAR = key
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

if TYPE_CHECKING:
    from tests.fakes.github import FakeGitHub

__all__ = ["FakeApp", "FakeInstallation", "FakeToken", "generate_private_key", "APP_ROUTES",
           "JWT_UNDECODABLE", "JWT_EXPIRED", "BAD_CREDENTIALS"]

JWT_UNDECODABLE = "A JSON web token could not be decoded"
JWT_EXPIRED = ("'Expiration time' claim ('exp') must be a numeric value representing the "
               "future time at which the assertion expires")
JWT_TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
JWT_IAT = ("'Issued at' claim ('iat') must be an Integer representing the time that the "
           "assertion was issued")
BAD_CREDENTIALS = "Bad credentials"
NOT_FOR_INTEGRATIONS = "Resource not accessible by integration"
#: Longest JWT lifetime GitHub accepts (seconds).
MAX_JWT_SECONDS = 600
PERMISSIONS = {"issues": "write", "pull_requests": "write", "contents": "read",
               "metadata": "read", "checks": "write", "members": "read", "merge_queues": "read"}
EVENTS = ["issues", "issue_comment", "pull_request", "merge_group"]

#: ``(method, route name, pattern)`` of the App endpoints, for the fake's route table.
APP_ROUTES = (
    ("GET", "app", r"/app"),
    ("POST", "app-token", r"/app/installations/(?P<id>\d+)/access_tokens"),
    ("GET", "repo-installation", r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/installation"),
    ("GET", "user-by-login", r"/users/(?P<login>[^/]+)"),
)
_JWT_ROUTES = frozenset({"app", "app-token", "repo-installation"})
_REPO_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)")
_ORG_PATH = re.compile(r"^/orgs/([^/]+)")


@lru_cache(maxsize=4)
def generate_private_key(bits: int = 2048, seed: int = 0) -> str:
    """A fresh RSA private key in the PEM form GitHub hands out (``BEGIN RSA PRIVATE
    KEY``), cached per ``seed`` so a test session pays for key generation once.

    Args:
        bits: the key size.
        seed: a cache key; a different seed gives another key (a "wrong key" test).
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode("ascii")


@dataclass
class FakeInstallation:
    """One installation of the App.

    Attributes:
        id: the installation id.
        account: the user or organisation it is installed on.
        repos: the selected repositories (``owner/name``), or None for all of the account's.
        revoked: uninstalled: no token is minted and old ones are refused.
    """

    id: int
    account: str
    repos: frozenset[str] | None = None
    revoked: bool = False

    def covers(self, repo: str) -> bool:
        """True when ``repo`` (``owner/name``) is in this installation."""
        if self.revoked:
            return False
        owner = repo.split("/", 1)[0].lower()
        if self.repos is None:
            return owner == self.account.lower()
        return repo.lower() in self.repos


@dataclass
class FakeToken:
    """An installation token the fake minted."""

    value: str = field(repr=False)
    installation_id: int
    expires_at: datetime


@dataclass
class _Principal:
    kind: str  # "jwt" | "installation" | "other"
    token: FakeToken | None = None


class FakeApp:
    """A GitHub App registered on the fake.

    Args:
        private_key: the App's private key (PEM); the fake keeps only its public half.
        app_id: the App id (``iss`` of its JWTs).
        slug: the App's slug; its bot is ``<slug>[bot]``.
        name: the App's display name.
        token_ttl: lifetime of minted installation tokens (seconds; GitHub: one hour).

    Attributes:
        minted: every token minted, oldest first.
        refusals: ``(route, message)`` of every request refused for its credentials.
    """

    def __init__(self, private_key: str, *, app_id: int = 424242, slug: str = "loopgate",
                 name: str = "loopgate", token_ttl: int = 3600) -> None:
        loaded = serialization.load_pem_private_key(private_key.encode(), password=None)
        assert isinstance(loaded, rsa.RSAPrivateKey)
        self.public_key = loaded.public_key()
        self.app_id = app_id
        self.slug = slug
        self.name = name
        self.token_ttl = token_ttl
        self.installations: dict[int, FakeInstallation] = {}
        self.minted: list[FakeToken] = []
        self.refusals: list[tuple[str, str]] = []
        self.fake: FakeGitHub | None = None
        self._tokens: dict[str, FakeToken] = {}
        self._next_installation = 31_000_001
        self._current: _Principal = _Principal("other")

    # -- test API ----------------------------------------------------------------------
    @property
    def bot_login(self) -> str:
        """The App's bot as REST spells it: ``<slug>[bot]``."""
        return f"{self.slug}[bot]"

    def install(self, account: str, repos: list[str] | None = None) -> int:
        """Install the App on ``account`` (all its repositories, or ``repos``); returns
        the installation id."""
        installation = FakeInstallation(
            self._next_installation, account,
            frozenset(r.lower() for r in repos) if repos is not None else None)
        self._next_installation += 1
        self.installations[installation.id] = installation
        return installation.id

    def revoke(self, installation_id: int) -> None:
        """Uninstall: no new tokens, and the minted ones are refused from now on."""
        self.installations[installation_id].revoked = True

    def expire_tokens(self) -> None:
        """Make every minted token expired now (as if its hour had passed)."""
        now = self._now()
        for token in self._tokens.values():
            token.expires_at = min(token.expires_at, now)

    def live_tokens(self) -> list[str]:
        """The values of tokens GitHub would still accept (tests grep logs for them)."""
        return [t.value for t in self._tokens.values()]

    # -- hooks used by FakeGitHub (called under its lock) --------------------------------
    def authorize(self, authorization: str, route: str, rel_path: str,
                  graphql: bool) -> tuple[int, str] | None | bool:
        """Decide a request's credentials.

        Returns:
            ``(status, message)`` to refuse it, None to accept it, or False when the
            credentials are not the App's (the fake's own token check applies).
        """
        self._current = _Principal("other")
        scheme, _, credential = authorization.partition(" ")
        credential = credential.strip()
        if route in _JWT_ROUTES or (scheme.lower() == "bearer" and credential.count(".") == 2):
            refusal = self._check_jwt(credential, route)
        elif credential.startswith("ghs_"):
            refusal = self._check_installation_token(credential, route, rel_path, graphql)
        else:
            return False
        if refusal is not None:
            self.refusals.append((route or ("graphql" if graphql else rel_path), refusal[1]))
        return refusal

    def api_actor(self) -> tuple[str, str] | None:
        """Who the current request acts as: ``(<slug>[bot], "Bot")`` with an installation
        token, else None."""
        return (self.bot_login, "Bot") if self._current.kind == "installation" else None

    def can_see(self, repo: str) -> bool:
        """Whether the current request may see ``repo`` (an installation token sees its
        installation's repositories; other credentials see everything)."""
        token = self._current.token
        if self._current.kind != "installation" or token is None:
            return True
        return self.installations[token.installation_id].covers(repo)

    # -- credentials -------------------------------------------------------------------
    def _now(self) -> datetime:
        assert self.fake is not None, "FakeGitHub(app=...) attaches the App"
        return self.fake.now()

    def _check_jwt(self, credential: str, route: str) -> tuple[int, str] | None:
        if route not in _JWT_ROUTES:
            return 401, BAD_CREDENTIALS
        try:
            claims = jwt.decode(credential, options={"verify_signature": False})
        except jwt.PyJWTError:
            return 401, JWT_UNDECODABLE
        if str(claims.get("iss")) != str(self.app_id):
            return 404, "Integration not found"
        try:
            jwt.decode(credential, self.public_key, algorithms=["RS256"],
                       options={"verify_exp": False, "verify_iat": False,
                                "verify_nbf": False, "require": ["exp", "iat", "iss"]})
        except jwt.PyJWTError:
            return 401, JWT_UNDECODABLE
        return self._check_jwt_times(claims)

    def _check_jwt_times(self, claims: dict[str, Any]) -> tuple[int, str] | None:
        now = int(self._now().timestamp())
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int) or exp <= now:
            return 401, JWT_EXPIRED
        if not isinstance(iat, int) or iat > now:
            return 401, JWT_IAT
        if exp - iat > MAX_JWT_SECONDS:
            return 401, JWT_TOO_LONG
        self._current = _Principal("jwt")
        return None

    def _check_installation_token(self, credential: str, route: str, rel_path: str,
                                  graphql: bool) -> tuple[int, str] | None:
        token = self._tokens.get(credential)
        if route in _JWT_ROUTES:
            return 401, JWT_UNDECODABLE
        if (token is None or token.expires_at <= self._now()
                or self.installations[token.installation_id].revoked):
            return 401, BAD_CREDENTIALS
        self._current = _Principal("installation", token)
        if route == "user":
            return 403, NOT_FOR_INTEGRATIONS
        match = _REPO_PATH.match(rel_path)
        if not graphql and match and not self.can_see(f"{match.group(1)}/{match.group(2)}"):
            return 404, "Not Found"
        org = _ORG_PATH.match(rel_path)
        account = self.installations[token.installation_id].account.lower()
        if not graphql and org and org.group(1).lower() != account:
            return 404, "Not Found"  # an installation reads only its own organisation
        return None

    # -- App endpoints (FakeGitHub routes them here) -------------------------------------
    def app_json(self) -> dict[str, Any]:
        """``GET /app``."""
        assert self.fake is not None
        return {"id": self.app_id, "slug": self.slug, "name": self.name,
                "node_id": f"A_kwHO{self.app_id}", "client_id": f"Iv1.{self.app_id:016x}",
                "owner": self.fake._user("acme", "Organization"), "description": "",
                "external_url": "https://loopgate.invalid",
                "html_url": f"https://github.com/apps/{self.slug}",
                "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                "permissions": dict(PERMISSIONS), "events": list(EVENTS),
                "installations_count": sum(not i.revoked for i in self.installations.values())}

    def installation_json(self, repo: str) -> dict[str, Any] | None:
        """``GET /repos/{o}/{r}/installation``: the installation covering ``repo``, or None."""
        assert self.fake is not None
        found = next((i for i in self.installations.values() if i.covers(repo)), None)
        if found is None or repo.lower() not in {r.lower() for r in self.fake.repos}:
            return None
        base = self.fake.api_url
        return {"id": found.id, "app_id": self.app_id, "app_slug": self.slug,
                "account": self.fake._user(found.account, "Organization"),
                "target_type": "Organization", "target_id": 1,
                "repository_selection": "all" if found.repos is None else "selected",
                "access_tokens_url": f"{base}/app/installations/{found.id}/access_tokens",
                "repositories_url": f"{base}/installation/repositories",
                "html_url": f"https://github.com/organizations/{found.account}/settings/"
                            f"installations/{found.id}",
                "permissions": dict(PERMISSIONS), "events": list(EVENTS),
                "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                "single_file_name": None, "suspended_at": None, "suspended_by": None}

    def mint(self, installation_id: int) -> dict[str, Any] | None:
        """``POST /app/installations/{id}/access_tokens``: a new token, or None (404)."""
        found = self.installations.get(installation_id)
        if found is None or found.revoked:
            return None
        value = "ghs_" + "".join(secrets.choice(string.ascii_letters + string.digits)
                                 for _ in range(36))
        token = FakeToken(value, installation_id,
                          self._now() + timedelta(seconds=self.token_ttl))
        self._tokens[value] = token
        self.minted.append(token)
        return {"token": value, "expires_at": token.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": dict(PERMISSIONS),
                "repository_selection": "all" if found.repos is None else "selected"}
