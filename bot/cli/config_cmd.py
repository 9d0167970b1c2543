"""``loopgate config``: check loopgate.yaml and print its reference."""

from __future__ import annotations

import click

from bot.config_doc import render_reference


@click.group("config")
def config_group() -> None:
    """Inspect loopgate.yaml."""


@config_group.command("check")
@click.pass_obj
def check(obj: object) -> None:
    """Validate the configuration file, compile its graph and, for a GitHub App, check its
    id, key and installations against GitHub; every team an approval rule names must be
    readable (exit 2 naming the offending setting)."""
    from bot.services import load_graph, verify_github, verify_teams
    from engine.errors import LoopgateError

    cfg = obj.config  # type: ignore[attr-defined]
    source = cfg.path or "defaults"
    try:
        graph = load_graph(cfg)
    except LoopgateError as exc:
        click.echo(f"loopgate: {source}: loop: {exc}", err=True)
        raise SystemExit(2) from None
    try:
        installations = verify_github(cfg)
        teams = verify_teams(cfg, graph)
    except LoopgateError as exc:
        click.echo(f"loopgate: {source}: {exc}", err=True)
        raise SystemExit(2) from None
    click.echo(f"ok: {source} (graph {graph.name}, {len(graph.nodes)} nodes)")
    for line in installations:
        click.echo(f"ok: github app {line}")
    for line in teams:
        click.echo(f"ok: github {line}")


@config_group.command("reference")
def reference() -> None:
    """Print the configuration reference generated from the JSON Schema (Markdown)."""
    click.echo(render_reference(), nl=False)


def register(group: click.Group) -> None:
    """Add ``config`` to ``group``."""
    group.add_command(config_group)
