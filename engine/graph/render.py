"""Render a compiled graph for people: a text table, JSON data, a Mermaid flowchart.

``loopgate graph show --format text|json|mermaid`` prints these (issue #2 §7). The
Mermaid output is a ``flowchart TD`` that pastes into GitHub Markdown: human gates are
hexagons, terminal nodes stadiums, code nodes subroutines; skippable nodes have a dashed
border, opt-in nodes an amber fill (they are off unless ticked), required nodes a thick
border; each arrow carries the outcomes that take it, and one taken only on ``skipped``
is dotted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from engine.graph.model import Edge, Graph, Node

__all__ = ["render_text", "render_json", "render_mermaid", "node_flags", "mermaid_ids"]

_SKIPPED = "skipped"
# Words a flowchart cannot use as a bare node id.
_MERMAID_RESERVED = frozenset(
    {"end", "graph", "flowchart", "subgraph", "style", "class", "classdef", "click",
     "linkstyle", "direction", "default", "call", "href"}
)
_CLASS_DEFS = (
    ("required", "stroke-width:3px"),
    ("skippable", "stroke-dasharray:5 5"),
    ("optin", "fill:#fff3cd,stroke:#b7791f,stroke-width:2px,stroke-dasharray:3 3"),
    ("terminal", "fill:#eeeeee"),
)


def node_flags(node: Node) -> list[str]:
    """The markers shown beside a node: ``required``, ``opt-in`` or ``skippable``,
    ``terminal`` (an opt-in node is skippable by implication, so it shows ``opt-in``)."""
    flags = []
    if node.required:
        flags.append("required")
    if node.opt_in:
        flags.append("opt-in")
    elif node.skippable:
        flags.append("skippable")
    if node.terminal:
        flags.append("terminal")
    return flags


def _leaving(graph: Graph, node_id: str) -> list[Edge]:
    return [e for e in graph.edges if e.source == node_id]


def _edges_cell(edges: Iterable[Edge]) -> str:
    """``pass, skipped → b; changes-requested → a`` (targets in first-seen order)."""
    by_target: dict[str, list[str]] = {}
    for edge in edges:
        by_target.setdefault(edge.target, []).append(edge.outcome)
    return "; ".join(f"{', '.join(outs)} → {target}" for target, outs in by_target.items())


def render_text(graph: Graph) -> str:
    """A readable table of the graph.

    Args:
        graph: the compiled graph.

    Returns:
        A header line (name, version, start), one row per node in declaration order
        (order, id, actor, flags, phase, edges leaving it), then the skip sets and any
        compile warnings. Ends with a newline.
    """
    header = ("#", "node", "actor", "flags", "phase", "edges")
    rows = [
        (str(i), n.id, n.actor, ", ".join(node_flags(n)) or "-", n.phase or "-",
         _edges_cell(_leaving(graph, n.id)) or "-")
        for i, n in enumerate(graph.nodes, start=1)
    ]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header) - 1)]
    lines = [f"{graph.name} (version {graph.version}), start: {graph.start}", ""]
    for row in [header, *rows]:
        cells = [cell.ljust(widths[c]) for c, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    lines.append("")
    lines.append("skip sets:" if graph.skip_sets else "skip sets: none")
    lines.extend(f"  {name}: {', '.join(members)}" for name, members in graph.skip_sets.items())
    if graph.warnings:
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in graph.warnings)
    return "\n".join(lines) + "\n"


def render_json(graph: Graph) -> dict[str, Any]:
    """JSON-ready data: ``{version, name, start, skipSets, nodes, edges}``.

    ``nodes`` are :meth:`Node.as_mapping` in declaration order; ``edges`` are
    ``{from, to, on}`` in declaration order.
    """
    return graph.as_mapping()


def mermaid_ids(graph: Graph) -> dict[str, str]:
    """Node id -> a Mermaid-safe id (letters, digits, ``_``; never a reserved word; unique)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for node in graph.nodes:
        safe = re.sub(r"[^A-Za-z0-9_]", "_", node.id)
        if safe.lower() in _MERMAID_RESERVED or not safe[:1].isalpha():
            safe = f"n_{safe}"
        candidate, suffix = safe, 2
        while candidate in used:
            candidate, suffix = f"{safe}_{suffix}", suffix + 1
        used.add(candidate)
        out[node.id] = candidate
    return out


def _label(node: Node) -> str:
    text = f"{node.id} (opt-in)" if node.opt_in else node.id
    return text.replace('"', "#quot;")


def _shape(node: Node) -> str:
    label = _label(node)
    if node.terminal:
        return f'(["{label}"])'
    if node.is_human:
        return f'{{{{"{label}"}}}}'
    if node.actor == "code":
        return f'[["{label}"]]'
    return f'["{label}"]'


def _style_class(node: Node) -> str:
    if node.terminal:
        return "terminal"
    if node.required:
        return "required"
    if node.opt_in:
        return "optin"
    return "skippable" if node.skippable else ""


def _edge_lines(graph: Graph, ids: dict[str, str]) -> list[str]:
    """One arrow per (source, target) labelled with its outcomes, in first-seen order.

    An arrow taken only on ``skipped`` is dotted; a ``skipped`` edge that runs beside a
    pass edge joins its label (``pass / skipped``), which keeps the picture readable.
    """
    arrows: dict[tuple[str, str], list[str]] = {}
    for edge in graph.edges:
        arrows.setdefault((edge.source, edge.target), []).append(edge.outcome)
    lines = []
    for (source, target), outs in arrows.items():
        arrow = "-.->" if set(outs) == {_SKIPPED} else "-->"
        lines.append(f"  {ids[source]} {arrow}|{' / '.join(outs)}| {ids[target]}")
    return lines


def render_mermaid(graph: Graph) -> str:
    """A Mermaid ``flowchart TD`` of the graph, ready to paste into GitHub Markdown.

    Args:
        graph: the compiled graph.

    Returns:
        The flowchart source (ends with a newline): nodes in declaration order, arrows
        labelled by outcome (dotted when taken only on ``skipped``), and ``classDef``
        styles that set opt-in, skippable, required and terminal nodes apart.
    """
    ids = mermaid_ids(graph)
    lines = [
        "flowchart TD",
        "  %% hexagon: human gate; dashed: skippable; amber: opt-in (off unless ticked);",
        "  %% thick border: required; an arrow is labelled with the outcomes that take it",
    ]
    lines.extend(f"  {ids[n.id]}{_shape(n)}" for n in graph.nodes)
    lines.extend(_edge_lines(graph, ids))
    lines.extend(f"  classDef {name} {style}" for name, style in _CLASS_DEFS)
    for name, _ in _CLASS_DEFS:
        members = [ids[n.id] for n in graph.nodes if _style_class(n) == name]
        if members:
            lines.append(f"  class {','.join(members)} {name}")
    return "\n".join(lines) + "\n"
