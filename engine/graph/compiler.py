"""Compile a graph document into the frozen :class:`~engine.graph.model.Graph`.

Structure is checked first by the JSON Schema (:mod:`engine.graph.loader`); the meaning
is checked here by small ``_check_*`` functions run in the fixed order of ``_CHECKS``.
Each refusal raises :class:`~engine.errors.GraphConfigError` whose message names the
offending node, edge or skip set (issue #2 §2). Findings that do not stop a graph
(a repeated ``(from, on)`` pair, a dead end, ...) become ``Graph.warnings``.

Rules (issue #2 §2; opt-in design "model.py — the vocabulary"):

* ``optIn: true`` implies ``skippable``; ``required`` + ``optIn`` is refused before
  ``required`` + ``skippable`` so the message names the marker the author wrote.
* Every skippable node (opt-in ones included) declares its own ``on: skipped`` edge.
* Skip-set members are declared, skippable, and not opt-in.
* ``produces``/``validates`` entries are one name or exactly two alternatives ``a|b``
  ("exactly one of two names"); more than two alternatives are refused, so the gate's
  rule stays "one of these two", never a longer list nobody reviews.
* Hooks must be registered, and every ``with:`` key must be one the hook accepts.
* The first edge of a repeated ``(from, on)`` pair wins; cycles are legal.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Any, NoReturn

from engine import outcomes
from engine.errors import GraphConfigError
from engine.graph.loader import (
    has_bool_keys,
    load_file,
    undo_bool_keys,
    valid_as_given,
    validate_structure,
)
from engine.graph.model import Edge, Graph, HookRef, Node, frozen_mapping
from engine.hooks.registry import REGISTRY, HookRegistry

__all__ = [
    "DEFAULT_GRAPH",
    "compile_graph",
    "compile_file",
    "shipped_graph",
    "shipped_graph_path",
    "shipped_graph_names",
]

DEFAULT_GRAPH = "pdlc-work-item-loop"
_CHAINS = ("entry", "exit")
_SHIPPED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@dataclass
class _Doc:
    """The document under compilation plus where it came from (for messages)."""

    data: Mapping[str, Any]
    source: str
    registry: HookRegistry
    warnings: list[str] = field(default_factory=list)
    #: each ``produces``/``validates`` entry met by :func:`_check_artifact_names` -> its
    #: alternatives, so the build splits no entry a second time
    alternatives: dict[str, tuple[str, ...]] = field(default_factory=dict)

    # Read once per compile, not once per check (issue 21 §4); no check changes them.
    @functools.cached_property
    def nodes(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("nodes") or [])

    @functools.cached_property
    def edges(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("edges") or [])

    @property
    def skip_sets(self) -> Mapping[str, list[str]]:
        return self.data.get("skipSets") or {}

    @functools.cached_property
    def _ids(self) -> dict[str, Mapping[str, Any]]:
        return {n["id"]: n for n in self.nodes}

    def ids(self) -> dict[str, Mapping[str, Any]]:
        return self._ids

    def refuse(self, message: str) -> NoReturn:
        raise GraphConfigError(f"{self.source}: {message}")


def _is_skippable(node: Mapping[str, Any]) -> bool:
    return bool(node.get("skippable")) or bool(node.get("optIn"))


def _edge_text(index: int, edge: Mapping[str, Any]) -> str:
    return f"edge #{index + 1} {{from: {edge['from']}, to: {edge['to']}, on: {edge['on']}}}"


# -- refusals, in order ----------------------------------------------------------------
def _check_has_nodes(doc: _Doc) -> None:
    if not doc.nodes:
        doc.refuse(f"graph {doc.data.get('name')!r} declares no nodes")


def _check_unique_ids(doc: _Doc) -> None:
    seen: set[str] = set()
    for index, node in enumerate(doc.nodes):
        if node["id"] in seen:
            doc.refuse(f"node #{index + 1}: duplicate id {node['id']!r}")
        seen.add(node["id"])


def _check_start_declared(doc: _Doc) -> None:
    if doc.data["start"] not in doc.ids():
        doc.refuse(f"start {doc.data['start']!r} is not a declared node")


def _check_opt_in_not_required(doc: _Doc) -> None:
    for node in doc.nodes:
        if node.get("required") and node.get("optIn"):
            doc.refuse(
                f"node {node['id']!r} is both required and optIn: an optIn node is off "
                "unless ticked at phase-selection, a required node always runs; drop one"
            )


def _check_required_not_skippable(doc: _Doc) -> None:
    for node in doc.nodes:
        if node.get("required") and node.get("skippable"):
            doc.refuse(f"node {node['id']!r} is both required and skippable; drop one")


def _check_artifact_names(doc: _Doc) -> None:
    split = doc.alternatives
    for node in doc.nodes:
        for key in ("produces", "validates"):
            if key not in node:
                continue
            for entry in _as_list(node[key]):
                if entry in split:
                    continue
                names = _split_alternatives(entry)
                if names is None:
                    doc.refuse(
                        f"node {node['id']!r}: {key} {entry!r} is malformed: give one name "
                        "or exactly two different alternatives 'a.md|b.md'"
                    )
                split[entry] = names


def _check_hooks(doc: _Doc) -> None:
    """Every hook is registered, then every ``with:`` key is one its hook accepts.

    One pass over the hook uses (issue 21 §4): an unregistered hook is refused where it is
    met; the first unknown parameter is refused only after the pass, since any unregistered
    hook, even a later one, is refused before it (the order of the two checks this was)."""
    accepts: dict[str, frozenset[str]] = {}  # hook name -> its parameters, looked up once
    bad_param: tuple[Mapping[str, Any], str, str, str] | None = None
    for node in doc.nodes:
        for chain in _CHAINS:
            if chain not in node:
                continue
            for item in node[chain] or ():
                if type(item) is str and item in accepts:
                    continue  # a plain use of a hook already looked up: nothing to check
                if isinstance(item, str):
                    name, params = item, _NO_PARAMS
                else:
                    name, params = item["hook"], item.get("with") or _NO_PARAMS
                accepted = accepts.get(name) or _hook_params(doc, accepts, node, chain, name)
                if bad_param is None and not accepted.issuperset(params):
                    key = next(k for k in params if k not in accepted)
                    bad_param = (node, chain, name, key)
    if bad_param is not None:
        node, chain, name, key = bad_param
        accepted = accepts[name]
        takes = ", ".join(sorted(accepted)) if accepted else "no parameters"
        doc.refuse(
            f"node {node['id']!r}: {chain} hook {name!r} has no parameter "
            f"{key!r} (it accepts: {takes})"
        )


def _hook_params(doc: _Doc, accepts: dict[str, frozenset[str]], node: Mapping[str, Any],
                 chain: str, name: str) -> frozenset[str]:
    """The ``with:`` keys hook ``name`` accepts, kept in ``accepts``; refuses an
    unregistered hook, naming the node and chain that use it."""
    accepted = accepts.get(name)
    if accepted is None:
        if name not in doc.registry:
            known = ", ".join(doc.registry.names()) or "none"
            doc.refuse(
                f"node {node['id']!r}: {chain} hook {name!r} is not registered "
                f"(registered hooks: {known})"
            )
        accepted = accepts[name] = doc.registry.get(name).params
    return accepted


def _check_edges_declared(doc: _Doc) -> None:
    ids = doc.ids()
    for index, edge in enumerate(doc.edges):
        for end in ("from", "to"):
            if edge[end] not in ids:
                doc.refuse(
                    f"{_edge_text(index, edge)}: {end} {edge[end]!r} is not a declared node"
                )


def _check_skipped_edges(doc: _Doc) -> None:
    sources = {e["from"] for e in doc.edges if e["on"] == outcomes.SKIPPED}
    for node in doc.nodes:
        if not (node.get("skippable") or node.get("optIn")) or node["id"] in sources:
            continue  # (_is_skippable, inline: once per node per compile)
        kind = "opt-in (which implies skippable)" if node.get("optIn") else "skippable"
        target = _suggest_skip_target(doc, node["id"])
        doc.refuse(
            f"node {node['id']!r} is {kind} but has no `on: skipped` edge of its own: "
            f"add {{from: {node['id']}, to: {target}, on: skipped}}"
        )


def _check_skip_sets(doc: _Doc) -> None:
    ids = doc.ids()
    for name, members in doc.skip_sets.items():
        for member in members:
            node = ids.get(member)
            if node is None:
                doc.refuse(f"skip set {name!r}: member {member!r} is not a declared node")
            elif not _is_skippable(node):
                doc.refuse(
                    f"skip set {name!r}: member {member!r} is not a skippable node "
                    "(mark it skippable: true or take it out of the set)"
                )
            elif node.get("optIn"):
                doc.refuse(
                    f"skip set {name!r}: member {member!r} is opt-in: it is already off "
                    "unless ticked at phase-selection, so a skip set cannot hold it"
                )


# -- warnings --------------------------------------------------------------------------
def _warn_duplicate_routes(doc: _Doc) -> None:
    first: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
    for index, edge in enumerate(doc.edges):
        key = (edge["from"], edge["on"])
        if key not in first:
            first[key] = (index, edge)
            continue
        kept_index, kept = first[key]
        doc.warnings.append(
            f"{_edge_text(index, edge)} repeats (from {edge['from']}, on {edge['on']}) of "
            f"{_edge_text(kept_index, kept)}: the first edge wins, this one is ignored"
        )


def _check_known_outcomes(doc: _Doc) -> None:
    # An edge on an outcome no hook returns can never be taken: almost always a typo
    # (`on: pas`), which would leave its node without the edge the author meant.
    for index, edge in enumerate(doc.edges):
        if edge["on"] not in outcomes.ALL_OUTCOMES:
            raise GraphConfigError(
                f"{_edge_text(index, edge)}: {edge['on']!r} is not an outcome "
                f"(one of {', '.join(outcomes.ALL_OUTCOMES)})"
            )


def _warn_dead_ends(doc: _Doc) -> None:
    sources = {e["from"] for e in doc.edges}
    for node in doc.nodes:
        if not node.get("terminal") and node["id"] not in sources:
            doc.warnings.append(
                f"node {node['id']!r} is not terminal but no edge leaves it: "
                "a work item reaching it stops there"
            )


def _warn_opt_in_without_description(doc: _Doc) -> None:
    for node in doc.nodes:
        if node.get("optIn") and not str(node.get("description") or "").strip():
            doc.warnings.append(
                f"node {node['id']!r} is opt-in but has no description for its checklist row"
            )


def _warn_set_shadows_node(doc: _Doc) -> None:
    ids = doc.ids()
    for name in doc.skip_sets:
        if name in ids:
            doc.warnings.append(
                f"skip set {name!r} has the name of a node: as a skip token the set wins, "
                "so the node cannot be named on its own"
            )


def _check_approval_rules(doc: _Doc) -> None:
    # Issue 11 §2: a rule belongs to a human gate, and must read as one.
    for node in doc.nodes:
        if "approval" not in node:
            continue
        # imported here, and only for a node with a rule: two imports per compile were
        # 1% of compile-only (issue 21 §4)
        from engine.approvals import ApprovalRule, rule_problem
        from engine.errors import ConfigError

        if node.get("actor", "agent") != "human":
            doc.refuse(f"node {node['id']!r}: approval rules belong to human gates "
                       f"(actor: human), not actor {node.get('actor', 'agent')!r}")
        try:
            rule = ApprovalRule.from_json(node["approval"], f"nodes[{node['id']}].approval")
        except ConfigError as exc:
            doc.refuse(str(exc))
        hooks = [_hook_ref(h).name for h in node.get("exit") or []]
        problem = rule_problem(rule, hooks)
        if problem:
            doc.refuse(f"node {node['id']!r}: approval: {problem}")


_CHECKS: tuple[Callable[[_Doc], None], ...] = (
    _check_has_nodes,
    _check_unique_ids,
    _check_start_declared,
    _check_opt_in_not_required,
    _check_required_not_skippable,
    _check_artifact_names,
    _check_approval_rules,
    _check_hooks,
    _check_edges_declared,
    _check_known_outcomes,
    _check_skipped_edges,
    _check_skip_sets,
    _warn_duplicate_routes,
    _warn_dead_ends,
    _warn_opt_in_without_description,
    _warn_set_shadows_node,
)


# -- helpers ---------------------------------------------------------------------------
def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _split_alternatives(entry: str) -> tuple[str, ...] | None:
    """``"a.md"`` -> ``("a.md",)``; ``"a.md|b.md"`` -> both; None when malformed."""
    if "|" not in entry:  # one name, the common case
        name = entry.strip()
        return (name,) if name else None
    names = tuple(part.strip() for part in entry.split("|"))
    if not all(names) or len(names) > 2 or len(set(names)) != len(names):
        return None
    return names


_NO_PARAMS: Mapping[str, Any] = MappingProxyType({})


def _suggest_skip_target(doc: _Doc, node_id: str) -> str:
    """Where a skipped ``node_id`` should go: where its pass (or approval) edge goes."""
    leaving = [e for e in doc.edges if e["from"] == node_id]
    for wanted in (outcomes.PASS, outcomes.APPROVED, outcomes.SELECTED):
        for edge in leaving:
            if edge["on"] == wanted:
                return str(edge["to"])
    if leaving:
        return str(leaving[0]["to"])
    ids = [n["id"] for n in doc.nodes]
    position = ids.index(node_id)
    return ids[position + 1] if position + 1 < len(ids) else "<the node that follows it>"


# -- building the frozen graph ---------------------------------------------------------
#: hook name -> its HookRef without parameters (immutable, so shared between graphs).
_PLAIN_HOOKS: dict[str, HookRef] = {}


def _hook_ref(item: str | Mapping[str, Any]) -> HookRef:
    if isinstance(item, str):
        ref = _PLAIN_HOOKS.get(item)
        if ref is None:
            ref = HookRef(item)
            if len(_PLAIN_HOOKS) < 1024:  # bounded: names come from graph files
                _PLAIN_HOOKS[item] = ref
        return ref
    ref = object.__new__(HookRef)  # as _build_node: without the frozen __init__'s setattrs
    ref.__dict__.update(name=item["hook"], params=frozen_mapping(item.get("with") or {}))
    return ref


def _hook_chain(items: Any) -> tuple[HookRef, ...]:
    if not items:
        return ()
    plain = _PLAIN_HOOKS.get
    refs = []
    for item in items:
        ref = plain(item) if type(item) is str else None
        refs.append(ref if ref is not None else _hook_ref(item))
    return tuple(refs)


def _artifacts(value: Any, split: Mapping[str, tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    if value is None:
        return ()
    if type(value) is str:
        return ((split.get(value) or _split_alternatives(value) or ()),)
    return tuple([split.get(entry) or _split_alternatives(entry) or ()
                  for entry in _as_list(value)])


#: Node's fields: _build_node gives every one of them.
_NODE_FIELDS = frozenset(f.name for f in dataclasses.fields(Node))

_EMPTY_APPROVAL: Mapping[str, Any] = MappingProxyType({})


def _build_node(data: Mapping[str, Any], split: Mapping[str, tuple[str, ...]]) -> Node:
    get = data.get
    opt_in = bool(get("optIn", False))
    approval = get("approval")
    # Node's generated __init__ sets each of its 18 fields through object.__setattr__ (the
    # class is frozen): a fifth of compile-only (issue 21 §4). Given every field, filling
    # the instance's dict makes the same object without those calls.
    node = object.__new__(Node)
    node.__dict__.update(
        id=data["id"],
        phase=get("phase", ""),
        actor=get("actor", "agent"),
        session=get("session", "new"),
        produces=_artifacts(get("produces"), split),
        validates=_artifacts(get("validates"), split),
        command=get("command", ""),
        stage=get("stage", ""),
        required=bool(get("required", False)),
        optional=bool(get("optional", False)),
        skippable=bool(get("skippable", False)) or opt_in,  # optIn implies skippable
        opt_in=opt_in,
        description=" ".join(str(get("description", "")).split()),
        max_attempts=int(get("maxAttempts", 3)),
        terminal=bool(get("terminal", False)),
        entry=_hook_chain(get("entry")),
        exit=_hook_chain(get("exit")),
        approval=frozen_mapping(approval) if approval else _EMPTY_APPROVAL,
    )
    return node


def _new_edge(edge: Mapping[str, Any]) -> Edge:
    made = object.__new__(Edge)  # as _build_node: without the frozen __init__'s setattrs
    fields = made.__dict__  # item by item: a fifth less than update(**kwargs) for 3 fields
    fields["source"] = edge["from"]
    fields["target"] = edge["to"]
    fields["outcome"] = edge["on"]
    return made


def _build(doc: _Doc) -> Graph:
    split = doc.alternatives
    return Graph(
        version=int(doc.data["version"]),
        name=doc.data["name"],
        start=doc.data["start"],
        nodes=tuple([_build_node(n, split) for n in doc.nodes]),
        edges=tuple([_new_edge(e) for e in doc.edges]),
        skip_sets=MappingProxyType({k: tuple(v) for k, v in doc.skip_sets.items()}),
        warnings=tuple(doc.warnings),
    )


def _complete_registry(registry: HookRegistry) -> HookRegistry:
    """Import every shipped hook module before the process-wide registry is consulted."""
    if registry is REGISTRY:
        import engine.hooks  # noqa: F401 - registers the shipped hooks (import side effect)
    return registry


# -- public API ------------------------------------------------------------------------
def compile_graph(
    mapping: Mapping[str, Any], registry: HookRegistry = REGISTRY, *, source: str = "<graph>"
) -> Graph:
    """Compile a parsed graph document into a frozen :class:`Graph`.

    The input is not modified. Boolean keys left by a YAML 1.1 loader (``on:`` read as
    ``True``) are turned back into ``on``/``off`` first.

    Args:
        mapping: the parsed graph file (see ``graphs/graph.schema.json``).
        registry: the hooks the graph may name; the default, the process-wide
            :data:`~engine.hooks.registry.REGISTRY`, is completed by importing
            :mod:`engine.hooks` first.
        source: where the document came from, prefixed to every message.

    Returns:
        The compiled graph; non-fatal findings are in ``Graph.warnings``.

    Raises:
        GraphConfigError: a structural or semantic fault, naming the node, edge or set.
    """
    # A copy only when something needs undoing: a GraphLoader document never does, and
    # nothing below changes or keeps the document (the graph is built of copies).
    if valid_as_given(mapping):
        document = mapping
    else:
        document = undo_bool_keys(mapping) if has_bool_keys(mapping) else mapping
        validate_structure(document, source)
    doc = _Doc(document, source, _complete_registry(registry))
    for check in _CHECKS:
        check(doc)
    return _build(doc)


def compile_file(
    path: str | os.PathLike[str] | Traversable, registry: HookRegistry = REGISTRY
) -> Graph:
    """Load and compile the graph file at ``path``.

    Args:
        path: a filesystem path or a package resource.
        registry: as for :func:`compile_graph`.

    Raises:
        GraphConfigError: unreadable, not YAML, or refused by the compiler.
    """
    return compile_graph(load_file(path), registry, source=str(path))


def shipped_graph_names() -> list[str]:
    """Names of the graphs shipped in the ``graphs`` package, sorted."""
    files = resources.files("graphs").iterdir()
    return sorted(f.name[: -len(".yaml")] for f in files if f.name.endswith(".yaml"))


def shipped_graph_path(name: str = DEFAULT_GRAPH) -> Traversable:
    """The package resource of shipped graph ``name`` (``graphs/<name>.yaml``).

    Raises:
        GraphConfigError: no shipped graph has that name (the message lists them).
    """
    resource = resources.files("graphs").joinpath(f"{name}.yaml")
    if not _SHIPPED_NAME.match(name) or not resource.is_file():
        shipped = ", ".join(shipped_graph_names()) or "none"
        raise GraphConfigError(f"no shipped graph is named {name!r} (shipped: {shipped})")
    return resource


@functools.cache
def _compile_shipped(name: str) -> Graph:
    return compile_file(shipped_graph_path(name), REGISTRY)


def shipped_graph(name: str = DEFAULT_GRAPH) -> Graph:
    """Compile shipped graph ``name`` once per process (later calls return the same object,
    whether the name is given or defaulted). ``shipped_graph.cache_clear()`` forgets them.

    Raises:
        GraphConfigError: unknown name, or the shipped file does not compile against the
            registered hooks.
    """
    return _compile_shipped(name)


shipped_graph.cache_clear = _compile_shipped.cache_clear  # type: ignore[attr-defined]
