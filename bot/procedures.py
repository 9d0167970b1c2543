"""The agent procedures behind an assignment's ``Command:`` (issue 23 §1).

Every agent node of a graph may name a ``command:``; its procedure is the Markdown file
``templates/commands/<command>.md``, shipped as package data (``pyproject.toml``
``package-data``) and printed by ``loopgate procedure <command>``. A shipped graph naming a
command without a procedure fails a test; ``loopgate config check`` warns about a
configured graph that does.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

from engine.graph.model import Graph

__all__ = ["procedure_names", "procedure_text", "missing_procedures", "UnknownProcedure"]

#: A command name: what a graph's ``command:`` may be for a file to be found (no paths).
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class UnknownProcedure(LookupError):
    """No procedure has that name (the message names the known ones)."""


def _folder() -> Traversable:
    return resources.files("templates").joinpath("commands")


def procedure_names() -> list[str]:
    """The commands that have a procedure, sorted (``["brainstorm", "design", ...]``)."""
    return sorted(entry.name[:-3] for entry in _folder().iterdir()
                  if entry.name.endswith(".md") and _NAME.match(entry.name[:-3]))


def procedure_text(command: str) -> str:
    """The procedure of ``command``: the Markdown of ``templates/commands/<command>.md``.

    Raises:
        UnknownProcedure: no such procedure (or ``command`` is not a plain name, so no
            path outside the folder is ever read).
    """
    entry = _folder().joinpath(f"{command}.md")
    if not _NAME.match(command) or not entry.is_file():
        known = ", ".join(procedure_names())
        raise UnknownProcedure(f"no procedure named {command!r} (known: {known})")
    return entry.read_text("utf-8")


def missing_procedures(graph: Graph) -> list[tuple[str, str]]:
    """``(node id, command)`` for each node of ``graph`` whose ``command:`` has no procedure,
    in the graph's order."""
    known = set(procedure_names())
    return [(node.id, node.command) for node in graph.ordered()
            if node.command and node.command not in known]
