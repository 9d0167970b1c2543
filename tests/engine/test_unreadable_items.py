"""A stored item that cannot be read (its key is not a work item reference, a child row is
not JSON or JSON of the wrong shape) on the SQL stores, SQLite and PostgreSQL alike:
``load_all(on_unreadable=...)`` tells of it and reads every other item whole; without the
callback it raises :class:`UnreadableItemError`; ``load`` of it raises the same error."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import UnreadableItemError
from engine.refs import WorkItemRef
from engine.store import rows
from engine.store.rows import CHILD_TABLES
from tests.engine.runtime_support import make_store
from tests.engine.test_store_conformance import _full_state

BAD_KEY = "acme/widgets#013"  # number 13: sorts between #12 and #14, and never parses
GOOD = [WorkItemRef("acme", "widgets", n) for n in (11, 12, 14, 15)]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "postgresql":
        from bridges.postgres.store import PostgresStore

        made = PostgresStore(request.getfixturevalue("pg_database"))
    else:
        made = make_store(request.param, tmp_path)
    yield made
    made.close()


def _write(store: Any, refs: Iterable[WorkItemRef]) -> None:
    for ref in refs:
        with store.transaction(ref) as tx:
            _full_state(tx.create("pdlc"))
            tx.state.surface["n"] = ref.number


def _docs(store: Any) -> dict[str, dict[str, Any]]:
    return {str(s.ref): s.to_document() for s in store.load_all()}


def _sql(store: Any, sql: str, params: tuple[Any, ...] = ()) -> None:
    with store.writing() as db:
        db.execute(sql, params)


def _stored_under(store: Any, ref: WorkItemRef, key: str) -> None:
    """``ref``'s rows, every child row included, moved to the stored key ``key``."""
    for table in ("items", *CHILD_TABLES):
        _sql(store, f"UPDATE {table} SET item = ? WHERE item = ?", (key, str(ref)))


def _read_all(store: Any) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    told: list[tuple[str, UnreadableItemError]] = []
    docs = {str(s.ref): s.to_document()
            for s in store.load_all(on_unreadable=lambda key, e: told.append((key, e)))}
    for key, error in told:
        assert error.key == key and str(error) == f"{key}: unreadable: {error.detail}"
    return docs, [(key, error.detail) for key, error in told]


def test_an_unparseable_key_is_passed_over_and_every_other_item_read_whole(
        store: Any) -> None:
    _write(store, GOOD)
    healthy = _docs(store)
    _write(store, [WorkItemRef("acme", "widgets", 13)])  # child rows in every table
    _stored_under(store, WorkItemRef("acme", "widgets", 13), BAD_KEY)
    docs, told = _read_all(store)
    assert told == [(BAD_KEY, "the stored key: not a work item reference: "
                              "'acme/widgets#013' (expected owner/repo#N)")]
    assert list(docs) == [str(ref) for ref in GOOD]
    assert docs == healthy  # the items after it kept their own child rows, no others
    with pytest.raises(UnreadableItemError) as raised:
        list(store.load_all())
    assert raised.value.key == BAD_KEY
    assert str(raised.value) == ("acme/widgets#013: unreadable: the stored key: not a work "
                                 "item reference: 'acme/widgets#013' (expected owner/repo#N)")


@pytest.mark.parametrize(("table", "column", "node", "text", "detail"), [
    ("visits", "data", "design", '[{"visit": 1,',
     "visits row of node 'design': not JSON (Expecting property name enclosed in double "
     "quotes: line 1 column 14 (char 13))"),
    ("skips", "data", "brainstorming", "[1, 2]",
     "skips row of node 'brainstorming': JSON of the wrong shape (AttributeError: 'list' "
     "object has no attribute 'items')"),
    ("visits", "data", "phase-selection", '["not a visit"]',
     "visits row of node 'phase-selection': JSON of the wrong shape (TypeError: a visit "
     "must be a mapping, not str)"),
    ("items", "surface", None, "[]",
     "column surface: JSON of the wrong shape (TypeError: a JSON object was expected, "
     "not an array)"),
    ("items", "parked", None, "{",
     "column parked: not JSON (Expecting property name enclosed in double quotes: line 1 "
     "column 2 (char 1))"),
])
def test_a_row_that_does_not_read_is_named_and_the_others_are_kept(
        store: Any, table: str, column: str, node: str | None, text: str,
        detail: str) -> None:
    _write(store, GOOD)
    healthy = _docs(store)
    bad = WorkItemRef("acme", "widgets", 12)
    where = " AND node = ?" if node else ""
    _sql(store, f"UPDATE {table} SET {column} = ? WHERE item = ?{where}",
         (text, str(bad), *([node] if node else [])))
    docs, told = _read_all(store)
    assert told == [(str(bad), detail)]
    assert docs == {k: v for k, v in healthy.items() if k != str(bad)}
    with pytest.raises(UnreadableItemError) as raised:
        store.load(bad)
    assert (raised.value.key, raised.value.detail) == (str(bad), detail)
    assert store.load(GOOD[2]).to_document() == healthy[str(GOOD[2])]


def test_a_database_error_is_never_taken_for_an_unreadable_item() -> None:
    # The shared rows code takes an item's rows before it decodes any: an error of the
    # database itself (here: the visits cursor failing after its first row) ends the
    # stream as the driver raised it, on_unreadable or not.
    store_rows = {
        "items": [("acme/widgets#1", "acme", "widgets", 1, "l", "a", "parked", "{}", "{}",
                   "t", 1, "t"),
                  ("acme/widgets#2", "acme", "widgets", 2, "l", "a", "parked", "{}", "{}",
                   "t", 1, "t")],
        "visits": [("acme/widgets#1", "a", '[{"visit": 1}]')],
    }

    def failing(first: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        yield from first
        raise sqlite3.OperationalError("disk I/O error")

    def query(sql: str, params: tuple[Any, ...]) -> Iterable[tuple[Any, ...]]:
        if "CROSS JOIN visits" in sql:
            return failing(store_rows["visits"])
        return store_rows["items"] if "FROM items ORDER BY" in sql else []

    told: list[str] = []
    states = rows.stream_states(query, lambda key, error: told.append(key))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        next(states)
    assert told == []


def test_two_keys_of_one_number_keep_their_own_child_rows(store: Any) -> None:
    # acme/widgets#013 beside acme/widgets#13: the same owner, repository and number. Their
    # child rows came interleaved (ordered by the number, then by each row's ord), and the
    # merge then read #13, #14 and #15 without theirs — silently, a state short of its
    # records. Items sharing a number are ordered by their key (SQLite: rowid) too.
    thirteen = WorkItemRef("acme", "widgets", 13)
    _write(store, [thirteen])
    _stored_under(store, thirteen, BAD_KEY)
    _write(store, [*GOOD, thirteen])
    healthy = {str(ref): store.load(ref).to_document() for ref in [*GOOD, thirteen]}
    assert len(healthy[str(thirteen)]["nodes"]) == 3
    docs, told = _read_all(store)
    assert [key for key, _detail in told] == [BAD_KEY]
    assert list(docs) == ["acme/widgets#11", "acme/widgets#12", "acme/widgets#13",
                          "acme/widgets#14", "acme/widgets#15"]
    assert docs == healthy


@pytest.mark.parametrize(("table", "column", "node", "value", "detail"), [
    # int()'s own error quotes the text it refused: the message must not (a token, say)
    ("items", "revision", None, "ghp_SECRET_TOKEN",
     "column revision: an integer was expected, not text"),
    ("node_records", "attempts", "design", "ghp_SECRET_TOKEN",
     "node_records row of node 'design': an integer was expected, not text"),
    # SQLite keeps a BLOB in a TEXT column as it is: it would reach the report and fail to
    # encode (every item's JSON lost); refused when read, the column named, not quoted
    ("items", "status", None, b"\x00ghp_SECRET",
     "the item's row: column status: text was expected, not a BLOB"),
    ("items", "started_at", None, b"2026",
     "the item's row: column started_at: text was expected, not a BLOB"),
    ("node_records", "outcome", "design", b"ghp_SECRET",
     "node_records row of node 'design': column outcome: text was expected, not a BLOB"),
    ("node_records", "node", "design", b"design",
     "node_records row of node b'design': column node: text was expected, not a BLOB"),
    # a NULL child row is named, not blamed on "the item's rows together"
    ("skips", "data", "brainstorming", None,
     "skips row of node 'brainstorming': JSON of the wrong shape (TypeError: NULL where "
     "JSON text was expected)"),
])
def test_the_error_names_the_part_and_never_quotes_the_stored_value(
        store: Any, table: str, column: str, node: str | None, value: str | bytes | None,
        detail: str) -> None:
    _write(store, GOOD)
    healthy = _docs(store)
    bad = WorkItemRef("acme", "widgets", 12)
    where = " AND node = ?" if node else ""
    if column in ("revision", "attempts") and type(store).__name__ == "PostgresStore":
        pytest.skip("PostgreSQL's INTEGER column refuses text: nothing unreadable to store")
    if type(value) is bytes and type(store).__name__ == "PostgresStore":
        pytest.skip("PostgreSQL's TEXT column refuses bytes: nothing unreadable to store")
    _sql(store, f"UPDATE {table} SET {column} = ? WHERE item = ?{where}",
         (value, str(bad), *([node] if node else [])))
    docs, told = _read_all(store)
    assert told == [(str(bad), detail)]
    assert docs == {k: v for k, v in healthy.items() if k != str(bad)}


def test_a_key_that_is_not_printable_is_shown_quoted() -> None:
    # A key with a newline and a terminal escape would print as two lines, the second
    # looking like loopgate's own; 100,000 characters would print whole. Both are quoted.
    def row(key: str) -> tuple[Any, ...]:
        return (key, "acme", "widgets", 5, "l", "a", "parked", "{}", "{}", "t", 1, "t")

    keys = ["acme/widgets#5\x1b[2J\nloopgate: fake", "acme/widgets#" + "x" * 100_000]
    items = [row(key) for key in keys]

    def query(sql: str, params: tuple[Any, ...]) -> Iterable[tuple[Any, ...]]:
        return items if "FROM items ORDER BY" in sql else []

    told: list[str] = []
    assert list(rows.stream_states(query, lambda key, error: told.append(key))) == []
    assert told == ["'acme/widgets#5\\x1b[2J\\nloopgate: fake'",
                    "'acme/widgets#" + "x" * 106 + "…"]


@pytest.mark.parametrize(("key", "detail"), [
    # the same item spelt in capitals beside it: read as readable, both showed as
    # acme/widgets#13 (where acme/widgets#013 is refused: two non-canonical keys treated
    # apart); loopgate writes every key lower-cased, so no write of its own made it
    ("ACME/Widgets#13", "the stored key: not in canonical form: 'ACME/Widgets#13' would "
                        "read as 'acme/widgets#13' (loopgate writes keys lower-cased, "
                        "without spaces)"),
    (" acme/widgets#13\n", "the stored key: not in canonical form: ' acme/widgets#13\\n' "
                           "would read as 'acme/widgets#13' (loopgate writes keys "
                           "lower-cased, without spaces)"),
])
def test_a_key_that_parses_but_is_not_canonical_is_unreadable_as_013_is(
        store: Any, key: str, detail: str) -> None:
    thirteen = WorkItemRef("acme", "widgets", 13)
    _write(store, [thirteen])
    _stored_under(store, thirteen, key)
    _write(store, [*GOOD, thirteen])  # the canonical key beside it, every row its own
    healthy = {str(ref): store.load(ref).to_document() for ref in [*GOOD, thirteen]}
    docs, told = _read_all(store)
    shown = key if key.isprintable() else repr(key)
    assert told == [(shown, detail)]
    assert docs == healthy  # the canonical #13 and the others read whole, once each
    with pytest.raises(UnreadableItemError) as raised:
        list(store.load_all())
    assert str(raised.value) == f"{shown}: unreadable: {detail}"


def test_a_capitalised_name_from_github_is_stored_lower_cased_and_reads(store: Any) -> None:
    # GitHub's payloads spell names as their owner does (Codertocat/Hello-World): the ref
    # lower-cases them, so the key written is canonical and reads back.
    ref = WorkItemRef("Codertocat", "Hello-World", 1)
    _write(store, [ref])
    docs, told = _read_all(store)
    assert told == [] and list(docs) == ["codertocat/hello-world#1"]
    assert store.load(WorkItemRef.parse("CODERTOCAT/hello-world#1")) is not None
