"""What the ingress takes from the wired application (issue 20 §3): declared, never imported.

The dispatcher is built from the application's composition root (``bot.services.Services``),
but the ingress wing must not know ``bot/`` (a test parses every import of ``bridges/``,
``TYPE_CHECKING`` ones included). :class:`IngressServices` names the few members the
dispatcher reads; ``Services`` satisfies it structurally, and so does any other root that
wires a runtime over a store (a test double, another application). A tracker's poller
declares its own, wider protocol beside it (``bridges.github.poller.PollerServices``).

Members are read-only properties so a root may hold a narrower type (a ``DatabaseStore``
where a :class:`~engine.store.base.Store` is asked for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engine.graph.model import Graph
    from engine.ports import Ports
    from engine.runtime import Runtime
    from engine.settings import EngineSettings
    from engine.store.base import Store

__all__ = ["IngressServices", "LearnsInstallations"]


class LearnsInstallations(Protocol):
    """Credentials told which installation a signed delivery came from (a GitHub App's
    installations; ``bridges.github.app.TokenSource``)."""

    def learn(self, repo: str, installation_id: int) -> None:
        """Remember that ``repo`` (``owner/name``) is reached through installation
        ``installation_id``; credentials with one token ignore it."""
        ...


class IngressServices(Protocol):
    """The members of the wired application the dispatcher uses (issue 20 §3)."""

    @property
    def runtime(self) -> Runtime:
        """The engine runtime every event is handed to."""
        ...

    @property
    def store(self) -> Store:
        """The item store (its inbox and bridge state live beside it)."""
        ...

    @property
    def graph(self) -> Graph:
        """The compiled process graph."""
        ...

    @property
    def settings(self) -> EngineSettings:
        """The engine settings (authorized users, keywords, loopgate's own login)."""
        ...

    @property
    def ports(self) -> Ports:
        """The tracker, artifact store, notifier and clock."""
        ...

    @property
    def credentials(self) -> LearnsInstallations | None:
        """The tracker's credentials, None offline."""
        ...
