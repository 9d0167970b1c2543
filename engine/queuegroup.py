"""Which pull request brought each commit of a merge queue group (issue 19 §4, closing
the rebase gap the review found after it).

A group's commits (``merge_group.base_sha..head_sha``) must all be accounted for by pull
requests loopgate identified and checked; a commit nobody accounts for rode along
unvouched, and the group fails naming it. GitHub's merge queue builds its temporary
branch with the one *merge method* of the queue's ruleset (docs.github.com "Managing a
merge queue": "Merge method"; "About pull request merges"), so a group is read whole in
one of three shapes:

- **merge**: each pull request adds a merge commit "Merge pull request #N from …" whose
  second parent is the pull request's head; the pull request's own commits (reachable
  from that second parent) come along with it;
- **squash**: each pull request adds one commit whose title ends "(#N)";
- **rebase**: each pull request's own commits are replayed one by one, without a merge
  commit ("all commits from the topic branch … are added onto the base branch
  individually"); a replayed commit keeps its message and author (name, e-mail, date;
  git-rebase(1)) but gets a new sha and committer, so it is matched to the pull
  request's ``GET /pulls/{n}/commits`` by count, order, message and author.
  [UNCERTAIN] GitHub's docs do not say the queue keeps each author date when it rebases
  (git-rebase does); if it did not, rebase groups fail closed. That list holds at most 250
  commits, so a pull request with more cannot be matched (fail closed too).

A rebase group's commits name no pull request: besides ``head_ref`` and the titles, the
performer asks the queue which pull requests the group holds (GraphQL ``mergeQueue``).

The group's verdict is one rule with two callers: the performer answering
``checks_requested`` and ``loopgate verify --sha`` re-deriving it (:func:`read_group` names
the group's pull requests and reads its commits, :func:`group_verdict` judges them). Both
reach GitHub only through the :class:`~engine.ports.MergeQueue` port handed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.mergegate import FAILURE, SUCCESS, GateCheck, group_check, queue_pulls
from engine.ports import TrackerError

if TYPE_CHECKING:  # types only: engine.ports names GroupCommit for its own annotations
    from engine.ports import MergeQueue

__all__ = ["GroupCommit", "GroupRead", "unaccounted", "why_unaccounted", "queue_branch",
           "read_group", "group_verdict"]

_QUEUE_REF = re.compile(
    r"^(?:refs/heads/)?gh-readonly-queue/(?P<base>.+)/pr-[1-9][0-9]*-[0-9a-f]+$")

_MERGE_TITLE = re.compile(r"^Merge pull request #(?P<n>[1-9][0-9]*) ")
_SQUASH_TITLE = re.compile(r"\(#(?P<n>[1-9][0-9]*)\)$")


@dataclass(frozen=True)
class GroupCommit:
    """One commit as the REST API lists it (``compare`` or ``pulls/{n}/commits``).

    Attributes:
        sha: the commit's sha (40 hex).
        message: the full commit message.
        parents: the parents' shas, first parent first (``parents[].sha``).
        author: ``(name, email, date)`` of ``commit.author`` (date as GitHub wrote it).
    """

    sha: str
    message: str
    parents: tuple[str, ...] = ()
    author: tuple[str, str, str] = ("", "", "")

    @property
    def title(self) -> str:
        """The message's first line, stripped."""
        return (self.message or "").splitlines()[0].strip() if self.message else ""


def _merge_shape(commits: Sequence[GroupCommit], heads: Mapping[int, str]) -> set[str]:
    # Each "Merge pull request #N" commit whose second parent is N's head accounts for
    # itself and for every group commit reachable from that head.
    by_sha = {c.sha: c for c in commits}
    done: set[str] = set()
    for commit in commits:
        hit = _MERGE_TITLE.match(commit.title)
        if not hit or len(commit.parents) != 2:
            continue
        head = heads.get(int(hit["n"]))
        if not head or commit.parents[1] != head:
            continue
        done.add(commit.sha)
        todo = [head]
        while todo:
            sha = todo.pop()
            if sha in by_sha and sha not in done:
                done.add(sha)
                todo.extend(by_sha[sha].parents)
    return done


def _squash_shape(commits: Sequence[GroupCommit], heads: Mapping[int, str]) -> set[str]:
    # One single-parent commit titled "… (#N)" per identified pull request N.
    done: set[str] = set()
    used: set[int] = set()
    for commit in commits:
        hit = _SQUASH_TITLE.search(commit.title)
        if hit is None or len(commit.parents) > 1:
            continue
        number = int(hit["n"])
        if number in heads and number not in used:
            used.add(number)
            done.add(commit.sha)
    return done


def _same(replayed: GroupCommit, original: GroupCommit) -> bool:
    return replayed.message == original.message and replayed.author == original.author


def _rebase_shape(commits: Sequence[GroupCommit],
                  own: Mapping[int, Sequence[GroupCommit]]) -> set[str]:
    # Each identified pull request's own commits, replayed as one contiguous run, in order.
    done: set[str] = set()
    for theirs in own.values():
        size = len(theirs)
        if not size:
            continue
        for start in range(len(commits) - size + 1):
            run = commits[start:start + size]
            if any(c.sha in done for c in run):
                continue
            if all(_same(r, o) for r, o in zip(run, theirs, strict=True)):
                done.update(c.sha for c in run)
                break
    return done


def unaccounted(commits: Sequence[GroupCommit], heads: Mapping[int, str],
                own: Mapping[int, Sequence[GroupCommit]] | None = None) -> GroupCommit | None:
    """The first commit of a merge group no identified pull request accounts for.

    Args:
        commits: the group's commits, ``base_sha..head_sha`` oldest first (``compare``).
        heads: ``{pull number: head sha}`` of the pull requests identified in the group
            (each already checked as covered).
        own: ``{pull number: its commits}`` (``GET /pulls/{n}/commits``, oldest first), for
            the rebase shape; None or missing numbers: that shape accounts for nothing.

    Returns:
        None when one shape (merge, squash or rebase; one queue has one merge method)
        accounts for every commit; otherwise the first commit the best-fitting shape left
        over. An empty group is accounted for.
    """
    if not commits:
        return None
    shapes = (_merge_shape(commits, heads), _squash_shape(commits, heads),
              _rebase_shape(commits, own or {}))
    best = max(shapes, key=len)
    return next((c for c in commits if c.sha not in best), None)


def why_unaccounted(commit: GroupCommit) -> str:
    """The failure's one line for ``commit`` (``sha[:7]`` and its title)."""
    title = commit.title[:60] or "(no message)"
    return (f"commit {commit.sha[:7]} (\"{title}\") is not accounted for by any pull request "
            "loopgate identified in the group")


def queue_branch(head_ref: str) -> str:
    """The base branch a merge group's ``head_ref``
    (``refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>``, platform-facts F1) names; ""
    when it is no merge queue ref."""
    match = _QUEUE_REF.match((head_ref or "").strip())
    return match["base"] if match else ""


# -- the group's verdict: one rule for the performer and for verify -------------------------
@dataclass(frozen=True)
class GroupRead:
    """What a merge group holds, as read from the tracker now.

    Attributes:
        numbers: the pull requests in the group: ``head_ref``'s first, then those the
            commit titles name (merge and squash methods), then those the queue's own list
            names (a rebase-method group's titles name none); no duplicates.
        commits: every commit of ``base_sha..head_sha``, oldest first; or the one line
            saying why they could not all be read (a permanent failure: the group fails).
    """

    numbers: tuple[int, ...]
    commits: tuple[GroupCommit, ...] | str


def _read_commits(queue: MergeQueue, owner: str, repo: str, base_sha: str,
                  head_sha: str) -> tuple[GroupCommit, ...] | str:
    if not base_sha:
        return ()
    try:
        return tuple(queue.merge_group_commit_list(owner, repo, base_sha, head_sha))
    except TrackerError as exc:
        if not exc.permanent:
            raise
        return f"could not read every commit of the group ({exc})"


def read_group(queue: MergeQueue, owner: str, repo: str, *, head_ref: str, base_sha: str,
               head_sha: str, fallback: int) -> GroupRead:
    """Read merge group ``base_sha..head_sha`` of ``owner/repo`` (issue 19 §4).

    Args:
        queue: the tracker's merge-queue port.
        owner, repo: the repository.
        head_ref: ``merge_group.head_ref`` (platform-facts F1).
        base_sha, head_sha: the group's base and head commits ("" base: no commits read).
        fallback: the pull request number to name when neither the ref, the titles nor the
            queue names one (the one the delivery was routed to).

    Returns:
        The :class:`GroupRead`.

    Raises:
        TrackerError: a transient read failure (the caller retries or reports GitHub
            unreachable; never a verdict from half a group).
    """
    commits = _read_commits(queue, owner, repo, base_sha, head_sha)
    messages = [c.message for c in commits] if not isinstance(commits, str) else []
    numbers = queue_pulls(head_ref, messages) or [fallback]
    branch = queue_branch(head_ref)
    if branch:
        # The queue's own list too: a rebase-method group's commits name no pull request,
        # and a commit title can name one that is not in the group at all.
        queued = queue.merge_queue_pulls(owner, repo, branch, head_sha)
        numbers += [n for n in queued if n not in numbers]
    return GroupRead(tuple(numbers), commits)


def _unaccounted_line(queue: MergeQueue, owner: str, repo: str,
                      commits: Sequence[GroupCommit], heads: Mapping[int, str]) -> str:
    left = unaccounted(commits, heads)
    if left is not None:
        # Only a rebase-method group needs each pull request's own commits.
        left = unaccounted(commits, heads, {n: queue.pull_request_commits(owner, repo, n)
                                            for n in heads})
    return why_unaccounted(left) if left is not None else ""


def group_verdict(queue: MergeQueue, owner: str, repo: str,
                  commits: Sequence[GroupCommit] | str,
                  per_pull: Mapping[int, tuple[GateCheck, str]]) -> GateCheck:
    """The ``loopgate`` check of a merge group (issue 19 §4): :func:`~engine.mergegate.
    group_check` over each pull request's check, then every commit accounted for.

    Args:
        queue: the tracker's merge-queue port (a rebase-method group reads each pull
            request's own commits through ``pull_request_commits``).
        owner, repo: the repository.
        commits: :attr:`GroupRead.commits`.
        per_pull: ``{number: (its check bound to its head, that head sha or "")}`` for
            every number of :attr:`GroupRead.numbers`, in that order.

    Returns:
        ``success`` only when every pull request is covered on its head and every commit
        of the group is accounted for by one of them; ``failure`` naming why otherwise.

    Raises:
        TrackerError: a pull request's commits could not be read.
    """
    check = group_check([(n, c) for n, (c, _) in per_pull.items()])
    if check.state != SUCCESS:
        return check
    why = commits if isinstance(commits, str) else _unaccounted_line(
        queue, owner, repo, commits, {n: h for n, (_, h) in per_pull.items()})
    return GateCheck(FAILURE, why, check.summary) if why else check
