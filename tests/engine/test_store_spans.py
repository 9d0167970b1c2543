"""The SQLite store's items cut into spans (``check --all``'s workers read one each, issue 21
§3): read span after span, they are every item once, in ``load_all``'s order, each whole
(its child rows, no other item's), whatever the span size — two stored keys of one number
(``#13`` and ``#013``) and an unreadable item on a boundary included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.refs import WorkItemRef
from engine.store.rows import WHOLE, stream_states
from engine.store.sqlite import SqliteStore
from tests.engine.test_unreadable_items import BAD_KEY, _stored_under, _write

REFS = [WorkItemRef(owner, "widgets", n) for owner in ("acme", "beta") for n in (1, 2, 13, 14)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    made = SqliteStore(tmp_path / "loopgate.db")
    yield made
    made.close()


def _read(store: SqliteStore, spans: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    told: list[str] = []
    docs = [state.to_document() for span in spans
            for state in store.load_all(lambda key, _e: told.append(key), span=span)]
    return docs, told


def test_spans_of_every_size_read_every_item_once_in_order(store: SqliteStore) -> None:
    thirteen = WorkItemRef("acme", "widgets", 13)
    _write(store, [thirteen])
    _stored_under(store, thirteen, BAD_KEY)  # unreadable, and the same number as #13
    _write(store, REFS)
    whole = _read(store, [WHOLE])
    assert whole[1] == [BAD_KEY] and len(whole[0]) == len(REFS)
    assert [d["workItem"] for d in whole[0]] == [str(ref) for ref in REFS]
    assert store.item_total() == len(REFS) + 1
    for size in range(1, len(REFS) + 3):
        spans = store.spans(size)
        assert len(spans) == -(-(len(REFS) + 1) // size), size
        assert spans[0][0] is None and spans[-1][1] is None
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
        assert _read(store, spans) == whole, size


def test_a_span_holds_the_items_between_its_bounds(store: SqliteStore) -> None:
    _write(store, REFS)
    first, second, *_rest = store.spans(3)
    assert first == (None, ("acme", "widgets", 14, 4))  # the fourth item: its rowid is 4
    docs, _told = _read(store, [second])
    assert [d["workItem"] for d in docs] == ["acme/widgets#14", "beta/widgets#1",
                                             "beta/widgets#2"]


def test_no_items_is_one_span_and_a_size_below_one_is_refused(store: SqliteStore) -> None:
    assert store.spans(500) == [WHOLE]
    assert store.item_total() == 0
    with pytest.raises(ValueError, match="at least 1"):
        store.spans(0)


def test_a_span_bounds_sqlites_order_only() -> None:
    # PostgreSQL's order ties on the key, not a rowid: a span there would be wrong bounds.
    with pytest.raises(ValueError, match="SQLite's order only"):
        list(stream_states(lambda sql, params: iter(()), tie="item",
                           span=(("acme", "widgets", 1, 1), None)))
