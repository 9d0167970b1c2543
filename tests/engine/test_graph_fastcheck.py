"""The compiled graph-schema check (issue 21 §4) never accepts what jsonschema refuses, and
the libyaml loader reads graph files exactly as the pure-Python GraphLoader does."""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema
import pytest
import yaml

from engine.graph import loader
from engine.graph.compiler import shipped_graph_names, shipped_graph_path
from engine.graph.fastcheck import compile_check
from engine.graph.loader import GraphLoader, graph_schema, load_file, load_yaml
from tests.schema_mutations import mutate, paths

#: Values a mutation puts in place of another (wrong types, empty, look-alikes).
ODD_VALUES: tuple[Any, ...] = ("", "Not Kebab", "x", 0, -1, 1.5, True, None, [], {}, ["a"],
                               {"x": 1}, "pass", "human", 2.0)


def _mutate(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return mutate(doc, rng, ODD_VALUES, "-extra")


@pytest.mark.parametrize("name", shipped_graph_names())
def test_the_fast_check_agrees_with_jsonschema_on_mutated_graphs(name: str) -> None:
    fast = compile_check(graph_schema())
    assert fast is not None
    slow = jsonschema.Draft202012Validator(graph_schema())
    base = load_file(shipped_graph_path(name))
    assert fast(base) and slow.is_valid(base)
    rng = random.Random(21)
    refused = 0
    for _ in range(250):
        doc = _mutate(base, rng)
        assert fast(doc) == slow.is_valid(doc), doc
        refused += not slow.is_valid(doc)
    assert refused > 50  # the mutations do reach refusals


def test_a_schema_keyword_it_does_not_know_turns_the_fast_path_off() -> None:
    assert compile_check({"type": "object", "if": {"required": ["a"]}}) is None
    assert compile_check({"$ref": "https://example.invalid/other.json"}) is None
    check = compile_check({"type": "integer", "minimum": 1})
    assert check is not None and check(2) and check(2.0) and not check(True)


def test_the_libyaml_loader_reads_graphs_as_graph_loader_does() -> None:
    if loader._FastLoader is None:
        pytest.skip("PyYAML without libyaml")
    for name in shipped_graph_names():
        text = shipped_graph_path(name).read_text("utf-8")
        fast = yaml.load(text, Loader=loader._FastLoader)  # noqa: S506 - a CSafeLoader
        assert fast == yaml.load(text, Loader=GraphLoader)  # noqa: S506
    text = "edges:\n  - {from: a, to: b, on: pass}\nflag: yes\n"
    assert load_yaml(text) == {"edges": [{"from": "a", "to": "b", "on": "pass"}], "flag": "yes"}


def test_a_refusal_is_worded_by_the_pure_python_loader() -> None:
    with pytest.raises(Exception) as fast:
        load_yaml("a: 1\na: 2\n", "g.yaml")
    with pytest.raises(yaml.YAMLError) as slow:
        yaml.load("a: 1\na: 2\n", Loader=GraphLoader)  # noqa: S506
    assert str(fast.value) == f"g.yaml: not valid YAML: {slow.value}"
    assert "found the key 'a' twice" in str(fast.value) and "line 2" in str(fast.value)


#: Schemas using what the compiled check fuses or specialises: an object's properties,
#: additionalProperties (false, a schema, absent) and required in one pass; one type name.
SMALL_SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "object", "additionalProperties": False, "required": ["a"],
     "properties": {"a": {"type": "integer", "minimum": 1}, "b": {"type": "boolean"}}},
    {"type": "object", "additionalProperties": {"type": "string"},
     "properties": {"a": {"type": "null"}}},
    {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "number"}}},
    {"type": "object"},
    {"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"},
    {"type": ["integer", "string"]},
)
SMALL_VALUES: tuple[Any, ...] = (
    None, True, False, 0, 1, 2, 1.0, 1.5, "", "x", [], [1], {}, {"a": 1}, {"a": True},
    {"a": 1, "b": False}, {"a": 1, "b": 0}, {"a": 1, "c": "x"}, {"a": None, "c": "x"},
    {"a": None, "c": 1}, {"b": True}, {1: "x", "a": 2}, {True: "x", "a": 2}, {"a": 1.0},
    {"a": 0.5, "b": 1}, {"a": None},
)


@pytest.mark.parametrize("schema", SMALL_SCHEMAS)
def test_the_fused_object_and_type_checks_agree_with_jsonschema(schema: dict[str, Any]) -> None:
    fast = compile_check(schema)
    assert fast is not None
    slow = jsonschema.Draft202012Validator(schema)
    for value in SMALL_VALUES:
        try:
            expected = slow.is_valid(value)
        except TypeError:  # jsonschema's own failure on a non-string key: not a graph file
            continue
        assert fast(value) == expected, (schema, value)


@pytest.mark.parametrize("name", shipped_graph_names())
def test_has_bool_keys_says_when_undo_bool_keys_changes_a_document(name: str) -> None:
    base = load_file(shipped_graph_path(name))
    assert not loader.has_bool_keys(base) and loader.undo_bool_keys(base) == base
    rng = random.Random(4)
    for _ in range(100):  # a True/False key, or a tuple, somewhere in the document
        doc = copy.deepcopy(base)
        path = rng.choice([p for p in paths(doc)[1:] if isinstance(p[-1], str)])
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        if rng.random() < 0.5:
            parent[rng.choice((True, False))] = parent.pop(path[-1])
        else:
            parent[path[-1]] = tuple(parent[path[-1]]) if isinstance(
                parent[path[-1]], list) else (parent[path[-1]],)
        assert loader.has_bool_keys(doc)
        assert loader.undo_bool_keys(doc) != doc or any(
            isinstance(v, tuple) for v in parent.values())


def test_a_node_built_without_its_init_equals_one_built_with_it() -> None:
    from dataclasses import fields

    from engine.graph import compiler
    from engine.graph.model import Node

    graph = compiler.compile_file(shipped_graph_path())
    assert compiler._NODE_FIELDS == {f.name for f in fields(Node)}
    for node in graph.nodes:
        assert type(node) is Node
        assert set(vars(node)) == compiler._NODE_FIELDS
        assert node == Node(**{f.name: getattr(node, f.name) for f in fields(Node)})
        with pytest.raises(AttributeError):
            node.id = "changed"  # type: ignore[misc]  # still frozen


@pytest.mark.parametrize("name", shipped_graph_names())
def test_valid_as_given_only_for_documents_the_full_path_accepts_unchanged(name: str) -> None:
    base = load_file(shipped_graph_path(name))
    assert loader.valid_as_given(base)
    slow = jsonschema.Draft202012Validator(graph_schema())
    rng = random.Random(5)
    given = 0
    for i in range(300):
        doc = _mutate(base, rng)
        if i % 3 == 0:  # a boolean key inside some hook's with: (the only free-form place)
            hooks = [h for n in doc.get("nodes") or [] if isinstance(n, dict)
                     for c in ("entry", "exit") for h in (n.get(c) or [])
                     if isinstance(h, dict) and isinstance(h.get("with"), dict)]
            if hooks:
                rng.choice(hooks)["with"][rng.choice((True, False))] = "x"
        if loader.valid_as_given(doc):
            given += 1
            assert loader.undo_bool_keys(doc) == doc and not loader.has_bool_keys(doc)
            assert slow.is_valid(doc)
    assert given > 50
