"""``loopgate check`` (issue 2 §7, issue 14 §9, issue 19 §2, issue 21 §3): where ITEM,
or every item (``--all``), stands, node by node.

``check --all`` reads the items in blocks of :data:`SPAN_ITEMS` and, on SQLite, renders
the blocks in forked workers (``--jobs``, one per usable CPU by default) whose output is
written in block order (:mod:`bot.cli.shards`): byte for byte what one process writes, in
wall time divided by the cores. Each block is read in its own snapshot (one read
transaction per block, begun when a worker comes to the block: anywhere in the run, and
later still while a slow reader of the output holds the workers back), so with ``serve``
writing meanwhile the output is not one moment's: every item is read whole in one
snapshot, and one stored throughout is shown exactly once (the blocks cut the
``(owner, repo, number, rowid)`` order, and a save keeps an item's rowid), but two items
may be shown as of different moments, and an item added or deleted during the run may or
may not be shown. One process (``--jobs 1``) reads every item in one snapshot.

How an entry is written is the same whoever writes it: every JSON entry is ``,\n`` and
its line, every text entry (not ``--compact``) a blank line and its table, and the
stream drops the first entry's lead (:class:`_Stream`), so no block needs to know whether
an earlier one was empty.

Exit codes: 0 done; 1 ``--fail-on`` tripped or ITEM not started; 2 bad input; 3 a stored
item that cannot be read (ITEM's; with ``--all``, once everything is shown). A worker that
raises or dies stops the run: its traceback (if it raised), then ``loopgate: check --all
stopped: WHY``, exit 1 (one process: Python's traceback, exit 1).
"""

from __future__ import annotations

import codecs
import json
import select
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast, final

import click
import orjson

from bot.cli.check_view import COLOR_MODES, Summary, matches, painter, use_color
from bot.cli.context import CliContext, fail, known_node, parse_item
from bot.cli.help import format_option
from bot.cli.shards import WorkerFailed, Write, can_fork, run_blocks, run_here, usable_cpus
from engine import fastjson
from engine.errors import UnreadableItemError
from engine.refs import WorkItemRef
from engine.report import (
    build_report,
    compact_line,
    render_compact,
    render_history,
    render_table,
    visit_history,
)
from engine.runtime import OWED
from engine.state import ItemStatus
from engine.store.base import SpannedStore
from engine.store.rows import WHOLE, Span
from engine.visits import Visits, visits_from_json

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["register", "check", "check_document", "compact_document",
           "decisions_from_visits", "fails", "Unreadable", "UNREADABLE", "SPAN_ITEMS",
           "MAX_JOBS", "MAX_JOBS_ASKED", "MIN_FORKED"]

#: The exit status of a stored item that cannot be read: 3 (``UnreadableItemError``).
UNREADABLE = UnreadableItemError.exit_code
#: Items per block of ``check --all`` (a block's JSON is about 5 MB; a worker holds one
#: chunk of it, :data:`_CHUNK`).
SPAN_ITEMS = 500
#: The most workers ``--jobs 0`` (the default) forks, however many CPUs there are.
MAX_JOBS = 8
#: The most ``--jobs N`` may ask for (each worker holds a pipe of up to 1 MB and its own
#: copy of what it writes to; more is refused as a usage error).
MAX_JOBS_ASKED = 64
#: Items from which ``--jobs 0`` forks (two blocks; a worker costs a few milliseconds,
#: the whole of 1,000 items about 0.1 s).
MIN_FORKED = 2 * SPAN_ITEMS


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
#: ``paint(text, status word) -> text`` (:func:`bot.cli.check_view.painter`).
Paint = Callable[[str, str], str]


def _owed(services: Services, item: WorkItemRef | None) -> dict[WorkItemRef, list[Any]]:
    """Every owed or failed effect, by item: one query (check --all stays one pass)."""
    owed: dict[WorkItemRef, list[Any]] = {}
    for row in services.store.effects.rows(item, statuses=OWED):
        owed.setdefault(row.ref, []).append(row)
    return owed


def _item_report(services: Services, item: WorkItemRef, recompute: bool,
                 compact: bool) -> dict[str, Any]:
    """ITEM's report; ITEM unreadable: one line, exit :data:`UNREADABLE`; not started:
    refused, exit 1."""
    try:
        state = services.store.load(item)
    except UnreadableItemError as exc:
        fail(str(exc), UNREADABLE)
    if state is None:
        fail(f"refused: {item} is not started (not-started)", 1)
    assert state is not None  # fail() exits: for mypy
    return build_report(services.graph, state, recompute=recompute,
                        effects=_owed(services, item).get(item, ()), compact=compact,
                        shared=True)


@dataclass(frozen=True)
class _Reading:
    """What ``check --all`` reads, the same in every block: the filters and the report's
    options, and every item's owed effects (read once, before the blocks)."""

    services: Services
    owed: dict[WorkItemRef, list[Any]]
    recompute: bool
    node: str | None
    status: str | None
    compact: bool

    def entries(self, span: Span) -> Iterator[Entry]:
        """The entries of ``span``'s items in the store's order, an item that cannot be
        read given as an :class:`Unreadable` in its place (whatever the filters: what it
        holds is unknown)."""
        store, graph, owed = self.services.store, self.services.graph, self.owed
        told: list[UnreadableItemError] = []  # since the last state: shown before it
        def remember(_key: str, error: UnreadableItemError) -> None:
            told.append(error)

        # Only a SpannedStore is cut into spans (_jobs); any store reads WHOLE.
        states = (store.load_all(remember) if span == WHOLE
                  else cast(SpannedStore, store).load_all(remember, span=span))
        for state in states:
            if told:
                yield from _unreadable(told)
            if matches(state, self.node, self.status):
                # No owed effects (the usual case): no ref hashed per item.
                yield build_report(graph, state, recompute=self.recompute,
                                   effects=owed.get(state.ref, ()) if owed else (),
                                   compact=self.compact, shared=True)
        yield from _unreadable(told)


def _unreadable(told: list[UnreadableItemError]) -> list[Unreadable]:
    """``told``'s errors as entries (``told`` emptied)."""
    entries = [Unreadable(error) for error in told]
    told.clear()
    return entries


def _say_unreadable(keys: list[str]) -> None:
    """After ``check --all`` showed everything: one line on stderr naming the items that
    could not be read (the first three keys), then exit :data:`UNREADABLE`."""
    if not keys:
        return
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    count = f"{len(keys)} stored item{'s' if len(keys) != 1 else ''}"
    fail(f"{count} could not be read: {', '.join(keys[:3])}{more} (each is shown in its "
         "place, with its error)", UNREADABLE)


# -- writing entries ---------------------------------------------------------------------
class Tally:
    """What a block of entries found besides its output (a worker pickles it to the
    parent): ``failed`` (``--fail-on`` tripped), ``unreadable`` (the stored keys, in
    order), ``summary`` (the text summary's counts, :meth:`Summary.add`; the parent's
    own :class:`Summary` draws the table, in graph order)."""

    __slots__ = ("failed", "unreadable", "summary")

    def __init__(self) -> None:
        self.failed = False
        self.unreadable: list[str] = []
        self.summary = Summary(())


@dataclass(frozen=True)
class _Form:
    """How entries are written: JSON lines or text (``color``, ``compact``, ``history``),
    and what trips ``--fail-on``."""

    json: bool
    compact: bool
    history: bool
    fail_on: str | None
    color: bool
    encoding: str = "utf-8"
    errors: str = "strict"

    @property
    def separator(self) -> bytes:
        """What comes before every JSON entry: ``,\\n`` (a text entry holds its own)."""
        return b",\n" if self.json else b""

    @property
    def lead(self) -> bytes:
        """What comes before every entry and is dropped before the first: ``,`` of JSON's
        ``,\\n``, the blank line of a text table, nothing before a compact line."""
        if self.json:
            return b","
        return b"" if self.compact else "\n".encode(self.encoding)

    def entry(self, entry: Entry, tally: Tally, paint: Paint) -> bytes:
        """One entry's bytes after :attr:`separator`, counted in ``tally``; ``paint``:
        ``painter(self.color)``."""
        return self._json(entry, tally) if self.json else self._text(entry, tally, paint)

    def _json(self, entry: Entry, tally: Tally) -> bytes:
        if type(entry) is Unreadable:  # never fails --fail-on: its own exit status follows
            tally.unreadable.append(entry.error.key)
            return _json_line(entry.to_json())
        document = check_document(entry)
        if self.compact:  # the report's node lines are compact already: decisions only
            document = compact_document(document, lines_done=True)
        if fails(entry, self.fail_on):
            tally.failed = True
        return _json_line(document)

    def _text(self, entry: Entry, tally: Tally, paint: Paint) -> bytes:
        if type(entry) is Unreadable:  # one line in every form: `KEY: unreadable: why`
            error = entry.error
            tally.unreadable.append(error.key)
            tally.summary.add_unreadable()
            text = f"{error.key}: {paint('unreadable', 'unreadable')}: {error.detail}"
        else:
            text = (render_compact(entry, paint) if self.compact
                    else render_table(entry, paint))
            if self.history:
                text += "\n" + _history_text(entry)
            if fails(entry, self.fail_on):
                tally.failed = True
            tally.summary.add(entry)
        if not self.color:  # as click.echo does for a stream it does not colour
            text = click.unstyle(text)
        lead = "" if self.compact else "\n"
        return f"{lead}{text}\n".encode(self.encoding, self.errors)


def _render(reading: _Reading, form: _Form, span: Span, write: Write) -> Tally:
    """Write the entries of ``span``'s items (gathered into :data:`_CHUNK`-byte writes)
    and return what they found: a block of ``check --all``, wherever it runs."""
    tally = Tally()
    entries = reading.entries(span)
    if form.json and form.history:
        entries = (e if type(e) is Unreadable else _with_history(e) for e in entries)
    paint, separator, entry_bytes = painter(form.color), form.separator, form.entry
    pending = bytearray()
    for entry in entries:
        pending += separator
        pending += entry_bytes(entry, tally, paint)
        if len(pending) >= _CHUNK:
            write(pending)
            pending = bytearray()  # a new one: the stream may still hold the last
    if pending:
        write(pending)
    return tally


class _Stream:
    """The output of every block, in order, less the first entry's lead (see the module's
    docstring); ``started``: an entry was written."""

    def __init__(self, write: Write, lead: bytes) -> None:
        self._write = write
        self._lead = lead
        self.started = False

    def __call__(self, data: bytes | bytearray) -> None:
        if not self.started:
            self.started = True
            data = data[len(self._lead):]  # every block's output starts with an entry
        self._write(data)


#: Bytes of output gathered before they are written (memory stays flat).
_CHUNK = 1 << 20


def _visits(report: Mapping[str, Any]) -> Visits:
    """The report's document's visits, decoded (:func:`engine.visits.visits_from_json`)."""
    return visits_from_json(report["document"].get("visits") or {})


def _with_history(report: dict[str, Any]) -> dict[str, Any]:
    # ``--history`` in JSON: the report gains ``history``, every visit oldest first
    # (issue 19 §2); the document's ``visits`` key is there either way.
    return {**report, "history": visit_history(_visits(report))}


def _history_text(report: Mapping[str, Any]) -> str:
    return render_history(report["workItem"], _visits(report))


def _json_line(document: dict[str, Any]) -> bytes:
    # fastjson.dumps_bytes's bytes, without its OPT_NON_STR_KEYS, which costs orjson a
    # fifth of its time and only matters for a key that is not a string (issue 21 §3).
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return fastjson.dumps_bytes(document)


def _byte_writer(out: Any, encoding: str = "utf-8") -> Callable[[bytes | bytearray], Any]:
    """Write bytes (``encoding``'s) to ``out``: its binary buffer when it has one (flushed
    text first), else decoded (a text-only stream, e.g. under a test runner); ``out`` None
    (``sys.stdout`` of a process started with it closed): nowhere.

    Every byte is written: with ``PYTHONUNBUFFERED=1`` (the Dockerfile's) the binary
    buffer is a raw ``FileIO``, whose ``write`` may take only part of a chunk (a pipe, a
    filling disk) or none (``None``: a non-blocking pipe that is full), raising nothing."""
    if out is None:  # no stdout (started with it closed): dropped, as click.echo does
        return lambda data: None
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        return lambda data: out.write(data.decode(encoding))
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


def _text_encoding(out: Any) -> tuple[str, str]:
    """``(encoding, errors)`` of the text ``click.echo`` writes to ``out``: the stream's own,
    except where it says ASCII (``PYTHONIOENCODING=ascii``, a misconfigured locale), or
    says nothing: there click writes UTF-8, errors replaced, rather than fail on the first
    ``—`` (``click._compat._force_correct_text_writer``)."""
    encoding = getattr(out, "encoding", None) or "ascii"
    with suppress(LookupError):
        if codecs.lookup(encoding).name != "ascii":
            return encoding, getattr(out, "errors", None) or "strict"
    return "utf-8", "replace"


def _flush(out: Any) -> None:
    """Flush ``out`` (``sys.stdout``), unless there is none (started with it closed)."""
    if out is not None:
        out.flush()


def _check_filters(services: Services, item: WorkItemRef | None, all_items: bool,
                   node: str | None, status: str | None, jobs: int = 0) -> None:
    if (node or status) and (item is not None or not all_items):
        raise click.UsageError("--node and --status filter --all: give --all, not ITEM")
    if jobs and not all_items:
        raise click.UsageError("--jobs splits --all: give --all, not ITEM")
    if (item is None) == (not all_items):
        raise click.UsageError("give either ITEM or --all")
    if node:
        known_node(services.graph, node, "--node")


def _jobs(services: Services, jobs: int) -> tuple[list[Span], int]:
    """The blocks ``check --all`` reads and how many workers render them.

    ``[WHOLE]`` and one process unless the store can cut its items into spans (SQLite)
    and forking is safe here (:func:`bot.cli.shards.can_fork`). ``jobs`` 0 (the
    default): one worker per usable CPU, at most :data:`MAX_JOBS`, once there are
    :data:`MIN_FORKED` items (below that, forking costs more than it saves), in blocks
    of :data:`SPAN_ITEMS`. ``jobs`` ≥ 2 (``--jobs N``): that many workers whatever the
    count, in blocks small enough for each to have several (``items / 4N``, at most
    :data:`SPAN_ITEMS`)."""
    store = services.store
    auto = not jobs
    jobs = min(usable_cpus(), MAX_JOBS) if auto else jobs
    if jobs < 2 or not isinstance(store, SpannedStore) or not can_fork():
        return [WHOLE], 1
    total = store.item_total()
    if total < (MIN_FORKED if auto else 2):
        return [WHOLE], 1
    size = SPAN_ITEMS if auto else min(SPAN_ITEMS, -(-total // (4 * jobs)))
    spans: list[Span] = store.spans(size)
    return spans, min(jobs, len(spans))


def _check_all(services: Services, form: _Form, reading: _Reading, jobs: int,
               summary: Summary | None) -> Tally:
    """Write every item's entry (and the JSON brackets, or the text summary) to standard
    output, in the store's order, rendered by ``jobs`` processes; what they found."""
    spans, jobs = _jobs(services, jobs)
    write = _byte_writer(sys.stdout, form.encoding)
    if form.json:
        write(b"[")
    stream = _Stream(write, form.lead)
    render = partial(_render, reading, form)
    if jobs > 1:
        # No connection of this process crosses the fork (SQLite's rule: a child never
        # uses its parent's); the workers open their own, the parent reads no more.
        services.store.close()
        tallies = run_blocks(spans, jobs, render, stream)
    else:
        tallies = run_here(spans, render, stream)
    total = Tally()
    for tally in tallies:
        total.failed = total.failed or tally.failed
        total.unreadable += tally.unreadable
        if summary is not None:
            summary.counts.update(tally.summary.counts)
    if form.json:
        write(b"\n]\n")
    elif summary is not None:
        gap = "\n" if stream.started else ""  # no blank line before a lone summary
        text = gap + "\n".join(summary.lines(painter(form.color))) + "\n"
        write((text if form.color else click.unstyle(text)).encode(form.encoding,
                                                                   form.errors))
    _flush(sys.stdout)
    return total


def _check_item(services: Services, item: WorkItemRef, form: _Form, recompute: bool
                ) -> bool:
    """``check ITEM``: its report on standard output (JSON indented); True when it trips
    ``--fail-on``."""
    report = _item_report(services, item, recompute, form.compact and form.json)
    if form.json:
        if form.history:
            report = _with_history(report)
        document = check_document(report)
        click.echo(json.dumps(compact_document(document, lines_done=True) if form.compact
                              else document, indent=2, ensure_ascii=False))
        return fails(report, form.fail_on)
    tally = Tally()
    text = form.entry(report, tally, painter(form.color))
    _byte_writer(sys.stdout, form.encoding)(text[len(form.lead):])
    _flush(sys.stdout)
    return tally.failed


def _check_every(services: Services, form: _Form, reading: _Reading, jobs: int) -> bool:
    """``check --all``: every entry, then the unreadable items named on stderr (exit
    :data:`UNREADABLE`); True when an item trips ``--fail-on``."""
    summary = None if form.json else Summary([n.id for n in services.graph.ordered()])
    try:
        total = _check_all(services, form, reading, jobs, summary)
    except WorkerFailed as exc:  # what one process would have raised, or died of
        if exc.detail:
            click.echo(exc.detail.rstrip("\n"), err=True)
        fail(f"check --all stopped: {exc.message}", exc.exit_code or 1)
    _say_unreadable(total.unreadable)
    return total.failed


def _item_cb(ctx: click.Context, param: click.Parameter, value: str | None
             ) -> WorkItemRef | None:
    return None if value is None else parse_item(value)


@click.command("check")
@click.argument("item", metavar="[ITEM]", required=False, callback=_item_cb)
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
@click.option("--jobs", "jobs", type=click.IntRange(min=0, max=MAX_JOBS_ASKED), default=0,
              metavar="N",
              help="With --all on SQLite: read and render the items in N processes (0: one "
                   "per usable CPU, at most 8, from 1,000 items; 1: this process only; at "
                   "most 64). "
                   "The output is the same whatever N.")
@click.pass_obj
def check(obj: CliContext, item: WorkItemRef | None, all_items: bool, fmt: str,
          recompute: bool, fail_on: str | None, node: str | None, status: str | None,
          color: str, history: bool, compact: bool, jobs: int) -> None:
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
    _check_filters(services, item, all_items, node, status, jobs)
    as_json = fmt == "json"
    # JSON is UTF-8 bytes whatever the locale (RFC 8259 §8.1); text as click.echo writes it.
    encoding, errors = ("utf-8", "strict") if as_json else _text_encoding(sys.stdout)
    form = _Form(json=as_json, compact=compact, history=history, fail_on=fail_on,
                 color=use_color(color), encoding=encoding, errors=errors)
    if item is not None:
        failed = _check_item(services, item, form, recompute)
    else:
        reading = _Reading(services, _owed(services, None), recompute, node, status,
                           compact and form.json)
        failed = _check_every(services, form, reading, jobs)
    if failed:
        raise SystemExit(1)


def register(group: click.Group) -> None:
    """Add ``check`` to ``group``."""
    group.add_command(check)
