"""One lock per work item for Slack clicks handled in this process (Execute on the card,
the approval gates' buttons): two clicks on one item run one after the other, so the
second sees what the first decided before it feeds the gate again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from engine.refs import WorkItemRef

__all__ = ["item_lock"]

_LOCKS: dict[WorkItemRef, threading.Lock] = {}
_GUARD = threading.Lock()


@contextmanager
def item_lock(ref: WorkItemRef) -> Iterator[None]:
    """Hold ``ref``'s click lock for the ``with`` block (this process only; replicas on
    PostgreSQL add the item's advisory lock beside it)."""
    with _GUARD:
        lock = _LOCKS.setdefault(ref, threading.Lock())
    with lock:
        yield
