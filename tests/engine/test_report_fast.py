"""``build_report``'s shortcut for never-reached nodes (issue 21 §3) gives the lines the
reader gives node by node, on varied states of the shipped graph: every node as the
current one, every item status, records of every outcome, declared, forged and unknown
skips, selected and forged opt-ins, parked and blocked items, in both modes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import report
from engine.graph.compiler import shipped_graph
from engine.graph.model import Graph
from engine.records import OptIn, Parked, Skip
from engine.refs import WorkItemRef
from engine.state import ItemState, ItemStatus, NodeRecord

GRAPH = shipped_graph()
STATUSES = (ItemStatus.RUNNING, ItemStatus.PARKED, ItemStatus.ESCALATED, ItemStatus.COMPLETE)
OUTCOMES = ("pass", "skipped", "escalated", "approved", "selected", "", "changes-requested")


def _slow(graph: Graph, state: ItemState, recompute: bool) -> tuple[list[Any], list[Any]]:
    """The report's node lines and unmet list with the reader asked for every node."""
    reader = report._Reader(graph, state, recompute)
    nodes, unmet = [], []
    for node in graph.ordered():
        line = reader.line(node)
        record = state.nodes.get(node.id)
        nodes.append({"id": node.id, "status": line.status, "detail": line.detail,
                      "outcome": record.outcome if record else "",
                      "attempts": record.attempts if record else 0,
                      "forced": bool(record and record.forced)})
        if not node.terminal and not line.satisfied:
            unmet.append({"node": node.id, "status": line.status})
    return nodes, unmet


def _record(rng: random.Random) -> NodeRecord:
    exited = rng.choice(("", "2026-01-02T00:00:00Z"))
    return NodeRecord(attempts=rng.randrange(4), outcome=rng.choice(OUTCOMES),
                      entered_at=rng.choice(("", "2026-01-01T00:00:00Z")), exited_at=exited,
                      last_block=rng.choice(("", "no requirements.md yet")),
                      forced=rng.random() < 0.2)


def _state(rng: random.Random, number: int) -> ItemState:
    ids = [n.id for n in GRAPH.ordered()]
    state = ItemState(ref=WorkItemRef("acme", "widgets", number), loop=GRAPH.name,
                      current_node=rng.choice(["", *ids]), status=rng.choice(STATUSES))
    for node_id in rng.sample(ids, rng.randrange(len(ids))):
        state.nodes[node_id] = _record(rng)
    for node_id in rng.sample([*ids, "no-such-node"], rng.randrange(4)):
        state.skips[node_id] = Skip(rng.choice(("declaration", "selection")), node_id,
                                     "@bob", "r")
    for node_id in rng.sample([*ids, "no-such-node"], rng.randrange(4)):
        state.opt_ins[node_id] = OptIn("selection", "@alice")
    if state.current_node and rng.random() < 0.6:
        state.parked = Parked(rng.choice((state.current_node, ids[0])),
                              "waiting for a reply", blocked=rng.random() < 0.3)
    return state


STATES = [_state(random.Random(seed), seed) for seed in range(400)]


@pytest.mark.parametrize("recompute", [False, True])
def test_the_shortcut_gives_the_readers_lines_on_varied_states(recompute: bool) -> None:
    shortcuts = 0
    for state in STATES:
        got = report.build_report(GRAPH, state, recompute=recompute)
        assert (got["nodes"], got["unmet"]) == _slow(GRAPH, state, recompute), state.ref
        shortcuts += sum(1 for n in GRAPH.ordered() if n.id not in state.nodes)
    assert shortcuts > 1000  # the shortcut was taken, many times


def test_the_lines_are_fresh_per_report() -> None:
    state = STATES[0]
    first = report.build_report(GRAPH, state)
    first["nodes"][-1]["status"] = "changed by a caller"
    first["unmet"].clear()
    again = report.build_report(GRAPH, state)
    assert (again["nodes"], again["unmet"]) == _slow(GRAPH, state, False)


def test_a_new_graph_object_gets_its_own_lines() -> None:
    from engine.graph.compiler import compile_file, shipped_graph_path

    other = compile_file(shipped_graph_path())
    assert other is not GRAPH
    state = STATES[1]
    assert report.build_report(other, state)["nodes"] == _slow(other, state, False)[0]


def test_a_graph_with_a_repeated_id_asks_the_reader_for_every_node() -> None:
    from dataclasses import replace

    nodes = GRAPH.nodes
    twice = replace(GRAPH, nodes=(*nodes[:3], nodes[1], *nodes[3:]))  # not compiled: built
    for state in STATES[:50]:
        assert report.build_report(twice, state)["nodes"] == _slow(twice, state, False)[0]


@pytest.mark.parametrize("recompute", [False, True])
def test_compact_lines_are_the_full_lines_less_their_defaults(recompute: bool) -> None:
    # check --compact's lines built in the report (issue 21 §3) on the same varied states:
    # every key of the full line but those holding "", "", 0, false; everything else equal.
    dropped = kept = 0
    for state in STATES:
        full = report.build_report(GRAPH, state, recompute=recompute)
        small = report.build_report(GRAPH, state, recompute=recompute, compact=True)
        assert {k: v for k, v in small.items() if k not in ("nodes", "document")} == {
            k: v for k, v in full.items() if k not in ("nodes", "document")}
        for line, short in zip(full["nodes"], small["nodes"], strict=True):
            want = {k: v for k, v in line.items() if not (
                k in report.LINE_DEFAULTS and v == report.LINE_DEFAULTS[k]
                and type(v) is type(report.LINE_DEFAULTS[k]))}
            assert short == want and list(short) == list(want), state.ref
            assert short == report.compact_line(line)
            dropped += len(line) - len(short)
            kept += len(short) > 2
    assert dropped > 10_000 and kept > 500  # both kinds of line, many times
    small = report.build_report(GRAPH, STATES[0], compact=True)
    small["nodes"][-1]["status"] = "changed by a caller"
    assert report.build_report(GRAPH, STATES[0], compact=True)["nodes"][-1]["status"] != (
        "changed by a caller")


@pytest.mark.parametrize(("recompute", "compact"), [(False, False), (True, False),
                                                    (False, True), (True, True)])
def test_shared_reports_equal_the_copied_ones(recompute: bool, compact: bool) -> None:
    # check's reports share the graph's never-reached lines (issue 21 §3): the same values,
    # keys in the same order, and the graph's own dicts for the lines it did not decide.
    shared_lines = 0
    blank = report._blank(GRAPH)
    for state in STATES:
        copied = report.build_report(GRAPH, state, recompute=recompute, compact=compact)
        shared = report.build_report(GRAPH, state, recompute=recompute, compact=compact,
                                     shared=True)
        assert shared == copied, state.ref
        assert [list(n) for n in shared["nodes"]] == [list(n) for n in copied["nodes"]]
        pool = blank.compact if compact else blank.lines
        shared_lines += sum(1 for n in shared["nodes"] if any(n is b for b in pool))
    assert shared_lines > 1000


def test_unshared_lines_stay_fresh_after_a_shared_report() -> None:
    state = STATES[0]
    report.build_report(GRAPH, state, shared=True)
    first = report.build_report(GRAPH, state)
    first["nodes"][-1]["status"] = "changed by a caller"
    assert report.build_report(GRAPH, state, shared=True)["nodes"] == _slow(
        GRAPH, state, False)[0]
