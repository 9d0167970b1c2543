"""``loopgate config``: check loopgate.yaml, show the effective configuration and the
database in use, and print the reference."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import click
import yaml

from bot.cli.help import HelpGroup, format_option
from bot.config_doc import render_reference


@click.group("config", cls=HelpGroup)
def config_group() -> None:
    """Inspect loopgate.yaml.

    \b
    Example:
      loopgate config show
    """


@config_group.command("check")
@click.pass_context
def check(ctx: click.Context) -> None:
    """Validate the configuration file, compile its graph and, for a GitHub App, check its
    id, key and installations against GitHub; every team an approval rule names must be
    readable (exit 2 naming the offending setting). Warns (exit 0) about what cannot work
    yet: an empty authorizedUsers, unset GitHub token or webhook-secret variables, and,
    when a gate names codeowners, each CODEOWNERS line GitHub would skip (with its number).

    \b
    Example:
      loopgate --config loopgate.yaml config check
    """
    from bot.services import verify_agents, verify_codeowners, verify_github, verify_teams
    from engine.errors import LoopgateError

    cfg = _config_or_report_all(ctx)
    source = cfg.path or "defaults"
    graph, problems = offline_problems(cfg, _explicit_db(ctx))
    if problems:
        for problem in problems:
            click.echo(f"loopgate: {source}: {problem}", err=True)
        raise SystemExit(2)
    try:
        installations = verify_github(cfg)
        teams = verify_teams(cfg, graph)
        owners, owner_warnings = verify_codeowners(cfg)  # issue 24 §1
        owners += verify_agents(cfg)  # issue 24 §2: agents.requesters name real accounts
    except LoopgateError as exc:
        click.echo(f"loopgate: {source}: {exc}", err=True)
        raise SystemExit(2) from None
    for warning in config_warnings(cfg, graph):
        click.echo(f"loopgate: warning: {source}: {warning}", err=True)
    for warning in owner_warnings:
        click.echo(f"loopgate: warning: {warning}", err=True)
    click.echo(f"ok: {source} (graph {graph.name}, {len(graph.nodes)} nodes)")
    for line in installations:
        click.echo(f"ok: github app {line}")
    for line in [*teams, *owners]:
        click.echo(f"ok: github {line}")


def config_warnings(cfg: Any, graph: Any,
                    environ: Mapping[str, str] | None = None) -> list[str]:
    """What the file allows but cannot work (issue 23 §3): warnings, not errors, since the
    file is valid and the missing part may be supplied where ``serve`` runs.

    Args:
        cfg: the validated :class:`bot.config.Config`.
        graph: its compiled graph.
        environ: the environment to read (default ``os.environ``); only the *names* of
            variables are ever printed, never a value.

    Returns:
        One line per warning, each naming its key path: an empty ``authorizedUsers`` (no
        gate can be answered by anyone a rule does not name), a ``github`` section whose
        token (token mode) or webhook-secret variable is unset (``serve`` refuses to
        start without them), a node whose ``command:`` has no procedure.
    """
    from bot.procedures import missing_procedures

    env = os.environ if environ is None else environ
    out = []
    if not cfg.data.get("authorizedUsers"):
        out.append("authorizedUsers is empty: nobody can answer phase selection, a quiz or "
                   "an approval gate whose rule names no approvers")
    if cfg.has("github"):
        section = cfg.section("github")
        names = [("webhookSecretEnv", section.get("webhookSecretEnv") or "GITHUB_WEBHOOK_SECRET",
                  "serve refuses to start without it unless --insecure-webhooks")]
        if not section.get("app"):
            names.insert(0, ("tokenEnv", section.get("tokenEnv") or "GITHUB_TOKEN",
                             "serve cannot reach GitHub without it"))
        out += [f"github.{key}: the environment variable {name} is not set here ({why})"
                for key, name, why in names if not env.get(str(name), "").strip()]
    out += [f"loop: node {node} names command {command!r}, which has no procedure "
            f"(templates/commands/{command}.md; `loopgate procedure` lists them)"
            for node, command in missing_procedures(graph)]
    return out


def _config_or_report_all(ctx: click.Context) -> Any:
    """The validated config; when the file fails its schema, exit 2 listing the schema
    errors and, after them, the graph-level problems (gates, database) the file's
    readable parts show, so one run names everything to fix."""
    from bot.config import load_config
    from engine.errors import ConfigError

    try:
        return load_config(ctx.obj.config_path)
    except ConfigError as exc:
        click.echo(f"loopgate: {exc}", err=True)
        for problem in _lenient_problems(ctx):
            click.echo(f"loopgate: {ctx.obj.config_path or 'loopgate.yaml'}: {problem}",
                       err=True)
        raise SystemExit(2) from None


def _lenient_problems(ctx: click.Context) -> list[str]:
    """The graph-level problems of a file that failed its schema (best effort: a part too
    broken to read gives none; its schema error already says why)."""
    from pathlib import Path

    from bot.config import Config, _defaults, _merge, config_schema

    path = ctx.obj.config_path or ("loopgate.yaml" if Path("loopgate.yaml").is_file() else None)
    if not path:
        return []
    try:
        raw = yaml.safe_load(Path(path).read_text("utf-8"))
        if not isinstance(raw, dict):
            return []
        gates = raw.get("gates")
        kept = {k: v for k, v in raw.items() if k in ("loop", "authorizedUsers", "database",
                                                       "github", "mergeGate")}
        kept["gates"] = {k: v for k, v in gates.items() if isinstance(v, dict)} \
            if isinstance(gates, dict) else {}
        cfg = Config(_merge(_defaults(config_schema()), kept), Path(path).resolve(),
                     frozenset(kept))
        _, problems = offline_problems(cfg, _explicit_db(ctx))
    except Exception:  # noqa: BLE001 -- a part too broken to check: the schema said why
        return []
    return [p for p in problems if not p.startswith("loop: ")]


def offline_problems(cfg: Any, explicit: str | None) -> tuple[Any, list[str]]:
    """Every problem found without the network: the database choice (bot.database's
    messages), the graph, the ``gates`` and ``mergeGate`` rules — all of them, not the
    first only.

    Returns:
        ``(graph or None, problems)``: one line per problem, each naming its key path.
    """
    from bot.database import check_database
    from bot.services import check_gates, load_graph
    from engine.errors import LoopgateError

    problems: list[str] = []
    try:
        check_database(cfg, explicit)
    except LoopgateError as exc:
        problems.append(str(exc))
    try:
        graph = load_graph(cfg)
    except LoopgateError as exc:
        return None, [*problems, f"loop: {exc}"]
    try:
        check_gates(cfg, graph)
    except LoopgateError as exc:
        problems += str(exc).splitlines()
    return graph, problems


def _explicit_db(ctx: click.Context) -> str | None:
    # --db on the command line; LOOPGATE_DB (click's envvar) is told apart by its source.
    root = ctx.find_root()
    if root.get_parameter_source("db_path") == click.core.ParameterSource.COMMANDLINE:
        return root.params.get("db_path")
    return None


def effective(obj: Any, ctx: click.Context) -> dict[str, Any]:
    """What ``config show`` prints: the config file, the database and why, and the
    effective settings (schema defaults overlaid by the file).

    Returns:
        ``{"configFile": str | None, "database": str, "databaseFrom": str,
        "settings": dict}``; ``database`` is the SQLite path or ``PostgreSQL
        user@host:port/dbname``, and a password in ``settings.database`` is masked: none
        is ever printed.
    """
    from bot.config import database_choice
    from engine.errors import ConfigError

    cfg = obj.config
    try:
        where, why = database_choice(cfg, _explicit_db(ctx))
    except ConfigError as exc:  # an inline password: say so, without the URL
        where, why = f"refused: {exc}", "the config's `database`"
    settings = _as_file(cfg)
    if settings.get("database"):
        settings["database"] = mask_password(str(settings["database"]))
    return {"configFile": str(cfg.path) if cfg.path else None, "database": where,
            "databaseFrom": why, "settings": settings}


def _as_file(cfg: Any) -> dict[str, Any]:
    """The effective settings as a loopgate.yaml that passes ``config check`` when saved:
    top-level values with defaults filled in, but only the sections the file has (a
    section's presence turns a bridge on), and no empty default mapping whose schema
    requires keys (``github.app: {}``)."""
    from bot.config import config_schema

    schema = config_schema()
    out: dict[str, Any] = {}
    for key, value in cfg.data.items():
        if isinstance(value, dict) and key not in cfg.present:
            continue
        out[key] = _drop_empty_required(value, schema.get("properties", {}).get(key, {}))
    return out


def _drop_empty_required(value: Any, schema: dict[str, Any]) -> Any:
    if not isinstance(value, dict):
        return value
    props = schema.get("properties", {})
    return {k: _drop_empty_required(v, props.get(k, {})) for k, v in value.items()
            if not (v == {} and props.get(k, {}).get("required"))}


def mask_password(value: str) -> str:
    """``value`` with a PostgreSQL URL's password (user part or ``password=`` query
    parameter) replaced by ``***``; a file path is returned as is."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    from bot.database import is_database_url

    if not is_database_url(value):
        return value
    try:
        parts = urlsplit(value.strip())
        netloc = parts.netloc
        if parts.password is not None:
            netloc = f"{parts.username or ''}:***@{netloc.rsplit('@', 1)[1]}"
    except ValueError:
        return "<unparseable database URL>"
    query = urlencode([(k, "***" if k.lower() == "password" else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit(parts._replace(netloc=netloc, query=query))


@config_group.command("show")
@format_option(help_text="text: YAML under a heading; json: one object")
@click.pass_context
def show(ctx: click.Context, fmt: str) -> None:
    """Print the effective configuration (defaults filled in), the file it came from and
    the database commands use here, with the rule that chose it.

    \b
    Example:
      loopgate config show --format json
    """
    shown = effective(ctx.obj, ctx)
    if fmt == "json":
        click.echo(json.dumps(shown, indent=2, sort_keys=True))
        return
    click.echo(f"# config file: {shown['configFile'] or 'none found (defaults)'}")
    click.echo(f"# database: {shown['database']}")
    click.echo(f"#   chosen by: {shown['databaseFrom']}")
    click.echo(yaml.safe_dump(shown["settings"], sort_keys=False, allow_unicode=True), nl=False)


@config_group.command("reference")
def reference() -> None:
    """Print the configuration reference generated from the JSON Schema (Markdown).

    \b
    Example:
      loopgate config reference > config-reference.md
    """
    click.echo(render_reference(), nl=False)


def register(group: click.Group) -> None:
    """Add ``config`` to ``group``."""
    group.add_command(config_group)
