"""The root of every error a bridge raises on purpose, whatever the tracker (issue 20 §3).

Kept in the tracker-neutral ingress so the inbox (:class:`~bridges.ingress.inbox.InboxError`)
and a tracker's own errors (:mod:`bridges.github.errors`) share one root that callers catch.
"""

from __future__ import annotations

from engine.errors import LoopgateError

__all__ = ["BridgeError"]


class BridgeError(LoopgateError):
    """Root of every error a bridge raises on purpose (the GitHub bridge's and the inbox's)."""
