"""Loading a graph file: YAML without the ``on:`` trap, then the JSON-Schema structure check.

YAML 1.1 (what PyYAML implements) reads ``on``, ``off``, ``yes`` and ``no`` as booleans,
so the edge ``{from: a, to: b, on: pass}`` would load with the key ``True``. The
:class:`GraphLoader` here resolves only ``true``/``false`` as booleans (the YAML 1.2 core
rule), which keeps ``on:`` a string wherever it appears (edges, and hook parameters such
as ``post-quiz-attestation``'s ``on: ticket``). It also refuses a key repeated in one
mapping, which PyYAML would otherwise resolve silently to the last value.

Structure is checked against ``graphs/graph.schema.json`` (package data, read through
:mod:`importlib.resources`): a compiled yes/no check (:mod:`engine.graph.fastcheck`)
accepts a valid document in a fraction of a millisecond, and ``jsonschema`` words every
refusal; the semantic checks live in :mod:`engine.graph.compiler`.
Every failure raises :class:`~engine.errors.GraphConfigError` naming the node (by id, or
by position when it has none), the edge or the skip set.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

import yaml

from engine.errors import GraphConfigError
from engine.graph.fastcheck import Check, compile_check

if TYPE_CHECKING:  # imported only to word a refusal: a valid graph never needs it
    import jsonschema
    from jsonschema.exceptions import ValidationError

__all__ = [
    "GraphLoader",
    "load_yaml",
    "load_file",
    "graph_schema",
    "validate_structure",
    "undo_bool_keys",
    "has_bool_keys",
    "valid_as_given",
]

_BOOL_TAG = "tag:yaml.org,2002:bool"
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class GraphLoader(yaml.SafeLoader):
    """A SafeLoader for graph files: only ``true``/``false`` are booleans; no repeated keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Build a mapping, refusing a key that appears twice in it.

        Raises:
            yaml.constructor.ConstructorError: a repeated key (with its line).
        """
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                continue  # an unhashable key fails in the base constructor with its own message
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found the key {key!r} twice", key_node.start_mark,
                )
            seen.add(key)
        # SafeConstructor's by name, not super(): _CGraphLoader borrows this method.
        return yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)


# Copy the resolver table without the YAML 1.1 bool rule, then add the narrow one. The
# lists are fresh copies, so yaml.SafeLoader itself is untouched.
GraphLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
GraphLoader.add_implicit_resolver(_BOOL_TAG, _BOOL_RE, list("tTfF"))

#: libyaml's parser (``yaml.CSafeLoader``) with GraphLoader's rules, where PyYAML was built
#: with it: about 10x the pure-Python parser (issue 21 §4). Any error is worded by the
#: pure-Python GraphLoader instead (its messages quote the offending line).
_FastLoader: type | None = None
if getattr(yaml, "__with_libyaml__", False):
    class _CGraphLoader(yaml.CSafeLoader):
        construct_mapping = GraphLoader.construct_mapping
        yaml_implicit_resolvers = GraphLoader.yaml_implicit_resolvers

    _FastLoader = _CGraphLoader


def load_yaml(text: str, source: str = "<graph>") -> Any:
    """Parse graph YAML text with :class:`GraphLoader`.

    Args:
        text: the YAML document.
        source: where it came from, for messages (a path or ``<graph>``).

    Returns:
        The parsed document (for a valid file, a mapping).

    Raises:
        GraphConfigError: the text is not valid YAML (the message gives the line).
    """
    if _FastLoader is not None:
        try:
            return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a CSafeLoader
        except yaml.YAMLError:
            pass  # worded below by the pure-Python loader
    try:
        return yaml.load(text, Loader=GraphLoader)  # noqa: S506 - GraphLoader is a SafeLoader
    except yaml.YAMLError as exc:
        raise GraphConfigError(f"{source}: not valid YAML: {exc}") from None


def load_file(path: str | os.PathLike[str] | Traversable) -> Any:
    """Read and parse a graph file (a filesystem path or a package resource).

    Raises:
        GraphConfigError: the file cannot be read or is not valid YAML.
    """
    try:
        if isinstance(path, Traversable) and not isinstance(path, os.PathLike):
            text = path.read_text(encoding="utf-8")
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise GraphConfigError(f"{path}: cannot read the graph file: {exc}") from None
    return load_yaml(text, str(path))


def undo_bool_keys(value: Any) -> Any:
    """Return ``value`` with boolean mapping keys turned back into ``on``/``off``.

    For documents parsed by another YAML loader (``yaml.safe_load``), where ``on:`` became
    the key ``True``. A copy is returned; the input is not modified.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # the common leaves, without the abstract-class checks below
    if kind is dict:  # what YAML gives: no abstract-class checks (issue 21 §4)
        return {("on" if k else "off") if type(k) is bool else k: undo_bool_keys(v)
                for k, v in value.items()}
    if kind is list:
        return [undo_bool_keys(item) for item in value]
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, bool):
                key = "on" if key else "off"
            out[key] = undo_bool_keys(item)
        return out
    if isinstance(value, list | tuple):
        return [undo_bool_keys(item) for item in value]
    return value


def has_bool_keys(value: Any) -> bool:
    """True when :func:`undo_bool_keys` would change ``value``: a boolean mapping key
    anywhere, or a container other than ``dict`` and ``list`` (which it copies into those).
    False for what :class:`GraphLoader` gives, which then needs no copy (issue 21 §4)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or kind is float or item is None:
            continue
        if kind is dict:
            for key in item:
                if type(key) is bool:
                    return True
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif isinstance(item, Mapping | list | tuple):
            return True  # another container: undo_bool_keys copies it into a dict or list
    return False


@lru_cache(maxsize=1)
def graph_schema() -> dict[str, Any]:
    """The JSON Schema of graph files (``graphs/graph.schema.json``, package data)."""
    text = resources.files("graphs").joinpath("graph.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # issue 21 §3: a tenth of the CLI's start-up, for refusals only

    return jsonschema.Draft202012Validator(graph_schema())


@lru_cache(maxsize=1)
def _fast_check() -> Check | None:
    return compile_check(graph_schema())


def valid_as_given(document: Any) -> bool:
    """True when ``document`` passes the compiled schema check as it is and
    :func:`undo_bool_keys` would not change it, so it needs neither the copy nor a second
    check (issue 21 §4). Such a document's only free-form mappings are hooks' ``with:``
    (every other object lists its keys, and skip set names must be strings), so only they
    are searched for boolean keys. False whenever unsure: the caller takes the full path."""
    fast = _fast_check()
    if fast is None or type(document) is not dict or not fast(document):
        return False
    for node in document["nodes"]:
        for chain in ("entry", "exit"):
            if chain not in node:
                continue
            for hook in node[chain]:
                if type(hook) is dict and "with" in hook and _with_has_bool_keys(hook["with"]):
                    return False
    return True


def _with_has_bool_keys(params: Any) -> bool:
    """:func:`has_bool_keys` of a hook's ``with:``, its string, boolean and integer values
    read here without the general walk (issue 21 §4)."""
    if type(params) is not dict:
        return has_bool_keys(params)
    for key, value in params.items():
        if type(key) is bool:
            return True
        kind = type(value)
        if kind is str or kind is bool or kind is int:
            continue
        if kind is list and all(type(x) is str for x in value):
            continue
        if has_bool_keys(value):
            return True
    return False


def validate_structure(document: Any, source: str = "<graph>") -> None:
    """Check ``document`` against the graph schema.

    Args:
        document: the parsed graph file.
        source: where it came from, for messages.

    Raises:
        GraphConfigError: the first structural problem (in document order), naming the
            node, edge or skip set it is in.
    """
    if not isinstance(document, Mapping):
        raise GraphConfigError(f"{source}: a graph file must be a mapping at the top level")
    fast = _fast_check()
    if fast is not None and fast(document):
        return  # valid; anything else is jsonschema's to word (issue 21 §4)
    errors = sorted(_validator().iter_errors(document), key=lambda e: _path_key(e.absolute_path))
    if not errors:
        return
    from jsonschema.exceptions import best_match

    error = best_match([errors[0]])
    raise GraphConfigError(f"{source}: {_describe(error, document)}")


def _path_key(path: Sequence[Any]) -> list[tuple[int, Any]]:
    return [(0, p) if isinstance(p, int) else (1, str(p)) for p in path]


def _describe(error: ValidationError, document: Mapping[str, Any]) -> str:
    path = list(error.absolute_path)
    where, rest = _locate(path, document)
    if error.validator == "required" and path[:1] == ["nodes"] and len(path) == 2:
        if "id" not in (error.instance or {}):
            return f"node #{path[1] + 1} has no id"
    what = _what(error)
    field = _render_path(rest)
    return f"{where}: {field}: {what}" if field else f"{where}: {what}"


def _locate(path: list[Any], document: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """Name the graph element ``path`` points into; return it and the remaining path."""
    if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
        return _node_label(document, path[1]), path[2:]
    if len(path) >= 2 and path[0] == "edges" and isinstance(path[1], int):
        return _edge_label(document, path[1]), path[2:]
    if len(path) >= 2 and path[0] == "skipSets":
        return f"skip set {path[1]!r}", path[2:]
    return "graph", path


def _node_label(document: Mapping[str, Any], index: int) -> str:
    node = _item(document.get("nodes"), index)
    node_id = node.get("id") if isinstance(node, Mapping) else None
    if isinstance(node_id, str) and node_id:
        return f"node {node_id!r}"
    return f"node #{index + 1} (no id)"


def _edge_label(document: Mapping[str, Any], index: int) -> str:
    edge = _item(document.get("edges"), index)
    if not isinstance(edge, Mapping):
        return f"edge #{index + 1}"
    parts = ", ".join(f"{k}: {edge[k]}" for k in ("from", "to", "on") if k in edge)
    return f"edge #{index + 1} {{{parts}}}"


def _item(seq: Any, index: int) -> Any:
    if isinstance(seq, list) and 0 <= index < len(seq):
        return seq[index]
    return None


def _render_path(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _what(error: ValidationError) -> str:
    value = error.instance
    if error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in value if k not in allowed)
        return f"unknown key {', '.join(repr(k) for k in extra)}"
    if error.validator == "required":
        return str(error.message).replace("is a required property", "is missing")
    if error.validator == "enum":
        choices = ", ".join(str(c) for c in error.validator_value)
        return f"{value!r} is not one of {choices}"
    if error.validator == "pattern":
        return f"{value!r} is not a kebab-case name"
    if error.validator == "type":
        return f"{value!r} should be of type {error.validator_value}"
    return str(error.message)
