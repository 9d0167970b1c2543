"""The compiled process graph: frozen dataclasses the runtime only reads.

A graph is declared in YAML (see ``graphs/graph.schema.json``), compiled by
:func:`engine.graph.compiler.compile_graph`, and never mutated afterwards: every
collection here is a tuple or a read-only mapping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "ACTORS",
    "SESSIONS",
    "EXPLAINER_SET",
    "HookRef",
    "Node",
    "Edge",
    "Graph",
    "frozen_mapping",
]

ACTORS = ("agent", "human", "code")
SESSIONS = ("new", "inherit")
#: The skip set whose presence turns on the checklist's Settings row (explainer design C2).
EXPLAINER_SET = "explainer"


def frozen_mapping(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Return a read-only, recursively frozen copy of ``data`` (lists become tuples)."""
    out: dict[str, Any] = {}
    for key, value in (data or {}).items():
        kind = type(value)  # a string, boolean or integer value is its own frozen copy
        out[key] = value if kind is str or kind is bool or kind is int else _freeze(value)
    return MappingProxyType(out)


def _freeze(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return value  # the common leaves, without the abstract-class checks below
    if kind is list:  # what YAML gives, without the abstract-class checks below
        return tuple([v if type(v) is str else _freeze(v) for v in value])
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class HookRef:
    """One entry of a node's ``entry`` or ``exit`` chain.

    Attributes:
        name: the registered hook name (kebab-case), e.g. ``validate-artifacts``.
        params: the ``with:`` mapping, read-only (lists frozen to tuples).
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Node:
    """A vertex of the compiled graph.

    Attributes:
        id: kebab-case node id.
        phase: the coarse phase label (``loop:<phase>``), or "" for none.
        actor: ``agent``, ``human`` or ``code``.
        session: ``new`` or ``inherit``.
        produces: artifacts the node writes; each entry is a tuple of alternative names
            (``("requirements.md", "bugfix.md")`` means exactly one of the two).
        validates: artifacts the node's gate checks but does not write (same shape).
        command: the agent command that works the node (e.g. ``explain``), or "".
        stage: a free-form stage tag (e.g. ``critic-review``), or "".
        required: the node can never be skipped (protected).
        optional: informational marker from the graph file.
        skippable: the node may be declared skipped; ``opt_in`` implies it.
        opt_in: the node is OFF unless ticked at phase-selection (opt-in design).
        description: one line shown beside the node's checklist row.
        max_attempts: blocks tolerated before escalation (default 3).
        terminal: reaching this node ends the walk.
        entry: hooks run when the node is entered.
        exit: hooks that gate leaving the node.
        approval: the human gate's approval rule document (issue 11 §2; read with
            :meth:`engine.approvals.ApprovalRule.from_json`), empty for the default.
    """

    id: str
    phase: str = ""
    actor: str = "agent"
    session: str = "new"
    produces: tuple[tuple[str, ...], ...] = ()
    validates: tuple[tuple[str, ...], ...] = ()
    command: str = ""
    stage: str = ""
    required: bool = False
    optional: bool = False
    skippable: bool = False
    opt_in: bool = False
    description: str = ""
    max_attempts: int = 3
    terminal: bool = False
    entry: tuple[HookRef, ...] = ()
    exit: tuple[HookRef, ...] = ()
    approval: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_human(self) -> bool:
        """True for a human gate (no session works it)."""
        return self.actor == "human"

    def as_mapping(self) -> dict[str, Any]:
        """The node as JSON-ready data (the shape ``graph show --format json`` prints).

        Returns:
            ``{id, phase, actor, session, required, optional, skippable, optIn, description,
            terminal, maxAttempts, command, stage, produces, validates, entry, exit}`` where
            ``produces``/``validates`` entries are ``a|b`` strings and hooks are
            ``{hook, with}`` mappings.
        """
        return {
            "id": self.id,
            "phase": self.phase,
            "actor": self.actor,
            "session": self.session,
            "required": self.required,
            "optional": self.optional,
            "skippable": self.skippable,
            "optIn": self.opt_in,
            "description": self.description,
            "terminal": self.terminal,
            "maxAttempts": self.max_attempts,
            "command": self.command,
            "stage": self.stage,
            "produces": ["|".join(alts) for alts in self.produces],
            "validates": ["|".join(alts) for alts in self.validates],
            "entry": [_hook_mapping(h) for h in self.entry],
            "exit": [_hook_mapping(h) for h in self.exit],
            **({"approval": _thaw(self.approval)} if self.approval else {}),
        }


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _hook_mapping(ref: HookRef) -> dict[str, Any]:
    return {"hook": ref.name, "with": _thaw(ref.params)}


@dataclass(frozen=True)
class Edge:
    """A link from ``source`` to ``target`` taken on ``outcome`` (YAML ``from``/``to``/``on``)."""

    source: str
    target: str
    outcome: str

    def as_mapping(self) -> dict[str, str]:
        """``{from, to, on}``."""
        return {"from": self.source, "to": self.target, "on": self.outcome}


@dataclass(frozen=True)
class Graph:
    """A compiled, immutable process graph.

    Attributes:
        version: the graph format version from the file.
        name: the graph (loop) name, e.g. ``pdlc-work-item-loop``.
        start: the id of the first node.
        nodes: nodes in declaration order (which is also the order ``check`` reports in).
        edges: edges in declaration order; for a duplicate ``(from, on)`` pair the first wins.
        skip_sets: set name -> member node ids.
        warnings: non-fatal compile findings (e.g. a duplicate ``(from, on)`` pair).
    """

    version: int
    name: str
    start: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    skip_sets: Mapping[str, tuple[str, ...]]
    warnings: tuple[str, ...] = ()
    _index: Mapping[str, Node] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )
    _routes: Mapping[tuple[str, str], Edge] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )
    #: :meth:`opt_in_nodes`, found once: ``check --all`` asks for every item (issue 21 §3).
    _opt_ins: tuple[Node, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {n.id: n for n in self.nodes}
        routes: dict[tuple[str, str], Edge] = {}
        for edge in self.edges:
            routes.setdefault((edge.source, edge.outcome), edge)  # first edge wins
        object.__setattr__(self, "_index", MappingProxyType(index))
        object.__setattr__(self, "_routes", MappingProxyType(routes))
        object.__setattr__(self, "_opt_ins", tuple(n for n in self.nodes if n.opt_in))

    # -- reads -------------------------------------------------------------------------
    def node(self, node_id: str) -> Node:
        """Return the node ``node_id``.

        Raises:
            KeyError: when the graph has no such node.
        """
        return self._index[node_id]

    def has_node(self, node_id: str) -> bool:
        """True when ``node_id`` is a compiled node."""
        return node_id in self._index

    def ordered(self) -> tuple[Node, ...]:
        """Nodes in declaration order."""
        return self.nodes

    def position(self, node_id: str) -> int:
        """Declaration index of ``node_id`` (used for "behind the pointer" checks)."""
        return next(i for i, n in enumerate(self.nodes) if n.id == node_id)

    def route(self, source: str, outcome: str) -> Edge | None:
        """The first edge leaving ``source`` on ``outcome``, or None."""
        return self._routes.get((source, outcome))

    def protected(self) -> tuple[Node, ...]:
        """Nodes that can never be skipped, in order (``required`` or not skippable),
        excluding terminal nodes."""
        return tuple(n for n in self.nodes if not n.skippable and not n.terminal)

    def opt_in_nodes(self) -> tuple[Node, ...]:
        """Opt-in nodes in declaration order."""
        return self._opt_ins

    def has_skip_set(self, name: str) -> bool:
        """True when the graph declares the skip set ``name``."""
        return name in self.skip_sets

    # -- skip vocabulary ---------------------------------------------------------------
    def expand_skip_tokens(
        self, tokens: Iterable[str], *, allow_opt_in: bool = False
    ) -> tuple[dict[str, str], list[str]]:
        """Expand skip tokens into the nodes they name.

        Skip-set names expand to their members (checked first, so a set shadows a node of
        the same name); a skippable node id stands for itself; the first token naming a
        node keeps it. Opt-in nodes are refused unless ``allow_opt_in``: declaring away a
        phase that is already off says nothing (opt-in design; issue #2 §2).

        Args:
            tokens: names as a person typed them (skip-set names or node ids).
            allow_opt_in: accept opt-in node ids (the gate's own parser does; the CLI
                skip verb does not).

        Returns:
            ``(accepted, rejected)``: ``accepted`` maps node id -> the token that named it;
            ``rejected`` lists the tokens that named nothing skippable, in input order.
        """
        accepted: dict[str, str] = {}
        rejected: list[str] = []
        for token in tokens:
            members = self._token_members(token, allow_opt_in)
            if not members:
                rejected.append(token)
                continue
            for node_id in members:
                accepted.setdefault(node_id, token)
        return accepted, rejected

    def _token_members(self, token: str, allow_opt_in: bool) -> tuple[str, ...]:
        if token in self.skip_sets:
            return self.skip_sets[token]
        node = self._index.get(token)
        if node is None or not node.skippable or node.required:
            return ()
        if node.opt_in and not allow_opt_in:
            return ()
        return (node.id,)

    def skip_token_refusal(self, token: str) -> str:
        """Why ``token`` is not accepted by the CLI skip verb (a sentence naming it)."""
        node = self._index.get(token)
        if node is None:
            return f"{token!r} is neither a node nor a skip set of {self.name}"
        if node.opt_in:
            return (
                f"{token!r} is an opt-in phase, off unless ticked at phase-selection: "
                "declaring it skipped says nothing (the selection alone decides if it runs)"
            )
        return f"{token!r} is not skippable"

    def as_mapping(self) -> dict[str, Any]:
        """``{version, name, start, skipSets, nodes, edges}`` as JSON-ready data."""
        return {
            "version": self.version,
            "name": self.name,
            "start": self.start,
            "skipSets": {k: list(v) for k, v in self.skip_sets.items()},
            "nodes": [n.as_mapping() for n in self.nodes],
            "edges": [e.as_mapping() for e in self.edges],
        }
