"""A loopback fake GitHub: REST + GraphQL on 127.0.0.1, for tests and benchmarks.

Shapes come from ../shared/fixtures/github (the REST examples of GitHub's OpenAPI
description are the templates of issues, comments and labels); the GraphQL endpoint
validates every query against the patched public schema
(``graphql/schema.docs.patched.graphql``, built once per process) and executes it with
plain resolvers over the fake's data.

What it does like GitHub:

* ETags on GET; ``If-None-Match`` matching → ``304`` with an empty body, which does not
  count against the rate limit (every other REST answer does, except ``/rate_limit``).
* ``Link`` pagination (``per_page`` ≤ 100, ``page``), absolute URLs on the same base.
* ``X-RateLimit-*`` headers; simulated limits: REST ``403``/``429`` with ``retry-after``
  or ``x-ratelimit-remaining: 0``; GraphQL ``200`` with ``errors[].type == RATE_LIMITED``
  (or ``403``).
* Comment edits are recorded as ``userContentEdits`` (the creation entry added on the
  first edit, ``includesCreatedEdit`` set), returned newest first by default so clients
  must sort them themselves.
* Other accounts can hold personal tokens (:meth:`FakeGitHub.add_user_token`): a REST
  ``PATCH`` of someone else's comment with one is an edit by that user — ``user`` stays the
  author, ``updated_at`` moves, and GraphQL shows the user as ``editor`` and in
  ``userContentEdits`` beside the creation entry (platform-facts F3, A1-A4).
* Unknown ids in ``nodes(ids:)`` answer ``null`` plus a ``NOT_FOUND`` error.
* Comment ids start above 2^31 (ids like ``5186334064`` are ordinary on github.com), so
  selecting GraphQL's 32-bit ``databaseId`` of a comment is GitHub's own error ("Int cannot
  represent non 32-bit signed integer value") — graphql-core raises it exactly as GitHub
  does; ``fullDatabaseId`` (a BigInt string) and node ids work (platform-facts A2, A9).
* Bots look as they do on GitHub (platform-facts A7): REST and webhook ``user`` objects say
  ``login: "name[bot]"``, ``type: "Bot"``; GraphQL says ``__typename: "Bot"`` with
  ``login: "name"`` (no suffix) and the same numeric ``databaseId`` as REST's ``id``. A
  ``User`` can have the login an App's slug has (``loopgate``): it is another account.
* A comment body over 65,536 characters is refused with ``422`` (platform-facts A8).
* A token GitHub does not accept (unknown, or revoked: :meth:`FakeGitHub.revoke_token`)
  gets ``401`` with ``{"message": "Bad credentials", "documentation_url":
  "https://docs.github.com/rest"}`` on every REST and GraphQL call, ``/user`` included
  (docs.github.com "Troubleshooting the REST API": 401 when the token is invalid or
  revoked; the body as GitHub sends it, e.g. github.com/pluveto/upgit/issues/70). It is
  not a rate limit: no ``Retry-After``, and retrying with the same token changes nothing.

Use it from a test::

    with FakeGitHub() as gh:
        gh.create_repo("acme/widgets")
        n = gh.create_issue("acme/widgets", "Add a thing", author="alice")
        gh.add_comment("acme/widgets", n, "the-loop start", as_user="alice")
        ...  # point PyGithub at gh.api_url and gql at gh.graphql_url, token gh.token

It runs in a daemon thread, so the e2e suite can point a ``loopgate serve`` subprocess at
it too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from graphql import GraphQLSchema, build_schema, execute, parse, validate
from graphql.error import GraphQLError

from tests.fakes import LoopbackServer
from tests.fakes.github_app import APP_ROUTES, FakeApp
from tests.fakes.github_oauth import OAUTH_PATHS, REVOKE, FakeOAuth

__all__ = ["FakeGitHub", "Hold", "Req", "github_schema", "FIXTURES", "SCHEMA_PATH"]

# ../shared beside the checkout, like tests/conftest.py (override with LOOPGATE_SHARED).
_SHARED = Path(os.environ.get("LOOPGATE_SHARED", Path(__file__).resolve().parents[2].parent
                              / "shared"))
FIXTURES = _SHARED / "fixtures" / "github"
SCHEMA_PATH = FIXTURES / "graphql" / "schema.docs.patched.graphql"
HTML_BASE = "https://github.com"
RATE_LIMIT = 5000
#: Where comment ids start: past 2^31, like github.com's (e.g. 5186334064).
FIRST_COMMENT_ID = 5_186_334_064
#: GitHub's limit on an issue or comment body (characters; platform-facts A8).
MAX_BODY = 65_536


@lru_cache(maxsize=1)
def github_schema() -> GraphQLSchema:
    """GitHub's public GraphQL schema (patched fixture), built once per process (~1 s)."""
    return build_schema(SCHEMA_PATH.read_text("utf-8"))


@lru_cache(maxsize=8)
def _template(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "rest" / name).read_text("utf-8"))


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_iso(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"0:{kind}{number}".encode()).decode().rstrip("=")


#: Longest a held request waits for its release (seconds): a forgotten hold ends.
HOLD_TIMEOUT = 60.0


@dataclass
class Hold:
    """A request :meth:`FakeGitHub.hold` keeps waiting.

    Attributes:
        method: the HTTP verb held.
        route: the route name held.
        apply: on release, carry the request out (True) or drop it unanswered (False).
        arrived: set once the request is held.
        released: set by :meth:`release`.
    """

    method: str
    route: str
    apply: bool
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        """Let the held request go on (carried out or dropped, as ``apply`` says)."""
        self.released.set()


def _account_id(login: str, kind: str) -> int:
    """A stable account id per (login, kind): a ``User`` named ``loopgate`` and the
    ``loopgate[bot]`` Bot are different accounts, as on GitHub."""
    key = f"{kind}:{login[: -len('[bot]')] if login.endswith('[bot]') else login}".lower()
    return int(hashlib.sha256(key.encode()).hexdigest()[:7], 16) + 1


def _checked_body(text: Any) -> str:
    # GitHub's 422 texts for a missing and an oversized body.
    if not isinstance(text, str) or not text:
        raise ValueError("body is required")
    if len(text) > MAX_BODY:
        raise ValueError(f"body is too long (maximum is {MAX_BODY} characters)")
    return text


@dataclass
class Req:
    """One request the fake answered.

    Attributes:
        method: HTTP verb.
        path: the path without the query string (API prefix included).
        route: the route name (``repo-comments``, ``graphql`` ...), "" if none matched.
        query: the parsed query string (last value of each key).
        status: the status answered.
        conditional: the request carried ``If-None-Match``.
        counted: it counted against the rate limit.
        resource: ``core``, ``graphql`` or "" (not counted).
        at: when it was answered (``time.monotonic()``; pacing tests compare the spacing).
    """

    method: str
    path: str
    route: str
    query: dict[str, str]
    status: int
    conditional: bool
    counted: bool
    resource: str
    at: float = field(default_factory=time.monotonic)


@dataclass
class FakeComment:
    """A comment on an issue or pull request (conversation comment)."""

    id: int
    node_id: str
    repo: str
    number: int
    author: str
    author_type: str
    body: str
    created_at: str
    updated_at: str
    edits: list[dict[str, Any]] = field(default_factory=list)
    includes_created_edit: bool = False
    editor: str | None = None
    editor_type: str = ""
    last_edited_at: str | None = None


@dataclass
class FakeIssue:
    """An issue or a pull request (they share numbers, as on GitHub)."""

    number: int
    node_id: str
    title: str
    body: str
    author: str
    created_at: str
    updated_at: str
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    is_pr: bool = False
    head_branch: str = ""
    closes: list[int] = field(default_factory=list)
    head_sha: str = ""  # a pull request's head commit (changes on push)
    # A pull request's own commits once pushed to (GET /pulls/{n}/commits), oldest first:
    # {sha, message, author: {name, email, date}, parents: [sha]}; [] = one made-up commit.
    commits: list[dict[str, Any]] = field(default_factory=list)
    head_repo: str = ""  # a fork's full name ("" = the base repository)
    requested_reviewers: list[str] = field(default_factory=list)  # logins (issue 24 §3)
    requested_teams: list[str] = field(default_factory=list)  # team slugs
    author_type: str = "User"  # the author's account type (User, Bot)


@dataclass
class FakeRepo:
    """A repository: issues, pull requests and files per branch."""

    owner: str
    name: str
    id: int
    default_branch: str = "main"
    issues: dict[int, FakeIssue] = field(default_factory=dict)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    #: Issue 22 §2: a private repository is invisible to a user token whose owner is not
    #: among ``readers`` (lower-cased logins): GitHub answers 404 (platform-facts F6).
    private: bool = False
    readers: set[str] = field(default_factory=set)
    #: Issue 24 §4: people with write access (``permissions.push`` in their own answer).
    writers: set[str] = field(default_factory=set)
    #: Who may be asked for a review (read access or more): None = anyone; a set
    #: (lower-case logins) = only they (:meth:`FakeGitHub.set_access`, issue 24 §3).
    collaborators: set[str] | None = None
    #: Team slugs with access (lower case); None = every team of the owner organization.
    collaborator_teams: set[str] | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class _Response:
    def __init__(self, status: int, payload: Any = None, headers: dict[str, str] | None = None,
                 raw: bytes | None = None, conditional_ok: bool = False) -> None:
        self.status = status
        self.payload = payload
        self.headers = dict(headers or {})
        self.raw = raw
        self.conditional_ok = conditional_ok  # GET answers that carry an ETag


class _NotFound(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle plus delayed
        # ACKs stall every keep-alive response by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        return None  # quiet: tests read fake.requests instead

    def _dispatch(self) -> None:
        self.server.fake._serve(self)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeGitHub


_Route = tuple[str, str, "re.Pattern[str]", str]


def _routes() -> list[_Route]:
    seg = r"(?P<owner>[^/]+)/(?P<repo>[^/]+)"
    table = [
        ("GET", "rate-limit", r"/rate_limit"),
        ("GET", "user", r"/user"),
        ("GET", "repo", rf"/repos/{seg}"),
        # A renamed repository's old name answers 301 to its address by id (docs.github.com
        # REST "Best practices": follow redirects; "Troubleshooting": 301 Moved Permanently).
        ("GET", "repository-by-id", r"/repositories/(?P<id>\d+)"),
        ("GET", "repo-issues", rf"/repos/{seg}/issues"),
        ("GET", "repo-comments", rf"/repos/{seg}/issues/comments"),
        ("GET", "comment", rf"/repos/{seg}/issues/comments/(?P<id>\d+)"),
        ("PATCH", "comment-edit", rf"/repos/{seg}/issues/comments/(?P<id>\d+)"),
        ("DELETE", "comment-delete", rf"/repos/{seg}/issues/comments/(?P<id>\d+)"),
        ("GET", "issue", rf"/repos/{seg}/issues/(?P<number>\d+)"),
        ("GET", "issue-comments", rf"/repos/{seg}/issues/(?P<number>\d+)/comments"),
        ("POST", "comment-create", rf"/repos/{seg}/issues/(?P<number>\d+)/comments"),
        ("GET", "labels", rf"/repos/{seg}/issues/(?P<number>\d+)/labels"),
        ("POST", "labels-add", rf"/repos/{seg}/issues/(?P<number>\d+)/labels"),
        ("PUT", "labels-replace", rf"/repos/{seg}/issues/(?P<number>\d+)/labels"),
        ("DELETE", "label-remove", rf"/repos/{seg}/issues/(?P<number>\d+)/labels/(?P<name>.+)"),
        ("GET", "pulls", rf"/repos/{seg}/pulls"),
        ("GET", "pull", rf"/repos/{seg}/pulls/(?P<number>\d+)"),
        # Issue 24: a pull request's changed files (GET /repos/{o}/{r}/pulls/{n}/files).
        ("GET", "pull-files", rf"/repos/{seg}/pulls/(?P<number>\d+)/files"),
        # Issue 24 §3: review requests (POST/GET /repos/{o}/{r}/pulls/{n}/requested_reviewers).
        ("POST", "review-request", rf"/repos/{seg}/pulls/(?P<number>\d+)/requested_reviewers"),
        ("GET", "requested-reviewers",
         rf"/repos/{seg}/pulls/(?P<number>\d+)/requested_reviewers"),
        # Issues 24 §2 (agent authorship) and 19 §4 (rebase groups): a pull request's
        # commits (GET /repos/{o}/{r}/pulls/{n}/commits).
        ("GET", "pull-commits", rf"/repos/{seg}/pulls/(?P<number>\d+)/commits"),
        ("GET", "contents", rf"/repos/{seg}/contents(?:/(?P<path>.*))?"),
        # Issue 11: commit statuses, check runs, team membership (GitHub REST shapes).
        ("POST", "status-create", rf"/repos/{seg}/statuses/(?P<sha>[0-9a-fA-F]+)"),
        ("GET", "combined-status", rf"/repos/{seg}/commits/(?P<ref>[^/]+)/status"),
        ("GET", "statuses", rf"/repos/{seg}/commits/(?P<ref>[^/]+)/statuses"),
        ("POST", "check-run-create", rf"/repos/{seg}/check-runs"),
        ("PATCH", "check-run-update", rf"/repos/{seg}/check-runs/(?P<id>\d+)"),
        ("GET", "commit-check-runs", rf"/repos/{seg}/commits/(?P<ref>[^/]+)/check-runs"),
        # Issue 19 §4: a merge group's commits (GET /repos/{o}/{r}/compare/{base}...{head}).
        ("GET", "compare",
         rf"/repos/{seg}/compare/(?P<base>[0-9a-fA-F]+)\.\.\.(?P<head>[0-9a-fA-F]+)"),
        ("GET", "team", r"/orgs/(?P<org>[^/]+)/teams/(?P<team>[^/]+)"),
        ("GET", "team-membership",
         r"/orgs/(?P<org>[^/]+)/teams/(?P<team>[^/]+)/memberships/(?P<login>[^/]+)"),
        *APP_ROUTES,  # answered by the FakeApp, when there is one (tests/fakes/github_app.py)
    ]
    return [(m, name, re.compile(f"^{pattern}/?$"), name) for m, name, pattern in table]


_ROUTES = _routes()



def _signed_delivery(event: str, payload: dict[str, Any], secret: str | None,
                     delivery_id: str | None) -> tuple[dict[str, str], bytes]:
    """A delivery's headers and body as GitHub sends them: ``X-GitHub-Event``, a
    ``X-GitHub-Delivery`` GUID, and ``X-Hub-Signature-256`` (HMAC-SHA256 of the raw body)
    when ``secret`` is given."""
    import hmac
    import uuid

    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "Content-Type": "application/json",
               "User-Agent": "GitHub-Hookshot/044aadd",
               "X-GitHub-Delivery": delivery_id or str(uuid.uuid4())}
    if secret is not None:
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers["X-Hub-Signature-256"] = f"sha256={digest}"
    return headers, body

class FakeGitHub(LoopbackServer):
    """The fake server and its data.

    Args:
        token: the only token accepted (``Authorization: token|bearer <token>``).
        bot_login: the login of the token's owner as REST spells it: comments and edits
            made through the API are authored by it (``loopgate[bot]`` for an App).
        bot_type: ``User`` (a personal token's owner) or ``Bot`` (a GitHub App's bot).
        first_comment_id: the first comment id handed out (default above 2^31, as on
            github.com today).
        api_prefix: REST path prefix (``/api/v3`` imitates GitHub Enterprise Server).
        edits_newest_first: the order ``userContentEdits`` nodes are returned in.
        app: a GitHub App registered on the fake (JWTs, installations, installation
            tokens: :mod:`tests.fakes.github_app`); ``token`` keeps working beside it.
    """

    def __init__(self, *, token: str = "ghp-test-token", bot_login: str = "loopgate-bot",
                 bot_type: str = "User", api_prefix: str = "", edits_newest_first: bool = True,
                 first_comment_id: int = FIRST_COMMENT_ID, app: FakeApp | None = None) -> None:
        self.token = token
        self.token_revoked = False
        #: Personal tokens of other accounts (:meth:`add_user_token`): token -> login.
        self.user_tokens: dict[str, str] = {}
        self.app = app
        if app is not None:
            app.fake = self
        self.bot_login = bot_login
        self.bot_type = bot_type
        self.api_prefix = api_prefix.rstrip("/")
        self.edits_newest_first = edits_newest_first
        self.repos: dict[str, FakeRepo] = {}
        #: Old full names of renamed repositories -> their current full name (rename_repo).
        self.renamed: dict[str, str] = {}
        self.comments: dict[int, FakeComment] = {}
        self.requests: list[Req] = []
        self.graphql_log: list[dict[str, Any]] = []
        self.invalid_queries: list[tuple[str, list[str]]] = []
        self.lock = threading.RLock()
        self._offset = timedelta(0)
        self._next_comment = first_comment_id - 1
        self._next_repo = 1
        self._rest_limits: list[dict[str, Any]] = []
        self._route_failures: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._holds: list[Hold] = []
        self._graphql_limits: list[str] = []
        self._core_used = 0
        self._graphql_used = 0
        #: ``(repo, sha) -> [status]``, oldest first (POST .../statuses/{sha}).
        self.statuses: dict[tuple[str, str], list[dict[str, Any]]] = {}
        #: check run id -> the run (POST/PATCH .../check-runs).
        self.check_runs: dict[int, dict[str, Any]] = {}
        #: ``(org, team_slug) -> {"members": {login: state}, "visible": bool}``.
        self.teams: dict[tuple[str, str], dict[str, Any]] = {}
        self._next_check_run = 4_000_000_000
        self._old_commits: dict[str, set[str]] = {}
        #: Issue 24 §2: logins no GitHub account has (``GET /users/{login}`` answers 404).
        self.missing_users: set[str] = set()
        #: Issue 24 §2: ``(repo, pull number) -> [commit]`` added by :meth:`commit`.
        #: Issue 19 §4: merge groups by head sha (:meth:`queue`).
        self.merge_groups: dict[str, dict[str, Any]] = {}
        #: Issue 22 §2, sign in with GitHub (:meth:`add_oauth_client`, :meth:`oauth_as`).
        self.oauth = FakeOAuth(self)
        #: Each repository's merge queue per base branch: ``[(pull number, group head)]``
        #: front first, as the latest :meth:`queue` left it (GraphQL ``mergeQueue``).
        self.merge_queue_entries: dict[str, dict[str, list[tuple[int, str]]]] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle (start/stop/with: LoopbackServer) --------------------------------------
    def _make_server(self) -> _Server:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        return server

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the server root)."""
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        """The REST base URL (``github.apiUrl``)."""
        return self.url + self.api_prefix

    @property
    def graphql_url(self) -> str:
        """The GraphQL endpoint (``github.graphqlUrl``)."""
        prefix = self.api_prefix.replace("/v3", "") if self.api_prefix else ""
        return f"{self.url}{prefix}/graphql"

    # -- clock -------------------------------------------------------------------------
    def now(self) -> datetime:
        """The fake's clock (wall clock plus :meth:`advance` offsets), whole seconds."""
        return (datetime.now(UTC) + self._offset).replace(microsecond=0)

    def advance(self, seconds: float) -> None:
        """Move the fake's clock forward (timestamps of later writes)."""
        with self.lock:
            self._offset += timedelta(seconds=seconds)

    # -- test API: data ----------------------------------------------------------------
    def create_repo(self, full_name: str, default_branch: str = "main") -> FakeRepo:
        """Create (or return) repository ``owner/name``."""
        with self.lock:
            if full_name not in self.repos:
                owner, name = full_name.split("/", 1)
                self.repos[full_name] = FakeRepo(owner, name, self._next_repo, default_branch,
                                                 files={default_branch: {}})
                self._next_repo += 1
            return self.repos[full_name]

    def _repo(self, full_name: str) -> FakeRepo:
        repo = self.repos.get(full_name)
        if repo is None:
            raise _NotFound(full_name)
        return repo

    def _new_number(self, repo: FakeRepo) -> int:
        return max(repo.issues, default=0) + 1

    def create_issue(self, repo: str, title: str, body: str = "", *, author: str = "octocat",
                     labels: Iterable[str] = ()) -> int:
        """Open an issue; returns its number."""
        with self.lock:
            r = self.create_repo(repo)
            number = self._new_number(r)
            now = _iso(self.now())
            r.issues[number] = FakeIssue(number, _node_id("Issue", r.id * 100000 + number), title,
                                         body, author, now, now, list(labels))
            return number

    def open_pr(self, repo: str, head_branch: str, *, closes: Iterable[int] = (),
                title: str = "", author: str = "octocat", state: str = "open",
                author_type: str = "") -> int:
        """Open a pull request from ``head_branch``; ``closes`` = closing references;
        ``author_type``: the author's account type (default ``Bot`` for a ``[bot]``
        login, else ``User``; GitHub's Copilot coding agent is ``Copilot``, type ``Bot``)."""
        with self.lock:
            r = self.create_repo(repo)
            number = self._new_number(r)
            now = _iso(self.now())
            body = "\n".join(f"Closes #{n}" for n in closes)
            r.issues[number] = FakeIssue(number, _node_id("PullRequest", r.id * 100000 + number),
                                         title or f"Work on {head_branch}", body, author, now, now,
                                         state=state, is_pr=True, head_branch=head_branch,
                                         closes=list(closes), author_type=author_type or (
                                             "Bot" if author.endswith("[bot]") else "User"))
            r.files.setdefault(head_branch, dict(r.files.get(r.default_branch, {})))
            return number

    def head_sha(self, repo: str, number: int) -> str:
        """Pull request ``number``'s head commit (40 hex characters)."""
        with self.lock:
            pr = self._repo(repo).issues[number]
            return pr.head_sha or hashlib.sha1(f"{repo}:{pr.head_branch}".encode()).hexdigest()

    def push(self, repo: str, number: int, message: str = "") -> str:
        """A new commit on pull request ``number``'s head branch (``message``, default
        "More work on <branch>"); returns its SHA (send the ``pull_request.synchronize``
        webhook yourself, as GitHub would)."""
        with self.lock:
            pr = self._repo(repo).issues[number]
            old = self.head_sha(repo, number)
            pr.commits = self._own_commits(repo, number)
            self._old_commits.setdefault(repo, set()).add(old)  # still a commit of the repo
            pr.head_sha = hashlib.sha1(f"{old}:next".encode()).hexdigest()
            pr.updated_at = _iso(self.now())
            pr.commits.append({"sha": pr.head_sha, "parents": [old],
                               "message": message or f"More work on {pr.head_branch}",
                               "author_login": pr.author, "author_type": pr.author_type,
                               "author": self._git_person(pr.author, pr.updated_at,
                                                          pr.author_type),
                               "committer": self._web_flow(pr.updated_at)})
            return pr.head_sha

    def commit(self, repo: str, number: int, *, author: tuple[str, str],
               committer: tuple[str, str] | None = None, message: str = "Change",
               author_login: str | None = None, author_type: str = "User",
               committer_login: str | None = None, committer_type: str = "User") -> str:
        """Push a commit to pull request ``number`` (a new head, as :meth:`push`) with a
        git ``author`` and ``committer`` ``(name, email)`` and ``message`` (trailers
        included); ``author_login``/``committer_login``: the accounts GitHub links to
        them (None: no account, as for an e-mail GitHub does not know). Returns its SHA.
        """
        sha = self.push(repo, number, message)
        with self.lock:
            pr = self._repo(repo).issues[number]
            last = pr.commits[-1]
            date = last["author"]["date"]
            last["author"] = {"name": author[0], "email": author[1], "date": date}
            if committer is not None:
                last["committer"] = {"name": committer[0], "email": committer[1],
                                     "date": date}
            last.update(author_login=author_login, author_type=author_type,
                        committer_login=committer_login, committer_type=committer_type)
        return sha

    @staticmethod
    def _git_person(login: str, date: str, kind: str = "User") -> dict[str, str]:
        # A commit's git author (REST commit.author: name, email, date), with GitHub's
        # no-reply e-mail ID+LOGIN@users.noreply.github.com.
        return {"name": login, "date": date,
                "email": f"{_account_id(login, kind)}+{login}@users.noreply.github.com"}

    @staticmethod
    def _web_flow(date: str) -> dict[str, str]:
        # The committer of a commit GitHub makes on someone's behalf (no linked account
        # here, as the fake's pushes stand for the author's own).
        return {"name": "GitHub", "email": "noreply@github.com", "date": date}

    def _base_sha(self, repo: str) -> str:
        return hashlib.sha1(f"{repo}:{self._repo(repo).default_branch}".encode()).hexdigest()

    def _own_commits(self, repo: str, number: int) -> list[dict[str, Any]]:
        # A pull request's own commits: those pushed, or one commit at its head whose
        # parent is the base branch's tip (the branch as opened).
        pr = self._repo(repo).issues[number]
        if pr.commits:
            return [dict(c) for c in pr.commits]
        return [{"sha": self.head_sha(repo, number), "parents": [self._base_sha(repo)],
                 "message": pr.title, "author_login": pr.author, "author_type": pr.author_type,
                 "author": self._git_person(pr.author, pr.created_at, pr.author_type),
                 "committer": self._web_flow(pr.created_at)}]

    def set_fork(self, repo: str, number: int, fork: str) -> None:
        """Make pull request ``number`` come from the fork ``fork`` (``owner/name``)."""
        with self.lock:
            self._repo(repo).issues[number].head_repo = fork

    def add_team(self, org: str, slug: str, members: Iterable[str] = (), *,
                 visible: bool = True, pending: Iterable[str] = ()) -> None:
        """A team ``org/slug``; ``visible=False``: loopgate's credentials cannot see it
        (GitHub then answers 404 for the team and every membership)."""
        with self.lock:
            states = {m.lower(): "active" for m in members}
            states.update({m.lower(): "pending" for m in pending})
            self.teams[(org.lower(), slug.lower())] = {"members": states, "visible": visible}

    def set_access(self, repo: str, users: Iterable[str] | None = None,
                   teams: Iterable[str] | None = None) -> None:
        """Who has access to ``repo`` (None: anyone, any team of its organization); a
        review request naming anyone else is refused with GitHub's 422 (issue 24 §3)."""
        with self.lock:
            r = self.create_repo(repo)
            r.collaborators = None if users is None else {u.lower() for u in users}
            r.collaborator_teams = None if teams is None else {t.lower() for t in teams}

    def requested_reviewers(self, repo: str, number: int) -> tuple[list[str], list[str]]:
        """Pull request ``number``'s requested reviewers: ``(logins, team slugs)``."""
        with self.lock:
            pr = self._repo(repo).issues[number]
            return list(pr.requested_reviewers), list(pr.requested_teams)

    def commit_state(self, repo: str, sha: str, context: str = "loopgate") -> str | None:
        """The latest state of ``context`` on ``sha``: a commit status's ``state``, or a
        check run's ``conclusion`` (``in_progress``/``queued`` while not completed)."""
        with self.lock:
            found = [st for st in self.statuses.get((repo, sha), ()) if st["context"] == context]
            if found:
                return str(found[-1]["state"])
            runs = [r for r in self.check_runs.values()
                    if r["_repo"] == repo and r["head_sha"] == sha and r["name"] == context]
            if not runs:
                return None
            run = runs[-1]
            return str(run["conclusion"] if run["status"] == "completed" else run["status"])

    def add_comment(self, repo: str, number: int, body: str, *, as_user: str = "octocat",
                    user_type: str = "User") -> FakeComment:
        """Post a comment on issue/PR ``number`` as ``as_user``."""
        with self.lock:
            issue = self._repo(repo).issues[number]
            now = _iso(self.now())
            self._next_comment += 1
            cid = self._next_comment
            comment = FakeComment(cid, _node_id("IssueComment", cid), repo, number, as_user,
                                  user_type, body, now, now)
            self.comments[cid] = comment
            issue.updated_at = now
            return comment

    def edit_comment(self, comment_id: int, body: str, editor: str | None, *,
                     editor_type: str = "User", record_history: bool = True) -> FakeComment:
        """Edit a comment as ``editor`` (None = a deleted/ghost account).

        Args:
            comment_id: the numeric id.
            body: the new body.
            editor: who edits (None: GitHub names nobody).
            editor_type: ``User``, ``Bot``, ``Mannequin`` ...
            record_history: False leaves ``userContentEdits`` untouched (a lagging
                history) while ``editor``/``lastEditedAt`` move.
        """
        with self.lock:
            c = self.comments[comment_id]
            now = _iso(self.now())
            if record_history:
                if not c.edits:
                    c.edits.append({"editor": c.author, "editor_type": c.author_type,
                                    "edited_at": c.created_at, "creation": True})
                    c.includes_created_edit = True
                c.edits.append({"editor": editor, "editor_type": editor_type if editor else "",
                                "edited_at": now, "creation": False})
            c.body = body
            c.updated_at = now
            c.editor = editor
            c.editor_type = editor_type if editor else ""
            c.last_edited_at = now
            self._repo(c.repo).issues[c.number].updated_at = now
            return c

    def tick_quiz(self, comment_id: int, editor: str | None, *, editor_type: str = "User") -> None:
        """Tick the attestation box of a quiz comment (``- [ ] I have read`` → ``- [x]``)."""
        with self.lock:
            body = re.sub(r"^(\s*[-*]\s+)\[ \](\s+I have read)", r"\1[x]\2",
                          self.comments[comment_id].body, count=1, flags=re.MULTILINE)
        self.edit_comment(comment_id, body, editor, editor_type=editor_type)

    def delete_comment(self, comment_id: int) -> None:
        """Delete a comment."""
        with self.lock:
            self.comments.pop(comment_id, None)

    def add_label(self, repo: str, number: int, name: str) -> None:
        """Add a label (as a person would in the UI)."""
        with self.lock:
            issue = self._repo(repo).issues[number]
            if name not in issue.labels:
                issue.labels.append(name)
            issue.updated_at = _iso(self.now())

    def put_file(self, repo: str, path: str, data: bytes | str, ref: str | None = None) -> None:
        """Write a file at branch ``ref`` (default branch when None)."""
        with self.lock:
            r = self.create_repo(repo)
            branch = ref or r.default_branch
            files = r.files.setdefault(branch, dict(r.files.get(r.default_branch, {})))
            files[path.strip("/")] = data.encode("utf-8") if isinstance(data, str) else data

    def comments_on(self, repo: str, number: int) -> list[FakeComment]:
        """Comments on issue/PR ``number``, oldest first."""
        with self.lock:
            return sorted((c for c in self.comments.values()
                           if c.repo == repo and c.number == number), key=lambda c: c.id)

    def labels_of(self, repo: str, number: int) -> list[str]:
        """Label names of issue/PR ``number``."""
        with self.lock:
            return list(self._repo(repo).issues[number].labels)

    # -- test API: webhooks ------------------------------------------------------------
    def webhook(self, event: str, action: str, *, repo: str, number: int,
                comment_id: int | None = None, label: str | None = None,
                sender: str = "octocat", secret: str | None = None,
                delivery_id: str | None = None,
                previous_body: str = "", before_sha: str = "") -> tuple[dict[str, str], bytes]:
        """A webhook delivery as GitHub would send it about the fake's current data.

        The body starts from the matching payload of ../shared/fixtures/github/webhooks
        (``<event>.<action>.payload.json``) with ``repository``, ``issue``, ``comment``,
        ``label`` and ``sender`` replaced by the fake's objects.

        Args:
            event: ``issue_comment``, ``issues`` ...
            action: ``created``, ``edited``, ``labeled`` ...
            repo: ``owner/name``.
            number: the issue or PR number.
            comment_id: the comment (issue_comment events).
            label: the label name (``issues.labeled``).
            sender: who acted (never trusted for attribution by loopgate).
            secret: sign with it (``X-Hub-Signature-256``); None leaves it unsigned.
            delivery_id: ``X-GitHub-Delivery`` (a fresh GUID when None).
            previous_body: ``changes.body.from`` of an edit.
            before_sha: ``before`` of a ``pull_request.synchronize`` (``after`` is the
                pull request's current head).

        Returns:
            ``(headers, body bytes)``.
        """

        with self.lock:
            r = self._repo(repo)
            fixture = FIXTURES / "webhooks" / f"{event}.{action}.payload.json"
            if event == "pull_request" and not fixture.exists():
                # Only pull_request.opened is in the fixtures; synchronize and reopened
                # share its shape (action, number, pull_request, repository, sender).
                fixture = FIXTURES / "webhooks" / "pull_request.opened.payload.json"
            payload = json.loads(fixture.read_text("utf-8"))
            payload["repository"] = {**payload.get("repository", {}), **self._repo_json(r),
                                     "owner": self._user(r.owner, "Organization")}
            if event == "pull_request":
                payload.update(action=action, number=number,
                               pull_request=self._pull_json(r, r.issues[number]))
                if action == "synchronize":
                    payload["after"] = self.head_sha(repo, number)
                    payload["before"] = before_sha or "0" * 40
            else:
                payload["issue"] = self._issue_json(r, r.issues[number])
            if comment_id is not None:
                payload["comment"] = self._comment_json(self.comments[comment_id])
            if label is not None:
                payload["label"] = self._label_json(r, label)
            if "changes" in payload:
                payload["changes"] = {"body": {"from": previous_body}}
            payload["sender"] = self._user(sender, "Bot" if sender.endswith("[bot]") else "User")
            self._name_installation(payload, repo)
        return _signed_delivery(event, payload, secret, delivery_id)

    def _name_installation(self, payload: dict[str, Any], repo: str) -> None:
        # An App's deliveries name its installation, as GitHub's do (fixture
        # issue_comment.created.with-installation: ``installation: {id, node_id}``).
        found = self.app.installation_json(repo) if self.app is not None else None
        if found is not None:
            payload["installation"] = {"id": found["id"],
                                       "node_id": _node_id("Installation", found["id"])}

    # -- test API: limits and counts ---------------------------------------------------
    def rest_rate_limit(self, times: int = 1, *, status: int = 403, retry_after: int | None = None,
                        reset_in: int = 60) -> None:
        """Answer the next ``times`` counted REST requests with a rate-limit error.

        Args:
            times: how many requests to refuse.
            status: 403 (primary: ``x-ratelimit-remaining: 0``) or 429.
            retry_after: seconds for a ``retry-after`` header (None: none sent).
            reset_in: seconds until ``x-ratelimit-reset``.
        """
        with self.lock:
            self._rest_limits.extend(
                [{"status": status, "retry_after": retry_after, "reset_in": reset_in}] * times)

    def fail_route(self, method: str, route: str, status: int, *, times: int = 1,
                   message: str = "", headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests to ``method route`` with ``status``, as
        GitHub does when it refuses one (platform-facts B4, A8): e.g. ``502`` (a timed-out
        backend), ``403`` + ``Retry-After`` + "You have exceeded a secondary rate limit",
        ``422`` "Validation Failed". The refused request changes nothing.

        Args:
            method: ``POST``, ``GET`` ...
            route: the route name (``comment-create``, ``labels-add`` ...).
            status: the status to answer.
            times: how many requests to refuse.
            message: the body's ``message`` (a default per status when "").
            headers: extra response headers (``Retry-After``).
        """
        defaults = {502: "Server Error", 422: "Validation Failed",
                    403: "You have exceeded a secondary rate limit. Please wait a few "
                         "minutes before you try again."}
        entry = {"status": status, "message": message or defaults.get(status, "Error"),
                 "headers": dict(headers or {})}
        with self.lock:
            self._route_failures.setdefault((method, route), []).extend([entry] * times)

    def clear_route_failures(self, method: str, route: str) -> None:
        """Forget the refusals :meth:`fail_route` still holds for ``method route`` (GitHub
        answering again after an outage)."""
        with self.lock:
            self._route_failures.pop((method, route), None)

    def graphql_rate_limit(self, times: int = 1, *, mode: str = "200") -> None:
        """Answer the next ``times`` GraphQL queries rate-limited: ``200`` + ``RATE_LIMITED``
        errors, or ``403``."""
        with self.lock:
            self._graphql_limits.extend([mode] * times)

    def count(self, *, route: str | None = None, method: str | None = None,
              status: int | None = None, counted: bool | None = None) -> int:
        """How many logged requests match every given filter."""
        with self.lock:
            return sum(1 for r in self.requests
                       if (route is None or r.route == route)
                       and (method is None or r.method == method)
                       and (status is None or r.status == status)
                       and (counted is None or r.counted == counted))

    def reset_log(self) -> None:
        """Forget logged requests and GraphQL queries (data stays)."""
        with self.lock:
            self.requests.clear()
            self.graphql_log.clear()

    def hold(self, method: str, route: str, *, apply: bool) -> Hold:
        """Hold the next ``method route`` request until :meth:`Hold.release` — so a test can
        kill the client while it waits. On release the request is carried out and answered
        (``apply``: GitHub did it, the client never heard back) or dropped unanswered
        (GitHub never saw it). The rest of the fake keeps answering meanwhile."""
        hold = Hold(method, route, apply)
        with self.lock:
            self._holds.append(hold)
        return hold

    def _held(self, h: BaseHTTPRequestHandler, path: str) -> bool:
        """Wait out a hold on this request; False when it is to be dropped."""
        rel = path[len(self.api_prefix):] if path.startswith(self.api_prefix) else path
        route = self._match(h.command, rel)[0]
        with self.lock:
            hold = next((x for x in self._holds if (x.method, x.route) == (h.command, route)),
                        None)
            if hold is None:
                return True
            self._holds.remove(hold)
        hold.arrived.set()
        hold.released.wait(HOLD_TIMEOUT)
        return hold.apply

    def add_user_token(self, login: str, token: str | None = None) -> str:
        """Give ``login`` (a ``User``) a personal token: REST writes made with it are that
        user's, so a ``PATCH`` of someone else's comment is an edit by ``login`` — recorded
        in ``userContentEdits`` with ``login`` as ``editor``, the creation entry added on the
        first edit, ``editor``/``lastEditedAt``/``includesCreatedEdit`` updated, while the
        REST comment keeps ``user`` = its author and only ``updated_at`` moves (a
        collaborator with write access may edit anyone's comment: platform-facts F3, A1-A4).

        Returns:
            The token.
        """
        token = token or f"ghp-user-{login}"
        with self.lock:
            self.user_tokens[token] = login
        return token

    def revoke_token(self, revoked: bool = True) -> None:
        """Refuse :attr:`token` from now on (401 Bad credentials), as GitHub does for a
        revoked or expired personal token; ``False`` accepts it again (a new token)."""
        with self.lock:
            self.token_revoked = revoked

    def set_private(self, repo: str, readers: Iterable[str] = ()) -> None:
        """Make ``repo`` private, readable by ``readers`` (their user tokens; loopgate's
        own token and the App's installation tokens still see it). A user token of anyone
        else gets ``404 Not Found`` for it and everything under it, as GitHub answers for
        a private repository a user cannot see (platform-facts F6)."""
        with self.lock:
            found = self.create_repo(repo)
            found.private = True
            found.readers = {login.lower() for login in readers}

    def rename_repo(self, old: str, new: str) -> FakeRepo:
        """Rename ``old`` to ``new`` (same id). As GitHub does, ``GET /repos/{old}`` then
        answers ``301 Moved Permanently`` with ``Location`` = the repository's API address
        by id (``<api>/repositories/<id>``) and a body ``{message, url,
        documentation_url}`` (docs.github.com REST "Troubleshooting" and "Best practices
        for using the REST API": "follow redirects"; the new address answers the
        repository). A private one the token cannot see stays 404 under either name."""
        with self.lock:
            repo = self.repos.pop(old)
            repo.owner, repo.name = new.split("/", 1)
            self.repos[new] = repo
            self.renamed = {k: (new if v == old else v) for k, v in self.renamed.items()}
            self.renamed[old] = new
            return repo

    def set_writers(self, repo: str, writers: Iterable[str]) -> None:
        """People with write access to ``repo``: GitHub's answer to their own token says
        ``permissions.push`` true (everyone else who can see it: ``pull`` only)."""
        with self.lock:
            self.create_repo(repo).writers = {login.lower() for login in writers}

    def _hidden(self, h: BaseHTTPRequestHandler, params: dict[str, str]) -> bool:
        """A private repository the request's user token cannot see."""
        if "owner" not in params or "repo" not in params:
            return False
        _, _, token = str(h.headers.get("Authorization", "")).partition(" ")
        login = self.user_tokens.get(token.strip())
        repo = self.repos.get(f"{params['owner']}/{params['repo']}")
        return (login is not None and repo is not None and repo.private
                and login.lower() not in repo.readers)

    def add_oauth_client(self, client_id: str, secret: str, callback_url: str, *,
                         expiring: bool = True) -> None:
        """Register a GitHub App's (or OAuth app's) client for the web flow
        (:class:`FakeOAuth`)."""
        with self.lock:
            self.oauth.clients[client_id] = {"secret": secret, "callback": callback_url,
                                             "expiring": expiring}

    def oauth_as(self, login: str | None, *, approve: bool = True) -> None:
        """Who is signed in to github.com in the browser that reaches the authorize page
        (None: nobody, GitHub shows its sign-in form), and whether they authorize the app
        (False: they click Cancel; GitHub sends them back with ``error=access_denied``)."""
        with self.lock:
            self.oauth.user = login
            self.oauth.approve = approve

    # -- HTTP plumbing -----------------------------------------------------------------
    def _authorized(self, h: BaseHTTPRequestHandler, path: str) -> _Response | None:
        """None when the request's credentials are accepted, else the refusal."""
        value = h.headers.get("Authorization", "")
        if self.app is not None:
            graphql = h.command == "POST" and path == urlsplit(self.graphql_url).path
            rel = path[len(self.api_prefix):] if path.startswith(self.api_prefix) else path
            verdict = self.app.authorize(value, self._match(h.command, rel)[0], rel, graphql)
            if verdict is not False:
                return None if verdict is None else _Response(
                    verdict[0], {"message": verdict[1],
                                 "documentation_url": "https://docs.github.com/rest"})
        scheme, _, token = value.partition(" ")
        if (scheme.lower() in ("token", "bearer") and token.strip() == self.token
                and not self.token_revoked):
            return None
        if scheme.lower() in ("token", "bearer") and token.strip() in self.user_tokens:
            return None
        return _Response(401, {"message": "Bad credentials",
                               "documentation_url": "https://docs.github.com/rest"})

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        path = unquote(split.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        if not self._held(h, path):
            return  # a held request dropped unanswered: it never reached GitHub
        with self.lock:
            if path in OAUTH_PATHS:  # github.com's web pages: no API credentials
                page = self.oauth.answer(h.command, path, query, body, h.headers)
                self._send(h, page, Req(h.command, path, "oauth", query, page.status, False,
                                        False, ""))
                return
            revoke = REVOKE.match(path[len(self.api_prefix):]) if h.command == "DELETE" else None
            if revoke is not None:  # Basic auth with the app's client id and secret
                answer = self.oauth.revoke(revoke["client_id"],
                                           str(h.headers.get("Authorization") or ""), body)
                self._send(h, answer, Req(h.command, path, "oauth-revoke", query,
                                          answer.status, False, True, "core"))
                return
            refused = self._authorized(h, path)
            if refused is not None:
                self._send(h, refused, Req(h.command, path, "", query, refused.status, False,
                                           False, ""))
                return
            if h.command == "POST" and path == urlsplit(self.graphql_url).path:
                resp, resource = self._graphql(body), "graphql"
                self._graphql_used += 1
                self._send(h, resp, Req("POST", path, "graphql", query, resp.status, False, True,
                                        resource))
                return
            self._serve_rest(h, path, query, body)

    def _serve_rest(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, str],
                    body: bytes) -> None:
        rel = path[len(self.api_prefix):] if path.startswith(self.api_prefix) else path
        route, params = self._match(h.command, rel)
        counted = route != "rate-limit"
        conditional = "If-None-Match" in h.headers
        failures = self._route_failures.get((h.command, route))
        if failures:
            failure = failures.pop(0)
            self._core_used += 1
            resp = _Response(failure["status"], {"message": failure["message"],
                                                 "documentation_url": "https://docs.github.com/rest"},
                             failure["headers"])
            self._send(h, resp, Req(h.command, path, route, query, resp.status, conditional,
                                    True, "core"))
            return
        if counted and self._rest_limits:
            limit = self._rest_limits.pop(0)
            self._core_used += 1
            resp = self._limited(limit)
            self._send(h, resp, Req(h.command, path, route, query, resp.status, conditional,
                                    True, "core"))
            return
        try:
            if route == "":
                raise _NotFound(path)
            if self._hidden(h, params):
                raise _NotFound(path)
            handler = getattr(self, "_r_" + route.replace("-", "_"), None)
            resp = (handler(params, query, body, h) if handler is not None
                    else self._app_route(route, params))
        except _NotFound:
            resp = _Response(404, {"message": "Not Found",
                                   "documentation_url": "https://docs.github.com/rest"})
        except (ValueError, KeyError, TypeError) as exc:
            resp = _Response(422, {"message": f"Validation Failed: {exc}"})
        if resp.conditional_ok and resp.status == 200 and resp.raw is None:
            data = json.dumps(resp.payload, sort_keys=True).encode()
            etag = f'W/"{hashlib.sha256(data).hexdigest()[:40]}"'
            resp.headers["ETag"] = etag
            if conditional and h.headers.get("If-None-Match", "").strip() == etag:
                resp = _Response(304, None, {"ETag": etag})
                self._send(h, resp, Req(h.command, path, route, query, 304, True, False, ""))
                return
        if counted:
            self._core_used += 1
        self._send(h, resp, Req(h.command, path, route, query, resp.status, conditional, counted,
                                "core" if counted else ""))

    def _match(self, method: str, rel: str) -> tuple[str, dict[str, str]]:
        for verb, name, pattern, _ in _ROUTES:
            m = pattern.match(rel)
            if m and verb == method:
                return name, {k: v for k, v in m.groupdict().items() if v is not None}
        return "", {}

    def _limited(self, limit: dict[str, Any]) -> _Response:
        reset = int((datetime.now(UTC) + timedelta(seconds=limit["reset_in"])).timestamp())
        headers = {"X-RateLimit-Limit": str(RATE_LIMIT), "X-RateLimit-Remaining": "0",
                   "X-RateLimit-Reset": str(reset), "X-RateLimit-Resource": "core"}
        if limit["retry_after"] is not None:
            headers["Retry-After"] = str(limit["retry_after"])
        message = ("API rate limit exceeded for user ID 1." if limit["status"] == 403
                   else "You have exceeded a secondary rate limit. Please wait a few minutes "
                        "before you try again.")
        return _Response(limit["status"], {"message": message,
                                           "documentation_url": "https://docs.github.com/rest"},
                         headers)

    def _send(self, h: BaseHTTPRequestHandler, resp: _Response, req: Req) -> None:
        self.requests.append(req)
        if resp.raw is not None:
            data = resp.raw
        elif resp.status in (204, 304) or resp.payload is None:
            data = b""
        else:
            data = json.dumps(resp.payload).encode()
        h.send_response(resp.status)
        used = self._graphql_used if req.resource == "graphql" else self._core_used
        reset = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
        headers = {"Content-Type": "application/json; charset=utf-8",
                   "X-RateLimit-Limit": str(RATE_LIMIT),
                   "X-RateLimit-Remaining": str(max(RATE_LIMIT - used, 0)),
                   "X-RateLimit-Reset": str(reset), "X-RateLimit-Used": str(used),
                   "X-RateLimit-Resource": req.resource or "core"}
        headers.update(resp.headers)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if data and h.command != "HEAD":
            h.wfile.write(data)

    # -- JSON shapes ---------------------------------------------------------------------
    def _user(self, login: str | None, kind: str = "User") -> dict[str, Any] | None:
        if login is None:
            return None
        user = _copy(_template("issues.list-comments.200.json")[0]["user"])
        digest = _account_id(login, kind or "User")
        user.update({"login": login, "id": digest, "type": kind or "User",
                     "node_id": _node_id(kind or "User", digest),
                     "url": f"{self.api_url}/users/{quote(login)}",
                     "html_url": f"{HTML_BASE}/{login}"})
        return user

    def _comment_json(self, c: FakeComment) -> dict[str, Any]:
        issue = self._repo(c.repo).issues[c.number]
        kind = "pull" if issue.is_pr else "issues"
        data = _copy(_template("issues.create-comment.201.json"))
        data.update({
            "id": c.id, "node_id": c.node_id, "body": c.body,
            "url": f"{self.api_url}/repos/{c.repo}/issues/comments/{c.id}",
            "html_url": f"{HTML_BASE}/{c.repo}/{kind}/{c.number}#issuecomment-{c.id}",
            "issue_url": f"{self.api_url}/repos/{c.repo}/issues/{c.number}",
            "user": self._user(c.author, c.author_type),
            "created_at": c.created_at, "updated_at": c.updated_at,
            "author_association": "COLLABORATOR",
        })
        return data

    def _label_json(self, repo: FakeRepo, name: str) -> dict[str, Any]:
        digest = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        return {"id": digest, "node_id": _node_id("Label", digest),
                "url": f"{self.api_url}/repos/{repo.full_name}/labels/{quote(name)}",
                "name": name, "description": "", "color": "ededed", "default": False}

    def _issue_json(self, repo: FakeRepo, issue: FakeIssue) -> dict[str, Any]:
        data = _copy(_template("issues.get.200.json"))
        base = f"{self.api_url}/repos/{repo.full_name}"
        data.update({
            "id": repo.id * 100000 + issue.number, "node_id": issue.node_id,
            "url": f"{base}/issues/{issue.number}", "repository_url": base,
            "labels_url": f"{base}/issues/{issue.number}/labels{{/name}}",
            "comments_url": f"{base}/issues/{issue.number}/comments",
            "events_url": f"{base}/issues/{issue.number}/events",
            "html_url": f"{HTML_BASE}/{repo.full_name}/issues/{issue.number}",
            "number": issue.number, "state": issue.state, "title": issue.title,
            "body": issue.body, "user": self._user(issue.author),
            "labels": [self._label_json(repo, n) for n in issue.labels],
            "assignee": None, "assignees": [], "milestone": None, "closed_by": None,
            "comments": sum(1 for c in self.comments.values()
                            if c.repo == repo.full_name and c.number == issue.number),
            "created_at": issue.created_at, "updated_at": issue.updated_at, "closed_at": None,
            "pinned_comment": None,
        })
        if issue.is_pr:
            data["pull_request"] = {
                "url": f"{base}/pulls/{issue.number}",
                "html_url": f"{HTML_BASE}/{repo.full_name}/pull/{issue.number}",
                "diff_url": f"{HTML_BASE}/{repo.full_name}/pull/{issue.number}.diff",
                "patch_url": f"{HTML_BASE}/{repo.full_name}/pull/{issue.number}.patch"}
            data["html_url"] = f"{HTML_BASE}/{repo.full_name}/pull/{issue.number}"
        else:
            data.pop("pull_request", None)
        return data

    def _repo_json(self, repo: FakeRepo) -> dict[str, Any]:
        return {"id": repo.id, "node_id": _node_id("Repository", repo.id), "name": repo.name,
                "full_name": repo.full_name, "owner": self._user(repo.owner, "Organization"),
                "private": repo.private, "visibility": "private" if repo.private else "public",
                "html_url": f"{HTML_BASE}/{repo.full_name}",
                "url": f"{self.api_url}/repos/{repo.full_name}",
                "default_branch": repo.default_branch}

    def _pull_json(self, repo: FakeRepo, pr: FakeIssue) -> dict[str, Any]:
        head_sha = self.head_sha(repo.full_name, pr.number)
        head_repo = self._repo_json(repo)
        if pr.head_repo:
            owner, _, name = pr.head_repo.partition("/")
            head_repo = {**head_repo, "full_name": pr.head_repo, "name": name, "fork": True,
                         "owner": self._user(owner)}
        return {"id": repo.id * 100000 + pr.number, "node_id": pr.node_id, "number": pr.number,
                "state": pr.state, "title": pr.title, "body": pr.body,
                "url": f"{self.api_url}/repos/{repo.full_name}/pulls/{pr.number}",
                "html_url": f"{HTML_BASE}/{repo.full_name}/pull/{pr.number}",
                "user": self._user(pr.author, pr.author_type), "created_at": pr.created_at,
                "updated_at": pr.updated_at, "merged_at": None, "draft": False,
                "requested_reviewers": [self._user(u) for u in pr.requested_reviewers],
                "requested_teams": [self._team_json(repo.owner, t) for t in pr.requested_teams],
                "head": {"ref": pr.head_branch, "sha": head_sha,
                         "label": f"{(pr.head_repo or repo.full_name).split('/')[0]}:"
                                  f"{pr.head_branch}", "repo": head_repo},
                "base": {"ref": repo.default_branch, "sha": "0" * 40,
                         "label": f"{repo.owner}:{repo.default_branch}",
                         "repo": self._repo_json(repo)}}

    # -- pagination ----------------------------------------------------------------------
    def _page(self, items: list[Any], query: dict[str, str], path: str) -> _Response:
        per_page = max(1, min(int(query.get("per_page", 30)), 100))
        page = max(1, int(query.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []

        def link(n: int, rel: str) -> str:
            q = dict(query, page=str(n))
            return f'<{self.url}{path}?{urlencode(q)}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"Link": ", ".join(links)} if links else {}
        return _Response(200, chunk, headers, conditional_ok=True)

    def _api_actor(self, h: Any) -> tuple[str, str]:
        """Who a write through the API is made by: ``(REST login, type)`` of the token
        (an App's installation token: its bot; a user token: that user)."""
        _, _, token = str(h.headers.get("Authorization", "")).partition(" ")
        user = self.user_tokens.get(token.strip())
        if user is not None:
            return user, "User"
        by_app = self.app.api_actor() if self.app is not None else None
        return by_app or (self.bot_login, self.bot_type)

    def _app_route(self, route: str, params: dict[str, str]) -> _Response:
        # The App endpoints (tests/fakes/github_app.py); 404 when no App is registered.
        if self.app is None:
            raise _NotFound(route)
        if route == "app":
            return _Response(200, self.app.app_json())
        if route == "repo-installation":
            found = self.app.installation_json(f"{params['owner']}/{params['repo']}")
            if found is None:
                raise _NotFound(route)
            return _Response(200, found)
        if route == "app-token":
            minted = self.app.mint(int(params["id"]))
            if minted is None:
                raise _NotFound(route)
            return _Response(201, minted)
        login = unquote(params["login"])
        return _Response(200, self._user(login, "Bot" if login.endswith("[bot]") else "User"))

    # -- REST routes ---------------------------------------------------------------------
    def _r_user_by_login(self, params: dict[str, str], query: dict[str, str], body: bytes,
                         h: BaseHTTPRequestHandler) -> _Response:
        # GET /users/{username} ("Get a user"): any account, 404 "Not Found" for a login no
        # account has (:attr:`missing_users`); an App's bot answers as name[bot], type Bot.
        login = unquote(params["login"])
        if login.lower() in self.missing_users:
            raise _NotFound(login)
        return _Response(200, self._user(login, "Bot" if login.endswith("[bot]") else "User"))

    def _r_user(self, params: dict[str, str], query: dict[str, str], body: bytes,
                h: BaseHTTPRequestHandler) -> _Response:
        # GET /user: the token's owner — loopgate's account for its own token, the person
        # for a user token (a personal one or one minted by the sign-in flow).
        login, kind = self._api_actor(h)
        return _Response(200, self._user(login, kind))

    def _r_rate_limit(self, p: dict[str, str], q: dict[str, str], body: bytes,
                      h: Any) -> _Response:
        data = _copy(_template("rate-limit.get.200.json"))
        data["resources"]["core"].update(used=self._core_used,
                                         remaining=RATE_LIMIT - self._core_used)
        data["resources"]["graphql"].update(used=self._graphql_used,
                                            remaining=RATE_LIMIT - self._graphql_used)
        return _Response(200, data)

    def _r_repo(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        name = f"{p['owner']}/{p['repo']}"
        if name not in self.repos and name in self.renamed:
            return self._moved(self.repos[self.renamed[name]], h)
        return self._repo_answer(self._repo(name), h)

    def _moved(self, repo: FakeRepo, h: Any) -> _Response:
        # GitHub's answer for a renamed repository's old name (see rename_repo).
        if self._cannot_see(repo, h):
            raise _NotFound(repo.full_name)
        where = f"{self.api_url}/repositories/{repo.id}"
        return _Response(301, {"message": "Moved Permanently", "url": where,
                               "documentation_url": "https://docs.github.com/rest/guides/"
                                                    "best-practices-for-using-the-rest-api"},
                         {"Location": where})

    def _r_repository_by_id(self, p: dict[str, str], q: dict[str, str], body: bytes,
                            h: Any) -> _Response:
        repo = next((r for r in self.repos.values() if r.id == int(p["id"])), None)
        if repo is None or self._cannot_see(repo, h):
            raise _NotFound(p["id"])
        return self._repo_answer(repo, h)

    def _cannot_see(self, repo: FakeRepo, h: Any) -> bool:
        _, _, token = str(h.headers.get("Authorization", "")).partition(" ")
        login = self.user_tokens.get(token.strip())
        return login is not None and repo.private and login.lower() not in repo.readers

    def _repo_answer(self, repo: FakeRepo, h: Any) -> _Response:
        # "Get a repository" (the same document under either address).
        doc = self._repo_json(repo)
        _, _, token = str(h.headers.get("Authorization", "")).partition(" ")
        login = self.user_tokens.get(token.strip())
        if login is not None:
            # "Get a repository" with a person's token carries that person's permissions
            # (docs.github.com REST repos: ``permissions`` admin, maintain, push, triage,
            # pull); :meth:`set_writers` names who may push.
            writes = login.lower() in repo.writers
            doc["permissions"] = {"admin": False, "maintain": False, "push": writes,
                                  "triage": writes, "pull": True}
        return _Response(200, doc, conditional_ok=True)

    def _full_path(self, h: Any) -> str:
        return urlsplit(h.path).path

    def _r_repo_issues(self, p: dict[str, str], q: dict[str, str], body: bytes,
                       h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        state = q.get("state", "open")
        wanted = [x for x in q.get("labels", "").split(",") if x]
        since = _parse_iso(q["since"]) if q.get("since") else None
        items = [i for i in repo.issues.values()
                 if (state == "all" or i.state == state)
                 and all(w in i.labels for w in wanted)
                 and (since is None or _parse_iso(i.updated_at) >= since)]
        key = "updated_at" if q.get("sort") == "updated" else "created_at"
        items.sort(key=lambda i: (getattr(i, key), i.number), reverse=q.get("direction") != "asc")
        return self._page([self._issue_json(repo, i) for i in items], q, self._full_path(h))

    def _r_repo_comments(self, p: dict[str, str], q: dict[str, str], body: bytes,
                         h: Any) -> _Response:
        full = f"{p['owner']}/{p['repo']}"
        self._repo(full)
        since = _parse_iso(q["since"]) if q.get("since") else None
        items = [c for c in self.comments.values() if c.repo == full
                 and (since is None or _parse_iso(c.updated_at) >= since)]
        key = "updated_at" if q.get("sort") == "updated" else "created_at"
        items.sort(key=lambda c: (getattr(c, key), c.id), reverse=q.get("direction") == "desc")
        return self._page([self._comment_json(c) for c in items], q, self._full_path(h))

    def _find_comment(self, p: dict[str, str]) -> FakeComment:
        c = self.comments.get(int(p["id"]))
        if c is None or c.repo != f"{p['owner']}/{p['repo']}":
            raise _NotFound(p["id"])
        return c

    def _r_comment(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        return _Response(200, self._comment_json(self._find_comment(p)), conditional_ok=True)

    def _r_comment_edit(self, p: dict[str, str], q: dict[str, str], body: bytes,
                        h: Any) -> _Response:
        c = self._find_comment(p)
        text = _checked_body(json.loads(body)["body"])
        login, kind = self._api_actor(h)
        self.edit_comment(c.id, text, login, editor_type=kind)
        return _Response(200, self._comment_json(c))

    def _r_comment_delete(self, p: dict[str, str], q: dict[str, str], body: bytes,
                          h: Any) -> _Response:
        self.delete_comment(self._find_comment(p).id)
        return _Response(204)

    def _issue(self, p: dict[str, str]) -> tuple[FakeRepo, FakeIssue]:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        issue = repo.issues.get(int(p["number"]))
        if issue is None:
            raise _NotFound(p["number"])
        return repo, issue

    def _r_issue(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        repo, issue = self._issue(p)
        return _Response(200, self._issue_json(repo, issue), conditional_ok=True)

    def _r_issue_comments(self, p: dict[str, str], q: dict[str, str], body: bytes,
                          h: Any) -> _Response:
        repo, issue = self._issue(p)
        since = _parse_iso(q["since"]) if q.get("since") else None
        items = [self._comment_json(c) for c in self.comments_on(repo.full_name, issue.number)
                 if since is None or _parse_iso(c.updated_at) >= since]
        return self._page(items, q, self._full_path(h))

    def _r_comment_create(self, p: dict[str, str], q: dict[str, str], body: bytes,
                          h: Any) -> _Response:
        repo, issue = self._issue(p)
        text = _checked_body(json.loads(body)["body"])
        login, kind = self._api_actor(h)
        c = self.add_comment(repo.full_name, issue.number, text, as_user=login, user_type=kind)
        return _Response(201, self._comment_json(c))

    def _r_labels(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        repo, issue = self._issue(p)
        return self._page([self._label_json(repo, n) for n in issue.labels], q,
                          self._full_path(h))

    def _label_names(self, body: bytes) -> list[str]:
        data = json.loads(body or b"[]")
        names = data.get("labels", []) if isinstance(data, dict) else data
        return [n if isinstance(n, str) else n["name"] for n in names]

    def _r_labels_add(self, p: dict[str, str], q: dict[str, str], body: bytes,
                      h: Any) -> _Response:
        repo, issue = self._issue(p)
        for name in self._label_names(body):
            self.add_label(repo.full_name, issue.number, name)
        return _Response(200, [self._label_json(repo, n) for n in issue.labels])

    def _r_labels_replace(self, p: dict[str, str], q: dict[str, str], body: bytes,
                          h: Any) -> _Response:
        repo, issue = self._issue(p)
        issue.labels = self._label_names(body)
        return _Response(200, [self._label_json(repo, n) for n in issue.labels])

    def _r_label_remove(self, p: dict[str, str], q: dict[str, str], body: bytes,
                        h: Any) -> _Response:
        repo, issue = self._issue(p)
        name = unquote(p["name"])
        if name not in issue.labels:
            return _Response(404, {"message": "Label does not exist"})
        issue.labels.remove(name)
        issue.updated_at = _iso(self.now())
        return _Response(200, [self._label_json(repo, n) for n in issue.labels])

    def _r_pulls(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        state = q.get("state", "open")
        head = q.get("head", "")
        items = [i for i in sorted(repo.issues.values(), key=lambda i: i.number)
                 if i.is_pr and (state == "all" or i.state == state)
                 and (not head or f"{repo.owner}:{i.head_branch}" == head)]
        return self._page([self._pull_json(repo, i) for i in items], q, self._full_path(h))

    def _r_pull(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        repo, issue = self._issue(p)
        if not issue.is_pr:
            raise _NotFound(p["number"])
        return _Response(200, self._pull_json(repo, issue), conditional_ok=True)

    def _r_pull_files(self, p: dict[str, str], q: dict[str, str], body: bytes,
                      h: Any) -> _Response:
        # GitHub's "List pull requests files": the files the head branch changes against
        # the base, sorted by name, 30 a page by default (100 at most), at most 3000 files
        # in all (docs.github.com rest/pulls/pulls#list-pull-requests-files). Entries
        # carry filename, status (added|removed|modified), sha and changes.
        repo, issue = self._issue(p)
        if not issue.is_pr:
            raise _NotFound(p["number"])
        base = repo.files.get(repo.default_branch, {})
        head = repo.files.get(issue.head_branch, base)
        out = []
        for name in sorted(set(base) | set(head)):
            if base.get(name) == head.get(name):
                continue
            status = ("added" if name not in base else "removed" if name not in head
                      else "modified")
            data = head.get(name, b"")
            out.append({"sha": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                        "filename": name, "status": status, "additions": 0, "deletions": 0,
                        "changes": 0,
                        "blob_url": f"{HTML_BASE}/{repo.full_name}/blob/{issue.head_branch}/{name}",
                        "raw_url": f"{HTML_BASE}/{repo.full_name}/raw/{issue.head_branch}/{name}",
                        "contents_url": f"{self.api_url}/repos/{repo.full_name}/contents/"
                                        f"{quote(name)}?ref={issue.head_branch}"})
        return self._page(out[:3000], q, self._full_path(h))

    # -- review requests (issue 24 §3) ------------------------------------------------------
    def _team_json(self, org: str, slug: str) -> dict[str, Any]:
        return {"id": _account_id(f"{org}/{slug}", "Team"), "slug": slug, "name": slug,
                "url": f"{self.api_url}/orgs/{org}/teams/{slug}"}

    def _refusal(self, repo: FakeRepo, pr: FakeIssue, users: list[str],
                 teams: list[str]) -> str:
        # GitHub refuses the WHOLE request (nobody is added) with 422 when it names the pull
        # request's author ("Review cannot be requested from pull request author.", observed:
        # peter-evans/create-pull-request#1835, Madrapps/add-reviewers#5) or a user or team
        # without access ("Reviews may only be requested from collaborators. One or more of
        # the users or teams you specified is not a collaborator of the <repo> repository.";
        # docs.github.com/en/rest/pulls/review-requests: 422 "Unprocessable Entity if user
        # is not a collaborator"). The message does not name who.
        if any(u.lower() == pr.author.lower() for u in users):
            return "Review cannot be requested from pull request author."
        known = {slug for (org, slug), team in self.teams.items()
                 if org == repo.owner.lower() and team["visible"]}
        outsider = any(repo.collaborators is not None and u.lower() not in repo.collaborators
                       for u in users)
        outsider = outsider or any(t.lower() not in known or (
            repo.collaborator_teams is not None and t.lower() not in repo.collaborator_teams)
            for t in teams)
        if outsider:
            return ("Reviews may only be requested from collaborators. One or more of the "
                    "users or teams you specified is not a collaborator of the "
                    f"{repo.full_name} repository.")
        return ""

    def _r_review_request(self, p: dict[str, str], q: dict[str, str], body: bytes,
                          h: Any) -> _Response:
        repo, pr = self._issue(p)
        if not pr.is_pr:
            raise _NotFound(p["number"])
        data = json.loads(body or b"{}")
        users = [str(u) for u in data.get("reviewers") or ()]
        teams = [str(t) for t in data.get("team_reviewers") or ()]
        refused = self._refusal(repo, pr, users, teams)
        if refused:
            return _Response(422, {"message": refused, "documentation_url":
                                   "https://docs.github.com/rest/pulls/review-requests"
                                   "#request-reviewers-for-a-pull-request"})
        for login in users:  # asking again is no error and adds nobody twice
            if login.lower() not in {r.lower() for r in pr.requested_reviewers}:
                pr.requested_reviewers.append(login)
        for slug in teams:
            if slug.lower() not in {t.lower() for t in pr.requested_teams}:
                pr.requested_teams.append(slug.lower())
        return _Response(201, self._pull_json(repo, pr))

    def _r_requested_reviewers(self, p: dict[str, str], q: dict[str, str], body: bytes,
                               h: Any) -> _Response:
        repo, pr = self._issue(p)
        if not pr.is_pr:
            raise _NotFound(p["number"])
        return _Response(200, {"users": [self._user(u) for u in pr.requested_reviewers],
                               "teams": [self._team_json(repo.owner, t)
                                         for t in pr.requested_teams]})
    def _noreply(self, login: str, kind: str = "User") -> str:
        # GitHub's no-reply commit e-mail: ID+LOGIN@users.noreply.github.com.
        return f"{_account_id(login, kind)}+{login}@users.noreply.github.com"

    # -- commit statuses and check runs (issue 11 §1) -------------------------------------
    def _known_sha(self, repo: FakeRepo, ref: str) -> str:
        # A commit of the repository's network: a pull request head (forks included, as
        # GitHub keeps refs/pull/N/head in the base repository) or a branch name.
        for issue in repo.issues.values():
            if issue.is_pr:
                sha = self.head_sha(repo.full_name, issue.number)
                if ref in (sha, issue.head_branch):
                    return sha
        if ref in self._old_commits.get(repo.full_name, ()):
            return ref
        raise _NotFound(ref)

    def _r_status_create(self, p: dict[str, str], q: dict[str, str], body: bytes,
                         h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        try:
            sha = self._known_sha(repo, p["sha"])
        except _NotFound:
            return _Response(422, {"message": f"No commit found for SHA: {p['sha']}",
                                   "documentation_url": "https://docs.github.com/rest"})
        data = json.loads(body or b"{}")
        if data.get("state") not in ("error", "failure", "pending", "success"):
            return _Response(422, {"message": "Validation Failed", "errors": [
                {"resource": "Status", "field": "state", "code": "custom"}]})
        now = _iso(self.now())
        login, kind = self._api_actor(h)
        status = {"url": f"{self.api_url}/repos/{repo.full_name}/statuses/{sha}",
                  "id": len(self.statuses.get((repo.full_name, sha), ())) + 1 + repo.id * 1000,
                  "node_id": _node_id("StatusContext", repo.id),
                  "state": data["state"], "description": data.get("description"),
                  "target_url": data.get("target_url"),
                  "context": data.get("context") or "default", "created_at": now,
                  "updated_at": now, "creator": self._user(login, kind)}
        self.statuses.setdefault((repo.full_name, sha), []).append(status)
        return _Response(201, status)

    def _r_statuses(self, p: dict[str, str], q: dict[str, str], body: bytes,
                    h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        sha = self._known_sha(repo, p["ref"])
        items = list(reversed(self.statuses.get((repo.full_name, sha), [])))  # newest first
        return self._page(items, q, self._full_path(h))

    def _r_combined_status(self, p: dict[str, str], q: dict[str, str], body: bytes,
                           h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        sha = self._known_sha(repo, p["ref"])
        latest: dict[str, dict[str, Any]] = {}
        for status in self.statuses.get((repo.full_name, sha), []):
            latest[status["context"].lower()] = status
        states = [st["state"] for st in latest.values()]
        base = f"{self.api_url}/repos/{repo.full_name}"
        state = ("failure" if any(x in ("failure", "error") for x in states)
                 else "pending" if not states or "pending" in states else "success")
        return _Response(200, {"state": state, "statuses": list(latest.values()), "sha": sha,
                               "total_count": len(latest), "repository": self._repo_json(repo),
                               "commit_url": f"{base}/commits/{sha}",
                               "url": f"{base}/commits/{sha}/status"},
                         conditional_ok=True)

    def _require_app(self) -> _Response | None:
        # The Checks API writes are for GitHub Apps only: a personal token gets 403.
        if self.app is None or self.app.api_actor() is None:
            return _Response(403, {"message": "You must authenticate via a GitHub App.",
                                   "documentation_url": "https://docs.github.com/rest/checks/runs"})
        return None

    def _check_run_json(self, run: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in run.items() if not k.startswith("_")}

    def _apply_run(self, run: dict[str, Any], data: dict[str, Any],
                   creating: bool = False) -> _Response | None:
        # A refused write changes nothing: the output is checked before anything is set.
        refused = _output_refused(data["output"] or {}, creating=creating) \
            if "output" in data else None
        if refused is not None:
            return refused
        status = data.get("status", run.get("status") or "queued")
        conclusion = data.get("conclusion", run.get("conclusion"))
        if conclusion is not None and "status" not in data:
            status = "completed"  # GitHub: giving a conclusion completes the run
        if status not in ("queued", "in_progress", "completed"):
            return _Response(422, {"message": f"Invalid status: {status}"})
        if status == "completed" and conclusion not in (
                "action_required", "cancelled", "failure", "neutral", "success", "skipped",
                "stale", "timed_out"):
            return _Response(422, {"message": "Conclusion must be given when completed"})
        now = _iso(self.now())
        run.update(status=status, conclusion=conclusion if status == "completed" else None,
                   completed_at=now if status == "completed" else None)
        for key in ("details_url", "external_id", "name"):
            if key in data:
                run[key] = data[key]
        if "output" in data:
            out = data["output"] or {}
            run["output"] = {"title": out.get("title"), "summary": out.get("summary"),
                             "text": out.get("text"), "annotations_count": 0,
                             "annotations_url": f"{run['url']}/annotations"}
        return None

    def _r_check_run_create(self, p: dict[str, str], q: dict[str, str], body: bytes,
                            h: Any) -> _Response:
        refused = self._require_app()
        if refused is not None:
            return refused
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        data = json.loads(body or b"{}")
        if not data.get("name") or not data.get("head_sha"):
            return _Response(422, {"message": "Invalid request: name and head_sha are required"})
        try:
            sha = self._known_sha(repo, str(data["head_sha"]))
        except _NotFound:
            return _Response(422, {"message": "No commit found for SHA: " + str(data["head_sha"])})
        self._next_check_run += 1
        rid = self._next_check_run
        run: dict[str, Any] = {
            "id": rid, "node_id": _node_id("CheckRun", rid), "head_sha": sha,
            "external_id": "", "name": data["name"], "status": "queued", "conclusion": None,
            "url": f"{self.api_url}/repos/{repo.full_name}/check-runs/{rid}",
            "html_url": f"{HTML_BASE}/{repo.full_name}/runs/{rid}",
            "details_url": None, "started_at": _iso(self.now()), "completed_at": None,
            "output": {"title": None, "summary": None, "text": None, "annotations_count": 0,
                       "annotations_url": ""},
            "check_suite": {"id": rid // 10}, "app": self.app.app_json() if self.app else None,
            "pull_requests": [], "_repo": repo.full_name}
        bad = self._apply_run(run, data, creating=True)
        if bad is not None:
            return bad
        self.check_runs[rid] = run
        return _Response(201, self._check_run_json(run))

    def _r_check_run_update(self, p: dict[str, str], q: dict[str, str], body: bytes,
                            h: Any) -> _Response:
        refused = self._require_app()
        if refused is not None:
            return refused
        run = self.check_runs.get(int(p["id"]))
        if run is None or run["_repo"] != f"{p['owner']}/{p['repo']}":
            raise _NotFound(p["id"])
        if not self._own_run(run):
            return self._foreign_run_refused()
        bad = self._apply_run(run, json.loads(body or b"{}"))
        return bad or _Response(200, self._check_run_json(run))

    def _r_commit_check_runs(self, p: dict[str, str], q: dict[str, str], body: bytes,
                             h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        sha = self._known_sha(repo, p["ref"])
        runs = [self._check_run_json(r) for r in reversed(list(self.check_runs.values()))
                if r["_repo"] == repo.full_name and r["head_sha"] == sha
                and (not q.get("check_name") or r["name"] == q["check_name"])]
        return _Response(200, {"total_count": len(runs), "check_runs": runs},
                         conditional_ok=True)

    # -- teams (issue 11 §2) -----------------------------------------------------------------
    def _team(self, p: dict[str, str]) -> dict[str, Any]:
        team = self.teams.get((p["org"].lower(), p["team"].lower()))
        if team is None or not team["visible"]:
            raise _NotFound(p["team"])  # unknown and hidden look the same, as on GitHub
        return team

    def _r_team(self, p: dict[str, str], q: dict[str, str], body: bytes, h: Any) -> _Response:
        self._team(p)
        slug = p["team"].lower()
        return _Response(200, {"id": abs(hash(slug)) % 10**7, "node_id": _node_id("Team", 1),
                               "slug": slug, "name": slug, "privacy": "closed",
                               "url": f"{self.api_url}/orgs/{p['org']}/teams/{slug}",
                               "organization": self._user(p["org"], "Organization")})

    def _r_team_membership(self, p: dict[str, str], q: dict[str, str], body: bytes,
                           h: Any) -> _Response:
        team = self._team(p)
        state = team["members"].get(unquote(p["login"]).lower())
        if state is None:
            raise _NotFound(p["login"])  # not a member: 404
        return _Response(200, {"url": f"{self.api_url}/orgs/{p['org']}/teams/{p['team']}/"
                                      f"memberships/{p['login']}",
                               "role": "member", "state": state})

    def _r_contents(self, p: dict[str, str], q: dict[str, str], body: bytes,
                    h: Any) -> _Response:
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        ref = q.get("ref") or repo.default_branch
        files = repo.files.get(ref)
        if files is None:
            return _Response(404, {"message": f"No commit found for the ref {ref}"})
        path = unquote(p.get("path") or "").strip("/")
        if path in files:
            data = files[path]
            if "application/vnd.github.raw" in h.headers.get("Accept", ""):
                return _Response(200, None, {"Content-Type": "application/vnd.github.raw"},
                                 raw=data)
            return _Response(200, self._content_entry(repo, ref, path, data, full=True),
                             conditional_ok=True)
        prefix = f"{path}/" if path else ""
        entries: dict[str, dict[str, Any]] = {}
        for name, data in files.items():
            if not name.startswith(prefix):
                continue
            head, _, rest = name[len(prefix):].partition("/")
            sub = prefix + head
            if rest:
                entries[sub] = {"type": "dir", "name": head, "path": sub, "sha": "0" * 40,
                                "size": 0}
            else:
                entries[sub] = self._content_entry(repo, ref, sub, data, full=False)
        if not entries:
            raise _NotFound(path)
        return _Response(200, [entries[k] for k in sorted(entries)], conditional_ok=True)

    def _content_entry(self, repo: FakeRepo, ref: str, path: str, data: bytes,
                       full: bool) -> dict[str, Any]:
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        entry = {"type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "sha": sha,
                 "size": len(data),
                 "url": f"{self.api_url}/repos/{repo.full_name}/contents/{quote(path)}?ref={ref}",
                 "html_url": f"{HTML_BASE}/{repo.full_name}/blob/{ref}/{path}",
                 "download_url": None}
        if full:
            encoded = base64.b64encode(data).decode()
            entry["encoding"] = "base64"
            entry["content"] = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60))
        return entry

    # -- GraphQL -------------------------------------------------------------------------
    def _graphql(self, body: bytes) -> _Response:
        try:
            payload = json.loads(body)
            source = payload["query"]
            variables = payload.get("variables") or {}
            document = parse(source)
        except (ValueError, KeyError, TypeError, GraphQLError) as exc:
            return _Response(200, {"errors": [{"message": f"Parse error: {exc}"}]})
        self.graphql_log.append({"query": source, "variables": variables})
        problems = validate(github_schema(), document)
        if problems:
            self.invalid_queries.append((source, [e.message for e in problems]))
            return _Response(200, {"errors": [{"message": e.message} for e in problems]})
        if self._graphql_limits:
            return self._graphql_limited(self._graphql_limits.pop(0))
        context: dict[str, Any] = {"errors": []}
        result = execute(github_schema(), document, root_value=self._gql_root(),
                         variable_values=variables, context_value=context)
        answer: dict[str, Any] = {"data": result.data}
        errors = list(context["errors"]) + [e.formatted for e in result.errors or []]
        if errors:
            answer["errors"] = errors
        return _Response(200, answer)

    def _graphql_limited(self, mode: str) -> _Response:
        reset = int((datetime.now(UTC) + timedelta(seconds=60)).timestamp())
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset),
                   "X-RateLimit-Resource": "graphql"}
        if mode == "403":
            return _Response(403, {"message": "API rate limit exceeded for user ID 1.",
                                   "documentation_url": "https://docs.github.com/graphql"},
                             headers)
        return _Response(200, {"data": None, "errors": [
            {"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]},
            headers)

    def _gql_root(self) -> dict[str, Any]:
        return {
            "node": lambda info, id: self._gql_node(id, info.context, ["node"]),
            "nodes": lambda info, ids: [self._gql_node(i, info.context, ["nodes", n])
                                        for n, i in enumerate(ids)],
            "repository": lambda info, owner, name, **_: self._gql_repo(f"{owner}/{name}"),
            "viewer": self._actor(self.bot_login, self.bot_type),
            "rateLimit": lambda info, **_: {
                "limit": RATE_LIMIT, "cost": 1, "nodeCount": 1,
                "remaining": RATE_LIMIT - self._graphql_used, "used": self._graphql_used,
                "resetAt": _iso(datetime.now(UTC) + timedelta(hours=1))},
        }

    def _actor(self, login: str | None, kind: str) -> dict[str, Any] | None:
        # GraphQL spells a Bot without the "[bot]" REST adds; the account id is the same.
        if login is None:
            return None
        kind = kind or "User"
        name = login[: -len("[bot]")] if kind == "Bot" and login.endswith("[bot]") else login
        actor = {"__typename": kind, "login": name, "url": f"{HTML_BASE}/{login}",
                 "avatarUrl": f"{HTML_BASE}/{login}.png"}
        if kind in ("User", "Bot"):
            actor["databaseId"] = _account_id(login, kind)
        return actor

    def _visible(self, repo: str) -> bool:
        # An App's installation token sees its installation's repositories only.
        return self.app is None or self.app.can_see(repo)

    def _gql_node(self, node_id: str, context: dict[str, Any], path: list[Any]) -> Any:
        for c in self.comments.values():
            if c.node_id == node_id and self._visible(c.repo):
                return self._gql_comment(c)
        for repo in self.repos.values():
            for issue in repo.issues.values():
                if issue.node_id == node_id:
                    return self._gql_issue(repo, issue)
        context["errors"].append({
            "type": "NOT_FOUND", "path": path, "locations": [],
            "message": f"Could not resolve to a node with the global id of '{node_id}'"})
        return None

    def _gql_comment(self, c: FakeComment) -> dict[str, Any]:
        def edits(info: Any, first: int | None = None, last: int | None = None,
                  **_: Any) -> dict[str, Any]:
            ordered = list(reversed(c.edits)) if self.edits_newest_first else list(c.edits)
            nodes = [{"__typename": "UserContentEdit", "id": _node_id("UCE", c.id * 100 + n),
                      "editedAt": e["edited_at"], "createdAt": e["edited_at"],
                      "updatedAt": e["edited_at"], "deletedAt": None, "deletedBy": None,
                      "diff": None, "editor": self._actor(e["editor"], e["editor_type"])}
                     for n, e in enumerate(ordered)]
            if first is not None:
                nodes = nodes[:first]
            if last is not None:
                nodes = nodes[-last:] if last else []
            return {"totalCount": len(c.edits), "nodes": nodes,
                    "pageInfo": {"hasNextPage": False, "hasPreviousPage": False,
                                 "startCursor": None, "endCursor": None}}

        comment_json = self._comment_json(c)
        return {
            "__typename": "IssueComment", "id": c.node_id, "databaseId": c.id,
            "fullDatabaseId": str(c.id), "body": c.body, "url": comment_json["html_url"],
            "createdAt": c.created_at, "updatedAt": c.updated_at,
            "lastEditedAt": c.last_edited_at, "includesCreatedEdit": c.includes_created_edit,
            "author": self._actor(c.author, c.author_type),
            "editor": self._actor(c.editor, c.editor_type),
            "viewerDidAuthor": (c.author, c.author_type) == (self.bot_login, self.bot_type),
            "userContentEdits": edits,
        }

    def _gql_pr(self, repo: FakeRepo, pr: FakeIssue) -> dict[str, Any]:
        return {"__typename": "PullRequest", "id": pr.node_id, "number": pr.number,
                "url": f"{HTML_BASE}/{repo.full_name}/pull/{pr.number}",
                "headRefName": pr.head_branch, "baseRefName": repo.default_branch,
                "headRefOid": self.head_sha(repo.full_name, pr.number),
                "author": self._actor(pr.author, pr.author_type),
                "state": pr.state.upper(), "title": pr.title, "createdAt": pr.created_at,
                "closed": pr.state != "open", "merged": False,
                "closingIssuesReferences": lambda info, **_: self._connection(
                    [self._gql_issue(repo, repo.issues[n]) for n in pr.closes
                     if n in repo.issues])}

    def _gql_issue(self, repo: FakeRepo, issue: FakeIssue) -> dict[str, Any]:
        if issue.is_pr:
            return self._gql_pr(repo, issue)

        def closed_by(info: Any, includeClosedPrs: bool = False, first: int | None = None,  # noqa: N803
                      **_: Any) -> dict[str, Any]:
            prs = [self._gql_pr(repo, i) for i in sorted(repo.issues.values(),
                                                          key=lambda i: i.number)
                   if i.is_pr and issue.number in i.closes
                   and (includeClosedPrs or i.state == "open")]
            return self._connection(prs[:first] if first else prs)

        return {"__typename": "Issue", "id": issue.node_id, "number": issue.number,
                "title": issue.title, "url": f"{HTML_BASE}/{repo.full_name}/issues/{issue.number}",
                "state": issue.state.upper(), "closedByPullRequestsReferences": closed_by}

    def _connection(self, nodes: list[Any]) -> dict[str, Any]:
        return {"totalCount": len(nodes), "nodes": nodes,
                "pageInfo": {"hasNextPage": False, "endCursor": None}}

    def _gql_repo(self, full_name: str) -> dict[str, Any] | None:
        repo = self.repos.get(full_name)
        if repo is None or not self._visible(full_name):
            return None

        def issue(info: Any, number: int) -> Any:
            found = repo.issues.get(number)
            return self._gql_issue(repo, found) if found and not found.is_pr else None

        def pull(info: Any, number: int) -> Any:
            found = repo.issues.get(number)
            return self._gql_pr(repo, found) if found and found.is_pr else None

        def merge_queue(info: Any, branch: str | None = None) -> Any:
            # Repository.mergeQueue(branch) → MergeQueue.entries: each queued pull request
            # with its position (1 = front) and the head commit of the group built for it
            # (GitHub's schema: MergeQueueEntry.position/headCommit/pullRequest).
            entries = self.merge_queue_entries.get(full_name, {}).get(
                branch or repo.default_branch)
            if entries is None:
                return None
            nodes = [{"__typename": "MergeQueueEntry", "position": n + 1,
                      "headCommit": {"__typename": "Commit", "oid": head},
                      "pullRequest": self._gql_pr(repo, repo.issues[number])}
                     for n, (number, head) in enumerate(entries)]
            return {"__typename": "MergeQueue",
                    "entries": lambda info, **_: self._connection(nodes)}

        return {"__typename": "Repository", "id": _node_id("Repository", repo.id),
                "name": repo.name, "nameWithOwner": full_name, "issue": issue,
                "pullRequest": pull, "mergeQueue": merge_queue,
                "defaultBranchRef": {"__typename": "Ref", "name": repo.default_branch}}

    # -- issue 19: other Apps' check runs, the merge queue ---------------------------------
    def _own_run(self, run: dict[str, Any]) -> bool:
        # A check run belongs to the App that created it (its ``app`` field, platform-facts
        # F2); GitHub lets an App update only its own runs.
        mine = self.app.app_id if self.app is not None else None
        return (run.get("app") or {}).get("id") == mine

    @staticmethod
    def _foreign_run_refused() -> _Response:
        # [UNCERTAIN] the exact status and message for another App's run are not
        # documented; GitHub answers an App's write it may not make with 403 and this text.
        return _Response(403, {"message": "Resource not accessible by integration",
                               "documentation_url": "https://docs.github.com/rest/checks/runs"})

    def foreign_check_run(self, repo: str, sha: str, *, name: str = "loopgate",
                          conclusion: str = "success", app_id: int = 4242,
                          slug: str = "impostor") -> int:
        """A check run named ``name`` on ``sha`` created by another GitHub App (any App
        may create a run of any name, platform-facts F2); returns its id."""
        with self.lock:
            r = self._repo(repo)
            self._next_check_run += 1
            rid = self._next_check_run
            now = _iso(self.now())
            self.check_runs[rid] = {
                "id": rid, "node_id": _node_id("CheckRun", rid), "head_sha": sha,
                "external_id": "", "name": name, "status": "completed",
                "conclusion": conclusion,
                "url": f"{self.api_url}/repos/{r.full_name}/check-runs/{rid}",
                "html_url": f"{HTML_BASE}/{r.full_name}/runs/{rid}", "details_url": None,
                "started_at": now, "completed_at": now,
                "output": {"title": "looks fine", "summary": "", "text": None,
                           "annotations_count": 0, "annotations_url": ""},
                "check_suite": {"id": rid // 10},
                "app": {"id": app_id, "slug": slug, "name": slug.title(),
                        "owner": self._user("mallory", "User")},
                "pull_requests": [], "_repo": r.full_name}
            return rid

    def link_pr(self, repo: str, number: int, closes: Iterable[int]) -> None:
        """Edit pull request ``number``'s body to close ``closes`` too (GitHub then lists
        them in ``closingIssuesReferences``; send ``pull_request.edited`` yourself)."""
        with self.lock:
            pr = self._repo(repo).issues[number]
            pr.closes = sorted({*pr.closes, *closes})
            pr.body = "\n".join(f"Closes #{n}" for n in pr.closes)
            pr.updated_at = _iso(self.now())

    def queue(self, repo: str, pulls: list[int], *, squash: bool = False,
              method: str = "") -> dict[str, Any]:
        """Put ``pulls`` in one merge group as GitHub's merge queue builds it: a temporary
        branch ``gh-readonly-queue/<base>/pr-<last N>-<base sha>`` on top of the base
        branch, built with the queue's one merge method (``method``: ``merge``, default;
        ``squash``, also ``squash=True``; ``rebase``), platform-facts F1 and
        docs.github.com "About pull request merges":

        - merge: per pull request a merge commit "Merge pull request #N from …" whose
          second parent is the pull request's head; its own commits come along
          (``compare`` lists them, they are not in the base);
        - squash: one commit "<title> (#N)" per pull request;
        - rebase: each of the pull request's own commits replayed one by one, "added onto
          the base branch individually without a merge commit": same message and author,
          a new sha, GitHub as committer.

        Returns:
            The ``merge_group`` object of the webhook (OpenAPI ``merge-group``:
            ``head_sha``, ``head_ref``, ``base_sha``, ``base_ref``, ``head_commit``).
        """
        method = method or ("squash" if squash else "merge")
        if method not in ("merge", "squash", "rebase"):
            raise ValueError(f"unknown merge method {method!r}")
        with self.lock:
            r = self._repo(repo)
            base = r.default_branch
            base_sha = self._base_sha(repo)
            parent, commits, entries = base_sha, [], []
            for n in pulls:
                # Every group is a new commit (GitHub builds a fresh one per queue entry).
                salt = f"{n}:{self.head_sha(repo, n)}:{len(self.merge_groups)}"
                built = self._queue_commits(repo, n, method, parent, salt)
                commits.extend(built)
                parent = built[-1]["sha"]
                # Each entry's group holds the entries ahead of it and its own commits.
                entries.append((n, parent))
            self.merge_queue_entries.setdefault(repo, {})[base] = entries
            known = self._old_commits.setdefault(repo, set())
            known.update({base_sha, *(c["sha"] for c in commits)})
            head_sha, message = commits[-1]["sha"], commits[-1]["message"]
            now = _iso(self.now())
            person = {"name": "GitHub", "email": "noreply@github.com"}
            group = {"head_sha": head_sha,
                     "head_ref": f"refs/heads/gh-readonly-queue/{base}/pr-{pulls[-1]}-{base_sha}",
                     "base_sha": base_sha, "base_ref": f"refs/heads/{base}",
                     "head_commit": {"id": head_sha, "tree_id": hashlib.sha1(
                         head_sha.encode()).hexdigest(), "message": message, "timestamp": now,
                         "author": person, "committer": person}}
            self.merge_groups[head_sha] = {"repo": repo, "commits": commits, "group": group}
            return group

    def queue_commits(self, repo: str, group: dict[str, Any]) -> list[dict[str, Any]]:
        """The commits a merge group's branch holds over its base, oldest first (what
        ``compare`` answers; a test may add to the list to build a forged group)."""
        with self.lock:
            return self.merge_groups[group["head_sha"]]["commits"]

    def _queue_commits(self, repo: str, number: int, method: str, parent: str,
                       salt: str) -> list[dict[str, Any]]:
        # The commits one pull request adds to a merge group's branch (see queue()).
        r = self._repo(repo)
        pr = r.issues[number]
        now = _iso(self.now())
        github = {"name": "GitHub", "email": "noreply@github.com", "date": now}
        if method == "squash":
            sha = hashlib.sha1(f"{parent}:{salt}".encode()).hexdigest()
            return [{"sha": sha, "parents": [parent], "message": f"{pr.title} (#{number})",
                     "author": self._git_person(pr.author, now, pr.author_type),
                     "author_login": pr.author, "author_type": pr.author_type,
                     "committer": github}]
        own = self._own_commits(repo, number)
        if method == "merge":
            sha = hashlib.sha1(f"{parent}:{salt}".encode()).hexdigest()
            merge = {"sha": sha, "parents": [parent, own[-1]["sha"]],
                     "message": f"Merge pull request #{number} from {r.owner}/"
                                f"{pr.head_branch}\n\n{pr.title}",
                     "author": github, "committer": github}
            return [*own, merge]
        replayed = []
        for commit in own:
            sha = hashlib.sha1(f"{parent}:{commit['sha']}:{salt}".encode()).hexdigest()
            replayed.append({**commit, "sha": sha, "parents": [parent], "committer": github})
            parent = sha
        return replayed

    def merge_group_webhook(self, repo: str, group: dict[str, Any], *,
                            action: str = "checks_requested", reason: str = "dequeued",
                            secret: str | None = None, delivery_id: str | None = None
                            ) -> tuple[dict[str, str], bytes]:
        """A ``merge_group`` delivery (OpenAPI ``WebhookMergeGroupChecksRequested`` /
        ``WebhookMergeGroupDestroyed``: ``action``, ``merge_group``, ``repository``,
        ``sender``, ``installation``; ``destroyed`` adds ``reason``: merged | dequeued |
        invalidated)."""
        with self.lock:
            r = self._repo(repo)
            payload: dict[str, Any] = {
                "action": action, "merge_group": group,
                "repository": {**self._repo_json(r), "owner": self._user(r.owner,
                                                                         "Organization")},
                "sender": self._user("github-merge-queue[bot]", "Bot")}
            if action == "destroyed":
                payload["reason"] = reason
            self._name_installation(payload, repo)
        return _signed_delivery("merge_group", payload, secret, delivery_id)

    def _r_compare(self, p: dict[str, str], q: dict[str, str], body: bytes,
                   h: Any) -> _Response:
        # GET /repos/{o}/{r}/compare/{base}...{head}: the commits head has over base,
        # oldest first, each {sha, commit: {message, …}} (REST "Compare two commits").
        repo = self._repo(f"{p['owner']}/{p['repo']}")
        found = self.merge_groups.get(p["head"])
        if found is None or found["repo"] != repo.full_name \
                or found["group"]["base_sha"] != p["base"]:
            raise _NotFound(p["head"])
        commits = [self._commit_json(repo.full_name, c) for c in found["commits"]]
        total = len(commits)
        if "page" in q or "per_page" in q:
            # Paged as GitHub pages a comparison of many commits (per_page ≤ 100, page);
            # total_commits still counts them all.
            size = max(1, min(int(q.get("per_page", 30)), 100))
            page = max(1, int(q.get("page", 1)))
            commits = commits[(page - 1) * size: page * size]
        return _Response(200, {"status": "ahead", "ahead_by": total, "behind_by": 0,
                               "total_commits": total, "commits": commits,
                               "files": []})

    def _commit_json(self, full_name: str, c: dict[str, Any]) -> dict[str, Any]:
        # REST "commit" object as compare and pulls/{n}/commits list it (OpenAPI
        # ``commit``): sha, node_id, url, html_url, comments_url, commit {url, author,
        # committer: {name, email, date}, message, comment_count, tree, verification},
        # top-level author/committer = the linked GitHub accounts (null when none),
        # parents [{sha, url}].
        sha = c["sha"]
        author = c.get("author") or {"name": "GitHub", "email": "noreply@github.com",
                                     "date": _iso(self.now())}
        committer = c.get("committer") or author
        base = f"{self.api_url}/repos/{full_name}"
        login, kind = c.get("author_login"), c.get("author_type") or "User"
        by, by_kind = c.get("committer_login"), c.get("committer_type") or "User"
        return {"sha": sha, "node_id": _node_id("Commit", int(sha[:8], 16)),
                "url": f"{base}/commits/{sha}",
                "html_url": f"{HTML_BASE}/{full_name}/commit/{sha}",
                "comments_url": f"{base}/commits/{sha}/comments",
                "commit": {"url": f"{base}/git/commits/{sha}", "author": author,
                           "committer": committer, "message": c["message"],
                           "comment_count": 0,
                           "tree": {"sha": hashlib.sha1(sha.encode()).hexdigest(),
                                    "url": f"{base}/git/trees/{sha}"},
                           "verification": {"verified": False, "reason": "unsigned",
                                            "signature": None, "payload": None}},
                "author": self._user(login, kind) if login else None,
                "committer": self._user(by, by_kind) if by else None,
                "parents": [{"sha": p, "url": f"{HTML_BASE}/{full_name}/commit/{p}"}
                            for p in c.get("parents") or ()]}

    def _r_pull_commits(self, p: dict[str, str], q: dict[str, str], body: bytes,
                        h: Any) -> _Response:
        # GET /repos/{o}/{r}/pulls/{n}/commits: the pull request's commits, oldest first,
        # at most 250 (docs.github.com rest/pulls/pulls#list-commits-on-a-pull-request).
        repo, issue = self._issue(p)
        if not issue.is_pr:
            raise _NotFound(p["number"])
        own = self._own_commits(repo.full_name, issue.number)[:250]
        return self._page([self._commit_json(repo.full_name, c) for c in own], q,
                          self._full_path(h))


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass (test helper)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


#: GitHub's limit on a check run's ``output.summary`` and ``output.text`` (OpenAPI
#: ``maxLength: 65535``, "Maximum length: 65535 characters", platform-facts F2). GitHub
#: counts UTF-8 bytes: github/docs#35252 quotes its 422 "summary exceeds a maximum
#: bytesize of 65535" for a summary of fewer characters with emoji. [UNCERTAIN] the
#: exact error wording GitHub uses today (bencher#534 saw "Only 65535 characters are
#: allowed; 104883 were supplied."); the status 422 and the field are what tests rely on.
CHECK_OUTPUT_MAX_BYTES = 65535


def _output_refused(out: Any, *, creating: bool) -> _Response | None:
    """A check run's ``output`` as GitHub validates it: an object; on create ``title`` and
    ``summary`` are required (OpenAPI ``checks/create`` ``output.required``); ``summary`` and
    ``text`` at most :data:`CHECK_OUTPUT_MAX_BYTES` UTF-8 bytes. [UNCERTAIN] ``title`` has
    no documented maximum (the OpenAPI gives none), so none is enforced here."""
    if not isinstance(out, dict):
        return _Response(422, {"message": "Invalid request: output is not an object"})
    if creating and (not out.get("title") or not out.get("summary")):
        return _Response(422, {"message": "Invalid request: output.title and output.summary "
                                          "are required"})
    for field_name in ("summary", "text"):
        value = out.get(field_name)
        if isinstance(value, str) and len(value.encode("utf-8")) > CHECK_OUTPUT_MAX_BYTES:
            return _Response(422, {
                "message": "Validation Failed",
                "errors": [{"resource": "CheckRun", "code": "custom", "field": field_name,
                            "message": f"{field_name} exceeds a maximum bytesize of "
                                       f"{CHECK_OUTPUT_MAX_BYTES}"}],
                "documentation_url": "https://docs.github.com/rest/checks/runs"})
    return None
