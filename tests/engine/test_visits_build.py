"""Visits read from the stored shape are set in one step (issue 21 §3: ``check --all`` reads
every visit of every item); each must be the very object the dataclass's own ``__init__``
makes: equal, same hash, same repr, still frozen, and ``replace`` still works."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from engine.visits import Visit, VisitDecision, _frozen, _int, visits_from_json

SELECTION = {"by": "@alice", "via": "tick", "at": "2026-01-02T03:04:05Z",
             "comment": "https://github.com/acme/widgets/issues/7#issuecomment-9",
             "commentId": 9, "skips": {"design": {"reason": "größe"}},
             "frozenGraph": {"nodes": [{"id": "a"}, {"id": "b"}]}}
QUIZ = {"at": "t", "attestedBy": "@bob", "attestedAt": "t", "comment": "c",
        "commentId": "12", "via": "checklist"}
ODD = {"by": "", "at": None, "outcome": 3, "commentId": "x", "text": None, 5: "int key"}

DOCS: list[dict[str, Any]] = [
    {"visit": 1, "enteredAt": "a", "exitedAt": "b", "outcome": "selected",
     "decision": SELECTION, "seq": 1, "afterComment": 44},
    {"visit": 2, "enteredAt": "c", "exitedAt": "", "outcome": "", "decision": QUIZ,
     "forced": True},
    {"visit": "3", "enteredAt": None, "inferred": True, "seq": True, "afterComment": "7"},
    {"visit": 0, "decision": ODD, "forced": 1, "seq": 2.0},
    {},
]


def _old_decision(doc: Mapping[str, Any]) -> VisitDecision:
    # VisitDecision.from_json as it was: every field through the dataclass's __init__.
    via = doc.get("via")
    return VisitDecision(
        by=str(doc.get("by") or doc.get("attestedBy") or ""), at=str(doc.get("at") or ""),
        outcome=str(doc.get("outcome") or ""),
        via=str(via) if via else ("reply" if doc.get("by") else ""),
        comment=str(doc.get("comment") or ""), comment_id=_int(doc.get("commentId")),
        text=str(doc.get("text") or ""), document=_frozen(doc))


def _old_visit(doc: Mapping[str, Any]) -> Visit:
    decision = doc.get("decision")
    return Visit(
        number=_int(doc.get("visit")) or 1, entered_at=str(doc.get("enteredAt") or ""),
        exited_at=str(doc.get("exitedAt") or ""), outcome=str(doc.get("outcome") or ""),
        decision=_old_decision(decision) if decision is not None else None,
        forced=bool(doc.get("forced", False)), inferred=bool(doc.get("inferred", False)),
        seq=_int(doc.get("seq")), after_comment=_int(doc.get("afterComment")))


@pytest.mark.parametrize("doc", DOCS)
def test_a_visit_read_is_the_one_init_makes(doc: dict[str, Any]) -> None:
    new, old = Visit.from_json(doc), _old_visit(doc)
    assert new == old and repr(new) == repr(old)
    assert vars(new) == vars(old) and list(vars(new)) == list(vars(old))
    assert new.to_json() == old.to_json()
    if new.decision is not None:
        assert vars(new.decision) == vars(old.decision)
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.outcome = "x"  # type: ignore[misc]
    assert new.left("z", "done") == old.left("z", "done")
    assert dataclasses.replace(new, seq=9) == dataclasses.replace(old, seq=9)


def test_ints_keep_their_old_reading() -> None:
    assert [_int(v) for v in (0, 7, True, False, "12", "x", None, 2.9, -3)] == [
        0, 7, 1, 0, 12, 0, 0, 2, -3]


def test_a_stored_visits_mapping_reads_as_before() -> None:
    stored = {"phase-selection": DOCS[:2], "design": DOCS[2:], "empty": []}
    assert visits_from_json(stored) == {
        "phase-selection": tuple(_old_visit(d) for d in DOCS[:2]),
        "design": tuple(_old_visit(d) for d in DOCS[2:]), "empty": ()}
