"""``loopgate simulate ITEM --as LOGIN --approve NODE`` (and ``--push PULL=SHA``,
``--codeowners-change FILE``): what the gate's rules would do, touching nothing (issue 24
§4; :mod:`engine.simulate`).

Exit codes: 0 the simulation ran (whatever it says); 1 the item is not started; 2 bad
input (an unknown node, a malformed ``--push`` or ``--codeowners-change``, ``--as``
without ``--approve``); 3 the stored item cannot be read (``UnreadableItemError``).
"""

from __future__ import annotations

import json

import click

from bot.cli.context import CliContext, fail, known_node, parse_item
from engine import simulate
from engine.errors import ClaimRefused, LoopgateError, UnreadableItemError
from engine.outcomes import APPROVED

__all__ = ["register", "parse_push", "parse_change"]


def parse_push(spec: str) -> tuple[int, str]:
    """``PULL=SHA`` → ``(pull number, sha)``.

    Raises:
        click.BadParameter: not a positive number, ``=`` and a hex commit of 7–40 digits.
    """
    number, _, sha = spec.partition("=")
    sha = sha.strip().lower()
    if not number.strip().isdigit() or int(number) < 1 or not (
            7 <= len(sha) <= 40 and all(c in "0123456789abcdef" for c in sha)):
        raise click.BadParameter(f"{spec!r} is not PULL=SHA (a pull request number and a "
                                 "commit sha)", param_hint="--push")
    return int(number), sha


def parse_change(path: str) -> str:
    """A ``--codeowners-change`` path as GitHub lists changed files: repository-relative,
    ``/``-separated, no leading ``/``.

    Raises:
        click.BadParameter: empty, a ``..`` or ``.`` segment, or a backslash.
    """
    try:
        return simulate.change_path(path)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--codeowners-change") from None


@click.command("simulate")
@click.argument("item", metavar="ITEM")
@click.option("--as", "login", metavar="LOGIN", help="Who decides (a GitHub login).")
@click.option("--approve", "node", metavar="NODE", help="The gate LOGIN approves.")
@click.option("--outcome", type=click.Choice(sorted(simulate.DECISION_WORDS)),
              default=APPROVED, show_default=True, help="What LOGIN answers at NODE.")
@click.option("--push", "pushes", multiple=True, metavar="PULL=SHA",
              help="Simulate a new head commit SHA on pull request PULL (repeatable).")
@click.option("--codeowners-change", "changes", multiple=True, metavar="FILE",
              help="As if the pull request also changed FILE: the code owners recomputed "
                   "and shown (repeatable; alone, or with --approve or --push).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.pass_obj
def simulate_command(obj: CliContext, item: str, login: str | None, node: str | None,
                     outcome: str, pushes: tuple[str, ...], changes: tuple[str, ...],
                     fmt: str) -> None:
    """Say what would happen if LOGIN approved NODE of ITEM (or PULL got commit SHA, or
    the pull request also changed FILE): counted or refused and why, where the item would
    move, what the `loopgate` check would say, who owns the changed files. Runs the gate's
    own rules on a copy; writes nothing anywhere. `--codeowners-change web/app.ts` alone
    shows who would own that file at the current gate.

    \b
    Example:
      loopgate simulate acme/widgets#7 --as bob --approve human-approval
    """
    ref = parse_item(item)
    if bool(login) != bool(node) or (node and pushes) or not (node or pushes or changes):
        fail("give either --as LOGIN --approve NODE, or --push PULL=SHA, "
             "or --codeowners-change FILE")
    heads = [parse_push(spec) for spec in pushes]
    paths = tuple(dict.fromkeys(parse_change(p) for p in changes))
    services = obj.services
    try:
        if node:
            known_node(services.graph, node, "--approve")
            result = simulate.simulate_decision(services.graph, services.store,
                                                services.ports, services.settings, ref,
                                                str(login), node, outcome, paths,
                                                via="cli")
        elif heads:
            result = simulate.simulate_push(services.graph, services.store, services.ports,
                                            services.settings, ref, heads, paths)
        else:
            result = simulate.simulate_changes(services.graph, services.store,
                                               services.ports, services.settings, ref, paths)
    except ClaimRefused as exc:
        click.echo(f"loopgate: refused: {exc} ({exc.code})", err=True)
        raise SystemExit(1) from None
    except UnreadableItemError as exc:  # not bad input: the stored item (exit 3)
        fail(str(exc), exc.exit_code)
    except LoopgateError as exc:
        fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(simulate.render(result)))


def register(group: click.Group) -> None:
    """Add ``simulate`` to ``group``."""
    group.add_command(simulate_command)
