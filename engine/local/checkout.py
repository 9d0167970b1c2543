"""The local-checkout artifact store: a work item's files under a working tree.

A work item's spec directory is ``<workspace>/<specDir>/issue-<n>/`` (issue 2 §1; the
``specDir`` default is ``docs/specs``). Paths are resolved and must stay inside their
root: a name that climbs out with ``..`` (or an absolute path, or a symlink pointing
outside) reads as absent, so an agent-written path can never make loopgate read
elsewhere on the machine.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path, PurePosixPath

from engine.refs import WorkItemRef

__all__ = ["CheckoutArtifactStore"]

logger = logging.getLogger(__name__)


class CheckoutArtifactStore:
    """An :class:`~engine.ports.ArtifactStore` over a local checkout.

    Args:
        workspace: the repository's working tree.
        spec_dir: the spec directory relative to the repository root (``docs/specs``).
    """

    def __init__(self, workspace: str | os.PathLike[str], spec_dir: str = "docs/specs") -> None:
        self.workspace = Path(workspace).resolve()
        self._spec_dir = PurePosixPath(spec_dir.strip("/") or ".").as_posix()

    def spec_dir(self, ref: WorkItemRef) -> str:
        """``<specDir>/issue-<n>`` relative to the repository root, e.g. ``docs/specs/issue-7``."""
        return f"{self._spec_dir}/issue-{ref.number}"

    def branch(self, ref: WorkItemRef) -> str:
        """Artifacts are read from the working tree, which stands for ``main``."""
        return "main"

    def read(self, ref: WorkItemRef, name: str) -> bytes | None:
        """Bytes of ``name`` (relative to the item's spec directory), or None when absent
        or when ``name`` points outside that directory."""
        path = self._inside(self._item_root(ref), name)
        if path is None or not path.is_file():
            return None
        return path.read_bytes()

    def list(self, ref: WorkItemRef) -> list[str]:
        """Relative POSIX paths of every file in the item's spec directory, sorted."""
        root = self._item_root(ref)
        if not root.is_dir():
            return []
        found = []
        for path in root.rglob("*"):
            inside = self._inside(root, path.relative_to(root).as_posix())
            if inside is not None and inside.is_file():
                found.append(path.relative_to(root).as_posix())
        return sorted(found)

    def repo_path_exists(self, ref: WorkItemRef, path: str) -> bool:
        """True when ``path`` (relative to the workspace) exists inside the workspace."""
        resolved = self._inside(self.workspace, path)
        return resolved is not None and resolved.exists()

    def _item_root(self, ref: WorkItemRef) -> Path:
        return self.workspace / self.spec_dir(ref)

    @staticmethod
    def _inside(root: Path, name: str) -> Path | None:
        if not name or PurePosixPath(name).is_absolute() or Path(name).is_absolute():
            logger.warning("refused artifact path %r: not relative", name)
            return None
        base = root.resolve()
        candidate = (base / name).resolve()
        if candidate != base and not candidate.is_relative_to(base):
            logger.warning("refused artifact path %r: outside %s", name, base)
            return None
        return candidate
