"""The graph picture of the details page (issue 22 §2): an inline SVG of the item's path,
laid out by :func:`engine.itempage.layout`.

A node's state is told by words and shape, never by colour alone (WCAG 1.4.1,
platform-facts E4): each box names its state (``✓ done``, ``▶ current`` …) and its border
differs (solid, thick, dashed, dotted); the steps the item took are solid arrows, the
routes not taken dashed. Everything people or the graph wrote is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from engine.itempage import NODE_H, NODE_W, layout

__all__ = ["MARKS", "WORDS", "graph_svg"]

#: The mark and the word of each node state (engine.itempage.STATES).
MARKS = {"done": "✓", "current": "▶", "waiting": "○", "skipped": "↷", "not-selected": "–",
         "forced-past": "⚠", "blocked": "■", "escalated": "✕"}
WORDS = {"done": "done", "current": "current", "waiting": "waiting", "skipped": "skipped",
         "not-selected": "not selected", "forced-past": "forced past", "blocked": "blocked",
         "escalated": "escalated"}
_MAX_ID = 26  # characters of a node id that fit a box at 13 px


def _short(text: str, limit: int = _MAX_ID) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node(n: Mapping[str, Any], x: float, y: float) -> str:
    state = str(n["state"])
    word = WORDS.get(state, state)
    if state == "current" and n.get("status") not in ("current", None, ""):
        word = f"current — {n['status']}"  # waiting / escalated at the pointer
    label = f"{n['id']}: {word}" + (f". {n['provenance']}" if n.get("provenance") else "")
    return (f'<g class="n n-{escape(state)}" data-node="{escape(n["id"])}">'
            f"<title>{escape(label)}</title>"
            f'<rect x="{x:g}" y="{y:g}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{x + 10:g}" y="{y + 17:g}">{escape(_short(str(n["id"])))}</text>'
            f'<text class="state" x="{x + 10:g}" y="{y + 32:g}">'
            f"{escape(MARKS.get(state, '?'))} {escape(word)}</text></g>")


def _edge(e: Mapping[str, Any]) -> str:
    outcomes = ", ".join(str(o) for o in e["outcomes"])
    taken = " taken" if e.get("taken") else ""
    return (f'<path class="e{taken}" d="{escape(e["points"])}" marker-end="url(#arrow)">'
            f"<title>{escape(e['from'])} → {escape(e['to'])} on {escape(outcomes)}"
            f"{' (taken)' if taken else ''}</title></path>")


def graph_svg(graph: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> Markup:
    """The SVG of ``nodes`` (all of the model's, or the pending ones) and the edges among
    them, laid out again for that subset.

    Args:
        graph: the model's ``graph`` (its ``edges`` carry ``taken``).
        nodes: node entries of ``graph["nodes"]`` to draw, in declaration order.

    Returns:
        Markup of one ``<svg>`` element with ``role="img"`` and a title naming the item's
        current node; ``viewBox`` in user units, scaled by the page's CSS.
    """
    ids = [str(n["id"]) for n in nodes]
    taken = {(e["from"], e["to"]) for e in graph["edges"] if e.get("taken")}
    edges = [(e["from"], e["to"], o) for e in graph["edges"] for o in e["outcomes"]]
    drawn = layout(ids, edges)
    current = next((n["id"] for n in nodes if n.get("current")), "")
    title = f"The path of the work item through {graph.get('name', 'the graph')}" + (
        f"; now at {current}" if current else "")
    parts = [f'<svg class="graph" role="img" aria-labelledby="graph-title" '
             f'viewBox="0 0 {drawn["width"]} {drawn["height"]}" width="{drawn["width"]}" '
             f'height="{drawn["height"]}" xmlns="http://www.w3.org/2000/svg">',
             f'<title id="graph-title">{escape(title)}</title>',
             '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="8" '
             'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
             '<path d="M0,0 L8,4 L0,8 z"/></marker></defs>']
    parts += [_edge({**e, "taken": (e["from"], e["to"]) in taken}) for e in drawn["edges"]]
    for n in nodes:
        x, y = drawn["place"][str(n["id"])]
        parts.append(_node(n, x, y))
    parts.append("</svg>")
    return Markup("".join(parts))
