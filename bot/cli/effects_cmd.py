"""``loopgate effects``: what loopgate still owes GitHub and Slack, and re-queueing what
failed (issue 10 §2).

Every write a gate decides on is an outbox row (:mod:`engine.effects`). ``serve``'s worker
(or the CLI, right after its own commits) carries them out; a transient failure waits and
retries, a permanent one (GitHub's 422, a missing permission) stops and waits for a person.
``loopgate effects`` lists the rows owed or given up; ``loopgate effects retry`` puts the
failed ones back in the queue (after the cause is fixed) and, outside ``serve``, carries
them out at once.
"""

from __future__ import annotations

import json
from typing import Any

import click

from bot.cli.context import CliContext, parse_item
from bot.cli.help import HelpGroup, format_option
from engine.effects import DONE, FAILED, PENDING, RUNNING, EffectRow
from engine.refs import WorkItemRef

__all__ = ["register"]

_STATUSES = {"owed": (PENDING, RUNNING, FAILED), "failed": (FAILED,),
             "pending": (PENDING, RUNNING), "all": (PENDING, RUNNING, FAILED, DONE)}


def _item(ctx: click.Context, param: click.Parameter, value: str | None) -> WorkItemRef | None:
    return None if value is None else parse_item(value)


def _line(row: EffectRow) -> str:
    text = f"{row.id:>6}  {row.status:<7}  {row.ref}  {row.describe()}"
    if row.attempts:
        text += f"  tries={row.attempts}"
    if row.status == PENDING and row.not_before:
        text += f"  next={row.not_before}"
    return text + (f"  error: {row.last_error}" if row.last_error else "")


def _document(row: EffectRow) -> dict[str, Any]:
    return {"row": row.id, "workItem": str(row.ref), "effect": row.describe(),
            "status": row.status, "attempts": row.attempts, "notBefore": row.not_before,
            "error": row.last_error, "createdAt": row.created_at}


@click.group("effects", cls=HelpGroup, invoke_without_command=True)
@click.pass_context
def effects(ctx: click.Context) -> None:
    """The writes loopgate owes GitHub and Slack: `effects` (= `effects list`), `effects
    list [ITEM]`, `effects retry [ITEM]`.

    \b
    Example:
      loopgate effects list --status failed
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_effects)


@effects.command("list")
@click.argument("item", metavar="[ITEM]", required=False, callback=_item)
@click.option("--status", "status", type=click.Choice(sorted(_STATUSES)), default="owed",
              show_default=True, help="Which rows: owed (pending or failed), failed, "
                                      "pending, all.")
@format_option()
@click.pass_obj
def list_effects(obj: CliContext, item: WorkItemRef | None = None, status: str = "owed",
                 fmt: str = "text") -> None:
    """List the writes owed (of ITEM, or of every item). Exit 1 when one failed for good.

    \b
    Example:
      loopgate effects list acme/widgets#7 --status all
    """
    rows = obj.services.store.effects.rows(item, statuses=_STATUSES[status])
    if fmt == "json":
        click.echo(json.dumps([_document(r) for r in rows], indent=2, ensure_ascii=False))
    elif not rows:
        click.echo("nothing owed" if status != "all" else "no effects")
    else:
        for row in rows:
            click.echo(_line(row))
    if any(r.status == FAILED for r in rows):
        raise SystemExit(1)


@effects.command("retry")
@click.argument("item", metavar="[ITEM]", required=False, callback=_item)
@click.option("--no-perform", is_flag=True,
              help="Only re-queue (leave the rows to a running `loopgate serve`).")
@click.pass_obj
def retry(obj: CliContext, item: WorkItemRef | None, no_perform: bool) -> None:
    """Re-queue the failed writes (of ITEM, or of every item), then carry them out.

    \b
    Example:
      loopgate effects retry acme/widgets#7
    """
    services = obj.services
    count = services.store.effects.retry(item)
    click.echo(f"re-queued {count} effect{'s' if count != 1 else ''}")
    if count and not no_perform:
        from engine.perform import InlinePerformer

        done = InlinePerformer(services.store, services.ports, services.settings).drain(item)
        failed = services.store.effects.rows(item, statuses=(FAILED,))
        waiting = services.store.effects.rows(item, statuses=(PENDING, RUNNING))
        click.echo(f"carried out {done}; failed again {len(failed)}; still waiting "
                   f"{len(waiting)}")
        for row in failed:
            click.echo(_line(row))
        if failed:
            raise SystemExit(1)


def register(group: click.Group) -> None:
    """Add ``effects`` (and ``effects retry``) to ``group``."""
    group.add_command(effects)
