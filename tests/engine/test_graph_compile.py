"""Compiler semantics (issue #2 §2): every refusal names its offender; opt-in; the on: trap."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
import yaml

from engine.errors import GraphConfigError
from engine.graph.compiler import compile_file, compile_graph, shipped_graph_path
from engine.graph.loader import load_yaml, undo_bool_keys
from engine.hooks.registry import HookRegistry, HookResult


def _noop(ctx: Any) -> HookResult:
    return HookResult.passed()


@pytest.fixture
def registry() -> HookRegistry:
    """A registry of its own, so these tests do not depend on the shipped hooks."""
    reg = HookRegistry()
    reg.register("check", _noop, ("validates", "sections"))
    reg.register("note", _noop, ("event",))
    reg.register("plain", _noop)
    return reg


def _doc(**top: Any) -> dict[str, Any]:
    """A small valid graph: a -> b (skippable) -> done, plus whatever ``top`` overrides."""
    doc: dict[str, Any] = {
        "version": 1,
        "name": "mini",
        "start": "a",
        "nodes": [
            {"id": "a", "actor": "agent", "exit": [{"hook": "check", "with": {"sections": ["S"]}}]},
            {"id": "b", "actor": "human", "skippable": True,
             "entry": ["plain", {"hook": "note", "with": {"event": "x"}}]},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        "edges": [
            {"from": "a", "to": "b", "on": "pass"},
            {"from": "b", "to": "done", "on": "approved"},
            {"from": "b", "to": "done", "on": "skipped"},
        ],
    }
    doc.update(top)
    return doc


def _node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n.get("id") == node_id)


def _refusal(doc: dict[str, Any], registry: HookRegistry) -> str:
    with pytest.raises(GraphConfigError) as info:
        compile_graph(doc, registry)
    return str(info.value)


# -- a valid graph ---------------------------------------------------------------------
def test_small_graph_compiles_with_defaults_and_params(registry: HookRegistry) -> None:
    graph = compile_graph(_doc(), registry)
    assert [n.id for n in graph.ordered()] == ["a", "b", "done"]
    a, b = graph.node("a"), graph.node("b")
    assert (a.actor, a.session, a.max_attempts, a.skippable) == ("agent", "new", 3, False)
    assert a.exit[0].name == "check" and a.exit[0].params["sections"] == ("S",)
    assert [h.name for h in b.entry] == ["plain", "note"] and dict(b.entry[1].params) == {
        "event": "x"
    }
    assert graph.route("b", "approved").target == "done"
    assert graph.warnings == ()


def test_compile_does_not_mutate_its_input(registry: HookRegistry) -> None:
    doc = _doc()
    before = copy.deepcopy(doc)
    compile_graph(doc, registry)
    assert doc == before


def test_cycles_are_legal(registry: HookRegistry) -> None:
    doc = _doc()
    doc["edges"].append({"from": "b", "to": "a", "on": "changes-requested"})
    graph = compile_graph(doc, registry)
    assert graph.route("b", "changes-requested").target == "a"


# -- refusals, each naming its offender -----------------------------------------------
def test_no_nodes_is_refused(registry: HookRegistry) -> None:
    message = _refusal(_doc(nodes=[], edges=[]), registry)
    assert "graph 'mini' declares no nodes" in message


def test_node_without_id_is_refused_by_position(registry: HookRegistry) -> None:
    doc = _doc()
    doc["nodes"].insert(1, {"actor": "agent"})
    assert "node #2 has no id" in _refusal(doc, registry)


def test_duplicate_id_is_refused(registry: HookRegistry) -> None:
    doc = _doc()
    doc["nodes"].append({"id": "b", "actor": "agent"})
    assert "node #4: duplicate id 'b'" in _refusal(doc, registry)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("actor", "robot", "node 'a': actor: 'robot' is not one of agent, human, code"),
        ("session", "fork", "node 'a': session: 'fork' is not one of new, inherit"),
    ],
)
def test_unknown_actor_or_session_is_refused(
    registry: HookRegistry, key: str, value: str, expected: str
) -> None:
    doc = _doc()
    _node(doc, "a")[key] = value
    assert expected in _refusal(doc, registry)


@pytest.mark.parametrize("entry", ["a.md|", "|b.md", "a.md|b.md|c.md", "a.md|a.md", " | "])
@pytest.mark.parametrize("key", ["produces", "validates"])
def test_malformed_artifact_alternative_is_refused(
    registry: HookRegistry, key: str, entry: str
) -> None:
    doc = _doc()
    _node(doc, "a")[key] = ["ok.md", entry]
    message = _refusal(doc, registry)
    assert f"node 'a': {key} {entry!r} is malformed" in message
    assert "exactly two different alternatives" in message


def test_artifact_alternatives_compile_to_tuples(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "a")["produces"] = "requirements.md|bugfix.md"
    _node(doc, "a")["validates"] = ["x.md", "y.md"]
    node = compile_graph(doc, registry).node("a")
    assert node.produces == (("requirements.md", "bugfix.md"),)
    assert node.validates == (("x.md",), ("y.md",))
    assert node.as_mapping()["produces"] == ["requirements.md|bugfix.md"]


def test_unknown_hook_is_refused_listing_registered_hooks(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "b")["entry"].append("sparkle")
    message = _refusal(doc, registry)
    assert "node 'b': entry hook 'sparkle' is not registered" in message
    assert "(registered hooks: check, note, plain)" in message


def test_unknown_with_key_is_refused_naming_hook_node_and_key(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "a")["exit"] = [{"hook": "check", "with": {"sections": ["S"], "lokced": True}}]
    message = _refusal(doc, registry)
    assert "node 'a': exit hook 'check' has no parameter 'lokced'" in message
    assert "(it accepts: sections, validates)" in message


def test_with_key_on_a_hook_without_parameters_is_refused(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "b")["entry"] = [{"hook": "plain", "with": {"x": 1}}]
    assert "hook 'plain' has no parameter 'x' (it accepts: no parameters)" in _refusal(
        doc, registry
    )


@pytest.mark.parametrize(("end", "index"), [("to", 0), ("from", 1)])
def test_edge_to_or_from_an_undeclared_node_is_refused(
    registry: HookRegistry, end: str, index: int
) -> None:
    doc = _doc()
    doc["edges"][index][end] = "nowhere"
    message = _refusal(doc, registry)
    assert f"edge #{index + 1} {{" in message
    assert f"{end} 'nowhere' is not a declared node" in message


def test_undeclared_start_is_refused(registry: HookRegistry) -> None:
    assert "start 'zero' is not a declared node" in _refusal(_doc(start="zero"), registry)


def test_required_and_opt_in_is_refused_first_saying_optIn(registry: HookRegistry) -> None:
    doc = _doc()
    # Also skippable and missing its skipped edge: the optIn refusal must still come first.
    _node(doc, "a").update(required=True, optIn=True, skippable=True)
    message = _refusal(doc, registry)
    assert "node 'a' is both required and optIn" in message
    assert "skippable" not in message


def test_required_and_skippable_is_refused(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "b")["required"] = True
    assert "node 'b' is both required and skippable" in _refusal(doc, registry)


def test_skippable_node_without_skipped_edge_says_which_edge_to_add(
    registry: HookRegistry,
) -> None:
    doc = _doc()
    _node(doc, "a")["skippable"] = True
    message = _refusal(doc, registry)
    assert "node 'a' is skippable but has no `on: skipped` edge of its own" in message
    assert "add {from: a, to: b, on: skipped}" in message


def test_human_gate_without_skipped_edge_points_at_its_approved_target(
    registry: HookRegistry,
) -> None:
    doc = _doc()
    doc["edges"] = [e for e in doc["edges"] if e["on"] != "skipped"]
    assert "add {from: b, to: done, on: skipped}" in _refusal(doc, registry)


def test_opt_in_node_without_skipped_edge_is_refused(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "a")["optIn"] = True
    message = _refusal(doc, registry)
    assert "node 'a' is opt-in (which implies skippable)" in message
    assert "add {from: a, to: b, on: skipped}" in message


def test_skip_set_member_that_is_not_skippable_is_refused(registry: HookRegistry) -> None:
    message = _refusal(_doc(skipSets={"early": ["b", "a"]}), registry)
    assert "skip set 'early': member 'a' is not a skippable node" in message


def test_skip_set_member_that_is_not_a_node_is_refused(registry: HookRegistry) -> None:
    message = _refusal(_doc(skipSets={"early": ["ghost"]}), registry)
    assert "skip set 'early': member 'ghost' is not a declared node" in message


def test_skip_set_member_that_is_opt_in_is_refused(registry: HookRegistry) -> None:
    doc = _doc(skipSets={"early": ["b", "a"]})
    _node(doc, "a")["optIn"] = True
    doc["edges"].append({"from": "a", "to": "b", "on": "skipped"})
    message = _refusal(doc, registry)
    assert "skip set 'early': member 'a' is opt-in" in message


def test_unknown_keys_are_refused_naming_the_node_or_graph(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "b")["skipable"] = True
    assert "node 'b': unknown key 'skipable'" in _refusal(doc, registry)
    assert "graph: unknown key 'nodez'" in _refusal(_doc(nodez=[]), registry)


def test_malformed_edge_is_named_by_position_and_content(registry: HookRegistry) -> None:
    doc = _doc()
    del doc["edges"][0]["to"]
    assert "edge #1 {from: a, on: pass}: 'to' is missing" in _refusal(doc, registry)


def test_malformed_hook_entry_names_the_node(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "b")["entry"] = [{"hook": "note", "params": {}}]
    assert "node 'b': entry[0]" in _refusal(doc, registry)


# -- opt-in ----------------------------------------------------------------------------
def test_opt_in_is_parsed_and_implies_skippable(registry: HookRegistry) -> None:
    doc = _doc()
    _node(doc, "a").update(optIn=True, description="an extra\n  review")
    doc["edges"].append({"from": "a", "to": "b", "on": "skipped"})
    node = compile_graph(doc, registry).node("a")
    assert (node.opt_in, node.skippable, node.required) == (True, True, False)
    assert node.description == "an extra review"
    assert node.as_mapping()["optIn"] is True


# -- YAML ------------------------------------------------------------------------------
_YAML = """\
version: 1
name: mini
start: a
nodes:
  - id: a
    exit: [{hook: note, with: {event: on}}]
  - {id: done, terminal: true}
edges:
  - {from: a, to: done, on: pass}
  - from: a
    to: done
    on: approved
"""


def test_loader_keeps_on_a_string_key_and_value() -> None:
    doc = load_yaml(_YAML)
    assert doc["edges"][0] == {"from": "a", "to": "done", "on": "pass"}
    assert doc["edges"][1]["on"] == "approved"
    assert doc["nodes"][0]["exit"][0]["with"] == {"event": "on"}
    assert load_yaml("{off: no, yes: true, t: True, f: false}") == {
        "off": "no", "yes": True, "t": True, "f": False
    }


def test_yaml_on_trap_is_undone_in_a_compiled_file(registry: HookRegistry, tmp_path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(_YAML, encoding="utf-8")
    graph = compile_file(path, registry)
    assert [(e.source, e.target, e.outcome) for e in graph.edges] == [
        ("a", "done", "pass"), ("a", "done", "approved")
    ]


def test_a_yaml_1_1_mapping_with_true_keys_still_compiles(registry: HookRegistry) -> None:
    plain = yaml.safe_load(_YAML)
    assert True in plain["edges"][0]  # the trap, as PyYAML's SafeLoader springs it
    # Keys can be mended after the fact; values cannot (`event: on` stays True there),
    # which is why files are read with the loader that never springs it.
    assert undo_bool_keys(plain)["edges"] == load_yaml(_YAML)["edges"]
    graph = compile_graph(plain, registry)
    assert graph.route("a", "pass").target == "done"


def test_yes_is_not_a_boolean_so_it_is_refused_as_a_flag(registry: HookRegistry) -> None:
    text = _YAML.replace("  - {id: done, terminal: true}", "  - {id: done, terminal: yes}")
    with pytest.raises(GraphConfigError, match="node 'done': terminal: 'yes' should be"):
        compile_graph(load_yaml(text), registry)


def test_a_repeated_yaml_key_is_refused(registry: HookRegistry, tmp_path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text(_YAML + "start: done\n", encoding="utf-8")
    with pytest.raises(GraphConfigError, match="found the key 'start' twice"):
        compile_file(path, registry)


def test_an_unreadable_file_is_refused_naming_it(registry: HookRegistry, tmp_path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(GraphConfigError, match="absent.yaml: cannot read the graph file"):
        compile_file(missing, registry)


# -- warnings --------------------------------------------------------------------------
def test_duplicate_from_on_pair_is_a_warning_and_the_first_edge_wins(
    registry: HookRegistry,
) -> None:
    doc = _doc()
    doc["edges"].append({"from": "a", "to": "done", "on": "pass"})
    graph = compile_graph(doc, registry)
    assert graph.route("a", "pass").target == "b"
    assert len(graph.warnings) == 1
    assert "edge #4 {from: a, to: done, on: pass} repeats (from a, on pass)" in graph.warnings[0]
    assert "the first edge wins" in graph.warnings[0]


def test_an_unknown_outcome_is_refused_naming_the_edge(registry: HookRegistry) -> None:
    doc = _doc()
    doc["edges"].append({"from": "a", "to": "b", "on": "aproved"})
    with pytest.raises(GraphConfigError) as err:
        compile_graph(doc, registry)
    assert "{from: a, to: b, on: aproved}" in str(err.value)
    assert "'aproved' is not an outcome" in str(err.value)


def test_a_dead_end_is_a_warning(registry: HookRegistry) -> None:
    doc = _doc()
    doc["nodes"].insert(2, {"id": "stuck", "actor": "agent"})
    doc["edges"].append({"from": "a", "to": "stuck", "on": "approved"})
    warnings = compile_graph(doc, registry).warnings
    assert any("node 'stuck' is not terminal but no edge leaves it" in w for w in warnings)


# -- immutability ----------------------------------------------------------------------
def test_compiled_graph_is_immutable(registry: HookRegistry) -> None:
    graph = compile_graph(_doc(skipSets={"later": ["b"]}), registry)
    with pytest.raises(dataclasses.FrozenInstanceError):
        graph.start = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        graph.node("a").skippable = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        graph.skip_sets["later"] = ("a",)  # type: ignore[index]
    with pytest.raises(TypeError):
        graph.node("b").entry[1].params["event"] = "y"  # type: ignore[index]
    assert isinstance(graph.nodes, tuple) and isinstance(graph.skip_sets["later"], tuple)
    assert isinstance(graph.node("a").exit[0].params["sections"], tuple)


def test_unknown_shipped_graph_name_lists_the_shipped_ones() -> None:
    with pytest.raises(GraphConfigError, match=r"no shipped graph is named 'nope' \(shipped: "):
        shipped_graph_path("nope")
    with pytest.raises(GraphConfigError):
        shipped_graph_path("../graphs/pdlc-work-item-loop")
