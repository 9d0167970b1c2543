"""Ports: the small protocols through which the pure engine talks to the outside.

Implementations: ``engine.local`` (in-memory and SQLite-backed offline tracker, local
checkout artifact store), ``bridges.github`` (PyGithub/gql tracker and contents-API
artifact store) and ``bot`` (Slack notifier).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from engine.identity import Actor
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # types only
    from engine.dispatch import PullCommit
    from engine.queuegroup import GroupCommit

__all__ = [
    "SELF_MARKER",
    "Comment",
    "CommentEdit",
    "CommentEdits",
    "IssueInfo",
    "PullRequest",
    "Tracker",
    "CodeOwnersReader",
    "MergeQueue",
    "PostsAs",
    "PullCommits",
    "PullRequestCache",
    "ReviewRequests",
    "TrackerCapabilities",
    "codeowners_reader",
    "merge_queue",
    "posts_as",
    "pull_commits",
    "pull_request_cache",
    "review_requests",
    "ArtifactStore",
    "Notifier",
    "Clock",
    "SystemClock",
    "Ports",
    "TrackerError",
]

#: Marks a comment loopgate itself posted (design wire format, kept verbatim).
SELF_MARKER = "<!-- the-loop:agent-comment -->"


class TrackerError(Exception):
    """A tracker call failed (network, auth, rate limit). Gates treat it as "wait".

    Args:
        message: what failed, for people (never a token).
        permanent: retrying the same call cannot help (GitHub's 422, a 403 without a
            rate limit, a 404): an effect fails for good instead of retrying.
        retry_at: the earliest moment a retry is allowed (``Retry-After``, a rate-limit
            reset), when the tracker was told.
        credentials: the tracker refused loopgate's credentials (GitHub's ``401 Bad
            credentials``): nothing gets through until a person replaces them, so an
            effect waits without spending its tries.
    """

    def __init__(self, message: str = "", *, permanent: bool = False,
                 retry_at: datetime | None = None, credentials: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_at = retry_at
        self.credentials = credentials


@dataclass(frozen=True)
class Comment:
    """One comment on a work item's thread.

    Attributes:
        id: the tracker's numeric comment id (GitHub's are past 2^31: a Python int,
            never squeezed into 32 bits).
        author: the author's login as REST spells it ("" when unknown, e.g. a deleted
            account; ``loopgate[bot]`` for a GitHub App).
        body: the current body (Markdown).
        created_at: ISO-8601 UTC timestamp string.
        updated_at: ISO-8601 UTC timestamp string.
        node_id: GitHub's global node id (used for GraphQL lookups), "" if none.
        url: a link to the comment, "" if none.
        issue_number: the issue or pull request number the comment is on (0 if unknown).
        author_type: REST ``user.type`` (``User``/``Bot``), "" when the tracker does not
            say (the offline thread).
        author_id: REST ``user.id``, or None.
        as_read: the body is the comment as the tracker holds it *now* (a listing read by
            the poller or a catch-up), not as its author created it: someone with write
            access may have edited it since, so it counts as the author's only once the
            tracker's edit history says nobody else did (issue 19 §1,
            :mod:`engine.authorship`). False for a webhook's ``created`` payload, a Slack
            click and the offline thread.
        edited_by: who the ingress saw edit the body (an ``issue_comment.edited``
            webhook's ``sender``), or None.
    """

    id: int
    author: str
    body: str
    created_at: str = ""
    updated_at: str = ""
    node_id: str = ""
    url: str = ""
    issue_number: int = 0
    author_type: str = ""
    author_id: int | None = None
    as_read: bool = False
    edited_by: Actor | None = None

    @property
    def actor(self) -> Actor:
        """The author as an :class:`~engine.identity.Actor`."""
        return Actor(self.author, self.author_type or Actor.from_login(self.author).kind,
                     self.author_id)

    @property
    def self_authored(self) -> bool:
        """True when the body carries loopgate's own marker."""
        return SELF_MARKER in (self.body or "")


@dataclass(frozen=True)
class CommentEdit:
    """One entry of a comment's edit history (GraphQL ``userContentEdits``).

    Attributes:
        editor: the editor's login, or None when GitHub names nobody (ghost, deleted).
        editor_type: the actor's ``__typename`` (``User``, ``Bot``, ``Mannequin`` ...) or "".
        edited_at: ISO-8601 UTC timestamp string.
        editor_id: the editor's ``databaseId`` when GitHub gave it, else None.
    """

    editor: str | None
    editor_type: str
    edited_at: str
    editor_id: int | None = None

    @property
    def actor(self) -> Actor:
        """The editor as an :class:`~engine.identity.Actor` (``Actor("")`` for nobody)."""
        return Actor(self.editor or "", self.editor_type, self.editor_id)


@dataclass(frozen=True)
class CommentEdits:
    """A comment as the tracker holds it now, with who edited it.

    Attributes:
        comment_id: the numeric id asked about (GraphQL ``fullDatabaseId``: 64-bit).
        body: current body.
        url: link to the comment.
        author: author login ("" if unknown).
        editor: the comment's ``editor`` login (latest editor per GitHub), or None.
        editor_type: ``__typename`` of that editor, or "".
        last_edited_at: ISO-8601 timestamp of the last edit, or None.
        edits: real edits (creation entry dropped), sorted oldest first by ``edited_at``.
        author_type: the author's ``__typename`` (``User``, ``Bot`` ...) or "".
        author_id: the author's ``databaseId`` or None.
        editor_id: the editor's ``databaseId`` or None.
        complete: False when GitHub holds more history entries than were read (its
            ``totalCount`` exceeds the nodes returned): an older editor may be missing.
    """

    comment_id: int
    body: str
    url: str
    author: str
    editor: str | None
    editor_type: str
    last_edited_at: str | None
    edits: tuple[CommentEdit, ...] = ()
    author_type: str = ""
    author_id: int | None = None
    editor_id: int | None = None
    complete: bool = True

    @property
    def author_actor(self) -> Actor:
        """The author as an :class:`~engine.identity.Actor` (GraphQL spelling: a Bot's
        login has no ``[bot]`` suffix)."""
        return Actor(self.author, self.author_type, self.author_id)

    @property
    def editor_actor(self) -> Actor:
        """The comment's latest editor as an :class:`~engine.identity.Actor`."""
        return Actor(self.editor or "", self.editor_type, self.editor_id)

    def latest_edit(self) -> CommentEdit | None:
        """The newest real edit, or None when the comment was never edited."""
        return self.edits[-1] if self.edits else None


@dataclass(frozen=True)
class IssueInfo:
    """What the card and the notices show about a work item (``assignees``: logins, for
    the quiz gates' ``assignee-or-author`` attester rule, issue 11 §2)."""

    ref: WorkItemRef
    title: str
    url: str
    author: str
    state: str = "open"
    assignees: tuple[str, ...] = ()


@dataclass(frozen=True)
class PullRequest:
    """A pull request delivering a work item (``author``: who opened it, "" when
    unknown; ``head_sha``: its head commit when the tracker said; ``author_kind``: the
    account's type, ``User`` or ``Bot``, "" when unknown — GraphQL spells a bot's login
    without REST's ``[bot]``, so the type is what tells, issue 24 §2)."""

    number: int
    url: str
    head_branch: str
    state: str = "open"
    author: str = ""
    head_sha: str = ""
    author_kind: str = ""


@dataclass(frozen=True)
class TrackerCapabilities:
    """What a tracker offers beyond the :class:`Tracker` port, declared by the tracker
    itself (issue 20 §2: callers read this record through :func:`codeowners_reader`,
    :func:`merge_queue`, :func:`posts_as`, :func:`pull_commits`, :func:`pull_request_cache`
    and :func:`review_requests`, never probe with ``getattr``).

    Attributes:
        codeowners: reads CODEOWNERS and a pull request's changed files
            (:class:`CodeOwnersReader`, issue 24 §1).
        merge_queue: answers merge-queue groups (:class:`MergeQueue`, issue 19 §4).
        post_as: posts a comment as any author (:class:`PostsAs`: the offline thread,
            where ``item advance --comment`` types a person's reply).
        pull_request_cache: caches which items a pull request delivers
            (:class:`PullRequestCache`, issue 19 §3).
        pull_commits: reads a pull request's commits (:class:`PullCommits`, issue 24 §2:
            the agent-authorship signals and requesters).
        review_requests: asks people and teams to review a pull request
            (:class:`ReviewRequests`, issue 24 §3).
    """

    codeowners: bool = False
    merge_queue: bool = False
    post_as: bool = False
    pull_request_cache: bool = False
    pull_commits: bool = False
    review_requests: bool = False


@runtime_checkable
class Tracker(Protocol):
    """Where a work item's thread lives (GitHub, or the offline SQLite thread).

    Every method raises :class:`TrackerError` on failure.

    Attributes:
        comments_editable: True when people edit comments on this thread, so a quiz box
            can be ticked and its page fetched from the forge (GitHub); False for the
            offline thread, where a quiz is attested by typing its line and its page is
            opened from the local checkout (issue 14 §4).
    """

    comments_editable: bool

    @property
    def capabilities(self) -> TrackerCapabilities:
        """What this tracker offers beyond the port (:class:`TrackerCapabilities`)."""
        ...

    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """All comments on the item (or pull request ``ref``), oldest first."""
        ...

    def add_comment(self, ref: WorkItemRef, body: str) -> Comment:
        """Post ``body`` on ``ref`` and return the created comment."""
        ...

    def add_label(self, ref: WorkItemRef, label: str) -> None:
        """Add one label, leaving the others in place."""
        ...

    def remove_label(self, ref: WorkItemRef, label: str) -> None:
        """Remove one label if present; absent is not an error."""
        ...

    def labels(self, ref: WorkItemRef) -> list[str]:
        """The item's current label names."""
        ...

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """Pull requests that deliver the item, oldest first (may be empty)."""
        ...

    def issue_info(self, ref: WorkItemRef) -> IssueInfo:
        """Title, link and author of the item."""
        ...

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Who edited these comments, as the tracker holds them now.

        Returns:
            comment id -> :class:`CommentEdits`; an id the tracker does not know is absent.

        Raises:
            TrackerError: the lookup failed or was rate limited (callers fail closed).
        """
        ...

    def remember_comment(self, comment_id: int, node_id: str) -> None:
        """Keep the tracker's own id of comment ``comment_id`` as an ingress saw it (GitHub:
        the GraphQL ``node_id`` of a webhook payload or a REST listing), so a later
        :meth:`comment_edits` needs no extra lookup (issue 20 §1: no made-up
        :class:`Comment` carries the ids). An empty ``node_id`` is ignored, as is the call
        by a tracker with nothing to keep; never raises."""
        ...

    def team_membership(self, org: str, team: str, login: str) -> bool:
        """True when ``login`` is an active member of team ``org/team`` (issue 11 §2).

        Raises:
            TrackerError: the lookup failed, or the team is unknown or hidden from
                loopgate's credentials (callers refuse: fail closed).
        """
        ...

    def publish_check(self, pull: WorkItemRef, check: Any) -> Mapping[str, Any]:
        """Publish the ``loopgate`` check (:class:`~engine.mergegate.GateCheck`) on pull
        request ``pull``'s current head commit (issue 11 §1): a check run for a GitHub
        App, a commit status for a token; a tracker without pull requests does nothing.

        Returns:
            What was written (``{sha, kind}``), for the effect's result.

        Raises:
            TrackerError: the write failed.
        """
        ...

    def items_for_pull_request(self, owner: str, repo: str, number: int) -> list[int]:
        """The issue numbers pull request ``number`` delivers (closing references or the
        branch pattern); ``[]`` when it delivers none or is no pull request.

        Raises:
            TrackerError: the lookup failed (the caller retries the delivery).
        """
        ...


@runtime_checkable
class CodeOwnersReader(Protocol):
    """The tracker's two narrow reads behind the ``codeowners`` approver entry (issue 24
    §1). Optional: a tracker without them (the offline thread) has no pull requests, and a
    rule that needs them there waits, saying so (fail closed)."""

    def codeowners_file(self, owner: str, repo: str) -> tuple[str, str] | None:
        """``(path, text)`` of the repository's CODEOWNERS on its default branch (the first
        of :data:`engine.codeowners.LOOKUP` found), or None when it has none.

        Raises:
            TrackerError: the read failed.
        """
        ...

    def changed_files(self, pull: WorkItemRef) -> list[str]:
        """The repository paths pull request ``pull`` changes.

        Raises:
            TrackerError: the read failed.
        """
        ...


class MergeQueue(Protocol):
    """The tracker's merge-queue calls (issue 19 §4; ``TrackerCapabilities.merge_queue``)."""

    def merge_group_commit_list(self, owner: str, repo: str, base: str, head: str
                                ) -> list[GroupCommit]:
        """Every commit of a merge group (``base..head``), oldest first, with parents and
        authors (issue 19 §4: each must be accounted for by a pull request).

        Raises:
            TrackerError: not every commit could be read (permanent when GitHub counts more
                than it lists).
        """
        ...

    def pull_request_commits(self, owner: str, repo: str, number: int) -> list[GroupCommit]:
        """Pull request ``number``'s own commits, oldest first (a rebase-method group
        replays them).

        Raises:
            TrackerError: the read failed.
        """
        ...

    def merge_queue_pulls(self, owner: str, repo: str, branch: str, head_sha: str
                          ) -> list[int]:
        """The pull requests the merge queue holds up to the group whose head is
        ``head_sha`` on ``branch``, in queue order ([] when the queue names none).

        Raises:
            TrackerError: the read failed.
        """
        ...

    def publish_commit_check(self, where: WorkItemRef, sha: str,
                             check: Any) -> Mapping[str, Any]:
        """Publish ``check`` on commit ``sha`` of ``where``'s repository (``{sha, kind}``).

        Raises:
            TrackerError: the write failed.
        """
        ...


class PostsAs(Protocol):
    """A tracker that posts as any author (``TrackerCapabilities.post_as``)."""

    def add_comment_as(self, ref: WorkItemRef, author: str, body: str) -> Comment:
        """Post ``body`` on ``ref`` as ``author``."""
        ...


class PullRequestCache(Protocol):
    """A tracker caching which items a pull request delivers
    (``TrackerCapabilities.pull_request_cache``)."""

    def forget_pull_request(self, owner: str, repo: str, number: int) -> None:
        """Drop what is cached about pull request ``number`` (its body was edited)."""
        ...


class PullCommits(Protocol):
    """A tracker reading a pull request's commits (``TrackerCapabilities.pull_commits``,
    issue 24 §2)."""

    def pull_commits(self, pull: WorkItemRef, head_sha: str = "") -> Sequence[PullCommit]:
        """The commits of pull request ``pull``, oldest first
        (:class:`~engine.dispatch.PullCommit`); ``head_sha``: the head the caller knows,
        so a tracker may answer from its cache for that head.

        Raises:
            TrackerError: the list could not be read (the gate waits).
        """
        ...


class ReviewRequests(Protocol):
    """A tracker asking for reviews on a pull request (``TrackerCapabilities.
    review_requests``, issue 24 §3)."""

    def request_reviewers(self, pull: WorkItemRef, reviewers: Sequence[str],
                          teams: Sequence[str]) -> Mapping[str, Any]:
        """Ask ``reviewers`` (logins) and ``teams`` (slugs) to review pull request
        ``pull``; returns who is requested now (``{reviewers, teams}``).

        Raises:
            TrackerError: ``permanent`` for a refusal (GitHub's 422, a 403), else
                transient.
        """
        ...


def codeowners_reader(tracker: Tracker) -> CodeOwnersReader | None:
    """``tracker`` as a :class:`CodeOwnersReader` when it declares one, else None."""
    return cast(CodeOwnersReader, tracker) if tracker.capabilities.codeowners else None


def merge_queue(tracker: Tracker) -> MergeQueue | None:
    """``tracker`` as a :class:`MergeQueue` when it declares one, else None."""
    return cast(MergeQueue, tracker) if tracker.capabilities.merge_queue else None


def posts_as(tracker: Tracker) -> PostsAs | None:
    """``tracker`` as a :class:`PostsAs` when it declares it, else None."""
    return cast(PostsAs, tracker) if tracker.capabilities.post_as else None


def pull_commits(tracker: Tracker) -> PullCommits | None:
    """``tracker`` as a :class:`PullCommits` when it declares it, else None."""
    return cast(PullCommits, tracker) if tracker.capabilities.pull_commits else None


def review_requests(tracker: Tracker) -> ReviewRequests | None:
    """``tracker`` as a :class:`ReviewRequests` when it declares it, else None."""
    return cast(ReviewRequests, tracker) if tracker.capabilities.review_requests else None


def pull_request_cache(tracker: Tracker) -> PullRequestCache | None:
    """``tracker`` as a :class:`PullRequestCache` when it declares one, else None."""
    return cast(PullRequestCache, tracker) if tracker.capabilities.pull_request_cache \
        else None


@runtime_checkable
class ArtifactStore(Protocol):
    """Reads the files of a work item's spec directory (``<specDir>/issue-<n>/``)."""

    def read(self, ref: WorkItemRef, name: str) -> bytes | None:
        """Bytes of ``name`` (relative to the item's spec directory), or None if absent."""
        ...

    def list(self, ref: WorkItemRef) -> list[str]:
        """Relative paths of every file in the item's spec directory, sorted."""
        ...

    def repo_path_exists(self, ref: WorkItemRef, path: str) -> bool:
        """True when ``path`` (relative to the repository root) exists."""
        ...

    def spec_dir(self, ref: WorkItemRef) -> str:
        """The item's spec directory relative to the repository root, e.g.
        ``docs/specs/issue-7``."""
        ...

    def branch(self, ref: WorkItemRef) -> str:
        """The branch artifacts are read at (``main`` for a local checkout)."""
        ...


@runtime_checkable
class Notifier(Protocol):
    """Sends named events (``quiz-pending``, ``phase-approval-pending`` ...) to people."""

    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Deliver ``event`` about ``ref``; must not raise for a delivery failure that
        an outbox will retry."""
        ...


class Clock(Protocol):
    """The time source (injectable for tests)."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        """Return ``datetime.now(UTC)``."""
        return datetime.now(UTC)


class _NullNotifier:
    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        return None


@dataclass
class Ports:
    """The bundle of ports a runtime and its hooks use."""

    tracker: Tracker
    artifacts: ArtifactStore
    notifier: Notifier = field(default_factory=_NullNotifier)
    clock: Clock = field(default_factory=SystemClock)
