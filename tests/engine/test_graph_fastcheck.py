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

#: Values a mutation puts in place of another (wrong types, empty, look-alikes).
ODD_VALUES: tuple[Any, ...] = ("", "Not Kebab", "x", 0, -1, 1.5, True, None, [], {}, ["a"],
                               {"x": 1}, "pass", "human", 2.0)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _mutate(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    path = rng.choice(_paths(doc)[1:])
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    move = rng.randrange(3)
    if move == 0 and isinstance(parent, dict):
        del parent[last]
    elif move == 1 and isinstance(parent, dict):
        parent[f"{last}-extra"] = parent[last]
    else:
        parent[last] = rng.choice(ODD_VALUES)
    return doc


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
