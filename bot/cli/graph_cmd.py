"""``loopgate graph show`` and ``loopgate graph validate`` (issue #2 §7).

``show`` prints the configured graph (``loop`` in loopgate.yaml, via
:func:`bot.services.load_graph`) or ``--file PATH`` as a text table, JSON or a Mermaid
flowchart. ``validate FILE`` compiles a graph file: exit 0 with a one-line summary and any
warnings, or exit 2 with the compiler's message (naming the offender) on stderr.
"""

from __future__ import annotations

import json

import click

from bot.cli.context import CliContext, fail
from bot.cli.help import HelpGroup, format_option
from engine.errors import GraphConfigError
from engine.graph.model import Graph

__all__ = ["register", "graph", "summary"]



def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def summary(graph: Graph) -> str:
    """``ok: <name> — N nodes, M edges, K skip sets (W warnings)``."""
    return (
        f"ok: {graph.name} — {_plural(len(graph.nodes), 'node')}, "
        f"{_plural(len(graph.edges), 'edge')}, {_plural(len(graph.skip_sets), 'skip set')} "
        f"({_plural(len(graph.warnings), 'warning')})"
    )


def _compile(path: str) -> Graph:
    from engine.graph.compiler import compile_file

    try:
        return compile_file(path)
    except GraphConfigError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def _configured(obj: CliContext) -> Graph:
    from bot.services import load_graph

    try:
        return load_graph(obj.config)
    except GraphConfigError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


@click.group("graph", cls=HelpGroup)
def graph() -> None:
    """Show or validate a process graph.

    \b
    Example:
      loopgate graph show --format mermaid
    """


@graph.command("show")
@click.option("--file", "file_path", type=click.Path(dir_okay=False), default=None,
              help="A graph YAML file (default: the graph configured as `loop`).")
@format_option("mermaid")
@click.pass_obj
def show(obj: CliContext, file_path: str | None, fmt: str) -> None:
    """Print the graph: a table, JSON, or a Mermaid flowchart for GitHub.

    \b
    Example:
      loopgate graph show --format mermaid
    """
    from engine.graph.render import render_json, render_mermaid, render_text

    compiled = _compile(file_path) if file_path else _configured(obj)
    if fmt == "json":
        click.echo(json.dumps(render_json(compiled), indent=2))
    elif fmt == "mermaid":
        click.echo(render_mermaid(compiled), nl=False)
    else:
        click.echo(render_text(compiled), nl=False)


@graph.command("validate")
@click.argument("file_path", metavar="FILE", type=click.Path(dir_okay=False))
def validate(file_path: str) -> None:
    """Compile FILE: exit 0 with a summary, or 2 with the error naming the offender.

    \b
    Example:
      loopgate graph validate graphs/pdlc-work-item-loop.yaml
    """
    compiled = _compile(file_path)
    click.echo(summary(compiled))
    for warning in compiled.warnings:
        click.echo(f"warning: {warning}")


def register(group: click.Group) -> None:
    """Add the ``graph`` command family to ``group``."""
    group.add_command(graph)
