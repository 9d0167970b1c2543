"""Random one-step mutations of a JSON document, for tests that hold a compiled schema
check to jsonschema's answers (graph files, issue 21 §4; loopgate.yaml, issue 21 §3)."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

__all__ = ["paths", "mutate"]


def paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (dict keys and list indexes), the root ``()`` first."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*path, i))
    return out


def mutate(doc: dict[str, Any], rng: random.Random, odd_values: Sequence[Any],
           extra_suffix: str) -> dict[str, Any]:
    """A deep copy of ``doc`` with one random change at one random path: the key removed,
    a sibling key ``<key><extra_suffix>`` added with the same value, or the value replaced
    by one of ``odd_values``."""
    doc = copy.deepcopy(doc)
    path = rng.choice(paths(doc)[1:])
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    move = rng.randrange(3)
    if move == 0 and isinstance(parent, dict):
        del parent[last]
    elif move == 1 and isinstance(parent, dict):
        parent[f"{last}{extra_suffix}"] = parent[last]
    else:
        parent[last] = rng.choice(odd_values)
    return doc
