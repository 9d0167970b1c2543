"""The compiled schema check's fused and dispatched shapes (issue 21 §4) give jsonschema's
answers: an array's type, minItems and items in one closure; a oneOf of options of
disjoint types run by the value's type; an object property of one plain type checked by
its class; a pattern check that remembers the strings it accepted; uniqueItems over
strings."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from engine.graph.fastcheck import compile_check

SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    {"type": "array", "items": {"type": "integer"}},
    {"type": "array"},
    {"oneOf": [{"type": "string", "minLength": 1},
               {"type": "array", "minItems": 1, "items": {"type": "string"}}]},
    {"oneOf": [{"$ref": "#/$defs/id"},
               {"type": "object", "additionalProperties": False, "required": ["hook"],
                "properties": {"hook": {"$ref": "#/$defs/id"}, "with": {"type": "object"}}}],
     "$defs": {"id": {"type": "string", "pattern": "^[a-z][a-z-]*$"}}},
    {"oneOf": [{"type": "boolean"}, {"type": "null"}, {"type": "string"}]},
    {"oneOf": [{"type": "string"}, {"type": "string", "minLength": 2}]},  # not disjoint
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},  # overlapping numbers
    {"type": "object", "additionalProperties": False,
     "properties": {"s": {"type": "string", "description": "x"}, "b": {"type": "boolean"},
                    "o": {"type": "object"}, "a": {"type": "array"}}},
    {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
    {"type": "array", "uniqueItems": True},
)
VALUES: tuple[Any, ...] = (
    None, True, False, 0, 1, 1.0, "", "a", "ab", "Ab", "a-b", [], [""], ["a"], ["a", "a"],
    ["a", "b"], ["a", 1], [1, 1.0], [1, True], [True, 1], [[1], [1]], [{"a": 1}, {"a": 1}],
    {}, {"hook": "a"}, {"hook": "A"}, {"hook": "a", "with": {}}, {"hook": "a", "with": []},
    {"hook": "a", "x": 1}, {"s": "x"}, {"s": 1}, {"b": True}, {"b": 1}, {"o": {}},
    {"o": []}, {"a": []}, {"a": {}}, {"s": "x", "b": False, "o": {"k": 1}, "a": [1]},
)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_each_shape_agrees_with_jsonschema(schema: dict[str, Any]) -> None:
    fast = compile_check(schema)
    assert fast is not None
    slow = jsonschema.Draft202012Validator(schema)
    for _ in range(2):  # the second round meets the strings the first one remembered
        for value in VALUES:
            assert fast(value) == slow.is_valid(value), (schema, value)


def test_a_remembered_string_is_forgotten_by_the_next_document() -> None:
    fast = compile_check({"type": "array", "items": {"type": "string", "pattern": "^a"}})
    assert fast is not None
    assert fast(["ab", "ac"]) and fast(["ab"])
    assert not fast(["ab", "b"]) and not fast(["b"])


class _Text(str):
    """A str subclass: not one of the exact types the oneOf dispatch reads."""


def test_a_str_subclass_takes_the_general_one_of() -> None:
    schema = {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "object"}]}
    fast = compile_check(schema)
    slow = jsonschema.Draft202012Validator(schema)
    assert fast is not None
    for value in (_Text("ab"), _Text("b"), "ab", "b"):
        assert fast(value) == slow.is_valid(value) == value.startswith("a")
