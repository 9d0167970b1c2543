"""Work item verbs (issue 2 §7): ``start``, ``advance``, ``complete``, ``skip``, ``force``,
``check``, ``comments``, ``events``.

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
import select
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, final

import click
import orjson

from bot.cli.check_view import COLOR_MODES, Summary, matches, painter, use_color
from bot.cli.context import CliContext, fail, known_node, parse_item
from bot.cli.help import format_option
from engine import events as ev
from engine import fastjson, operator
from engine.errors import ClaimRefused, LoopgateError, StoreError, UnreadableItemError
from engine.ports import posts_as
from engine.refs import WorkItemRef
from engine.report import (
    build_report,
    compact_line,
    render_compact,
    render_history,
    render_table,
    visit_history,
    where,
)
from engine.runtime import OWED
from engine.state import ItemState, ItemStatus
from engine.visits import visits_from_json

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["register", "check_document", "fails", "Unreadable", "UNREADABLE"]


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


# -- check -------------------------------------------------------------------------------
#: Report keys that repeat the document verbatim: printed once, at the top level.
_SHARED = ("document", "decisions", "parked", "forced", "completions")


def check_document(report: dict[str, Any]) -> dict[str, Any]:
    """The ``check --format json`` object of one item: the state document (version,
    workItem, currentNode, nodes, decisions, visits, forced, parked, completions, skips,
    optIns, surface, loop) plus ``report`` (the check report without the keys that repeat
    the document; its ``skips``/``optIns`` are the trusted views, with provenance).

    ``decisions`` keeps its meaning for consumers written before visits were kept: each
    node's decision — now its CURRENT visit's (a gate sent back and approved on its
    second visit reads ``approved``); ``visits`` is ``{node: [{visit, enteredAt,
    exitedAt, outcome, decision?}]}`` (issue 19 §2)."""
    body = report.copy()  # a copy less five keys: a fifth of the filtering's time
    for key in _SHARED:
        body.pop(key, None)
    return {**report["document"], "report": body}


def compact_document(document: dict[str, Any], lines_done: bool = False) -> dict[str, Any]:
    """``check --format json --compact`` (issue 21 §3: no larger per item than the peer's
    7 kB): the same document, except that

    * ``decisions`` is left out when the document has ``visits``: each node's decision is
      the ``decision`` of its last visit there (:func:`decisions_from_visits` rebuilds it).
      The phase selection's decision carries the frozen graph, so it was in the document
      twice;
    * each ``report.nodes`` line leaves out ``detail``, ``outcome``, ``attempts`` and
      ``forced`` when they hold their defaults ("", "", 0, false): a reader takes a missing
      key as its default (:func:`engine.report.compact_line`; ``lines_done``: the report
      was built with ``compact=True``, its lines already are).

    Nothing else changes (keys keep their order)."""
    drop = "decisions" if "visits" in document else None
    report = document.get("report")
    if (not lines_done and isinstance(report, dict)
            and isinstance(report.get("nodes"), list)):
        report = {**report, "nodes": [compact_line(line) for line in report["nodes"]]}
    return {k: (report if k == "report" else v) for k, v in document.items() if k != drop}


def decisions_from_visits(visits: Mapping[str, Any]) -> dict[str, Any]:
    """The full form's ``decisions`` from a document's ``visits`` (what ``--compact`` leaves
    out): ``{node: the decision of its last visit}`` for each node whose last visit has
    one, in ``visits`` order (``ItemState.current_decisions``, issue 19 §2)."""
    return {node: seq[-1]["decision"] for node, seq in visits.items()
            if seq and seq[-1].get("decision") is not None}


def fails(report: dict[str, Any], fail_on: str | None) -> bool:
    """True when ``report`` trips ``--fail-on`` (``unmet``: not ok; ``block``: blocked or
    escalated)."""
    if fail_on == "unmet":
        return not report["ok"]
    if fail_on == "block":
        return report["status"] == ItemStatus.ESCALATED or any(
            n["status"] in ("blocked", "escalated") for n in report["nodes"])
    return False


@final  # `type(entry) is Unreadable` tells the two kinds of entry apart (and mypy too)
class Unreadable:
    """A stored item ``check --all`` could not read, in its place among the reports (a
    plain class: a dataclass's generated methods cost every ``check`` start 5 M
    instructions, callgrind).

    Attributes:
        error: why (its ``key`` is the item's stored key, its ``detail`` the part and why).
    """

    __slots__ = ("error",)

    def __init__(self, error: UnreadableItemError) -> None:
        self.error = error

    def to_json(self) -> dict[str, str]:
        """``{"workItem": <stored key>, "error": "unreadable: <part>: <why>"}``: the
        item's entry in ``check --all --format json`` (every form: a readable item's
        entry has no ``error`` key)."""
        return {"workItem": self.error.key, "error": f"unreadable: {self.error.detail}"}


#: What ``check`` shows of one item: its report, or why it could not be read.
Entry = dict[str, Any] | Unreadable


def _reports(services: Services, item: WorkItemRef | None, recompute: bool,
             node: str | None = None, status: str | None = None, compact: bool = False,
             unreadable: list[UnreadableItemError] | None = None) -> Iterator[Entry]:
    """The reports ``check`` shows: ITEM's, or every item's (``--all``, filtered by
    ``node``/``status``) in the store's order, an item that cannot be read given as an
    :class:`Unreadable` in its place (whatever the filters: what it holds is unknown) and
    added to ``unreadable``. ITEM unreadable: one line, exit :data:`UNREADABLE`."""
    graph = services.graph
    # One query for every owed or failed effect (check --all stays one pass).
    owed: dict[WorkItemRef, list[Any]] = {}
    for row in services.store.effects.rows(item, statuses=OWED):
        owed.setdefault(row.ref, []).append(row)
    if item is not None:
        try:
            state = services.store.load(item)
        except UnreadableItemError as exc:
            fail(str(exc), UNREADABLE)
        if state is None:
            _refused(f"{item} is not started (not-started)")
        yield build_report(graph, state, recompute=recompute, effects=owed.get(item, ()),
                           compact=compact, shared=True)
        return
    told: list[UnreadableItemError] = []  # since the last state: shown before it
    seen = unreadable if unreadable is not None else []
    for state in services.store.load_all(lambda _key, error: told.append(error)):
        if told:
            yield from _unreadable(told, seen)
        if matches(state, node, status):
            # No owed effects (the usual case): no ref hashed per item.
            yield build_report(graph, state, recompute=recompute,
                               effects=owed.get(state.ref, ()) if owed else (),
                               compact=compact, shared=True)
    yield from _unreadable(told, seen)


def _unreadable(told: list[UnreadableItemError], seen: list[UnreadableItemError]
                ) -> Iterator[Unreadable]:
    """``told``'s errors as entries, moved to ``seen``."""
    seen.extend(told)
    entries = [Unreadable(error) for error in told]
    told.clear()
    yield from entries


def _say_unreadable(unreadable: list[UnreadableItemError]) -> None:
    """After ``check --all`` showed everything: one line on stderr naming the items that
    could not be read (the first three keys), then exit :data:`UNREADABLE`."""
    if not unreadable:
        return
    keys = ", ".join(error.key for error in unreadable[:3])
    more = f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""
    count = f"{len(unreadable)} stored item{'s' if len(unreadable) != 1 else ''}"
    fail(f"{count} could not be read: {keys}{more} (each is shown in its place, with its "
         "error)", UNREADABLE)


def _with_history(reports: Iterable[Entry]) -> Iterator[Entry]:
    # ``--history`` in JSON: the report gains ``history``, every visit oldest first
    # (issue 19 §2); the document's ``visits`` key is there either way.
    for report in reports:
        if type(report) is Unreadable:
            yield report
            continue
        visits = visits_from_json(report["document"].get("visits") or {})
        yield {**report, "history": visit_history(visits)}


def _history_text(report: Mapping[str, Any]) -> str:
    visits = visits_from_json(report["document"].get("visits") or {})
    return render_history(report["workItem"], visits)


def _emit_json(reports: Iterable[Entry], many: bool, fail_on: str | None,
               compact: bool = False) -> bool:
    failed = False
    # The report's node lines are compact already (_reports): only decisions go here.
    shape = partial(compact_document, lines_done=True) if compact else (lambda doc: doc)
    if not many:
        for report in reports:
            if type(report) is Unreadable:  # never (ITEM unreadable: _reports exits)
                continue
            click.echo(json.dumps(shape(check_document(report)), indent=2, ensure_ascii=False))
            failed = fails(report, fail_on)
        return failed
    # Streamed one item per line, so 100,000 items never sit in memory as one string;
    # encoded straight to bytes (issue 21 §3: the encoding was a third of the time).
    # Lines are gathered into one buffer written every _CHUNK bytes: a write per item
    # (10 kB each, more than the stream's own buffer) was a system call per item.
    write = _byte_writer(sys.stdout)
    pending = bytearray(b"[")
    separator = b"\n"
    for report in reports:
        pending += separator
        separator = b",\n"
        if type(report) is Unreadable:  # never fails --fail-on: its own exit status follows
            pending += _json_line(report.to_json())
        else:
            pending += _json_line(shape(check_document(report)))
            failed = fails(report, fail_on) or failed
        if len(pending) >= _CHUNK:
            write(pending)
            pending = bytearray()  # a new one: the stream may still hold the last
    pending += b"\n]\n"
    write(pending)
    sys.stdout.flush()
    return failed


#: Bytes of JSON gathered before ``check --all`` writes them (memory stays flat).
_CHUNK = 1 << 20


def _json_line(document: dict[str, Any]) -> bytes:
    # fastjson.dumps_bytes's bytes, without its OPT_NON_STR_KEYS, which costs orjson a
    # fifth of its time and only matters for a key that is not a string (issue 21 §3).
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return fastjson.dumps_bytes(document)


def _byte_writer(out: Any) -> Callable[[bytes | bytearray], Any]:
    """Write UTF-8 bytes to ``out``: its binary buffer when it has one (flushed text first),
    else decoded (a text-only stream, e.g. under a test runner).

    Every byte is written: with ``PYTHONUNBUFFERED=1`` (the Dockerfile's) the binary
    buffer is a raw ``FileIO``, whose ``write`` may take only part of a chunk (a pipe, a
    filling disk) or none (``None``: a non-blocking pipe that is full), raising nothing."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        return lambda data: out.write(data.decode("utf-8"))
    out.flush()
    write = buffer.write

    def write_all(data: bytes | bytearray) -> None:
        with memoryview(data) as view:
            while view:
                taken = write(view)
                if taken is None:  # would block: wait until the stream takes more
                    select.select([], [buffer], [])
                    continue
                view = view[taken:]

    return write_all


def _emit_table(reports: Iterable[Entry], fail_on: str | None, *, color: bool,
                summary: Summary | None, history: bool = False, compact: bool = False) -> bool:
    failed, any_report = False, False
    paint = painter(color)
    for i, report in enumerate(reports):
        any_report = True
        if type(report) is Unreadable:  # one line in every form: `KEY: unreadable: why`
            error = report.error
            line = f"{error.key}: {paint('unreadable', 'unreadable')}: {error.detail}"
            click.echo(line if compact or not i else "\n" + line, color=color)
            if summary is not None:
                summary.add_unreadable()
            continue
        if compact:  # one line per item, no blank line between them
            click.echo(render_compact(report, paint), color=color)
        else:
            click.echo(("\n" if i else "") + render_table(report, paint), color=color)
        if history:
            click.echo(_history_text(report))
        failed = fails(report, fail_on) or failed
        if summary is not None:
            summary.add(report)
    if summary is not None:
        gap = "\n" if any_report else ""  # no blank line before a lone summary
        click.echo(gap + "\n".join(summary.lines(paint)), color=color)
    return failed


def _check_filters(services: Services, item: WorkItemRef | None, all_items: bool,
                   node: str | None, status: str | None) -> None:
    if (node or status) and (item is not None or not all_items):
        raise click.UsageError("--node and --status filter --all: give --all, not ITEM")
    if (item is None) == (not all_items):
        raise click.UsageError("give either ITEM or --all")
    if node:
        known_node(services.graph, node, "--node")


@click.command("check")
@click.argument("item", metavar="[ITEM]", required=False, callback=_item)
@click.option("--all", "all_items", is_flag=True, help="Check every item in the database.")
@format_option()
@click.option("--recompute", is_flag=True,
              help="Derive node statuses from the declared skips and the records instead of "
                   "the stored outcomes.")
@click.option("--fail-on", "fail_on", type=click.Choice(("unmet", "block")), default=None,
              help="Exit 1 when an item is not ok (unmet) or is blocked/escalated (block).")
@click.option("--node", "node", metavar="N", default=None,
              help="With --all: only items whose current node is N.")
@click.option("--status", "status", default=None,
              type=click.Choice((ItemStatus.RUNNING, ItemStatus.PARKED, ItemStatus.ESCALATED,
                                 ItemStatus.COMPLETE)),
              help="With --all: only items with this status.")
@click.option("--color", "color", type=click.Choice(COLOR_MODES), default="auto",
              show_default=True,
              help="Colour status words: auto = on a terminal unless NO_COLOR is set.")
@click.option("--history", "history", is_flag=True,
              help="Also list every visit to every node, oldest first, each with its own "
                   "decision (JSON: the report's history key).")
@click.option("--compact", is_flag=True,
              help="Text: one line per item (where it stands, ok, its unmet nodes; --all "
                   "still ends with the summary table). With --format json: leave out "
                   "`decisions` (each node's is the decision of its last entry under "
                   "`visits`), and node lines leave out detail, outcome, attempts and forced "
                   "when they hold their defaults (\"\", \"\", 0, false).")
@click.pass_obj
def check(obj: CliContext, item: WorkItemRef | None, all_items: bool, fmt: str,
          recompute: bool, fail_on: str | None, node: str | None, status: str | None,
          color: str, history: bool, compact: bool) -> None:
    """Report where ITEM (or every item, with --all) stands, node by node; --all ends with
    a summary table (items per current node and status). ITEM is owner/repo#N or the
    issue's URL, as /loop check takes. Decisions shown are each gate's current visit's;
    --history lists every visit (a gate sent back and answered again has one decision
    per visit).

    A stored item that cannot be read (its key is not owner/repo#N, a row of it is not
    JSON or JSON of the wrong shape, or a column holds the wrong type) is shown in its
    place, whatever the filters, as `KEY: unreadable: WHY` (JSON: {"workItem": KEY,
    "error": "unreadable: WHY"}, the only entries with an `error` key); every other item
    is shown, then check exits 3 (whatever --fail-on found). ITEM unreadable: one line, exit 3.

    \b
    Example:
      loopgate check --all --status parked --node phase-selection
      loopgate check acme/widgets#7 --history
    """
    services = obj.services
    _check_filters(services, item, all_items, node, status)
    unreadable: list[UnreadableItemError] = []
    reports = _reports(services, item, recompute, node, status, compact and fmt == "json",
                       unreadable)
    if fmt == "json":
        failed = _emit_json(_with_history(reports) if history else reports, all_items,
                            fail_on, compact)
    else:
        summary = Summary([n.id for n in services.graph.ordered()]) if all_items else None
        failed = _emit_table(reports, fail_on, color=use_color(color), summary=summary,
                             history=history, compact=compact)
    _say_unreadable(unreadable)
    if failed:
        raise SystemExit(1)


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
    for command in (start, advance, complete, skip, force, check, comments, events):
        group.add_command(command)
