"""Work item state <-> table rows: the one definition of the item tables' SQL, shared by the
SQLite store and the PostgreSQL store (issue 15 §1: no SQL string kept twice).

Statements are written with ``?`` placeholders (SQLite's); a backend whose driver wants
another style converts them (``bridges.postgres.sql.to_pg``). Every statement here is plain
SQL both engines run (``INSERT ... ON CONFLICT ... DO UPDATE`` needs SQLite 3.24+). Reads
go through ``query(sql, params) -> iterable of tuples``, so this module imports no driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from engine import fastjson
from engine.errors import UnreadableItemError, WorkItemRefError
from engine.records import Completion, ForcedMove, OptIn, Parked, Skip
from engine.refs import WorkItemRef
from engine.state import ItemState, NodeRecord
from engine.store.base import OnUnreadable
from engine.store.memory import StoreTransaction, json_text, utc_now_iso
from engine.visits import visits_from_document, visits_from_rows, visits_to_json

__all__ = [
    "ENTRY_TABLES", "CHILD_TABLES", "ITEM_COLUMNS", "Query", "read_state", "write_statements",
    "stream_states", "SELECT_EVENTS", "SELECT_REFS", "KV_GET", "KV_SET", "KV_DELETE",
    "KV_ITEMS", "item_counts", "open_waits", "event_counts", "active_items", "Span",
    "SpanKey", "WHOLE", "span_starts",
]

#: ``query(sql, params)`` -> rows as tuples (a driver's ``execute``, placeholders converted).
Query = Callable[[str, tuple[Any, ...]], Iterable[tuple[Any, ...]]]

#: Tables holding ``node id -> JSON entry`` per item, with the ItemState attribute each fills.
ENTRY_TABLES = (
    ("skips", "skips"),
    ("opt_ins", "opt_ins"),
    ("completions", "completions"),
)
#: How each entry table's JSON becomes the state's record (issue 20 §1: the records'
#: ``from_json`` is the one reader; the stored document is unchanged).
_ENTRY_TYPES: dict[str, Callable[[Any], Any]] = {"skips": Skip.from_json,
                                                 "opt_ins": OptIn.from_json,
                                                 "completions": Completion.from_json}
#: Every table whose rows belong to one item (replaced wholesale on each write).
#: ``visits`` holds ``node -> [visit, ...]`` (issue 19 §2). ``decisions`` is no longer
#: written (a decision lives in its visit; writing it twice would store a selection's
#: frozen graph twice and read it twice in ``check --all``): its rows are read only for an
#: item written before visits were kept (no ``visits`` rows), see :func:`_visits`, and
#: deleted when the item is next written.
CHILD_TABLES = ("node_records", "skips", "opt_ins", "decisions", "completions",
                "forced_moves", "visits")
ITEM_COLUMNS = (
    "item, owner, repo, number, loop, current_node, status, parked, surface, "
    "started_at, revision, updated_at"
)
_RECORD_COLUMNS = "node, attempts, outcome, entered_at, exited_at, last_block, forced"
_UPSERT_ITEM = (
    f"INSERT INTO items ({ITEM_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (item) DO UPDATE SET loop = excluded.loop, "
    "current_node = excluded.current_node, status = excluded.status, "
    "parked = excluded.parked, surface = excluded.surface, "
    "started_at = excluded.started_at, revision = excluded.revision, "
    "updated_at = excluded.updated_at"
)
_INSERT_RECORD = (f"INSERT INTO node_records (item, ord, {_RECORD_COLUMNS}) "
                  "VALUES (?,?,?,?,?,?,?,?,?)")
# "by" is quoted: a reserved word in PostgreSQL.
_INSERT_FORCED = ('INSERT INTO forced_moves (item, ord, from_node, to_node, "by", reason, at, '
                  "data) VALUES (?,?,?,?,?,?,?,?)")
_INSERT_EVENT = "INSERT INTO events (item, at, kind, data) VALUES (?, ?, ?, ?)"
SELECT_EVENTS = "SELECT seq, at, kind, data FROM events WHERE item = ? ORDER BY seq"
SELECT_REFS = "SELECT owner, repo, number FROM items ORDER BY owner, repo, number"
KV_GET = "SELECT value FROM kv WHERE namespace = ? AND key = ?"
KV_SET = ("INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
          "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
          "updated_at = excluded.updated_at")
KV_DELETE = "DELETE FROM kv WHERE namespace = ? AND key = ?"
KV_ITEMS = "SELECT key, value FROM kv WHERE namespace = ? ORDER BY key"
_ITEM_COUNTS = ("SELECT current_node, status, COUNT(*) FROM items GROUP BY 1, 2 "
                "ORDER BY 1, 2")
_OPEN_WAITS = ("SELECT i.current_node, r.entered_at FROM items i JOIN node_records r "
               "ON r.item = i.item AND r.node = i.current_node "
               "WHERE i.status NOT IN ('complete', 'escalated')")
_ACTIVE_ITEMS = ("SELECT owner, repo, number FROM items WHERE status IN ('running', 'parked') "
                 "ORDER BY owner, repo, number")


# -- what /metrics reads (issue 13; behind the stores since issue 20 §2) ---------------------
def item_counts(query: Query) -> list[tuple[str, str, int]]:
    """``(current node, status, count)`` of the work items, sorted."""
    return [(str(node or ""), str(status or ""), int(count))
            for node, status, count in query(_ITEM_COUNTS, ())]


def open_waits(query: Query) -> list[tuple[str, str]]:
    """``(node, entered_at)`` of every work item neither complete nor escalated: where it
    waits and since when (ISO-8601, as recorded; "" when not recorded)."""
    return [(str(node or ""), str(entered or "")) for node, entered in query(_OPEN_WAITS, ())]


# -- what serve's self-audit reads (issue 22 §3; behind the stores since issue 20 §2) -------
def active_items(query: Query) -> list[WorkItemRef]:
    """The work items still walking (status ``running`` or ``parked``), sorted by owner,
    repository and number: a complete item's verdict is final, an escalated one publishes
    failure."""
    return [WorkItemRef(str(owner), str(repo), int(number))
            for owner, repo, number in query(_ACTIVE_ITEMS, ())]


def event_counts(query: Query, kinds: Sequence[str],
                 node_of_data: str) -> dict[tuple[str, str], int]:
    """``{(kind, node): count}`` of the logged events of ``kinds``; ``node`` is the event
    data's ``node`` ("" without one). ``node_of_data`` is the backend's SQL expression
    for it (SQLite's ``json_extract``, PostgreSQL's ``->>``: the one part that differs)."""
    if not kinds:
        return {}
    marks = ", ".join("?" for _ in kinds)
    sql = (f"SELECT kind, COALESCE({node_of_data}, ''), COUNT(*) FROM events "
           f"WHERE kind IN ({marks}) GROUP BY 1, 2")
    return {(str(kind), str(node)): int(count)
            for kind, node, count in query(sql, tuple(kinds))}


# -- row <-> state -----------------------------------------------------------------------
def state_from_row(row: tuple[Any, ...]) -> ItemState:
    """An :class:`ItemState` (no child rows yet) from an ``items`` row (ITEM_COLUMNS order)."""
    item, owner, repo, number, loop, current, status, parked, surface, started, revision, _u = row
    if not {type(loop), type(current), type(status), type(started)} <= _TEXT:
        _text_columns(_item_text(row))
    context = fastjson.loads(surface or "{}")
    if type(context) is not dict:  # read by key everywhere: refused here, named (_surface)
        _surface(context)
    state = ItemState(
        ref=WorkItemRef.parse_stored(item, owner, repo, number),
        loop=loop or "",
        current_node=current or "",
        status=status or "running",
        parked=Parked.from_json(fastjson.loads(parked or "{}")),
        surface=context,
        started_at=started or "",
    )
    state.revision = int(revision or 0)
    return state


def record_from_row(row: tuple[Any, ...]) -> NodeRecord:
    """A :class:`NodeRecord` from ``(attempts, outcome, entered, exited, last_block, forced)``."""
    attempts, outcome, entered, exited, last_block, forced = row
    if not {type(outcome), type(entered), type(exited), type(last_block)} <= _TEXT:
        _text_columns(zip(("outcome", "entered_at", "exited_at", "last_block"),
                          (outcome, entered, exited, last_block), strict=True))
    return NodeRecord(
        attempts=int(attempts or 0),
        outcome=outcome or "",
        entered_at=entered or "",
        exited_at=exited or "",
        last_block=last_block or "",
        forced=bool(forced),
    )


class ColumnTypeError(TypeError):
    """A stored column holds a value of the wrong SQL type (a BLOB or a number where text is
    read, text where an integer is): the message names the column and the kind, never the
    value."""


#: The Python types a text column may read as (SQLite types by value: a column declared
#: TEXT can hold a BLOB or a number, which would reach the report and fail to encode).
_TEXT = frozenset({str, type(None)})


#: The ``items`` row's text columns (name, position in ITEM_COLUMNS order).
_ITEM_TEXT = (("loop", 4), ("current_node", 5), ("status", 6), ("started_at", 9))


def _item_text(row: Sequence[Any]) -> Iterator[tuple[str, Any]]:
    """``(column, value)`` of each text column of an ``items`` row."""
    return ((name, row[i]) for name, i in _ITEM_TEXT)


def _text_columns(columns: Iterable[tuple[str, Any]]) -> None:
    """Refuse the first of ``(column, value)`` whose value is not text (or NULL).

    Raises:
        ColumnTypeError: naming the column and the value's kind, never the value.
    """
    for column, value in columns:
        if type(value) not in _TEXT:
            kind = {bytes: "a BLOB", int: "a number", float: "a number"}.get(
                type(value), type(value).__name__)
            raise ColumnTypeError(f"column {column}: text was expected, not {kind}")


def read_state(query: Query, ref: WorkItemRef) -> ItemState | None:
    """The stored state of ``ref`` (None when never created), read with ``query``.

    Raises:
        UnreadableItemError: a column or child row of the item does not read (not JSON,
            JSON of the wrong shape, or a column of the wrong SQL type); the message
            names the part.
    """
    item = str(ref)
    rows = list(query(f"SELECT {ITEM_COLUMNS} FROM items WHERE item = ?", (item,)))
    if not rows:
        return None

    def child(table: str, columns: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in query(
            f"SELECT {columns} FROM {table} WHERE item = ? ORDER BY ord", (item,))]

    # Every row is read before any is decoded: a database error is never taken for an
    # unreadable item (the same order as stream_states).
    parts = (tuple(rows[0]), child("node_records", _RECORD_COLUMNS),
             [child(table, "node, data") for table, _attr in ENTRY_TABLES],
             child("visits", "node, data"), child("decisions", "node, data"),
             child("forced_moves", "data"))
    try:
        return _decode(*parts)
    except Exception as exc:  # what the stored text makes the readers raise: any type
        raise _unreadable(*parts) from exc


def _visits(state: ItemState, visit_rows: Sequence[tuple[Any, ...]],
            decision_rows: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """The item's visits from its ``visits`` rows, or, for an item written before visits
    were kept (none), rebuilt from its ``decisions`` rows and node records — through the
    one deserialiser, :func:`engine.visits.visits_from_document`."""
    if visit_rows:
        return visits_from_rows(visit_rows)
    return visits_from_document({
        "nodes": {k: v.to_mapping() for k, v in state.nodes.items()},
        "decisions": {n: fastjson.loads(d) for n, d in decision_rows},
        "surface": state.surface})


def write_statements(tx: StoreTransaction) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What committing ``tx`` writes to the item tables: ``[(sql, rows for executemany)]``
    in order (the effect outbox is written by the backend's queue module)."""
    item = str(tx.ref)
    out: list[tuple[str, list[tuple[Any, ...]]]] = []
    if tx.state is not None:
        out.extend(_state_statements(item, tx.state))
    if tx.events:
        out.append((_INSERT_EVENT, [(item, at, kind, json_text(data))
                                    for kind, data, at in tx.events]))
    return out


def _state_statements(item: str, state: ItemState) -> list[tuple[str, list[tuple[Any, ...]]]]:
    ref = state.ref
    out: list[tuple[str, list[tuple[Any, ...]]]] = [(_UPSERT_ITEM, [(
        item, ref.owner, ref.repo, ref.number, state.loop, state.current_node, state.status,
        json_text(state.parked.to_json()), json_text(state.surface), state.started_at,
        state.revision + 1, utc_now_iso())])]
    # The item's child rows are replaced wholesale: simple, and exact under the lock.
    out.extend((f"DELETE FROM {table} WHERE item = ?", [(item,)]) for table in CHILD_TABLES)
    out.append((_INSERT_RECORD, [
        (item, i, node, r.attempts, r.outcome, r.entered_at, r.exited_at, r.last_block,
         int(r.forced)) for i, (node, r) in enumerate(state.nodes.items())]))
    for table, attr in ENTRY_TABLES:
        entries: Mapping[str, Any] = getattr(state, attr)
        if table in ("skips", "opt_ins"):
            out.append((f"INSERT INTO {table} (item, node, ord, data, via) VALUES (?,?,?,?,?)",
                        [(item, node, i, json_text(e.to_json()), e.via)
                         for i, (node, e) in enumerate(entries.items())]))
        else:
            out.append((f"INSERT INTO {table} (item, node, ord, data) VALUES (?,?,?,?)",
                        [(item, node, i, json_text(e.to_json()))
                         for i, (node, e) in enumerate(entries.items())]))
    out.append(("INSERT INTO visits (item, node, ord, data) VALUES (?,?,?,?)",
                [(item, node, i, json_text(seq))
                 for i, (node, seq) in enumerate(visits_to_json(state.visits).items())]))
    out.append((_INSERT_FORCED, [
        (item, i, m.from_node, m.to_node, m.by, m.reason, m.at, json_text(m.to_json()))
        for i, m in enumerate(state.forced)]))
    return [(sql, rows) for sql, rows in out if rows]


def _text(entry: Any, key: str) -> str:
    if isinstance(entry, Mapping):
        value = entry.get(key)
        return "" if value is None else str(value)
    return ""


# -- load_all: one ordered query per table, merged item by item --------------------------
class _Rows:
    """Ordered rows taken in runs sharing their first column (the item). ``head`` is the
    next row not taken (None once every row is): a table without rows costs no call."""

    def __init__(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self._rows = iter(rows)
        self.head: tuple[Any, ...] | None = next(self._rows, None)

    def take(self, item: str) -> list[tuple[Any, ...]]:
        """The rows of ``item`` (the next run), each less its first column."""
        head = self.head
        if head is None or head[0] != item:
            return []
        run = []
        rows = self._rows
        while head is not None and head[0] == item:
            run.append(head[1:])
            head = next(rows, None)
        self.head = head
        return run


def _ordered(query: Query, table: str, columns: str, tie: str, span: Span) -> _Rows:
    # Child rows in the items' sort order, so a single pass merges them. CROSS JOIN makes
    # SQLite walk the items in their (owner, repo, number) index and each item's rows by
    # its key, sorting only within an item; a plain JOIN sorted every row with its JSON,
    # 1.6 s of 100,000 items' visits (issue 21 §3). PostgreSQL reads it as the inner join.
    bounds, params = _span_clauses(span, tie, "i.")
    return _Rows(query(
        f"SELECT c.item, {columns} FROM items i CROSS JOIN {table} c WHERE c.item = i.item"
        f"{''.join(' AND ' + clause for clause in bounds)} "
        f"ORDER BY i.owner, i.repo, i.number, i.{tie}, c.ord", params))


#: Where an item sorts in :func:`stream_states`' order on SQLite: ``(owner, repo, number,
#: rowid)``, the order of its ``(owner, repo, number)`` index (which ends with the rowid).
SpanKey = tuple[Any, Any, Any, int]
#: A run of items in that order: from the item at ``low`` (included; None: the first
#: item) to the item at ``high`` (left out; None: past the last item).
Span = tuple[SpanKey | None, SpanKey | None]
#: Every item.
WHOLE: Span = (None, None)


def _span_clauses(span: Span, tie: str, alias: str = "") -> tuple[list[str], tuple[Any, ...]]:
    """The SQL conditions bounding the items (``alias``: their table's, e.g. ``i.``) to
    ``span``, and their parameters."""
    if span == WHOLE:
        return [], ()
    if tie != "rowid":
        raise ValueError("a span bounds SQLite's order only (tie='rowid')")
    key = f"({alias}owner, {alias}repo, {alias}number, {alias}rowid)"
    clauses: list[str] = []
    params: list[Any] = []
    for bound, op in zip(span, (">=", "<"), strict=True):
        if bound is not None:
            clauses.append(f"{key} {op} (?, ?, ?, ?)")
            params.extend(bound)
    return clauses, tuple(params)


def span_starts(query: Query, size: int) -> list[SpanKey]:
    """Where each run of ``size`` items after the first begins, in SQLite's items order
    (``(owner, repo, number, rowid)``): one indexed ``OFFSET`` query per run, so SQLite
    counts the items in its index, not Python (100,000 items: about 10 ms).

    Args:
        query: runs the store's SQL (one connection, so one snapshot inside a transaction).
        size: items per run (at least 1).

    Returns:
        The keys of items ``size``, ``2 * size``, …: with ``None`` before the first and
        after the last, consecutive pairs are spans covering every item once.

    Raises:
        ValueError: ``size`` below 1.
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, not {size}")
    select = "SELECT owner, repo, number, rowid FROM items"
    order = "ORDER BY owner, repo, number, rowid LIMIT 1 OFFSET ?"
    starts: list[SpanKey] = []
    row = next(iter(query(f"{select} {order}", (size,))), None)
    while row is not None:
        starts.append((row[0], row[1], row[2], row[3]))
        (after,), params = _span_clauses((starts[-1], None), "rowid")
        row = next(iter(query(f"{select} WHERE {after} {order}", (*params, size))), None)
    return starts


def stream_states(query: Query, on_unreadable: OnUnreadable | None = None,
                  tie: str = "item", span: Span = WHOLE) -> Iterator[ItemState]:
    """Every item's state sorted by ref: each table read once with one ordered query and
    merged item by item, so memory stays flat when ``query`` streams its rows.

    Args:
        query: runs the store's SQL.
        on_unreadable: told of each item that cannot be read (``(stored key, error)``:
            its key is not a work item reference, or a column or child row is not JSON,
            JSON of the wrong shape or of the wrong SQL type), which is then passed
            over: the items after it are read as usual. None: such an item raises,
            ending the stream.
        tie: the ``items`` column that orders items sharing an owner, repository and
            number (stored keys spelt apart, ``acme/widgets#13`` and ``acme/widgets#013``),
            in the items and in their child rows alike: without it two such items' child
            rows came interleaved and every item after them read without its own.
            ``item`` (the default), or SQLite's ``rowid``, which its index on
            ``(owner, repo, number)`` holds already: no sort.
        span: only the items in this run of the order (:data:`Span`, SQLite's: ``tie``
            must be ``rowid`` unless it is :data:`WHOLE`); :func:`span_starts` cuts the
            items into such runs, so that processes can read them apart
            (``check --all``'s workers).

    Raises:
        UnreadableItemError: an item cannot be read and no ``on_unreadable`` is given.
            A database error is raised as the driver raises it, whatever ``on_unreadable``.
    """
    if tie not in ("item", "rowid"):  # written into the SQL: a word of ours, never input
        raise ValueError(f"tie must be 'item' or 'rowid', not {tie!r}")
    bounds, params = _span_clauses(span, tie)
    where = f" WHERE {' AND '.join(bounds)}" if bounds else ""
    items = query(f"SELECT {ITEM_COLUMNS} FROM items{where} "
                  f"ORDER BY owner, repo, number, {tie}", params)
    records = _ordered(query, "node_records",
                       "c.node, c.attempts, c.outcome, c.entered_at, c.exited_at, "
                       "c.last_block, c.forced", tie, span)
    entries = [_ordered(query, table, "c.node, c.data", tie, span)
               for table, _attr in ENTRY_TABLES]
    visits = _ordered(query, "visits", "c.node, c.data", tie, span)
    decisions = _ordered(query, "decisions", "c.node, c.data", tie, span)
    forced = _ordered(query, "forced_moves", "c.data", tie, span)
    # Most items have no rows in most child tables: a table whose rows are all taken is
    # passed over without a call (check --all reads every item, issue 21 §3). All of an
    # item's rows are taken before any is decoded, so an item that cannot be read leaves
    # none behind to be taken for the next (the runs are keyed by the stored key, as
    # stored), and the try holds no database read.
    skips, opt_ins, completions = entries  # ENTRY_TABLES' three, unpacked: no loop per item
    for row in items:
        item = row[0]
        runs = (skips.take(item) if skips.head is not None else _NONE,
                opt_ins.take(item) if opt_ins.head is not None else _NONE,
                completions.take(item) if completions.head is not None else _NONE)
        record_rows = records.take(item)
        visit_rows = visits.take(item)
        decision_rows = decisions.take(item) if decisions.head is not None else _NONE
        forced_rows = forced.take(item) if forced.head is not None else _NONE
        try:
            state = _decode(row, record_rows, runs, visit_rows, decision_rows, forced_rows)
        except Exception as exc:  # what the stored text makes the readers raise: any type
            error = _unreadable(tuple(row), record_rows, runs, visit_rows, decision_rows,
                                forced_rows)
            if on_unreadable is None:
                raise error from exc
            on_unreadable(error.key, error)
            continue
        yield state


#: No rows (a table passed over for an item).
_NONE: tuple[tuple[Any, ...], ...] = ()
#: ``(state attribute, record reader)`` of each entry table, in ENTRY_TABLES order.
_ENTRIES = tuple((attr, _ENTRY_TYPES[table]) for table, attr in ENTRY_TABLES)

Rows = Sequence[tuple[Any, ...]]


def _decode(row: tuple[Any, ...], record_rows: Rows, runs: Sequence[Rows], visit_rows: Rows,
            decision_rows: Rows, forced_rows: Rows) -> ItemState:
    """One item's state from its ``items`` row and its child rows (each table's rows of the
    item in ``ord`` order, less the item column; ``runs``: the entry tables', in
    ENTRY_TABLES order): what :func:`read_state` and :func:`stream_states` decode.

    Raises:
        Exception: whatever a reader raises on what is stored (WorkItemRefError for the
            key, ValueError for text that is not JSON, TypeError/KeyError/... for JSON of
            the wrong shape): :func:`_unreadable` says which part.
    """
    state = state_from_row(row)
    nodes = state.nodes
    for record in record_rows:
        node = record[0]
        if type(node) is not str:  # a dict key the report writes: text only
            _text_columns((("node", node),))
        nodes[node] = record_from_row(record[1:])
    for i, run in enumerate(runs):  # not zip(..., strict=...): its keyword, parsed per call
        if run:
            attr, typed = _ENTRIES[i]
            target = getattr(state, attr)
            for node, data in run:
                target[node] = typed(fastjson.loads(data))
    state.visits = _visits(state, visit_rows, decision_rows)
    if forced_rows:
        state.forced = [ForcedMove.from_json(fastjson.loads(d)) for (d,) in forced_rows]
    return state


def _unreadable(row: tuple[Any, ...], record_rows: Rows, runs: Sequence[Rows],
                visit_rows: Rows, decision_rows: Rows, forced_rows: Rows
                ) -> UnreadableItemError:
    """The error of an item :func:`_decode` refused (its arguments): each part read again
    on its own, in :func:`_decode`'s order, to name the first that fails and why. Only
    an unreadable item comes here, so the readable ones pay nothing for it."""
    item, owner, repo, number, _loop, _current, _status, parked, surface = row[:9]
    revision = row[10]
    key = item if type(item) is str and item.isprintable() and len(item) <= _QUOTE \
        else _name(item)  # never a control character or 100 kB on a terminal or in a log
    checks: list[tuple[str, Callable[[], object]]] = [
        ("the stored key", partial(WorkItemRef.parse_stored, item, owner, repo, number)),
        ("column parked", partial(_read_json, parked, Parked.from_json)),
        ("column surface", partial(_read_surface, surface)),
        ("column revision", partial(_read_int, revision)),
        ("the item's row", partial(_text_columns, _item_text(row))),
    ]
    checks += [(f"node_records row of node {_name(r[0])}", partial(_read_record, r))
                for r in record_rows]
    for (table, _attr), run in zip(ENTRY_TABLES, runs, strict=True):
        checks += [(f"{table} row of node {_name(node)}",
                    partial(_read_row, data, _ENTRY_TYPES[table])) for node, data in run]
    checks += [(f"visits row of node {_name(node)}", partial(visits_from_rows, [(node, data)]))
               for node, data in visit_rows]
    if not visit_rows:  # decisions are read only for an item written before visits
        checks += [(f"decisions row of node {_name(node)}", partial(fastjson.loads, data))
                   for node, data in decision_rows]
    checks += [(f"forced_moves row {i}", partial(_read_row, d, ForcedMove.from_json))
               for i, (d,) in enumerate(forced_rows)]
    for part, check in checks:
        try:
            check()
        except Exception as exc:  # the reader's own error, whatever its type
            return UnreadableItemError(key, f"{part}: {_why(exc)}")
    # Every part reads on its own: the error is in how they go together (an item written
    # before visits were kept, whose decisions do not fit its node records).
    try:
        _decode(row, record_rows, runs, visit_rows, decision_rows, forced_rows)
    except Exception as exc:  # as above
        return UnreadableItemError(key, f"the item's rows together: {_why(exc)}")
    return UnreadableItemError(key, "read once but not twice (changed while read?)")


def _read_json(text: Any, typed: Callable[[Any], object]) -> object:
    return typed(fastjson.loads(text or "{}"))


def _read_row(text: Any, typed: Callable[[Any], object]) -> object:
    """A child row's ``data`` as :func:`_decode` reads it (NULL is not ``{}`` there)."""
    if text is None:
        raise TypeError("NULL where JSON text was expected")
    return typed(fastjson.loads(text))


def _read_int(value: Any) -> int:
    """``int(value or 0)``, as the readers take an integer column, refused in words that
    never quote ``value`` (``int``'s own error does: a stored secret would be shown)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        kind = {str: "text", bytes: "a BLOB", float: "a number out of range"}.get(
            type(value), type(value).__name__)
        raise ColumnTypeError(f"an integer was expected, not {kind}") from None


def _read_record(row: tuple[Any, ...]) -> object:
    """A node_records row (its node first) as :func:`_decode` reads it, its ``attempts``
    refused first without quoting it (:func:`_read_int`)."""
    _text_columns((("node", row[0]),))
    _read_int(row[1])
    return record_from_row(row[1:])


def _read_surface(text: Any) -> object:
    return _surface(fastjson.loads(text or "{}"))


def _surface(value: Any) -> dict[str, Any]:
    """``value`` (the ``surface`` column's JSON) when it is an object, as the state types it."""
    if type(value) is not dict:
        raise TypeError(f"a JSON object was expected, not {_json_type(value)}")
    return value


#: The longest stored text (a node id, an error's own words) an error message quotes.
_QUOTE = 120


def _name(node: Any) -> str:
    text = repr(node)
    return text if len(text) <= _QUOTE else text[:_QUOTE] + "…"


def _why(exc: Exception) -> str:
    """What is wrong, in words: ``not JSON (...)`` or the reader's error (its first
    :data:`_QUOTE` characters: an error may quote the value it refused)."""
    if isinstance(exc, (WorkItemRefError, ColumnTypeError)):
        words = str(exc)
    elif isinstance(exc, json.JSONDecodeError):  # orjson's is a subclass
        words = f"not JSON ({exc})"
    else:
        words = f"JSON of the wrong shape ({type(exc).__name__}: {exc})"
    return words if len(words) <= 2 * _QUOTE else words[:2 * _QUOTE] + "…"


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", int: "a number", float: "a number",
             bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)
