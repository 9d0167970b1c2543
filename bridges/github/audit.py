"""GitHub's own records for ``loopgate verify`` and the self-audit (issue 22 §3).

:class:`AuditSource` is the :class:`engine.verify.Source` over a
:class:`~bridges.github.tracker.GitHubTracker`: the threads through REST, the comments'
authors, editors and edit histories through GraphQL (the tracker's ``CommentEdits``
query, asked now — never the poller's prefetched answers, which belong to the gates of
its cycle), the delivering pull requests with their current heads, and loopgate's own
published ``loopgate`` check on a commit:

* App mode: the check runs named ``loopgate`` whose ``app.id`` is loopgate's App (any
  App may create a run of that name, platform-facts F2); ``in_progress``/``queued`` reads
  as ``pending``, a completed run as its conclusion.
* Token mode: the newest commit status with context ``loopgate`` whose ``creator`` is
  loopgate's account (anyone with write access can post a status of that name, F2).

Every failure is a :class:`~engine.ports.TrackerError` (:func:`tracker_error`): the
caller says "GitHub unreachable", never "agrees".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridges.github.app import repository_scope
from bridges.github.errors import BridgeError
from bridges.github.tracker import tracker_error
from engine.identity import Actor
from engine.mergegate import CHECK_NAME, PENDING
from engine.ports import Comment, CommentEdits, PullRequest
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.verify import PublishedCheck

__all__ = ["AuditSource", "pulls_with_head_sha"]


class AuditSource:
    """GitHub's records as :mod:`engine.verify` reads them.

    Args:
        tracker: the :class:`~bridges.github.tracker.GitHubTracker` (its REST and
            GraphQL clients, its rate-limit guards; no write is ever sent).
        settings: the engine settings (loopgate's identity: whose statuses count).

    Other reads (``issue_info``, ``team_membership``, ``codeowners_file``,
    ``changed_files``, ``items_for_pull_request``) go to the tracker as they are.
    """

    comments_editable = True

    def __init__(self, tracker: Any, settings: EngineSettings) -> None:
        self._tracker = tracker
        self._settings = settings
        self._node_ids: dict[int, str] = {}
        self._repo = ""  # the repository of the threads read: the GraphQL installation

    # Only the tracker's reads are handed on, by name: a verify never writes (issue 20 §2:
    # no attribute is looked up on a tracker by string).
    def issue_info(self, ref: WorkItemRef) -> Any:
        """The tracker's :meth:`~engine.ports.Tracker.issue_info`."""
        return self._tracker.issue_info(ref)

    def team_membership(self, org: str, team: str, login: str) -> bool:
        """The tracker's :meth:`~engine.ports.Tracker.team_membership`."""
        return bool(self._tracker.team_membership(org, team, login))

    def codeowners_file(self, owner: str, repo: str) -> tuple[str, str] | None:
        """The tracker's :meth:`~engine.ports.CodeOwnersReader.codeowners_file`."""
        found: tuple[str, str] | None = self._tracker.codeowners_file(owner, repo)
        return found

    def changed_files(self, pull: WorkItemRef) -> list[str]:
        """The tracker's :meth:`~engine.ports.CodeOwnersReader.changed_files`."""
        return list(self._tracker.changed_files(pull))

    def items_for_pull_request(self, owner: str, repo: str, number: int) -> list[int]:
        """The tracker's :meth:`~engine.ports.Tracker.items_for_pull_request`."""
        return list(self._tracker.items_for_pull_request(owner, repo, number))

    def _call(self, what: str, fn: Any) -> Any:
        try:
            return fn()
        except BridgeError as exc:
            raise tracker_error(what, exc) from exc

    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """Every comment on ``ref``'s thread (REST), oldest first; their node ids are
        kept for :meth:`comment_edits`.

        Raises:
            TrackerError: the thread could not be read.
        """
        client = self._tracker.client
        self._repo = f"{ref.owner}/{ref.repo}"
        with repository_scope(self._repo):
            found = self._call(f"list comments of {ref}", lambda: client.list_comments(
                ref.owner, ref.repo, ref.number))
        for comment in found:
            if comment.node_id:
                self._node_ids[comment.id] = comment.node_id
        return list(found)

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Authors, editors and edit histories of the listed comments, asked now
        (GraphQL, ≤ 100 a query). A comment no thread listed is left out (it is gone).

        Raises:
            TrackerError: the query failed or was rate limited.
        """
        by_node = {self._node_ids[c]: c for c in comment_ids if c in self._node_ids}
        if not by_node:
            return {}
        with repository_scope(self._repo):
            answers = self._call("comment edit lookup",
                                 lambda: self._tracker.graphql.comment_edits(list(by_node)))
        return {by_node[n]: e for n, e in answers.items() if n in by_node}

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """The pull requests delivering ``ref`` with their heads now.

        Raises:
            TrackerError: they could not be read.
        """
        return list(self._tracker.delivering_pull_requests(ref))

    def published_check(self, owner: str, repo: str, sha: str) -> PublishedCheck | None:
        """loopgate's own ``loopgate`` check on ``sha`` (see the module), None if none.

        Raises:
            TrackerError: the runs or statuses could not be read.
        """
        client = self._tracker.client
        with repository_scope(f"{owner}/{repo}"):
            if self._tracker.app_mode:
                runs = self._call(f"check runs of {owner}/{repo}@{sha[:7]}",
                                  lambda: client.check_runs(owner, repo, sha, CHECK_NAME))
                return self._own_run(runs)
            statuses = self._call(f"statuses of {owner}/{repo}@{sha[:7]}",
                                  lambda: client.commit_statuses(owner, repo, sha))
        return self._own_status(statuses)

    def _own_run(self, runs: list[dict[str, Any]]) -> PublishedCheck | None:
        mine = self._tracker.client.auth.app_id
        own = [r for r in runs if r.get("name") == CHECK_NAME and mine is not None
               and (r.get("app") or {}).get("id") == mine]
        if not own:
            return None
        run = max(own, key=lambda r: int(r.get("id") or 0))
        done = run.get("status") == "completed"
        state = str(run.get("conclusion") or PENDING) if done else PENDING
        title = str((run.get("output") or {}).get("title") or "")
        return PublishedCheck(state, title, "check-run")

    def _own_status(self, statuses: list[dict[str, Any]]) -> PublishedCheck | None:
        for status in statuses:  # newest first
            if str(status.get("context") or "") != CHECK_NAME:
                continue
            creator = Actor.from_rest(status.get("creator"))
            if self._settings.bot.known and not self._settings.is_loopgate(creator):
                continue  # someone else's status of the same name (F2)
            return PublishedCheck(str(status.get("state") or PENDING),
                                  str(status.get("description") or ""), "status")
        return None


def pulls_with_head_sha(tracker: Any, repos: Sequence[str], sha: str) -> list[WorkItemRef]:
    """The open pull requests of ``repos`` whose head commit is ``sha`` (a prefix of at
    least 7 hex digits matches), as ``owner/repo#N`` refs.

    Raises:
        TrackerError: a repository's pull requests could not be read.
    """
    found: list[WorkItemRef] = []
    wanted = sha.lower()
    for full in repos:
        owner, repo = full.split("/", 1)
        with repository_scope(full):
            try:
                pulls = tracker.client.open_pulls(owner, repo)
            except BridgeError as exc:
                raise tracker_error(f"open pull requests of {full}", exc) from exc
        for pull in pulls:
            head = str((pull.get("head") or {}).get("sha") or "").lower()
            if head and head.startswith(wanted):
                found.append(WorkItemRef(owner, repo, int(pull["number"])))
    return found
