"""Work item verbs (issue 2 §7): ``start``, ``advance``, ``complete``, ``skip``, ``force``,
``comments``, ``events`` (``check`` is :mod:`bot.cli.check_cmd`).

ITEM is ``owner/repo#N`` (anything else is a usage error, exit 2). Exit codes: 0 done;
1 a refusal (``ClaimRefused``, a rejected skip token, a store that stayed locked) or an
unmet ``--fail-on`` condition; 2 a usage, configuration or graph error, and a node the
graph does not have (``--node``/``--to``: one line with the nearest node, issue 23 §3);
3 a stored item that cannot be read (:class:`UnreadableItemError`): ITEM's, or, with
``check --all``, once every item is shown, each unreadable one in its place with its
error (3 outranks ``--fail-on``'s 1).
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from bot.cli.context import CliContext, fail, known_node, parse_item
from bot.cli.help import format_option
from engine import events as ev
from engine import operator
from engine.errors import ClaimRefused, LoopgateError, StoreError, UnreadableItemError
from engine.ports import posts_as
from engine.refs import WorkItemRef
from engine.report import (
    where,
)
from engine.state import ItemState, ItemStatus

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["register", "UNREADABLE", "ITEM"]


# -- shared helpers ----------------------------------------------------------------------
#: The exit status of a stored item that cannot be read: 3 (``UnreadableItemError``).
UNREADABLE = UnreadableItemError.exit_code

def _item(ctx: click.Context, param: click.Parameter, value: str | None) -> WorkItemRef | None:
    return None if value is None else parse_item(value)


ITEM = click.argument("item", metavar="ITEM", callback=_item)


def _refused(message: str) -> NoReturn:
    click.echo(f"loopgate: refused: {message}", err=True)
    raise SystemExit(1)


def _run(action: Any) -> Any:
    """Call ``action()`` mapping engine errors to exit codes (1 refusal, 2 bad input)."""
    try:
        return action()
    except ClaimRefused as exc:
        if exc.code == "unknown-node":  # bad input, not a refusal: 2 in every verb
            fail(f"{exc} ({exc.code})", 2)
        _refused(f"{exc} ({exc.code})")
    except StoreError as exc:
        _refused(str(exc))
    except UnreadableItemError as exc:
        fail(str(exc), UNREADABLE)
    except LoopgateError as exc:
        fail(str(exc))


def _summary(state: ItemState) -> str:
    if state.status == ItemStatus.COMPLETE:  # "complete", never "at complete — complete"
        return f"{state.ref}: {where(state.status, state.current_node)}"
    text = f"{state.ref}: at {state.current_node} — {state.status}"
    reason = state.parked.reason
    return f"{text}: {reason}" if reason and state.status != ItemStatus.COMPLETE else text


def _fresh(services: Services, state: ItemState) -> ItemState:
    """``state`` as stored now: the inline performer ran after the decision, so a wait that
    said "being posted" reads as posted (issue 23); the decided state if the read fails."""
    try:
        return services.store.load(state.ref) or state
    except LoopgateError:
        return state


def _load_started(services: Services, ref: WorkItemRef) -> ItemState:
    state: ItemState | None = services.store.load(ref)
    if state is None or not state.current_node:
        _refused(f"{ref} is not started (not-started)")
    return state


# -- state-changing verbs ----------------------------------------------------------------
@click.command("start")
@ITEM
@click.pass_obj
def start(obj: CliContext, item: WorkItemRef) -> None:
    """Start ITEM at the graph's first node (idempotent: never rewinds).

    \b
    Example:
      loopgate start acme/widgets#7
    """
    refusal = obj.config.unwatched(item.owner, item.repo)
    if refusal:
        fail(refusal)
    runtime = obj.services.runtime
    click.echo(_summary(_run(lambda: runtime.start(item))))


def _read_comment(spec: str) -> tuple[str, str]:
    author, sep, file_name = spec.partition("=")
    if not sep or not author.strip() or not file_name:
        raise click.BadParameter(f"{spec!r} is not AUTHOR=FILE", param_hint="--comment")
    try:
        body = sys.stdin.read() if file_name == "-" else Path(file_name).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {file_name}: {exc}",
                                 param_hint="--comment") from None
    return author.strip(), body


@click.command("advance")
@ITEM
@click.option("--comment", "comments", multiple=True, metavar="AUTHOR=FILE",
              help="Add FILE's text to the thread as AUTHOR and feed it as the event "
                   "(repeatable; FILE - reads stdin).")
@click.pass_obj
def advance(obj: CliContext, item: WorkItemRef, comments: tuple[str, ...]) -> None:
    """Re-evaluate ITEM's current gate, with the given comments as the event.

    \b
    Example:
      loopgate advance acme/widgets#7 --comment alice=reply.md
    """
    parsed = [_read_comment(spec) for spec in comments]
    services = obj.services
    _load_started(services, item)
    poster = posts_as(services.ports.tracker)
    if parsed and poster is None:
        fail("the configured tracker cannot post as another author: --comment needs the "
             "local tracker (no github section in loopgate.yaml)")
    posted = [_run(partial(poster.add_comment_as, item, a, b)) for a, b in parsed] if poster \
        else []
    event: ev.Event = ev.Comments(tuple(posted)) if posted else ev.Recheck()
    state = _fresh(services, _run(lambda: services.runtime.advance(item, event).state))
    click.echo(_summary(state))
    if _said_on_requests(state, {c.id for c in posted}):
        raise SystemExit(1)


def _said_on_requests(state: ItemState, comment_ids: set[int]) -> bool:
    """Say what the given comments did to operator requests (issue 19 §5): a confirmation
    on stdout, a refused one as one ``loopgate: refused:`` line on stderr. Returns True
    when one was refused."""
    refused = False
    requests = state.surface.get(operator.SURFACE_KEY) or {}
    for rid, request in requests.items():
        confirmed = request.get("confirmed") or {}
        if confirmed.get("commentId") in comment_ids:
            click.echo(f"confirmed: operator request {rid} by @{confirmed.get('by')}: "
                       f"{_request_does(request)}")
        for refusal in request.get("refused") or ():
            if refusal.get("commentId") in comment_ids:
                refused = True
                click.echo(f"loopgate: refused: the-loop confirm {rid} by "
                           f"@{refusal.get('by')}: {refusal.get('reason')}", err=True)
    return refused


def _request_does(request: dict[str, Any]) -> str:
    nodes = ", ".join(request.get("nodes") or ())
    if request.get("verb") == "force":
        return f"force to {request.get('to')} past {nodes}"
    return f"skip {nodes}"


def _say_pending(request: dict[str, Any] | None) -> None:
    """One ``loopgate: pending:`` line on stderr, then exit 1 (the verb did not act yet)."""
    if request is None:
        return
    rid = request["id"]
    click.echo(f"loopgate: pending: {_request_does(request)} needs an authorized person: "
               f"operator request {rid} is posted on the thread; it takes effect when one "
               f"replies 'the-loop confirm {rid}' (offline: loopgate advance ITEM "
               f"--comment LOGIN=FILE)", err=True)
    raise SystemExit(1)


def _refuse_human_gate(services: Services, ref: WorkItemRef, node_id: str) -> None:
    """Refuse (exit 1) a claim on ``node_id`` when it is ``ref``'s current node and a
    human gate.

    Args:
        services: the CLI's services (``store`` and ``graph``).
        ref: the work item.
        node_id: the node claimed done.

    Raises:
        SystemExit: 1, with a ``loopgate: refused: ...`` line, for a current human gate.
            Any other claim is left to the runtime (its refusals keep their codes).
    """
    state = services.store.load(ref)
    graph = services.graph
    if state is None or state.current_node != node_id or not graph.has_node(node_id):
        return
    if graph.node(node_id).actor == "human":
        _refused(f"{node_id} is a human gate: human gates are answered on the thread, "
                 "not claimed (human-gate)")


@click.command("complete")
@ITEM
@click.option("--node", "node_id", required=True, metavar="N", help="The node claimed done.")
@click.option("--actor", default="cli", show_default=True, help="Who claims.")
@click.pass_obj
def complete(obj: CliContext, item: WorkItemRef, node_id: str, actor: str) -> None:
    """Claim that node N of ITEM is done; its exit gate is then evaluated.

    Exits 1 when the gate did not accept the claim (the node is still current and its
    exit chain blocked), so an agent's script stops instead of moving on, and when N is
    the current node and a human gate (answered on the thread, never claimed).

    \b
    Example:
      loopgate complete acme/widgets#7 --node brainstorming --actor agent
    """
    known_node(obj.services.graph, node_id, "--node")
    _refuse_human_gate(obj.services, item, node_id)
    runtime = obj.services.runtime
    state = _fresh(obj.services, _run(lambda: runtime.complete(item, node_id, actor)))
    click.echo(_summary(state))
    if state.current_node == node_id and state.parked.blocked:
        raise SystemExit(1)


@click.command("skip")
@ITEM
@click.option("--node", "tokens", multiple=True, required=True, metavar="TOKEN",
              help="A skippable node id or a skip-set name (repeatable).")
@click.option("--reason", required=True, help="Why (recorded with the declaration).")
@click.option("--actor", default="cli", show_default=True, help="Who declares.")
@click.pass_obj
def skip(obj: CliContext, item: WorkItemRef, tokens: tuple[str, ...], reason: str,
         actor: str) -> None:
    """Declare nodes of ITEM skipped before they are reached (a plan, not an amnesty).

    After the phase selection a human node (an approval, a quiz) is not skipped at once:
    the skip is posted on the thread as an operator request and takes effect when an
    authorized person replies 'the-loop confirm ID' (exit 1 until then). Agent nodes,
    and any node before the selection, are skipped at once.

    \b
    Example:
      loopgate skip acme/widgets#7 --node explainer --reason "docs-only change"
    """
    graph = obj.services.graph
    for token in tokens:  # a typo is a usage error (exit 2), as in every verb (issue 23 §3)
        if token not in graph.skip_sets:
            known_node(graph, token, "--node")
    runtime = obj.services.runtime
    result = _run(lambda: runtime.operator_skip(item, tokens, reason, actor))
    for node_id, token in result.accepted.items():
        click.echo(f"skipped: {node_id} (token '{token}')")
    for token, why in result.rejected.items():
        click.echo(f"loopgate: refused: {token} — {why}", err=True)
    _say_pending(result.request)
    if result.rejected:
        raise SystemExit(1)


@click.command("force")
@ITEM
@click.option("--to", "to", required=True, metavar="N", help="The node to move the pointer to.")
@click.option("--reason", required=True, help="Why (recorded and reported by check).")
@click.option("--actor", default="cli", show_default=True, help="Who forces.")
@click.pass_obj
def force(obj: CliContext, item: WorkItemRef, to: str, reason: str, actor: str) -> None:
    """Move ITEM's pointer to N and enter it (its entry hooks run; never satisfies a gate).

    After the phase selection a move past a human gate that has not passed is posted on
    the thread as an operator request and happens when an authorized person replies
    'the-loop confirm ID' (exit 1 until then); a move back to rework acts at once.

    \b
    Example:
      loopgate force acme/widgets#7 --to design --reason "spec written elsewhere"
    """
    known_node(obj.services.graph, to, "--to")
    runtime = obj.services.runtime
    result = _run(lambda: runtime.operator_force(item, to, reason, actor))
    click.echo(_summary(result.state))
    _say_pending(result.request)


# -- reading the thread and the log ------------------------------------------------------
@click.command("comments")
@ITEM
@click.pass_obj
def comments(obj: CliContext, item: WorkItemRef) -> None:
    """Print ITEM's thread, oldest first (exit 1 when ITEM is not started).

    \b
    Example:
      loopgate comments acme/widgets#7
    """
    _load_started(obj.services, item)
    tracker = obj.services.ports.tracker
    for i, comment in enumerate(_run(lambda: tracker.list_comments(item))):
        head = f"#{comment.id} {comment.author or '(unknown)'} {comment.created_at}".rstrip()
        click.echo(("\n" if i else "") + head + "\n" + comment.body.rstrip("\n"))


@click.command("events")
@ITEM
@format_option()
@click.pass_obj
def events(obj: CliContext, item: WorkItemRef, fmt: str) -> None:
    """Print ITEM's event log, oldest first (exit 1 when ITEM is not started and has
    nothing logged, e.g. no declared skips).

    \b
    Example:
      loopgate events acme/widgets#7 --format json
    """
    log = obj.services.store.events(item)
    if not log:
        _load_started(obj.services, item)
    if fmt == "json":
        click.echo(json.dumps(log, indent=2, ensure_ascii=False))
        return
    for event in log:
        data = json.dumps(event["data"], ensure_ascii=False, sort_keys=True)
        click.echo(f"{event['seq']:>6}  {event['at']}  {event['kind']}  {data}")


def register(group: click.Group) -> None:
    """Add the work item verbs to ``group``."""
    for command in (start, advance, complete, skip, force, comments, events):
        group.add_command(command)
