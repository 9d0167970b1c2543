"""Errors of the GitHub bridge: one root, :class:`BridgeError`.

The bridge converts every failure it hands to the engine into
:class:`engine.ports.TrackerError` (see :mod:`bridges.github.tracker`); inside the bridge
(poller, receiver, dispatcher) these richer types say *why*, so the caller can wait for a
rate-limit reset instead of retrying at once. Messages never contain a token.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bridges.ingress.errors import BridgeError

__all__ = [
    "BridgeError",
    "SignatureError",
    "PayloadError",
    "GitHubApiError",
    "CredentialsError",
    "RateLimited",
    "GraphQLQueryError",
]


class SignatureError(BridgeError):
    """A webhook delivery's ``X-Hub-Signature-256`` is missing, malformed or wrong."""


class PayloadError(BridgeError):
    """A webhook delivery is not a JSON object or lacks a header we need (names it)."""


class GitHubApiError(BridgeError):
    """GitHub answered a REST call with an error status.

    Attributes:
        status: the HTTP status code (0 when the request never got an answer).
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class CredentialsError(GitHubApiError):
    """GitHub refused loopgate's credentials, or a GitHub App setting does not match GitHub
    (wrong App id or key, no installation on a repository, a revoked installation).

    At start-up (``config check``, ``serve``) it becomes a ``ConfigError`` naming
    :attr:`setting`; at run time the tracker turns it into ``TrackerError`` and the gate
    waits. The message names settings and ids, never a key or a token.

    Attributes:
        status: the HTTP status (0 when GitHub was not reached).
        setting: the loopgate.yaml key to fix (``github.app.appId``), "" when none applies.
    """

    def __init__(self, status: int, message: str, *, setting: str = "") -> None:
        super().__init__(status, message)
        self.setting = setting


class RateLimited(BridgeError):
    """GitHub refused a call for rate limiting; nothing should be sent before ``reset_at``.

    Attributes:
        reset_at: when the limit resets (timezone-aware UTC).
        resource: ``core`` (REST) or ``graphql``.
    """

    def __init__(self, reset_at: datetime, resource: str = "core", message: str = "") -> None:
        self.reset_at = reset_at
        self.resource = resource
        when = reset_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        super().__init__(message or f"GitHub {resource} rate limit reached; waiting until {when}")


class GraphQLQueryError(BridgeError):
    """A GraphQL query failed (transport error or an ``errors`` answer other than a limit)."""
