"""``GitHubTracker``: the engine's :class:`~engine.ports.Tracker` port over GitHub.

REST calls go through :class:`~bridges.github.client.GitHubClient` (PyGithub), the edit
history through :class:`~bridges.github.graphql.GraphQLClient` (gql). Every failure leaves
as :class:`engine.ports.TrackerError` (chained to the bridge error, so a caller can still
tell a :class:`~bridges.github.errors.RateLimited` apart); gates treat it as "wait".

Delivering pull requests (issue 3 §1): the union of

* closing references, read with GraphQL ``Issue.closedByPullRequestsReferences`` (open and
  closed PRs; the loopback fake serves it), and
* pull requests whose head branch is ``github.branchPattern`` with ``{number}`` filled in
  (REST ``GET /repos/{o}/{r}/pulls?head=owner:branch``), for teams that do not write
  "Closes #N",

sorted oldest first (by number).

Comment ids: the engine speaks numeric ids, GraphQL wants node ids. The tracker remembers
the node id of every comment it has seen (listed, posted, or shown to it by the poller and
the webhook router through :meth:`GitHubTracker.remember_comment`) and falls back to a REST read of
the comment in each configured repository.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from bridges.github.app import (
    AppInstallations,
    TokenSource,
    repository_scope,
    token_source_from_config,
)
from bridges.github.client import GitHubClient, GuardFactory, RateGuard
from bridges.github.errors import BridgeError, CredentialsError, GitHubApiError, RateLimited
from bridges.github.graphql import GraphQLClient
from engine.codeowners import LOOKUP as CODEOWNERS_LOOKUP
from engine.dispatch import PullCommit
from engine.errors import ConfigError, StartupError
from engine.identity import Actor
from engine.mergegate import CHECK_NAME, PENDING, on_head
from engine.ports import (
    Comment,
    CommentEdits,
    IssueInfo,
    PullRequest,
    TrackerCapabilities,
    TrackerError,
)
from engine.queuegroup import GroupCommit
from engine.refs import WorkItemRef

__all__ = ["GitHubTracker", "token_from_env", "tracker_error", "quieted", "WRITE_INTERVAL_ENV",
           "PERMANENT_STATUSES"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Overrides the spacing of writes (seconds, default 1.0) — for test rigs only.
WRITE_INTERVAL_ENV = "LOOPGATE_GITHUB_WRITE_INTERVAL"
#: How long a batch fetched ahead by the poller may serve a gate's lookup (seconds).
PREFETCH_TTL = 30.0
_NODE_ID_CAP = 20000
#: Pull requests whose commits are kept (issue 24 §2), one list per head.
COMMITS_CACHE = 512


def token_from_env(variable: str, what: str = "GitHub token") -> str:
    """Read a secret from the environment variable named in config.

    Args:
        variable: the variable's name (``github.tokenEnv``).
        what: what it holds, for the message.

    Returns:
        The value.

    Raises:
        ConfigError: the variable is unset or empty; the message names the variable,
            never a value.
    """
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigError(f"{what} missing: set the environment variable {variable} "
                          f"(named by loopgate.yaml)")
    return value


def _actor_from_json(text: Any) -> Actor | None:
    # The cached identity: {"login", "kind", "id"} (anything else is ignored and re-learned).
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("login"):
        return None
    ident = data.get("id")
    return Actor(str(data["login"]), str(data.get("kind") or ""),
                 ident if isinstance(ident, int) and not isinstance(ident, bool) else None)


#: Answers a retry cannot change (issue 10 §2): a validation failure (e.g. a body over
#: 65,536 characters), a 403 that is no rate limit (a missing permission), a gone resource.
PERMANENT_STATUSES = frozenset({400, 403, 404, 410, 422})


def tracker_error(what: str, exc: BridgeError) -> TrackerError:
    """The engine's :class:`~engine.ports.TrackerError` for a bridge failure, saying
    whether a retry can help and when one is allowed.

    * :class:`RateLimited` → transient, ``retry_at`` = the reset (``Retry-After`` or
      ``x-ratelimit-reset``; platform-facts B2, B4);
    * a REST status in :data:`PERMANENT_STATUSES` → permanent (credentials errors stay
      transient: a token is refreshed, an installation may come back);
    * a 401 (REST or GraphQL: bad credentials) → transient and ``credentials`` set;
    * anything else (5xx, unreachable, GraphQL errors) → transient.
    """
    if isinstance(exc, RateLimited):
        return TrackerError(f"{what}: {exc}", retry_at=exc.reset_at)
    permanent = (isinstance(exc, GitHubApiError) and not isinstance(exc, CredentialsError)
                 and exc.status in PERMANENT_STATUSES)
    refused = isinstance(exc, CredentialsError) and exc.status == 401
    return TrackerError(f"{what}: {exc}", permanent=permanent, credentials=refused)


def _write_interval() -> float:
    raw = os.environ.get(WRITE_INTERVAL_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else 1.0
    except ValueError:
        raise ConfigError(
            f"{WRITE_INTERVAL_ENV} must be a number of seconds, got {raw!r}") from None


class _Prefetched:
    """Single-use, short-lived results of a batched ``comment_edits`` (the poller's)."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._ttl = ttl
        self._clock = clock
        self._items: dict[int, tuple[CommentEdits, float]] = {}
        self._lock = threading.Lock()

    def put(self, found: Iterable[CommentEdits]) -> None:
        expires = self._clock() + self._ttl
        with self._lock:
            for edits in found:
                self._items[edits.comment_id] = (edits, expires)

    def take(self, comment_id: int) -> CommentEdits | None:
        with self._lock:
            entry = self._items.pop(comment_id, None)
        if entry is None or entry[1] < self._clock():
            return None
        return entry[0]

    def discard(self, comment_ids: Iterable[int]) -> None:
        with self._lock:
            for comment_id in comment_ids:
                self._items.pop(comment_id, None)


class GitHubTracker:
    """The Tracker port over GitHub.

    Args:
        client: the REST client.
        graphql: the GraphQL client.
        repos: the watched repositories (``owner/repo``), searched when a comment's
            node id is unknown.
        branch_pattern: ``github.branchPattern`` (``{number}`` = the issue number), or "".
        clock: monotonic seconds (tests).
        team_cache_seconds: how long a team membership answer is reused
            (``github.teamCacheSeconds``).

    Attributes:
        failures: how many calls to GitHub failed (tracker and contents store), for
            logs and metrics; a gate that could not read what it needed says so itself
            (an ``unverified`` wait), nobody infers it from this counter.
        verified: GitHub accepted the credentials once in this process.
    """

    #: People tick a quiz box by editing loopgate's comment on GitHub.
    comments_editable = True
    #: CODEOWNERS, merge queues, the pull request -> items cache, pull request commits and
    #: review requests (issue 20 §2).
    capabilities = TrackerCapabilities(codeowners=True, merge_queue=True,
                                       pull_request_cache=True, pull_commits=True,
                                       review_requests=True)
    #: GitHub accepted the credentials once in this process (:meth:`verify_credentials`).
    verified = False

    def __init__(self, client: GitHubClient, graphql: GraphQLClient, *,
                 repos: Sequence[str] = (), branch_pattern: str = "issue-{number}",
                 clock: Callable[[], float] = time.monotonic,
                 team_cache_seconds: float = 300.0) -> None:
        self.client = client
        self.graphql = graphql
        self.repos = tuple(repos)
        self.branch_pattern = branch_pattern
        self.failures = 0
        self._node_ids: OrderedDict[int, str] = OrderedDict()
        self._ids_lock = threading.Lock()
        self._prefetched = _Prefetched(PREFETCH_TTL, clock)
        self._pr_items: dict[tuple[str, int], tuple[list[int], float]] = {}
        self._teams: dict[tuple[str, str, str], tuple[bool, float]] = {}
        #: Issue 24 §2: ``(owner, repo, number) -> (head sha, commits)``, newest last.
        self._commits: OrderedDict[tuple[str, str, int], tuple[str, list[PullCommit]]] = \
            OrderedDict()
        self.team_cache_seconds = team_cache_seconds
        self._clock = clock

    @classmethod
    def from_config(cls, config: Any, source: TokenSource | None = None,
                    guards: GuardFactory = RateGuard) -> GitHubTracker:
        """Build from loopgate.yaml's ``github`` section.

        Args:
            config: the validated configuration.
            source: the credentials to use (default: built from the section, see
                :func:`~bridges.github.app.token_source_from_config`).
            guards: makes both clients' rate guards (:data:`~bridges.github.client.
                GuardFactory`; shared by replicas on PostgreSQL, issue 15 §3).

        Raises:
            ConfigError: the token variable (``github.tokenEnv``) is unset or empty, or the
                App's private key cannot be read; the message names the setting.
        """
        section = config.section("github")
        source = source or token_source_from_config(section, token_from_env)
        client = GitHubClient(section.get("apiUrl") or "https://api.github.com", auth=source,
                              seconds_between_writes=_write_interval(), guards=guards)
        graphql = GraphQLClient(section.get("graphqlUrl") or "https://api.github.com/graphql",
                                auth=source, guards=guards)
        return cls(client, graphql, repos=section.get("repos") or (),
                   branch_pattern=section.get("branchPattern") or "",
                   team_cache_seconds=float(section.get("teamCacheSeconds", 300)))

    def bot_identity(self, configured: str = "", cache: Any = None,
                     token_env: str = "") -> Actor:
        """Who loopgate posts as: ``configured`` (``github.botLogin``) when set, else what
        GitHub says (token mode ``GET /user``; App mode ``GET /app`` → ``<slug>[bot]``,
        see :meth:`GitHubClient.viewer`), remembered in ``cache`` per server and
        credentials (a digest, never a secret) so CLI calls do not ask again and work
        while GitHub is away.

        Gates compare authors with it so a look-alike checklist or quiz comment posted by
        someone else is never taken for loopgate's own (explainer design, abuse case 6;
        issue 9 §1: kind and id, not the login alone).

        Args:
            configured: ``github.botLogin``, or "".
            cache: a store with ``kv_get``/``kv_set`` (the SQLite store), or None.
            token_env: the token's variable (``github.tokenEnv``) in token mode, named
                when GitHub refuses the token; "" in App mode.

        Returns:
            The :class:`~engine.identity.Actor` (``Actor.from_login(configured)`` when set).

        Raises:
            StartupError: GitHub refused the credentials (exit 2, naming ``token_env``),
                could not be reached (exit 1, naming the host), answered 5xx or was
                rate-limited (exit 1), and nothing is cached.
            ConfigError: an App setting does not match GitHub (naming it), or GitHub
                answered something else; the message names ``github.botLogin``.
        """
        if configured:
            return Actor.from_login(configured)
        key = f"botActor:{self.client.identity}"
        cached = _actor_from_json(cache.kv_get("github", key) if cache is not None else None)
        if cached is not None:
            return cached
        actor = self.verify_credentials(token_env)
        if cache is not None and actor.id is not None:  # an incomplete answer is asked again
            cache.kv_set("github", key, json.dumps(
                {"login": actor.login, "kind": actor.kind, "id": actor.id}))
        return actor

    def verify_credentials(self, token_env: str = "") -> Actor:
        """Ask GitHub once who the credentials are (``serve`` at start, whether or not
        ``github.botLogin`` is set). A failure is one line: the identity probe's retries
        (urllib3's ``Retrying`` warnings) and the client's "tried again later" warning
        are held back, since nothing is tried again — the process exits.

        Args:
            token_env: as for :meth:`bot_identity`.

        Returns:
            The credentials' :class:`~engine.identity.Actor`; :attr:`verified` is True
            from then on (``serve`` does not ask twice at start).

        Raises:
            StartupError, ConfigError: as for :meth:`bot_identity`.
        """
        try:
            with quieted("urllib3.connectionpool", "bridges.github.client"):
                actor = self.client.viewer()
            self.verified = True
            return actor
        except CredentialsError as exc:
            if exc.setting:
                raise ConfigError(f"{exc.setting}: {exc}") from None
            fix = f"check the token in ${token_env}" if token_env else "check github.app"
            raise StartupError(f"github: {exc} — {fix}") from None
        except GitHubApiError as exc:
            if exc.status == 0:
                raise StartupError(f"github: {exc} — check github.apiUrl and the network",
                                   exit_code=1) from None
            if exc.status >= 500:  # GitHub's own trouble: transient, botLogin cannot help
                raise StartupError(f"github: {exc}; GitHub is unavailable, try again later",
                                   exit_code=1) from None
            raise self._identity_unknown(exc) from None
        except RateLimited as exc:
            raise StartupError(f"github: {exc}", exit_code=1) from None
        except BridgeError as exc:
            raise self._identity_unknown(exc) from None

    @staticmethod
    def _identity_unknown(exc: Exception) -> ConfigError:
        return ConfigError(f"could not learn loopgate's GitHub identity ({exc}); set "
                           "github.botLogin in loopgate.yaml")

    # -- plumbing ------------------------------------------------------------------------
    def _guarded(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except BridgeError as exc:
            self.failures += 1
            raise tracker_error(what, exc) from exc

    def remember_comment(self, comment_id: int, node_id: str) -> None:
        """Record comment ``comment_id``'s GraphQL ``node_id`` (bounded: the oldest entries
        are forgotten; an empty ``node_id`` is ignored)."""
        if not node_id:
            return
        with self._ids_lock:
            self._node_ids[comment_id] = node_id
            self._node_ids.move_to_end(comment_id)
            while len(self._node_ids) > _NODE_ID_CAP:
                self._node_ids.popitem(last=False)

    def _remember_all(self, comments: Iterable[Comment]) -> list[Comment]:
        out = list(comments)
        for comment in out:
            self.remember_comment(comment.id, comment.node_id)
        return out

    # -- Tracker ---------------------------------------------------------------------------
    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """All comments on ``ref`` (issue or pull request), oldest first."""
        return self._guarded(f"list comments of {ref}", lambda: self._remember_all(
            self.client.list_comments(ref.owner, ref.repo, ref.number)))

    def add_comment(self, ref: WorkItemRef, body: str) -> Comment:
        """Post ``body`` on ``ref``."""
        comment = self._guarded(f"comment on {ref}", lambda: self.client.add_comment(
            ref.owner, ref.repo, ref.number, body))
        self.remember_comment(comment.id, comment.node_id)
        return comment

    def add_label(self, ref: WorkItemRef, label: str) -> None:
        """Add one label, leaving the others in place."""
        self._guarded(f"add label {label!r} to {ref}",
                      lambda: self.client.add_label(ref.owner, ref.repo, ref.number, label))

    def remove_label(self, ref: WorkItemRef, label: str) -> None:
        """Remove one label if present."""
        self._guarded(f"remove label {label!r} from {ref}",
                      lambda: self.client.remove_label(ref.owner, ref.repo, ref.number, label))

    def labels(self, ref: WorkItemRef) -> list[str]:
        """The item's label names."""
        return self._guarded(f"labels of {ref}",
                             lambda: self.client.labels(ref.owner, ref.repo, ref.number))

    def issue_info(self, ref: WorkItemRef) -> IssueInfo:
        """Title, link, author and state of the item."""
        data = self._guarded(f"read {ref}",
                             lambda: self.client.get_issue(ref.owner, ref.repo, ref.number))
        assignees = tuple(str(a.get("login") or "") for a in data.get("assignees") or ()
                          if isinstance(a, dict) and a.get("login"))
        return IssueInfo(ref, str(data.get("title") or ""), str(data.get("html_url") or ""),
                         str((data.get("user") or {}).get("login") or ""),
                         str(data.get("state") or "open"), assignees)

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """Closing references plus branch-pattern matches, oldest first."""
        return self._guarded(f"pull requests delivering {ref}", lambda: self._delivering(ref))

    def _delivering(self, ref: WorkItemRef) -> list[PullRequest]:
        found = {pr.number: pr for pr in self.graphql.closing_pull_requests(
            ref.owner, ref.repo, ref.number)}
        branch = self.branch_for(ref.number)
        if branch:
            for raw in self.client.pulls_with_head(ref.owner, ref.repo, branch):
                number = int(raw["number"])
                found.setdefault(number, PullRequest(
                    number, str(raw.get("html_url") or ""),
                    str((raw.get("head") or {}).get("ref") or branch),
                    str(raw.get("state") or "open"),
                    str((raw.get("user") or {}).get("login") or ""),
                    str((raw.get("head") or {}).get("sha") or ""),
                    str((raw.get("user") or {}).get("type") or "")))
        return [found[n] for n in sorted(found)]

    # -- teams (issue 11 §2) ---------------------------------------------------------------
    def team_membership(self, org: str, team: str, login: str) -> bool:
        """True when ``login`` is an *active* member of ``org/team`` (a pending invitation
        is not membership). Answers (member or not) are cached for
        :attr:`team_cache_seconds`; a failure is never cached.

        Raises:
            TrackerError: the lookup failed (403: the credentials cannot read the team;
                5xx; a rate limit) — the caller refuses (fail closed).
        """
        key = (org.lower(), team.lower(), login.lower())
        now = self._clock()
        with self._ids_lock:
            cached = self._teams.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        with repository_scope(self._repo_in(org)):
            state = self._guarded(f"membership of {login} in team {org}/{team}",
                                  lambda: self.client.team_membership(org, team, login))
        member = state == "active"
        with self._ids_lock:
            self._teams[key] = (member, now + self.team_cache_seconds)
        return member

    def check_team(self, org: str, team: str) -> str:
        """"" when ``org/team`` exists and loopgate's credentials can read it, else why
        not (for ``config check`` and ``serve``: issue 11, bad input)."""
        try:
            with repository_scope(self._repo_in(org)):
                self.client.team(org, team)
        except GitHubApiError as exc:
            if exc.status in (403, 404):
                return (f"team {org}/{team} is unknown or loopgate's credentials cannot read "
                        f"it (GitHub answered {exc.status}; a GitHub App needs the "
                        "organization permission members: read)")
            return f"team {org}/{team} could not be read: {exc}"
        except BridgeError as exc:
            return f"team {org}/{team} could not be read: {exc}"
        return ""

    def check_user(self, login: str) -> str:
        """"" when GitHub has an account ``login``, else why not (for ``config check``:
        ``agents.requesters`` must name real accounts, issue 24 §2, bad input)."""
        try:
            with repository_scope(self.repos[0] if self.repos else ""):
                self.client.user(login)
        except GitHubApiError as exc:
            if exc.status == 404:
                return f"GitHub has no account {login} (GitHub answered 404)"
            return f"the account {login} could not be read: {exc}"
        except BridgeError as exc:
            return f"the account {login} could not be read: {exc}"
        return ""

    def _repo_in(self, org: str) -> str:
        # A GitHub App reads an organisation's teams with that organisation's installation:
        # the one of a watched repository it owns ("" = the default installation).
        return next((r for r in self.repos if r.split("/", 1)[0].lower() == org.lower()), "")

    # -- the loopgate check (issue 11 §1) ---------------------------------------------------
    @property
    def app_mode(self) -> bool:
        """True when loopgate runs as a GitHub App (check runs), False with a token
        (commit statuses: the Checks API refuses a token's writes)."""
        return isinstance(self.client.auth, AppInstallations)

    def publish_check(self, pull: WorkItemRef, check: Any) -> dict[str, Any]:
        """Publish ``check`` (a :class:`~engine.mergegate.GateCheck`) on pull request
        ``pull``'s head commit in the base repository (also for a fork's pull request, as
        GitHub allows), then read the head again: when it moved meanwhile, the new head
        gets the state too (at most three rounds; later pushes arrive as their own
        ``synchronize`` events). A ``success`` bound to one head (``check.head_sha``) is
        never written on another: that head gets ``pending`` saying so (issue 19 §3).

        Returns:
            ``{sha, kind}`` (kind ``check-run`` or ``status``) of the last write.

        Raises:
            TrackerError: a read or a write failed.
        """
        sha = self._head_sha(pull)
        written: dict[str, Any] = {}
        for _ in range(3):
            def write(at: str = sha) -> dict[str, Any]:
                return self._write_check(pull, at, on_head(check, at))

            written = self._guarded(f"loopgate check on {pull}", write)
            newest = self._head_sha(pull)
            if newest == sha:
                break
            sha = newest
        return written

    def publish_commit_check(self, where: WorkItemRef, sha: str, check: Any) -> dict[str, Any]:
        """Publish ``check`` on commit ``sha`` of ``where``'s repository as it is (a merge
        queue's group commit, issue 19 §4: ``merge_group.head_sha``).

        Returns:
            ``{sha, kind}``.

        Raises:
            TrackerError: the write failed.
        """
        return self._guarded(f"loopgate check on {where.owner}/{where.repo}@{sha[:7]}",
                             lambda: self._write_check(where, sha, check))

    def merge_group_commit_list(self, owner: str, repo: str, base: str, head: str
                                ) -> list[GroupCommit]:
        """The commits of a merge group (``base..head``, ``compare``), oldest first, with
        their parents and authors (issue 19 §4: every commit must be accounted for).

        Raises:
            TrackerError: the comparison could not be read; permanent when GitHub counts
                more commits than could be read (never a partial list: a commit not read
                would not be checked).
        """
        with repository_scope(f"{owner}/{repo}"):
            commits, total = self._guarded(
                f"commits of the merge group {head[:7]} in {owner}/{repo}",
                lambda: self.client.compare_all_commits(owner, repo, base, head))
        if total > len(commits):
            raise TrackerError(f"the merge group {head[:7]} has {total} commits; loopgate "
                               f"read {len(commits)}", permanent=True)
        return [_group_commit(c) for c in commits]

    def merge_queue_pulls(self, owner: str, repo: str, branch: str, head_sha: str
                          ) -> list[int]:
        """The pull requests GitHub's merge queue of ``branch`` put in the group whose
        head is ``head_sha`` (GraphQL ``mergeQueue.entries``; issue 19 §4: a rebase-method
        group's commits name no pull request). [] when the queue does not list it.

        Raises:
            TrackerError: the query failed.
        """
        return self._guarded(f"merge queue of {owner}/{repo}:{branch}",
                             lambda: self.graphql.merge_queue_pulls(owner, repo, branch,
                                                                    head_sha))

    def pull_request_commits(self, owner: str, repo: str, number: int) -> list[GroupCommit]:
        """Pull request ``number``'s own commits (``GET /pulls/{n}/commits``), oldest first
        (issue 19 §4: a rebase-method group replays them).

        Raises:
            TrackerError: the list could not be read.
        """
        with repository_scope(f"{owner}/{repo}"):
            commits = self._guarded(f"commits of {owner}/{repo}#{number}",
                                    lambda: self.client.pull_commits(owner, repo, number))
        return [_group_commit(c) for c in commits]

    # -- code owners (issue 24 §1) -------------------------------------------------------------
    def codeowners_file(self, owner: str, repo: str) -> tuple[str, str] | None:
        """The repository's CODEOWNERS on its default branch: ``(path, text)`` of the first
        of ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS`` found (GitHub's
        order, platform-facts F5), or None when there is none.

        Raises:
            TrackerError: a read failed (not a 404: the caller fails closed).
        """
        def find() -> tuple[str, str] | None:
            branch = self.client.default_branch(owner, repo)
            for path in CODEOWNERS_LOOKUP:
                data = self.client.read_file(owner, repo, path, branch)
                if data is not None:
                    return path, data.decode("utf-8", "replace")
            return None

        with repository_scope(f"{owner}/{repo}"):
            return self._guarded(f"CODEOWNERS of {owner}/{repo}", find)

    def request_reviewers(self, pull: WorkItemRef, reviewers: Sequence[str],
                          teams: Sequence[str]) -> dict[str, Any]:
        """Ask ``reviewers`` (logins) and ``teams`` (slugs) to review pull request ``pull``
        (issue 24 §3); returns who GitHub says is requested now (``{reviewers, teams}``).

        Raises:
            TrackerError: ``permanent`` for a refusal (GitHub's 422: the author or someone
                without access was named; a 403), else transient.
        """
        with repository_scope(f"{pull.owner}/{pull.repo}"):
            data = self._guarded(f"request reviews on {pull}", lambda: self.client.
                                 request_reviewers(pull.owner, pull.repo, pull.number,
                                                   list(reviewers), list(teams)))
        return {"reviewers": [str((u or {}).get("login") or "")
                              for u in data.get("requested_reviewers") or ()],
                "teams": [str((t or {}).get("slug") or "")
                          for t in data.get("requested_teams") or ()]}

    def changed_files(self, pull: WorkItemRef) -> list[str]:
        """The paths pull request ``pull`` changes (``filename`` of each entry of
        ``GET /pulls/{n}/files``; a rename also names its ``previous_filename``).

        Raises:
            TrackerError: the list could not be read.
        """
        with repository_scope(f"{pull.owner}/{pull.repo}"):
            files = self._guarded(f"files of pull request {pull}", lambda: self.client.pull_files(
                pull.owner, pull.repo, pull.number))
        out = []
        for entry in files:
            for key in ("filename", "previous_filename"):
                if entry.get(key):
                    out.append(str(entry[key]))
        return list(dict.fromkeys(out))

    # -- agent authorship (issue 24 §2) ------------------------------------------------------
    def pull_commits(self, pull: WorkItemRef, head_sha: str = "") -> list[PullCommit]:
        """The commits of pull request ``pull``, oldest first (``GET /pulls/{n}/commits``,
        at most 250: GitHub lists no more), as :class:`~engine.dispatch.PullCommit`.
        A pull request's commits change only with its head, so the list is kept per head
        (the last commit GitHub listed): asked again with that ``head_sha``, nothing is
        read.

        Raises:
            TrackerError: the list could not be read (the gate waits).
        """
        key = (pull.owner.lower(), pull.repo.lower(), pull.number)
        with self._ids_lock:
            cached = self._commits.get(key)
        if head_sha and cached is not None and cached[0] == head_sha:
            return list(cached[1])
        with repository_scope(f"{pull.owner}/{pull.repo}"):
            raw = self._guarded(f"commits of pull request {pull}", lambda: self.client.pull_commits(
                pull.owner, pull.repo, pull.number))
        commits = [_pull_commit(c) for c in raw if isinstance(c, dict)]
        if commits:
            with self._ids_lock:
                self._commits[key] = (commits[-1].sha, commits)
                self._commits.move_to_end(key)
                while len(self._commits) > COMMITS_CACHE:
                    self._commits.popitem(last=False)
        return list(commits)

    def _head_sha(self, pull: WorkItemRef) -> str:
        data = self._guarded(f"read pull request {pull}", lambda: self.client.get_pull(
            pull.owner, pull.repo, pull.number))
        sha = str((data.get("head") or {}).get("sha") or "")
        if not sha:
            raise TrackerError(f"pull request {pull} has no head commit", permanent=True)
        return sha

    def _write_check(self, pull: WorkItemRef, sha: str, check: Any) -> dict[str, Any]:
        if self.app_mode:
            self._write_check_run(pull, sha, check)
            return {"sha": sha, "kind": "check-run"}
        body = {"state": check.state, "context": CHECK_NAME,
                "description": check.description}
        link = _link(check)
        if link:  # issue 22 §1: the item's details page when server.publicUrl is set
            body["target_url"] = link
        self.client.create_status(pull.owner, pull.repo, sha, body)
        return {"sha": sha, "kind": "status"}

    def _write_check_run(self, pull: WorkItemRef, sha: str, check: Any) -> None:
        # Issue 22 §1: the title is the one-line verdict (≤ 140 characters) and the
        # Markdown summary the engine's (engine.checksummary, already within GitHub's
        # limits); both are sent as they are.
        body: dict[str, Any] = {
            "name": CHECK_NAME, "head_sha": sha,
            "output": {"title": check.description,
                       "summary": check.summary or check.description}}
        if check.state == PENDING:
            body["status"] = "in_progress"
        else:
            body.update(status="completed", conclusion=check.state)
        link = _link(check)
        if link:
            body["details_url"] = link
        runs = self._own_runs(self.client.check_runs(pull.owner, pull.repo, sha, CHECK_NAME))
        if runs:
            patch = {k: v for k, v in body.items() if k != "head_sha"}
            self.client.update_check_run(pull.owner, pull.repo, int(runs[0]["id"]), patch)
        else:
            self.client.create_check_run(pull.owner, pull.repo, body)

    def _own_runs(self, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Any App may create a check run named ``loopgate`` (platform-facts F2): only a run
        # whose ``app`` is loopgate's own App is ever updated (issue 19 §3).
        mine = self.client.auth.app_id
        return [r for r in runs
                if mine is not None and (r.get("app") or {}).get("id") == mine]

    def branch_for(self, number: int) -> str:
        """The branch name ``github.branchPattern`` gives issue ``number`` ("" if none)."""
        return self.branch_pattern.replace("{number}", str(number)) if self.branch_pattern else ""

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Who edited these comments, as GitHub holds them now (GraphQL).

        A result fetched ahead by the poller in the same cycle (:meth:`prefetch`) is used
        once, within :data:`PREFETCH_TTL`; everything else is asked now, ⌈K/100⌉ queries.

        Raises:
            TrackerError: the lookup failed or was rate limited (callers fail closed).
        """
        found: dict[int, CommentEdits] = {}
        missing: list[int] = []
        for cid in dict.fromkeys(comment_ids):
            cached = self._prefetched.take(cid)
            if cached is not None:
                found[cid] = cached
            else:
                missing.append(cid)
        if missing:
            found.update(self._lookup(missing))
        return found

    def prefetch(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Look many comments up in ⌈K/100⌉ queries and keep the answers for the gates
        that will evaluate them in this cycle.

        Raises:
            TrackerError: a query failed or was rate limited (nothing is kept).
        """
        found = self._lookup(list(dict.fromkeys(comment_ids)))
        self._prefetched.put(found.values())
        return found

    def discard_prefetched(self, comment_ids: Sequence[int]) -> None:
        """Forget what :meth:`prefetch` kept for these comments and nobody used (the
        poller's cycle is over): a later tick must be judged against GitHub as it is then,
        never against an older history."""
        self._prefetched.discard(comment_ids)

    def _lookup(self, comment_ids: list[int]) -> dict[int, CommentEdits]:
        def run() -> dict[int, CommentEdits]:
            by_node = {self._node_id(cid): cid for cid in comment_ids}
            by_node.pop("", None)
            answers = self.graphql.comment_edits(list(by_node))
            return {by_node[node]: edits for node, edits in answers.items() if node in by_node}

        return self._guarded("comment edit lookup", run)

    def _node_id(self, comment_id: int) -> str:
        with self._ids_lock:
            known = self._node_ids.get(comment_id)
        if known:
            return known
        for full in self.repos:
            owner, repo = full.split("/", 1)
            try:
                comment = self.client.get_comment(owner, repo, comment_id)
            except GitHubApiError as exc:
                if exc.status == 404:
                    continue
                raise
            self.remember_comment(comment.id, comment.node_id)
            return comment.node_id
        return ""

    # -- pull request → work item ----------------------------------------------------------
    def items_for_pull_request(self, owner: str, repo: str, number: int) -> list[int]:
        """Issue numbers a pull request delivers (closing references, else the branch
        pattern read backwards). Cached for five minutes per pull request.

        Raises:
            TrackerError: the lookup failed.
        """
        key = (f"{owner}/{repo}".lower(), number)
        cached = self._pr_items.get(key)
        if cached is not None and cached[1] > self._clock():
            return list(cached[0])
        head, numbers = self._guarded(f"items of pull request {owner}/{repo}#{number}",
                                      lambda: self.graphql.pull_request_items(owner, repo, number))
        if not numbers:
            numbers = self._numbers_from_branch(head)
        self._pr_items[key] = (numbers, self._clock() + 300.0)
        return list(numbers)

    def forget_pull_request(self, owner: str, repo: str, number: int) -> None:
        """Drop the cached items of a pull request (its body was edited: it may close
        other issues now; issue 19 §3)."""
        self._pr_items.pop((f"{owner}/{repo}".lower(), number), None)

    def _numbers_from_branch(self, head: str) -> list[int]:
        if not head or "{number}" not in self.branch_pattern:
            return []
        before, _, after = self.branch_pattern.partition("{number}")
        if not (head.startswith(before) and head.endswith(after)):
            return []
        middle = head[len(before): len(head) - len(after) if after else None]
        return [int(middle)] if middle.isdigit() else []


def _pull_commit(raw: dict[str, Any]) -> PullCommit:
    """One entry of ``GET /pulls/{n}/commits`` (``sha``; ``commit.{author,committer}.{name,
    email}``, ``commit.message``; top-level ``author``/``committer``: the linked accounts,
    null when GitHub knows none)."""
    commit = raw.get("commit") or {}
    git_author = commit.get("author") or {}
    git_committer = commit.get("committer") or {}
    author = raw.get("author") or {}
    committer = raw.get("committer") or {}
    return PullCommit(
        str(raw.get("sha") or ""), str(commit.get("message") or ""),
        str(git_author.get("name") or ""), str(git_author.get("email") or ""),
        str(git_committer.get("name") or ""), str(git_committer.get("email") or ""),
        str(author.get("login") or ""), str(committer.get("login") or ""),
        str(author.get("type") or ""), str(committer.get("type") or ""))


def _link(check: Any) -> str:
    # The details page (GateCheck.page_url) wins over the quiz comment (details_url).
    return str(getattr(check, "page_url", "") or check.details_url or "")


@contextmanager
def quieted(*names: str) -> Iterator[None]:
    """Raise the loggers ``names`` to ERROR for the block (restored after): a failure the
    caller reports once in its own line is not said again by urllib3's retry warnings or
    the client's "tried again later" (a start-up probe; ``loopgate verify``, issue 22)."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [one.level for one in loggers]
    for one in loggers:
        one.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for one, level in zip(loggers, levels, strict=True):
            one.setLevel(level)


def _group_commit(data: Mapping[str, Any]) -> GroupCommit:
    """A REST commit object (``sha``, ``parents[].sha``, ``commit.message``,
    ``commit.author``) as a :class:`~engine.queuegroup.GroupCommit`."""
    found = data.get("commit")
    inner: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    who = inner.get("author")
    author: Mapping[str, Any] = who if isinstance(who, Mapping) else {}
    parents = tuple(str(p.get("sha") or "") for p in data.get("parents") or ()
                    if isinstance(p, Mapping))
    return GroupCommit(str(data.get("sha") or ""), str(inner.get("message") or ""), parents,
                       (str(author.get("name") or ""), str(author.get("email") or ""),
                        str(author.get("date") or "")))
