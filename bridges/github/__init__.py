"""The GitHub bridge: what speaks GitHub. Webhook verification and routing, PyGithub/gql
clients, the Tracker and ArtifactStore ports over GitHub, the conditional poller, the webhook
receiver and the paced effects worker. What every tracker shares (``Delivery``, the kinds,
the inbox, bridge state, the dispatcher) is in :mod:`bridges.ingress` (issue 20 §3).

Modules: ``webhook`` (pure verify/parse), ``router`` (``event.action`` → kinds),
``client`` (REST, rate limits, ETags), ``graphql`` (+ ``queries/*.graphql``), ``tracker``
(``GitHubTracker``), ``contents_artifacts`` (``ContentsArtifactStore``), ``poller``,
``receiver`` (Flask blueprint), ``errors``.
"""

__all__ = [
    "client",
    "contents_artifacts",
    "errors",
    "graphql",
    "poller",
    "receiver",
    "router",
    "tracker",
    "webhook",
]
