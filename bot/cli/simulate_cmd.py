"""``loopgate simulate ITEM --as LOGIN --approve NODE`` (and ``--push PULL=SHA``): what the
gate's rules would do, touching nothing (issue 24 §4; :mod:`engine.simulate`).

Exit codes: 0 the simulation ran (whatever it says); 1 the item is not started; 2 bad
input (an unknown node, a malformed ``--push``, ``--as`` without ``--approve``).
"""

from __future__ import annotations

import json

import click

from bot.cli.context import CliContext, fail, known_node, parse_item
from engine import simulate
from engine.errors import ClaimRefused, LoopgateError
from engine.outcomes import APPROVED

__all__ = ["register", "parse_push"]


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


@click.command("simulate")
@click.argument("item", metavar="ITEM")
@click.option("--as", "login", metavar="LOGIN", help="Who decides (a GitHub login).")
@click.option("--approve", "node", metavar="NODE", help="The gate LOGIN approves.")
@click.option("--outcome", type=click.Choice(sorted(simulate.DECISION_WORDS)),
              default=APPROVED, show_default=True, help="What LOGIN answers at NODE.")
@click.option("--push", "pushes", multiple=True, metavar="PULL=SHA",
              help="Simulate a new head commit SHA on pull request PULL (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.pass_obj
def simulate_command(obj: CliContext, item: str, login: str | None, node: str | None,
                     outcome: str, pushes: tuple[str, ...], fmt: str) -> None:
    """Say what would happen if LOGIN approved NODE of ITEM (or PULL got commit SHA):
    counted or refused and why, where the item would move, what the `loopgate` check
    would say. Runs the gate's own rules on a copy; writes nothing anywhere.

    \b
    Example:
      loopgate simulate acme/widgets#7 --as bob --approve human-approval
    """
    ref = parse_item(item)
    if bool(login) != bool(node) or bool(node) == bool(pushes):
        fail("give either --as LOGIN --approve NODE, or --push PULL=SHA")
    heads = [parse_push(spec) for spec in pushes]
    services = obj.services
    try:
        if node:
            known_node(services.graph, node, "--approve")
            result = simulate.simulate_decision(services.graph, services.store,
                                                services.ports, services.settings, ref,
                                                str(login), node, outcome)
        else:
            result = simulate.simulate_push(services.graph, services.store, services.ports,
                                            services.settings, ref, heads)
    except ClaimRefused as exc:
        click.echo(f"loopgate: refused: {exc} ({exc.code})", err=True)
        raise SystemExit(1) from None
    except LoopgateError as exc:
        fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(simulate.render(result)))


def register(group: click.Group) -> None:
    """Add ``simulate`` to ``group``."""
    group.add_command(simulate_command)
