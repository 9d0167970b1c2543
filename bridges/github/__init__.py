"""The GitHub bridge: webhook verification and routing, PyGithub/gql clients, the Tracker
and ArtifactStore ports over GitHub, the conditional poller and the webhook receiver.

Modules: ``webhook`` (pure verify/parse), ``router`` (``event.action`` → kinds),
``client`` (REST, rate limits, ETags), ``graphql`` (+ ``queries/*.graphql``), ``tracker``
(``GitHubTracker``), ``artifacts`` (``ContentsArtifactStore``), ``persistence`` (cursors,
seen keys, handled deliveries), ``poller``, ``receiver`` (Flask blueprint), ``errors``.
"""

__all__ = [
    "artifacts",
    "client",
    "errors",
    "graphql",
    "persistence",
    "poller",
    "receiver",
    "router",
    "tracker",
    "webhook",
]
