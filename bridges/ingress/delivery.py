"""A delivery: one inbound arrival, from any tracker's webhook or poller (issue 20 §3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Delivery"]


@dataclass(frozen=True)
class Delivery:
    """One inbound arrival with a stable id used for exactly-once handling.

    The receiver builds one from a webhook (``source="github"``, ``event`` = the
    ``X-GitHub-Event`` header); the router and the poller build routed deliveries whose
    ``event`` is an internal kind (``comment``, ``quiz_attestation``, ``start``).

    Attributes:
        delivery_id: the ``X-GitHub-Delivery`` GUID, or a poller id such as
            ``poll:comment:42``.
        source: ``github`` (webhook) or ``poller``.
        event: the GitHub event name or the routed kind.
        action: the payload's ``action`` ("" when it has none, e.g. ``ping``).
        data: the parsed payload, or the routed fields (``ref``, ``comment``, ``key`` ...).
    """

    delivery_id: str
    source: str
    event: str
    action: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def route_key(self) -> str:
        """``event.action`` (``issue_comment.edited``), or ``event`` when there is no action."""
        return f"{self.event}.{self.action}" if self.action else self.event
