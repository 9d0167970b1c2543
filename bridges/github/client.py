"""REST access to GitHub through PyGithub, with rate limits and conditional requests.

Everything REST that loopgate sends goes through :class:`GitHubClient`:

* issues, comments (all pages), labels (one at a time, never replacing the set), pull
  requests, repository default branch, file contents at a ref;
* the one *conditional* request of the poller (:meth:`GitHubClient.conditional_list`):
  ``If-None-Match`` with the stored ETag, ``Link`` pagination. It is sent through
  PyGithub's own requester (``Github.requester.requestJson``) rather than ``requests``
  directly, so it shares PyGithub's connection pool, token handling, base URL (a GitHub
  Enterprise ``/api/v3`` prefix included), user agent, timeout, and PyGithub's check that
  a ``Link`` URL points at the configured host. ``requestJson`` does not raise on ``304``
  and returns the headers, which is what a conditional call needs;
* rate limits (issue 3 §1): a REST ``403``/``429`` carrying ``retry-after`` or
  ``x-ratelimit-remaining: 0`` (or GitHub's rate-limit message) closes a
  :class:`RateGuard` until ``x-ratelimit-reset`` / ``retry-after`` (bounded by
  ``max_wait``). While closed, calls raise :class:`RateLimited` *without* a request, so
  nothing spins; the limit is logged once per window. Secondary limits: a
  :class:`WritePacer` (default 1 s) spaces every write across all the client's threads.

Reads never wait on write pacing (issue 21 §2): each thread has its own PyGithub
``Github`` (its requester's connection object is not thread-safe: ``request()`` stores
the call on the object and ``getresponse()`` sends it), so no lock is shared between
calls; only writes take the pacer's lock, and the pacing sleep happens under it. A read
on the dispatcher thread is sent at once while the effects thread sleeps before its next
write. PyGithub's own write spacing is off: it is per requester and not thread-safe (two
threads reading the same last-write time both go).

Credentials come from a :class:`~bridges.github.app.TokenSource`: one token (token mode)
or a GitHub App's installation tokens, one per installation, picked per request for the
repository its path names. A ``401`` drops the refused token and the call is retried once
with a fresh one (an App mints it); a second ``401`` fails the call with
:class:`~bridges.github.errors.CredentialsError` and one log line. Tokens are never logged
or put into an exception message.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import requests
from github import Github, GithubException
from urllib3.util.retry import Retry

from bridges import telemetry
from bridges.github.app import (
    AppInstallations,
    PyGithubAuth,
    StaticToken,
    TokenSource,
    repository_of,
    repository_scope,
)
from bridges.github.errors import CredentialsError, GitHubApiError, RateLimited
from bridges.github.router import comment_from_rest
from engine.identity import BOT, Actor
from engine.ports import Comment

__all__ = ["GitHubClient", "RateGuard", "ConditionalResult", "WritePacer", "rate_limit_reset"]

logger = logging.getLogger(__name__)


def unreachable_reason(exc: BaseException) -> str:
    """Why a request did not reach GitHub, in words: the ``strerror`` of the socket error
    at the bottom of requests' and urllib3's wrapping (``Connection refused``, ``Name or
    service not known``), ``timed out``, else the exception's class name."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        err = todo.pop(0)
        if not isinstance(err, BaseException) or id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, TimeoutError) or "Timeout" in type(err).__name__:
            return "timed out"
        if isinstance(err, OSError) and err.strerror:
            return str(err.strerror)
        todo += [getattr(err, "reason", None), err.__cause__, err.__context__, *err.args]
    return type(exc).__name__

T = TypeVar("T")

#: Longest wait a single limit may impose (seconds); a reset further away is capped.
DEFAULT_MAX_WAIT = 3600.0
#: Wait used when GitHub refuses for a limit but names no reset (secondary limits).
DEFAULT_BACKOFF = 60.0


def _lower(headers: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers or {}).items()}


def _is_limit_message(message: str) -> bool:
    text = message.lower()
    return ("rate limit" in text or "secondary rate" in text
            or text.endswith("please wait a few minutes before you try again."))


def rate_limit_reset(status: int, headers: Mapping[str, Any] | None, message: str = "",
                     *, now: datetime | None = None) -> datetime | None:
    """When a refused call may be retried, or None when the answer is not a rate limit.

    Args:
        status: the HTTP status.
        headers: the response headers (any case).
        message: the body's ``message`` ("" when unknown).
        now: the current time (UTC; injectable for tests).

    Returns:
        ``now + retry-after`` when that header is present; ``x-ratelimit-reset`` when
        ``x-ratelimit-remaining`` is ``0``; ``now + 60 s`` for a limit message without
        headers; None for any other answer (not a limit).
    """
    if status not in (403, 429):
        return None
    now = now or datetime.now(UTC)
    h = _lower(headers)
    retry_after = h.get("retry-after", "").strip()
    if retry_after.isdigit():
        return now + timedelta(seconds=int(retry_after))
    if h.get("x-ratelimit-remaining", "").strip() == "0":
        reset = h.get("x-ratelimit-reset", "").strip()
        if reset.isdigit():
            return datetime.fromtimestamp(int(reset), UTC)
        return now + timedelta(seconds=DEFAULT_BACKOFF)
    if status == 429 or _is_limit_message(message):
        return now + timedelta(seconds=DEFAULT_BACKOFF)
    return None


class RateGuard:
    """A closed-until gate for one rate-limit resource (``core`` or ``graphql``).

    Args:
        resource: the resource name used in messages.
        max_wait: the longest a single limit closes the guard (seconds).
        clock: returns the current UTC time (tests inject one).
    """

    def __init__(self, resource: str, max_wait: float = DEFAULT_MAX_WAIT,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.resource = resource
        self.max_wait = max_wait
        self._clock = clock or (lambda: datetime.now(UTC))
        self._until: datetime | None = None
        self._lock = threading.Lock()

    @property
    def closed_until(self) -> datetime | None:
        """The reset time while closed, else None."""
        with self._lock:
            if self._until is not None and self._clock() >= self._until:
                self._until = None
            return self._until

    def check(self) -> None:
        """Raise :class:`RateLimited` while closed (no request is sent)."""
        until = self.closed_until
        if until is not None:
            raise RateLimited(until, self.resource)

    def clear(self) -> None:
        """Open the guard now (an operator override; tests)."""
        with self._lock:
            self._until = None

    def close(self, reset_at: datetime) -> RateLimited:
        """Close until ``reset_at`` (at least 1 s, at most ``max_wait`` from now).

        Logs once per window: a call while already closed does not log again.

        Returns:
            The :class:`RateLimited` error for the caller to raise.
        """
        now = self._clock()
        bounded = min(max(reset_at, now + timedelta(seconds=1)),
                      now + timedelta(seconds=self.max_wait))
        with self._lock:
            current = self._until
            was_open = current is None or now >= current
            self._until = bounded if current is None or was_open else max(current, bounded)
            until = self._until
        telemetry.rate_limited(self.resource, until)
        if was_open:
            logger.warning("github rate limit resource=%s wait_until=%s", self.resource,
                           until.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return RateLimited(until, self.resource)


#: How a client makes the guard of its rate-limit resource: ``(resource, max_wait,
#: clock) -> RateGuard``. :class:`RateGuard` itself (one process) by default; replicas
#: sharing PostgreSQL pass one keeping the closed-until time in the database
#: (``bridges.postgres.replicas.SharedRateGuard``), chosen when the client is built.
GuardFactory = Callable[[str, float, Callable[[], datetime] | None], RateGuard]


class WritePacer:
    """Spaces GitHub writes at least ``interval`` seconds apart, end of one to start of the
    next, across every thread of one client (platform-facts B3/B4: mutating requests
    serially and ≥ 1 s apart; issue 21 §2: the sleep holds no lock a read takes).

    Args:
        interval: seconds between writes (0: no spacing; tests).
        monotonic: the clock (seconds).

    Attributes:
        paced: how many writes waited for their turn (tests, metrics).
        sleeping: set while a write sleeps for its turn (tests watch it).
    """

    def __init__(self, interval: float,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.interval = max(0.0, float(interval or 0.0))
        self._monotonic = monotonic
        self._lock = threading.Lock()  # writes only: one write at a time, in turn
        self._last_end = float("-inf")
        self.paced = 0
        self.sleeping = threading.Event()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the write turn: wait until ``interval`` after the previous write ended,
        run the block (the write), and note when it ended (even when it failed: GitHub
        may have seen it)."""
        with self._lock:
            wait = self._last_end + self.interval - self._monotonic()
            if wait > 0:
                self.paced += 1
                self.sleeping.set()
                try:
                    time.sleep(wait)
                finally:
                    self.sleeping.clear()
            try:
                yield
            finally:
                self._last_end = self._monotonic()


@dataclass
class ConditionalResult:
    """The answer to a conditional list request.

    Attributes:
        status: ``304`` (nothing changed) or ``200``.
        etag: the first page's ETag (the stored one again on ``304``).
        items: every item over all pages (empty on ``304``).
        requests: how many HTTP requests were sent (pages).
    """

    status: int
    etag: str
    items: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 1

    @property
    def not_modified(self) -> bool:
        """True for a ``304``."""
        return self.status == 304


def _next_link(headers: Mapping[str, str]) -> str | None:
    for part in _lower(headers).get("link", "").split(","):
        url, _, rel = part.partition(";")
        if 'rel="next"' in rel:
            return url.strip().strip("<>")
    return None


class GitHubClient:
    """PyGithub wrapper used by the tracker, the artifact store and the poller.

    Args:
        api_url: REST base URL (``github.apiUrl``; GHES: ``https://HOST/api/v3``).
        token: the token (from the env var named by ``github.tokenEnv``); ignored when
            ``auth`` is given.
        auth: where tokens come from (:class:`~bridges.github.app.AppInstallations` for a
            GitHub App); default: ``token`` for every request.
        seconds_between_writes: spacing of writes (GitHub's secondary limits; ≥ 1 in
            production, tests pass 0).
        timeout: seconds per HTTP request.
        per_page: page size for lists (≤ 100).
        max_wait: longest wait imposed by one rate limit (seconds).
        clock: current UTC time (tests).
        guards: makes the ``core`` guard (:data:`GuardFactory`).
    """

    def __init__(self, api_url: str, token: str = "", *, auth: TokenSource | None = None,
                 seconds_between_writes: float = 1.0, timeout: int = 15, per_page: int = 100,
                 max_wait: float = DEFAULT_MAX_WAIT,
                 clock: Callable[[], datetime] | None = None,
                 guards: GuardFactory = RateGuard) -> None:
        # Transient transport failures are retried for reads only; 403/429 are never
        # retried here (the guard handles them, so PyGithub's own sleeping retry is off).
        retry = Retry(total=2, backoff_factor=0.2, status_forcelist=(502, 503, 504),
                      allowed_methods=frozenset({"GET"}), raise_on_status=False,
                      respect_retry_after_header=False)
        self.auth: TokenSource = auth or StaticToken(api_url, token)
        self._auth = PyGithubAuth(self.auth)
        self._github_args: dict[str, Any] = {
            "base_url": api_url.rstrip("/"), "auth": self._auth, "lazy": True,
            "per_page": per_page, "timeout": timeout, "retry": retry,
            "seconds_between_requests": None, "seconds_between_writes": None}
        self._threads = threading.local()  # this thread's Github (see the module docstring)
        self.pacer = WritePacer(seconds_between_writes)
        self.api_url = api_url.rstrip("/")
        #: Names this (server, credentials) pair without revealing a secret: a one-way
        #: digest, used to cache what GitHub says about them (loopgate's own identity).
        self.identity = self.auth.identity
        self.per_page = per_page
        self.guard = guards("core", max_wait, clock)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._local_status = threading.local()  # the status of the call in hand (metrics)
        self._default_branches: dict[str, str] = {}

    # -- plumbing ----------------------------------------------------------------------
    @property
    def _gh(self) -> Github:
        """This thread's PyGithub ``Github`` (made on the thread's first call)."""
        gh = getattr(self._threads, "gh", None)
        if gh is None:
            gh = self._threads.gh = Github(**self._github_args)
        return gh

    def _call(self, what: str, fn: Callable[[], T], repo: str = "", *,
              write: bool = False) -> T:
        """Run ``fn`` (PyGithub calls) about ``repo`` with the rate guard, the one retry
        after a refused token, and errors converted to bridge errors. A ``write`` waits
        for its turn with the :class:`WritePacer`; a read takes no lock."""
        self.guard.check()
        endpoint = telemetry.endpoint_of(what)
        turn = self.pacer.turn() if write else contextlib.nullcontext()
        with turn, repository_scope(repo):
            if write:
                self.guard.check()  # a limit met while this write waited its turn
            try:
                result = self._with_fresh_token(fn, repo)
            except GithubException as exc:
                telemetry.github_request(endpoint, exc.status)
                telemetry.rate_limit("core", exc.headers)
                raise self._convert(what, exc.status, exc.headers, exc.data) from None
            except requests.RequestException as exc:
                telemetry.github_request(endpoint, 0)
                raise GitHubApiError(0, f"{what}: GitHub unreachable at {self.host} "
                                     f"({unreachable_reason(exc)})") from None
            self._observe(endpoint)
            return result

    @property
    def host(self) -> str:
        """``host[:port]`` of ``github.apiUrl`` (named when GitHub cannot be reached)."""
        return urlsplit(self.api_url).netloc or self.api_url

    def _observe(self, endpoint: str) -> None:
        """Telemetry of a call that answered: its status and the rate limit, from the
        last response PyGithub's requester saw (``_raw`` answers set the status)."""
        status = getattr(self._local_status, "value", None) or 200
        self._local_status.value = None
        telemetry.github_request(endpoint, status)
        remaining, _limit = self._gh.requester.rate_limiting
        reset = self._gh.requester.rate_limiting_resettime
        if remaining >= 0:
            telemetry.rate_limit("core", {"x-ratelimit-remaining": remaining,
                                          "x-ratelimit-reset": reset or ""})

    def _with_fresh_token(self, fn: Callable[[], T], repo: str) -> T:
        try:
            return fn()
        except GithubException as exc:
            if exc.status != 401 or not self.auth.refresh(repo, self._auth.last):
                raise
        return fn()  # once more, with a fresh token

    def _convert(self, what: str, status: int, headers: Any, data: Any) -> Exception:
        message = _message(data)
        if status == 401:
            logger.warning("github credentials refused (%s): 401 %s; the call fails and is "
                           "tried again later", what, message)
            return CredentialsError(401, f"{what}: GitHub refused loopgate's credentials "
                                    f"(401 {message})")
        reset = rate_limit_reset(status, headers, message, now=self._clock())
        if reset is not None:
            return self.guard.close(reset)
        return GitHubApiError(status, f"{what}: GitHub answered {status} {message}".rstrip())

    def _raw(self, what: str, path: str, params: Mapping[str, Any] | None = None,
             headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
        """A GET through PyGithub's requester; returns ``(status, headers, parsed body)``."""

        def send() -> tuple[int, dict[str, str], Any]:
            status, hdrs, body = self._gh.requester.requestJson(
                "GET", path, parameters=dict(params or {}), headers=dict(headers or {}))
            if status == 401:  # a refused token: let _call refresh it and retry once
                raise GithubException(401, _parse_json(body), hdrs)
            self._local_status.value = status
            return status, _lower(hdrs), body

        status, hdrs, body = self._call(what, send, repository_of(path))
        data = _parse_json(body)
        if status >= 400:
            message = data.get("message", "") if isinstance(data, dict) else ""
            raise self._convert(what, status, hdrs, {"message": message})
        return status, hdrs, data

    def viewer(self) -> Actor:
        """Who loopgate acts as on GitHub.

        Token mode: the token's owner (``GET /user``) → ``Actor(login, type, id)``. App
        mode (an installation token cannot read ``/user``): the App's slug from ``GET /app``
        → ``Actor("<slug>[bot]", "Bot", id)``, the id from ``GET /users/<slug>[bot]`` when
        that answers (else None).

        Raises:
            GitHubApiError: the call failed (CredentialsError: credentials refused);
                RateLimited while limited.
        """
        if isinstance(self.auth, AppInstallations):
            login = f"{self.auth.app()['slug']}[bot]"
            try:
                _, _, user = self._raw(f"read the App's bot user {login}",
                                       f"/users/{quote(login)}")
            except GitHubApiError as exc:
                logger.info("github app bot %s: no account id (%s)", login, exc)
                return Actor(login, BOT, None)
            return Actor(login, BOT, Actor.from_rest(user).id)
        _, _, user = self._raw("read the token's owner", "/user")
        return Actor.from_rest(user)

    def user(self, login: str) -> dict[str, Any]:
        """``GET /users/{username}``: the account (404 when no account has that login)."""
        _, _, data = self._raw(f"read the account {login}", f"/users/{quote(login)}")
        return data if isinstance(data, dict) else {}

    def _repo(self, owner: str, repo: str) -> Any:
        return self._gh.get_repo(f"{owner}/{repo}")

    # -- issues and comments -----------------------------------------------------------
    def get_issue(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """The issue (or pull request) JSON.

        Raises:
            GitHubApiError: not found or another error; RateLimited while limited.
        """
        _, _, data = self._raw(f"get issue {owner}/{repo}#{number}",
                               f"/repos/{owner}/{repo}/issues/{number}")
        found: dict[str, Any] = data
        return found

    def list_comments(self, owner: str, repo: str, number: int) -> list[Comment]:
        """Every comment on issue/PR ``number`` (all pages), oldest first."""
        # Raw JSON through the requester: PyGithub's lazy objects would fetch each
        # comment again to hand out ``raw_data``.
        raw = self._all_pages(f"list comments {owner}/{repo}#{number}",
                              f"/repos/{owner}/{repo}/issues/{number}/comments", {})
        return [comment_from_rest(c, number) for c in raw]

    def get_comment(self, owner: str, repo: str, comment_id: int) -> Comment:
        """One comment by numeric id (gives its ``node_id``)."""
        _, _, data = self._raw(f"get comment {comment_id}",
                               f"/repos/{owner}/{repo}/issues/comments/{comment_id}")
        return comment_from_rest(data)

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> Comment:
        """Post ``body`` on issue/PR ``number``; returns the created comment (one request,
        spaced from the previous write by ``seconds_between_writes``)."""

        def post() -> Comment:
            _, data = self._gh.requester.requestJsonAndCheck(
                "POST", f"/repos/{owner}/{repo}/issues/{number}/comments", input={"body": body})
            return comment_from_rest(data, number)

        return self._call(f"add comment {owner}/{repo}#{number}", post, f"{owner}/{repo}",
                          write=True)

    def labels(self, owner: str, repo: str, number: int) -> list[str]:
        """The label names of issue/PR ``number``."""

        def fetch() -> list[str]:
            return [label.name for label in self._repo(owner, repo).get_issue(number).get_labels()]

        return self._call(f"labels {owner}/{repo}#{number}", fetch, f"{owner}/{repo}")

    def add_label(self, owner: str, repo: str, number: int, label: str) -> None:
        """Add one label (``POST .../labels``: the others stay)."""
        self._call(f"add label {owner}/{repo}#{number}",
                   lambda: self._repo(owner, repo).get_issue(number).add_to_labels(label),
                   f"{owner}/{repo}", write=True)

    def remove_label(self, owner: str, repo: str, number: int, label: str) -> None:
        """Remove one label; an absent label is not an error."""
        try:
            self._call(f"remove label {owner}/{repo}#{number}",
                       lambda: self._repo(owner, repo).get_issue(number).remove_from_labels(label),
                       f"{owner}/{repo}", write=True)
        except GitHubApiError as exc:
            if exc.status != 404:
                raise

    # -- repository, pull requests, contents -------------------------------------------
    def default_branch(self, owner: str, repo: str) -> str:
        """The repository's default branch (cached for the client's life)."""
        key = f"{owner}/{repo}".lower()
        if key not in self._default_branches:
            _, _, data = self._raw(f"get repo {owner}/{repo}", f"/repos/{owner}/{repo}")
            self._default_branches[key] = str(data.get("default_branch") or "main")
        return self._default_branches[key]

    def pulls_with_head(self, owner: str, repo: str, branch: str) -> list[dict[str, Any]]:
        """Pull requests (any state) whose head is ``owner:branch``, oldest first."""
        return self._all_pages(f"pulls {owner}/{repo} head={branch}",
                               f"/repos/{owner}/{repo}/pulls",
                               {"state": "all", "head": f"{owner}:{branch}",
                                "sort": "created", "direction": "asc"})

    def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """One pull request's JSON."""
        _, _, data = self._raw(f"get pull {owner}/{repo}#{number}",
                               f"/repos/{owner}/{repo}/pulls/{number}")
        found: dict[str, Any] = data
        return found

    def pull_files(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/pulls/{n}/files``, every page: the files the pull request
        changes (GitHub lists at most 3000; issue 24 §1, code owners)."""
        return self._all_pages(f"files of pull {owner}/{repo}#{number}",
                               f"/repos/{owner}/{repo}/pulls/{number}/files", {})

    def pull_commits(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/pulls/{n}/commits``, every page: the pull request's commits,
        oldest first (GitHub lists at most 250; issue 24 §2, agent authorship)."""
        return self._all_pages(f"commits of pull {owner}/{repo}#{number}",
                               f"/repos/{owner}/{repo}/pulls/{number}/commits", {})

    # -- the loopgate check (issue 11 §1) and teams (§2) ---------------------------------
    def _write(self, what: str, method: str, path: str, body: Mapping[str, Any],
               repo: str) -> dict[str, Any]:
        """One write through PyGithub's requester (spaced like every write)."""

        def send() -> dict[str, Any]:
            _, data = self._gh.requester.requestJsonAndCheck(method, path, input=dict(body))
            return data if isinstance(data, dict) else {}

        return self._call(what, send, repo, write=True)

    def create_status(self, owner: str, repo: str, sha: str, body: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """``POST /repos/{o}/{r}/statuses/{sha}`` (``state``, ``context``,
        ``description``, ``target_url``): a token's commit status."""
        return self._write(f"status on {owner}/{repo}@{sha[:12]}", "POST",
                           f"/repos/{owner}/{repo}/statuses/{sha}", body, f"{owner}/{repo}")

    def check_runs(self, owner: str, repo: str, sha: str, name: str) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/commits/{sha}/check-runs?check_name=`` → the runs."""
        _, _, data = self._raw(f"check runs of {owner}/{repo}@{sha[:12]}",
                               f"/repos/{owner}/{repo}/commits/{sha}/check-runs",
                               {"check_name": name, "per_page": self.per_page})
        runs = data.get("check_runs") if isinstance(data, dict) else None
        return [r for r in runs or () if isinstance(r, dict)]

    def commit_statuses(self, owner: str, repo: str, sha: str) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/commits/{sha}/statuses`` → every status on ``sha``, newest
        first (GitHub's order; each with ``state``, ``context``, ``description``,
        ``creator``). Issue 22 §3: ``loopgate verify`` reads the published check."""
        return self._all_pages(f"statuses of {owner}/{repo}@{sha[:12]}",
                               f"/repos/{owner}/{repo}/commits/{sha}/statuses", {})

    def open_pulls(self, owner: str, repo: str) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/pulls?state=open`` (all pages): ``verify --sha`` looks for
        the pull requests whose head is a commit (issue 22 §3)."""
        return self._all_pages(f"open pull requests of {owner}/{repo}",
                               f"/repos/{owner}/{repo}/pulls", {"state": "open"})

    def compare_commits(self, owner: str, repo: str, base: str, head: str
                        ) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/compare/{base}...{head}`` → the commits ``head`` has that
        ``base`` has not, oldest first (GitHub lists up to 250; a merge group holds a few).
        Issue 19 §4: a merge queue group's commits."""
        _, _, data = self._raw(f"commits of {owner}/{repo}@{base[:12]}...{head[:12]}",
                               f"/repos/{owner}/{repo}/compare/{base}...{head}",
                               {"per_page": self.per_page})
        commits = data.get("commits") if isinstance(data, dict) else None
        return [c for c in commits or () if isinstance(c, dict)]

    def compare_all_commits(self, owner: str, repo: str, base: str, head: str,
                            max_pages: int = 30) -> tuple[list[dict[str, Any]], int]:
        """Every commit ``head`` has that ``base`` has not (``compare``, paged with
        ``per_page``/``page`` as GitHub asks for comparisons of many commits), oldest first,
        and GitHub's ``total_commits``. Stops after ``max_pages`` pages; the caller compares
        the two numbers (issue 19 §4: a merge group's commits, every one of them)."""
        commits: list[dict[str, Any]] = []
        total = 0
        for page in range(1, max_pages + 1):
            _, _, data = self._raw(f"commits of {owner}/{repo}@{base[:12]}...{head[:12]}",
                                   f"/repos/{owner}/{repo}/compare/{base}...{head}",
                                   {"per_page": self.per_page, "page": page})
            data = data if isinstance(data, dict) else {}
            found = [c for c in data.get("commits") or () if isinstance(c, dict)]
            total = int(data.get("total_commits") or 0)
            commits.extend(found)
            if not found or len(commits) >= total:
                break
        return commits, total

    def create_check_run(self, owner: str, repo: str, body: Mapping[str, Any]
                         ) -> dict[str, Any]:
        """``POST /repos/{o}/{r}/check-runs`` (GitHub Apps only)."""
        return self._write(f"check run on {owner}/{repo}", "POST",
                           f"/repos/{owner}/{repo}/check-runs", body, f"{owner}/{repo}")

    def update_check_run(self, owner: str, repo: str, run_id: int, body: Mapping[str, Any]
                         ) -> dict[str, Any]:
        """``PATCH /repos/{o}/{r}/check-runs/{id}``."""
        return self._write(f"check run {run_id} on {owner}/{repo}", "PATCH",
                           f"/repos/{owner}/{repo}/check-runs/{run_id}", body,
                           f"{owner}/{repo}")

    def request_reviewers(self, owner: str, repo: str, number: int,
                          reviewers: list[str], teams: list[str]) -> dict[str, Any]:
        """``POST /repos/{o}/{r}/pulls/{n}/requested_reviewers`` with ``reviewers`` (logins)
        and ``team_reviewers`` (slugs): issue 24 §3. GitHub answers 201 and the pull
        request, or 422 for the whole request when it refuses one name (the author,
        someone without access; docs.github.com/en/rest/pulls/review-requests)."""
        return self._write(f"review request on {owner}/{repo}#{number}", "POST",
                           f"/repos/{owner}/{repo}/pulls/{number}/requested_reviewers",
                           {"reviewers": list(reviewers), "team_reviewers": list(teams)},
                           f"{owner}/{repo}")

    def team(self, org: str, team: str) -> dict[str, Any]:
        """``GET /orgs/{org}/teams/{team_slug}`` (404: unknown, or hidden from us)."""
        _, _, data = self._raw(f"read team {org}/{team}",
                               f"/orgs/{quote(org)}/teams/{quote(team)}")
        found: dict[str, Any] = data
        return found

    def team_membership(self, org: str, team: str, login: str) -> str:
        """``GET /orgs/{org}/teams/{team_slug}/memberships/{username}`` → its ``state``
        (``active``/``pending``), or "" when GitHub answers 404 (not a member).

        Raises:
            GitHubApiError: any other failure (403: the credentials cannot read the team).
        """
        try:
            _, _, data = self._raw(
                f"membership of {login} in {org}/{team}",
                f"/orgs/{quote(org)}/teams/{quote(team)}/memberships/{quote(login)}")
        except GitHubApiError as exc:
            if exc.status == 404:
                return ""
            raise
        return str(data.get("state") or "") if isinstance(data, dict) else ""

    def contents(self, owner: str, repo: str, path: str, ref: str) -> Any:
        """``GET /repos/{o}/{r}/contents/{path}?ref=``: a file entry, a list, or None (404)."""
        try:
            _, _, data = self._raw(f"contents {owner}/{repo}:{path}@{ref}",
                                   f"/repos/{owner}/{repo}/contents/{quote(path.strip('/'))}",
                                   {"ref": ref})
        except GitHubApiError as exc:
            if exc.status == 404:
                return None
            raise
        return data

    def read_file(self, owner: str, repo: str, path: str, ref: str) -> bytes | None:
        """A file's bytes at ``ref``, or None when absent (or a directory)."""
        entry = self.contents(owner, repo, path, ref)
        if not isinstance(entry, dict) or entry.get("type") != "file":
            return None
        if entry.get("encoding") == "base64" and entry.get("content") is not None:
            return base64.b64decode(entry["content"])
        return self._raw_file(owner, repo, path, ref)  # > 1 MB: the raw media type

    def _raw_file(self, owner: str, repo: str, path: str, ref: str) -> bytes | None:
        def fetch() -> bytes:
            _, data = self._gh.requester.requestBlobAndCheck(
                "GET", f"/repos/{owner}/{repo}/contents/{quote(path.strip('/'))}",
                parameters={"ref": ref}, headers={"Accept": "application/vnd.github.raw"})
            return data if isinstance(data, bytes) else str(data).encode("utf-8")

        try:
            return self._call(f"raw file {owner}/{repo}:{path}@{ref}", fetch, f"{owner}/{repo}")
        except GitHubApiError as exc:
            if exc.status == 404:
                return None
            raise

    # -- lists ---------------------------------------------------------------------------
    def _all_pages(self, what: str, path: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self.conditional_list(what, path, params, etag="").items

    def conditional_list(self, what: str, path: str, params: Mapping[str, Any], *,
                         etag: str = "") -> ConditionalResult:
        """GET a list with ``If-None-Match`` on the first page and follow ``Link`` pages.

        Args:
            what: a label for errors and logs (never a token).
            path: the API path (``/repos/{o}/{r}/issues/comments``).
            params: query parameters (``per_page`` defaults to the client's page size).
            etag: the stored ETag ("" sends an unconditional request).

        Returns:
            A :class:`ConditionalResult`; ``304`` costs nothing against GitHub's limit.

        Raises:
            RateLimited: limited now or still limited (no request sent then).
            GitHubApiError: any other failure.
        """
        query = {"per_page": self.per_page, **params}
        headers = {"If-None-Match": etag} if etag else {}
        status, hdrs, data = self._raw(what, path, query, headers)
        if status == 304:
            return ConditionalResult(304, etag)
        items = list(data or [])
        first_etag = hdrs.get("etag", "")
        sent = 1
        link = _next_link(hdrs)
        while link:
            # The absolute Link URL as given (PyGithub checks its host against the base
            # URL and keeps a GHES path prefix intact).
            _, hdrs, data = self._raw(what, link)
            items.extend(data or [])
            sent += 1
            link = _next_link(hdrs)
        return ConditionalResult(200, first_etag, items, sent)


def _message(data: Any) -> str:
    return str(data.get("message", "")) if isinstance(data, dict) else ""


def _parse_json(body: Any) -> Any:
    if body is None or body == "":
        return None
    if isinstance(body, dict | list):
        return body
    try:
        return json.loads(body)
    except ValueError:
        return {"message": str(body)[:200]}


def sleep_until(moment: datetime, stop: threading.Event | None = None) -> None:
    """Sleep until ``moment`` (UTC), waking early when ``stop`` is set."""
    seconds = max(0.0, (moment - datetime.now(UTC)).total_seconds())
    if stop is not None:
        stop.wait(seconds)
    else:
        time.sleep(seconds)
