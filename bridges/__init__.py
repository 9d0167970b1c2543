"""Bridges between the pure engine and the outside (issue 20 §3): tracker-neutral ingress
(:mod:`bridges.ingress`: deliveries, the inbox, bridge state, the dispatcher), the GitHub
tracker (:mod:`bridges.github`) and the PostgreSQL backend (:mod:`bridges.postgres`)."""

__all__ = ["github", "ingress", "postgres", "telemetry"]
