"""Lazily built objects shared by CLI commands (config, store, graph, runtime)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bot.config import Config, load_config
from engine.errors import LoopgateError
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # types only: built lazily, an offline command never loads the bridges
    from bot.services import Services

_T = TypeVar("_T")

__all__ = ["CliContext", "parse_item", "fail", "known_node", "unknown_node_message"]


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` to stderr and exit with ``code`` (2 = usage/config error)."""
    click.echo(f"loopgate: {message}", err=True)
    raise SystemExit(code)


def unknown_node_message(graph: Any, node_id: str) -> str:
    """``'desgin' is not a node of <graph> (unknown-node) — did you mean `design`?``: the
    one wording of an unknown node in every verb (issue 23 §3; the suggestion follows the
    config keys' rule, :func:`bot.config_errors.did_you_mean`)."""
    from bot.config_errors import did_you_mean

    hint = did_you_mean(node_id, [node.id for node in graph.ordered()])
    return f"{node_id!r} is not a node of {graph.name} (unknown-node){hint}"


def known_node(graph: Any, node_id: str, option: str) -> str:
    """``node_id`` when ``graph`` has it; else exit 2 (a usage error) with one line naming
    ``option`` and the nearest node.

    Args:
        graph: the compiled graph (:class:`engine.graph.model.Graph`).
        node_id: the value given.
        option: the option it was given to (``--node``, ``--to``).
    """
    if not graph.has_node(node_id):
        fail(f"{option}: {unknown_node_message(graph, node_id)}", 2)
    return node_id


def parse_item(text: str) -> WorkItemRef:
    """Parse ITEM (``owner/repo#N``, or an issue URL as ``/loop check`` takes) or exit 2
    with a clear message."""
    try:
        return WorkItemRef.parse_any(text)
    except LoopgateError as exc:
        raise click.UsageError(str(exc)) from None


@dataclass
class CliContext:
    """Holds the global options and builds services on first use."""

    config_path: str | None = None
    db_path: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def _get(self, key: str, build: Callable[[], _T]) -> _T:
        if key not in self._cache:
            try:
                self._cache[key] = build()
            except LoopgateError as exc:  # StartupError: 1 when a service was unreachable
                fail(str(exc), code=getattr(exc, "exit_code", 2))
        found: _T = self._cache[key]
        return found

    @property
    def config(self) -> Config:
        """The validated loopgate.yaml (exit 2 on a config error)."""
        return self._get("config", lambda: load_config(self.config_path))

    @property
    def services(self) -> Services:
        """The wired :class:`bot.services.Services` for this invocation."""
        from bot.services import Services

        return self._get("services", lambda: Services.build(self.config, db_path=self.db_path))

    def take_services(self) -> Any:
        """The services, handed over: the caller closes them, this context will not.

        ``serve`` takes them so its supervisor closes the store only after every thread
        that uses it was joined (and never while one is still running).
        """
        services = self.services
        self._cache.pop("services", None)
        return services

    def close(self) -> None:
        """Release the database connection, if one was opened."""
        services = self._cache.get("services")
        if services is not None:
            services.close()
