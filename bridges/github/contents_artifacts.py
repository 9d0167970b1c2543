"""``ContentsArtifactStore``: a work item's spec files read through the contents API.

Used when loopgate.yaml sets no ``workspace`` (issue 3 §6). Files live in
``<specDir>/issue-<n>/`` and are read at the work item's branch: the head branch of its
first delivering pull request (see :meth:`GitHubTracker.delivering_pull_requests`), else
the repository's default branch. A branch found through a pull request is cached for
:data:`BRANCH_TTL` seconds (a PR's head branch does not move); "no pull request yet" is
never cached, so a pull request opened a moment ago is honoured at once.
"""

from __future__ import annotations

import builtins
import posixpath
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bridges.github.errors import BridgeError
from bridges.github.tracker import GitHubTracker
from engine.ports import TrackerError
from engine.refs import WorkItemRef

_T = TypeVar("_T")

__all__ = ["ContentsArtifactStore", "BRANCH_TTL"]

#: Seconds a pull request's head branch is reused for a work item's reads.
BRANCH_TTL = 60.0


class ContentsArtifactStore:
    """Reads ``<specDir>/issue-<n>/<name>`` through ``GET /repos/{o}/{r}/contents``.

    Args:
        tracker: the GitHub tracker (its REST client and delivering pull requests).
        spec_dir: ``specDir`` relative to the repository root (default ``docs/specs``).
    """

    def __init__(self, tracker: GitHubTracker, spec_dir: str = "docs/specs", *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tracker = tracker
        self.client = tracker.client
        self._spec_dir = spec_dir.strip("/")
        self._clock = clock
        self._branches: dict[WorkItemRef, tuple[str, float]] = {}

    @classmethod
    def from_config(cls, config: Any, tracker: GitHubTracker) -> ContentsArtifactStore:
        """Build from loopgate.yaml (``specDir``) and the wired tracker."""
        return cls(tracker, str(config.data.get("specDir") or "docs/specs"))

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except BridgeError as exc:
            self.tracker.failures += 1
            raise TrackerError(f"{what}: {exc}") from exc

    def spec_dir(self, ref: WorkItemRef) -> str:
        """``<specDir>/issue-<n>``."""
        return f"{self._spec_dir}/issue-{ref.number}"

    def branch(self, ref: WorkItemRef) -> str:
        """The head branch of the first delivering pull request, else the default branch.

        Raises:
            TrackerError: GitHub could not be asked.
        """
        cached = self._branches.get(ref)
        if cached is not None and cached[1] > self._clock():
            return cached[0]
        for pr in self.tracker.delivering_pull_requests(ref):
            if pr.head_branch:
                self._branches[ref] = (pr.head_branch, self._clock() + BRANCH_TTL)
                return pr.head_branch
        return self._call(f"default branch of {ref.repo_full_name}",
                          lambda: self.client.default_branch(ref.owner, ref.repo))

    def _path(self, ref: WorkItemRef, name: str) -> str:
        clean = posixpath.normpath(name.strip("/"))
        if clean.startswith("..") or clean == ".":
            raise ValueError(f"artifact name escapes the spec directory: {name!r}")
        return f"{self.spec_dir(ref)}/{clean}"

    def read(self, ref: WorkItemRef, name: str) -> bytes | None:
        """Bytes of ``name`` in the item's spec directory at its branch, or None if absent.

        Raises:
            TrackerError: GitHub could not be read (a gate then waits or blocks).
        """
        path = self._path(ref, name)
        branch = self.branch(ref)
        return self._call(f"read {path}@{branch}",
                          lambda: self.client.read_file(ref.owner, ref.repo, path, branch))

    def list(self, ref: WorkItemRef) -> list[str]:
        """Every file under the spec directory (relative paths, sorted)."""
        branch = self.branch(ref)
        root = self.spec_dir(ref)
        return sorted(self._call(f"list {root}@{branch}",
                                 lambda: self._walk(ref, root, branch, root)))

    def _walk(self, ref: WorkItemRef, path: str, branch: str,
              root: str) -> builtins.list[str]:  # `list` here is the method above
        entries = self.client.contents(ref.owner, ref.repo, path, branch)
        if not isinstance(entries, list):
            return []
        found: list[str] = []
        for entry in entries:
            sub = str(entry.get("path") or "")
            if entry.get("type") == "dir":
                found.extend(self._walk(ref, sub, branch, root))
            elif entry.get("type") == "file" and sub.startswith(root + "/"):
                found.append(sub[len(root) + 1:])
        return found

    def repo_path_exists(self, ref: WorkItemRef, path: str) -> bool:
        """True when ``path`` (relative to the repository root) exists at the branch."""
        branch = self.branch(ref)
        clean = path.strip("/")
        return self._call(f"stat {clean}@{branch}", lambda: self.client.contents(
            ref.owner, ref.repo, clean, branch) is not None)
