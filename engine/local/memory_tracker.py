"""In-memory test doubles of the tracker and artifact store ports.

:class:`MemoryTracker` keeps each thread's comments, labels, pull requests and issue info
in dictionaries, and records every edit so :meth:`MemoryTracker.comment_edits` answers
like GitHub's GraphQL ``userContentEdits`` (creation entry dropped, oldest first).
Outages are simulated with :attr:`MemoryTracker.down`, :attr:`MemoryTracker.fail_next`
and :attr:`MemoryTracker.failing`.

:class:`MemoryArtifactStore` holds a work item's spec files as bytes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.ports import (
    Comment,
    CommentEdit,
    CommentEdits,
    IssueInfo,
    PullRequest,
    TrackerCapabilities,
    TrackerError,
)
from engine.queuegroup import GroupCommit
from engine.refs import WorkItemRef

__all__ = ["MemoryTracker", "MemoryArtifactStore"]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class _Stored:
    comment: Comment
    ref: WorkItemRef
    edits: list[CommentEdit] = field(default_factory=list)


class MemoryTracker:
    """A :class:`~engine.ports.Tracker` that lives in memory (tests, demos).

    Timestamps come from a counter (one second per write from 2026-01-01T00:00:00Z) unless
    a call passes ``at``, so ordering is deterministic.

    Attributes:
        bot_login: the author of comments posted through :meth:`add_comment`.
        down: while True every port call raises :class:`TrackerError`.
        fail_next: the next ``fail_next`` port calls raise :class:`TrackerError`.
        failing: names of port methods (e.g. ``{"comment_edits"}``) that always raise.
        calls: ``(method, args)`` of every port call, in order (for assertions).
    """

    #: Tests edit comments as GitHub users do (:meth:`edit_comment`).
    comments_editable = True
    #: Code owners, merge groups, posting as anyone, pull request commits and review
    #: requests, as tests set them up.
    capabilities = TrackerCapabilities(codeowners=True, merge_queue=True, post_as=True,
                                       pull_commits=True, review_requests=True)

    def __init__(self, bot_login: str = "loopgate-bot") -> None:
        self.bot_login = bot_login
        self.down = False
        self.fail_next = 0
        self.failing: set[str] = set()
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self._comments: dict[int, _Stored] = {}
        self._threads: dict[WorkItemRef, list[int]] = {}
        self._labels: dict[WorkItemRef, list[str]] = {}
        self._prs: dict[WorkItemRef, list[PullRequest]] = {}
        self._issues: dict[WorkItemRef, IssueInfo] = {}
        self.teams: dict[str, set[str]] = {}
        self.checks: dict[WorkItemRef, list[object]] = {}
        #: Issue 19 §4: merge group checks by commit, and each group's commit messages.
        self.commit_checks: dict[str, list[object]] = {}
        self.group_messages: dict[str, list[str]] = {}
        #: A group's commits with parents and authors (``head sha -> [GroupCommit]``), and
        #: each pull request's own commits (``number -> [GroupCommit]``).
        self.group_commits: dict[str, list[GroupCommit]] = {}
        self.own_commits: dict[int, list[GroupCommit]] = {}
        #: Issue 19 §4: the merge queue's own list of a group's pull requests, by head.
        self.queued_pulls: dict[str, list[int]] = {}
        #: Issue 24 §1: repository files (``owner/name`` -> path -> text) and each pull
        #: request's changed files.
        self.repo_files: dict[str, dict[str, str]] = {}
        self.pull_files: dict[WorkItemRef, list[str]] = {}
        #: Issue 24 §3: review requests per pull request, and logins refused (lower case).
        self.review_requests: dict[WorkItemRef, list[tuple[tuple[str, ...], ...]]] = {}
        self.refuse_reviewers: set[str] = set()
        #: Issue 24 §2: a pull request's commits (:meth:`set_pull_commits`).
        self.commits: dict[WorkItemRef, list[Any]] = {}
        self._next_id = 1001
        self._tick = 0
        self._lock = threading.RLock()

    # -- failure simulation --------------------------------------------------------------
    def _enter(self, method: str, *args: object) -> None:
        self.calls.append((method, args))
        if self.down or method in self.failing:
            raise TrackerError(f"{method}: tracker unavailable (simulated)")
        if self.fail_next > 0:
            self.fail_next -= 1
            raise TrackerError(f"{method}: tracker call failed (simulated)")

    def _now(self, at: str | None) -> str:
        if at:
            return at
        self._tick += 1
        return (_EPOCH + timedelta(seconds=self._tick)).strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- Tracker port --------------------------------------------------------------------
    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """All comments on ``ref``, oldest first."""
        with self._lock:
            self._enter("list_comments", ref)
            return [self._comments[i].comment for i in self._threads.get(ref, [])]

    def add_comment(self, ref: WorkItemRef, body: str) -> Comment:
        """Post ``body`` on ``ref`` as :attr:`bot_login`."""
        with self._lock:
            self._enter("add_comment", ref)
            return self._create(ref, self.bot_login, body, None)

    def add_label(self, ref: WorkItemRef, label: str) -> None:
        """Add ``label`` (no duplicate)."""
        with self._lock:
            self._enter("add_label", ref, label)
            labels = self._labels.setdefault(ref, [])
            if label not in labels:
                labels.append(label)

    def remove_label(self, ref: WorkItemRef, label: str) -> None:
        """Remove ``label`` if present."""
        with self._lock:
            self._enter("remove_label", ref, label)
            labels = self._labels.get(ref, [])
            if label in labels:
                labels.remove(label)

    def labels(self, ref: WorkItemRef) -> list[str]:
        """The item's labels, in the order they were added."""
        with self._lock:
            self._enter("labels", ref)
            return list(self._labels.get(ref, []))

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """Pull requests registered with :meth:`add_pull_request`, oldest first."""
        with self._lock:
            self._enter("delivering_pull_requests", ref)
            return list(self._prs.get(ref, []))

    def remember_comment(self, comment_id: int, node_id: str) -> None:
        """Nothing to keep: every comment is already here."""
        return None

    def items_for_pull_request(self, owner: str, repo: str, number: int) -> list[int]:
        """Issue numbers whose registered pull requests include ``number``."""
        with self._lock:
            self._enter("items_for_pull_request", owner, repo, number)
            return sorted(ref.number for ref, prs in self._prs.items()
                          if (ref.owner, ref.repo) == (owner, repo)
                          and any(pr.number == number for pr in prs))

    def team_membership(self, org: str, team: str, login: str) -> bool:
        """Membership set with :meth:`set_team`; an unknown team raises (as GitHub's 404
        for a team the credentials cannot see)."""
        with self._lock:
            self._enter("team_membership", org, team, login)
            members = self.teams.get(f"{org}/{team}".lower())
            if members is None:
                raise TrackerError(f"team {org}/{team} not found")
            return login.lower() in members

    def publish_check(self, pull: WorkItemRef, check: object) -> dict[str, str]:
        """Record the check in :attr:`checks` (``pull -> [GateCheck]``)."""
        with self._lock:
            self._enter("publish_check", pull)
            self.checks.setdefault(pull, []).append(check)
            return {"kind": "memory"}

    def publish_commit_check(self, where: WorkItemRef, sha: str, check: object
                             ) -> dict[str, str]:
        """Record a merge group's check in :attr:`commit_checks` (``sha -> [GateCheck]``;
        issue 19 §4)."""
        with self._lock:
            self._enter("publish_commit_check", where, sha)
            self.commit_checks.setdefault(sha, []).append(check)
        return {"sha": sha, "kind": "memory"}

    def merge_group_commit_list(self, owner: str, repo: str, base: str, head: str
                                ) -> list[GroupCommit]:
        """:attr:`group_commits` for ``head``; else :attr:`group_messages` as parentless
        commits (which no merge or squash reading accounts for; issue 19 §4)."""
        with self._lock:
            self._enter("merge_group_commit_list", owner, repo, base, head)
            if head in self.group_commits:
                return list(self.group_commits[head])
            return [GroupCommit(hashlib.sha1(f"{head}:{i}:{m}".encode()).hexdigest(), m)
                    for i, m in enumerate(self.group_messages.get(head, []))]

    def pull_request_commits(self, owner: str, repo: str, number: int) -> list[GroupCommit]:
        """:attr:`own_commits` of pull request ``number`` ([] when unset)."""
        with self._lock:
            self._enter("pull_request_commits", owner, repo, number)
            return list(self.own_commits.get(number, []))

    def merge_queue_pulls(self, owner: str, repo: str, branch: str, head_sha: str
                          ) -> list[int]:
        """:attr:`queued_pulls` for ``head_sha`` ([] when unset: the queue names nobody
        beyond the group's own commits and ref)."""
        with self._lock:
            self._enter("merge_queue_pulls", owner, repo, branch, head_sha)
            return list(self.queued_pulls.get(head_sha, []))

    # -- code owners (issue 24 §1) -----------------------------------------------------------
    def codeowners_file(self, owner: str, repo: str) -> tuple[str, str] | None:
        """The first of ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS`` set with
        :meth:`set_file` for ``owner/repo`` (GitHub's order, platform-facts F5), or None."""
        from engine.codeowners import LOOKUP

        with self._lock:
            self._enter("codeowners_file", owner, repo)
            files = self.repo_files.get(f"{owner}/{repo}".lower(), {})
            for path in LOOKUP:
                if path in files:
                    return path, files[path]
        return None

    def changed_files(self, pull: WorkItemRef) -> list[str]:
        """The paths set with :meth:`set_changed_files` for pull request ``pull``."""
        with self._lock:
            self._enter("changed_files", pull)
            return list(self.pull_files.get(pull, ()))

    # -- review requests (issue 24 §3) ---------------------------------------------------
    def request_reviewers(self, pull: WorkItemRef, reviewers: Sequence[str],
                          teams: Sequence[str]) -> dict[str, list[str]]:
        """Record the request in :attr:`review_requests` (``pull -> [(reviewers, teams)]``);
        a request naming a login in :attr:`refuse_reviewers` raises a permanent
        :class:`TrackerError` for the whole request, as GitHub's 422 does."""
        with self._lock:
            self._enter("request_reviewers", pull)
            refused = [r for r in reviewers if r.lower() in self.refuse_reviewers]
            if refused:
                raise TrackerError(f"422: cannot request {', '.join(refused)}", permanent=True)
            self.review_requests.setdefault(pull, []).append((tuple(reviewers), tuple(teams)))
            return {"reviewers": list(reviewers), "teams": list(teams)}

    def set_file(self, repo: str, path: str, text: str) -> None:
        """A file of repository ``owner/name`` on its default branch (CODEOWNERS)."""
        with self._lock:
            self.repo_files.setdefault(repo.lower(), {})[path.strip("/")] = text

    def set_changed_files(self, pull: WorkItemRef, paths: Sequence[str]) -> None:
        """The files pull request ``pull`` changes."""
        with self._lock:
            self.pull_files[pull] = list(paths)

    def pull_commits(self, pull: WorkItemRef, head_sha: str = "") -> list[Any]:
        """The :class:`~engine.dispatch.PullCommit` list set with :meth:`set_pull_commits`
        for ``pull`` (none by default), oldest first."""
        with self._lock:
            self._enter("pull_commits", pull)
            return list(self.commits.get(pull, ()))

    def set_pull_commits(self, pull: WorkItemRef, commits: Sequence[Any]) -> None:
        """The commits of pull request ``pull`` (:class:`~engine.dispatch.PullCommit`)."""
        with self._lock:
            self.commits[pull] = list(commits)

    def set_team(self, team: str, members: Sequence[str]) -> None:
        """Declare team ``org/team`` with ``members`` (logins)."""
        self.teams[team.lower()] = {m.lower() for m in members}

    def issue_info(self, ref: WorkItemRef) -> IssueInfo:
        """The info set with :meth:`set_issue`, or a generated one."""
        with self._lock:
            self._enter("issue_info", ref)
            return self._issues.get(ref) or IssueInfo(
                ref, f"Issue {ref.number}", self._issue_url(ref), "octocat"
            )

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Edit histories of the known ``comment_ids`` (unknown ids are absent)."""
        with self._lock:
            self._enter("comment_edits", tuple(comment_ids))
            out = {}
            for cid in comment_ids:
                stored = self._comments.get(cid)
                if stored is not None:
                    out[cid] = self._edits_of(stored)
            return out

    # -- test helpers --------------------------------------------------------------------
    def add_comment_as(
        self, ref: WorkItemRef, author: str, body: str, at: str | None = None
    ) -> Comment:
        """Post ``body`` on ``ref`` as ``author`` (not subject to failure switches)."""
        with self._lock:
            return self._create(ref, author, body, at)

    def edit_comment(
        self,
        comment_id: int,
        body: str,
        editor: str | None,
        editor_type: str = "User",
        at: str | None = None,
    ) -> Comment:
        """Replace a comment's body and record the edit (``editor`` None = ghost).

        Raises:
            KeyError: no comment has that id.
        """
        with self._lock:
            stored = self._comments[comment_id]
            when = self._now(at)
            stored.edits.append(CommentEdit(editor, editor_type, when))
            stored.comment = replace(stored.comment, body=body, updated_at=when)
            return stored.comment

    def get_comment(self, comment_id: int) -> Comment:
        """The comment as stored now.

        Raises:
            KeyError: no comment has that id.
        """
        return self._comments[comment_id].comment

    def add_pull_request(
        self, ref: WorkItemRef, number: int, head_branch: str = "", state: str = "open",
        author: str = "", head_sha: str = "", author_kind: str = "",
    ) -> PullRequest:
        """Register a pull request delivering ``ref`` (opened by ``author``, an account of
        type ``author_kind``; its head ``head_sha``, default a made-up 40-hex sha of the
        pull request)."""
        url = f"https://github.com/{ref.owner}/{ref.repo}/pull/{number}"
        sha = head_sha or hashlib.sha1(f"{ref.owner}/{ref.repo}#{number}".encode()).hexdigest()
        pr = PullRequest(number, url, head_branch or f"issue-{ref.number}", state, author, sha,
                         author_kind)
        with self._lock:
            self._prs.setdefault(ref, []).append(pr)
        return pr

    def push(self, number: int, sha: str = "") -> str:
        """A new head commit on pull request ``number`` (every item it delivers sees it);
        returns the new sha (default: derived from the old one)."""
        with self._lock:
            for pulls in self._prs.values():
                for i, pr in enumerate(pulls):
                    if pr.number == number:
                        sha = sha or hashlib.sha1(pr.head_sha.encode()).hexdigest()
                        pulls[i] = replace(pr, head_sha=sha)
        return sha

    def set_issue(self, ref: WorkItemRef, title: str, author: str = "octocat",
                  assignees: Sequence[str] = ()) -> IssueInfo:
        """Set the item's title, author and assignees."""
        info = IssueInfo(ref, title, self._issue_url(ref), author, assignees=tuple(assignees))
        with self._lock:
            self._issues[ref] = info
        return info

    def set_labels(self, ref: WorkItemRef, labels: Sequence[str]) -> None:
        """Replace the item's labels (set-up only)."""
        with self._lock:
            self._labels[ref] = list(labels)

    def comments_on(self, ref: WorkItemRef) -> list[Comment]:
        """Like :meth:`list_comments` but never fails and is not recorded."""
        with self._lock:
            return [self._comments[i].comment for i in self._threads.get(ref, [])]

    # -- internals -----------------------------------------------------------------------
    @staticmethod
    def _issue_url(ref: WorkItemRef) -> str:
        return f"https://github.com/{ref.owner}/{ref.repo}/issues/{ref.number}"

    def _create(self, ref: WorkItemRef, author: str, body: str, at: str | None) -> Comment:
        cid = self._next_id
        self._next_id += 1
        when = self._now(at)
        comment = Comment(
            id=cid,
            author=author,
            body=body,
            created_at=when,
            updated_at=when,
            node_id=f"IC_{cid}",
            url=f"{self._issue_url(ref)}#issuecomment-{cid}",
            issue_number=ref.number,
        )
        self._comments[cid] = _Stored(comment, ref)
        self._threads.setdefault(ref, []).append(cid)
        return comment

    @staticmethod
    def _edits_of(stored: _Stored) -> CommentEdits:
        edits = tuple(sorted(stored.edits, key=lambda e: e.edited_at))
        last = edits[-1] if edits else None
        return CommentEdits(
            comment_id=stored.comment.id,
            body=stored.comment.body,
            url=stored.comment.url,
            author=stored.comment.author,
            editor=last.editor if last else None,
            editor_type=last.editor_type if last else "",
            last_edited_at=last.edited_at if last else None,
            edits=edits,
        )


class MemoryArtifactStore:
    """An :class:`~engine.ports.ArtifactStore` holding spec files in memory.

    Attributes:
        files: ``ref -> {name relative to the spec dir: bytes}``.
        repo_paths: paths (relative to the repository root) that exist.
        branch_name: what :meth:`branch` answers.
        fail: while True, reads raise :class:`OSError` (a failing store).
    """

    def __init__(self, spec_dir: str = "docs/specs", branch: str = "main") -> None:
        self.files: dict[WorkItemRef, dict[str, bytes]] = {}
        self.repo_paths: set[str] = set()
        self.branch_name = branch
        self.fail = False
        self._spec_dir = spec_dir

    def write(self, ref: WorkItemRef, name: str, content: str | bytes) -> None:
        """Create or replace ``name``; also marks its repository path as existing."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        self.files.setdefault(ref, {})[name] = data
        self.repo_paths.add(f"{self.spec_dir(ref)}/{name}")

    def delete(self, ref: WorkItemRef, name: str) -> None:
        """Remove ``name`` if present."""
        self.files.get(ref, {}).pop(name, None)
        self.repo_paths.discard(f"{self.spec_dir(ref)}/{name}")

    def read(self, ref: WorkItemRef, name: str) -> bytes | None:
        """Bytes of ``name`` or None."""
        if self.fail:
            raise OSError(f"cannot read {name} (simulated)")
        return self.files.get(ref, {}).get(name)

    def list(self, ref: WorkItemRef) -> list[str]:
        """Every file name, sorted."""
        return sorted(self.files.get(ref, {}))

    def repo_path_exists(self, ref: WorkItemRef, path: str) -> bool:
        """True for a path written or added to :attr:`repo_paths`."""
        return path in self.repo_paths

    def spec_dir(self, ref: WorkItemRef) -> str:
        """``<spec_dir>/issue-<n>``."""
        return f"{self._spec_dir}/issue-{ref.number}"

    def branch(self, ref: WorkItemRef) -> str:
        """:attr:`branch_name`."""
        return self.branch_name
