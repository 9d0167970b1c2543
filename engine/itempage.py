"""The model of a work item's details page (issue 22 §2): everything the page shows, as
JSON-ready data, and the graph's layout. Pure: the bot's ``bot/itempage/view.py`` loads
the state and the outbox rows and renders what this returns; the same dictionary is
served as the page's JSON (``Accept: application/json``).

Shape (``version`` 1; keys are only ever added)::

    {version, item: {ref, owner, repo, number, url},
     status: {status, node, where, ok, headline, check},
     graph: {name, width, height, nodes: [...], edges: [...]},
     gate: None | {node, visit, kind, reason, tally, have, need, approvedBy,
                   mayStillApprove, mayAttest, preventSelfApproval, quizComments},
     decisions: [...], invalidated: [...], timeline: [...],
     links: {issue, page, pulls, quizComments, explainers}, counts: {...}, agent?}

A node's ``state`` is one of :data:`STATES`: ``done`` (passed), ``current`` (the pointer
is here, waiting or working), ``waiting`` (ahead, not reached), ``skipped`` (declared
away, with provenance), ``not-selected`` (an opt-in phase left off), ``forced-past``
(moved past by force: never a pass), ``blocked``, ``escalated``. ``pending`` is true for
the nodes the "pending only" view keeps (current, waiting, blocked, escalated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.checksummary import ESCALATED_NODE, details_page
from engine.effects import EffectRow, PostComment
from engine.graph.model import Graph
from engine.mergegate import COVERAGE_KEY, SURFACE_KEY
from engine.report import build_report, visit_history, where
from engine.settings import EngineSettings
from engine.state import ItemState

__all__ = ["MODEL_VERSION", "STATES", "PENDING_STATES", "item_model", "layout",
           "node_state", "timeline", "web_url", "NODE_W", "NODE_H", "ROW", "COL"]

MODEL_VERSION = 1
#: Every node state the page draws (see the module docstring).
STATES = ("done", "current", "waiting", "skipped", "not-selected", "forced-past",
          "blocked", "escalated")
#: What the "pending only" view keeps.
PENDING_STATES = ("current", "waiting", "blocked", "escalated")
_FROM_REPORT = {"passed": "done", "skipped": "skipped", "not selected": "not-selected",
                "forced past": "forced-past", "not reached": "waiting", "current": "current",
                "waiting": "current", "blocked": "blocked", "escalated": "escalated",
                # a gate that sent the item back (engine.report.SENT_BACK) is ahead again
                "changes requested": "waiting", "sent back": "waiting"}

#: Layout units (SVG user units, ~CSS px at 1:1): a node's box, the row pitch, the column
#: pitch, the room left of the boxes and per back-edge lane right of them.
NODE_W, NODE_H, ROW, COL, MARGIN, LANE = 236, 40, 64, 252, 8, 14


def node_state(report_status: str) -> str:
    """The page's state word for a ``check`` status word (:mod:`engine.report`);
    an unknown word reads ``waiting``."""
    return _FROM_REPORT.get(report_status, "waiting")


# -- layout ---------------------------------------------------------------------------------
def layout(nodes: Sequence[str], edges: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """A deterministic top-down layered layout of ``nodes`` (node ids in the graph's
    declaration order) and ``edges`` (``(source, target, outcome)``; edges touching a node
    not in ``nodes`` are left out, so a subset lays out on its own).

    An edge is *forward* when its target is declared after its source (the graph's
    declaration order is its walk order; ``graph.ordered``); a node's layer is one more
    than the deepest forward predecessor's, nodes of a layer sit side by side in
    declaration order, centred; a node no edge reaches (the side exit ``escalated``) gets
    a row of its own after them. Every other edge (a gate sending the item back) is a *back
    edge*, drawn in a lane right of the boxes; a forward edge that would cross a box of a
    layer between its ends is drawn in a lane left of the boxes. Lanes are given greedily,
    in edge order, so that no two edges whose spans overlap share one.

    Returns:
        ``{width, height, place: {node: (x, y)}, edges: [{from, to, outcomes, back,
        side, lane, points}]}`` — ``side`` is ``right`` (a back edge), ``left`` (a long
        forward edge) or "" (straight), ``points`` the SVG path's ``d`` (user units);
        parallel edges between the same two nodes are one edge with several outcomes.
    """
    keep = set(nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    pairs: dict[tuple[str, str], list[str]] = {}
    for source, target, outcome in edges:
        if source in keep and target in keep and source != target:
            pairs.setdefault((source, target), []).append(outcome)
    layer = {n: 0 for n in nodes}
    for (src, dst) in sorted(pairs, key=lambda p: (pos[p[1]], pos[p[0]])):
        if pos[dst] > pos[src]:
            layer[dst] = max(layer[dst], layer[src] + 1)
    linked = {n for pair in pairs for n in pair}
    depth = max((layer[n] for n in linked), default=-1)
    for n in nodes:  # a node no edge reaches (the side exit): one row each, at the end
        if n not in linked and len(nodes) > 1:
            depth += 1
            layer[n] = depth
    rows: dict[int, list[str]] = {}
    for n in nodes:
        rows.setdefault(layer[n], []).append(n)
    widest = max((len(r) for r in rows.values()), default=1)
    place: dict[str, tuple[float, float]] = {}
    for depth, members in rows.items():
        offset = (widest - len(members)) * COL / 2
        for i, n in enumerate(members):
            place[n] = (offset + i * COL, MARGIN + depth * ROW)
    routed = _route(pairs, pos, place, layer, rows)
    lefts = 1 + max((e["lane"] for e in routed if e["side"] == "left"), default=-1)
    rights = 1 + max((e["lane"] for e in routed if e["side"] == "right"), default=-1)
    shift = MARGIN + lefts * LANE
    place = {n: (x + shift, y) for n, (x, y) in place.items()}
    right = shift + (widest - 1) * COL + NODE_W
    for e in routed:
        e["points"] = _path(e, place[e["from"]], place[e["to"]], shift, right)
    width = right + (rights + 1) * LANE + MARGIN
    height = MARGIN + max(rows, default=0) * ROW + NODE_H + MARGIN
    return {"width": int(width), "height": int(height), "place": place, "edges": routed}


def _crosses(src: str, dst: str, place: Mapping[str, tuple[float, float]],
             layer: Mapping[str, int], rows: Mapping[int, list[str]]) -> bool:
    # Would the straight drop from src to dst run through a box of a layer between them?
    xs = {place[src][0] + NODE_W / 2, place[dst][0] + NODE_W / 2}
    return any(place[n][0] <= x <= place[n][0] + NODE_W
               for depth in range(layer[src] + 1, layer[dst]) for n in rows.get(depth, ())
               for x in xs)


def _route(pairs: Mapping[tuple[str, str], list[str]], pos: Mapping[str, int],
           place: Mapping[str, tuple[float, float]], layer: Mapping[str, int],
           rows: Mapping[int, list[str]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    busy: dict[str, list[list[tuple[float, float]]]] = {"left": [], "right": []}
    for (src, dst), outcomes in sorted(pairs.items(), key=lambda p: (pos[p[0][0]],
                                                                     pos[p[0][1]])):
        back = pos[dst] < pos[src]
        side = "right" if back else ("left" if _crosses(src, dst, place, layer, rows) else "")
        lane = -1
        if side:
            span = (min(place[src][1], place[dst][1]), max(place[src][1], place[dst][1]))
            lanes = busy[side]
            lane = next((i for i, used in enumerate(lanes)
                         if all(span[1] < a or span[0] > b for a, b in used)), len(lanes))
            if lane == len(lanes):
                lanes.append([])
            lanes[lane].append(span)
        out.append({"from": src, "to": dst, "outcomes": list(outcomes), "back": back,
                    "side": side, "lane": lane, "points": ""})
    return out


def _path(edge: Mapping[str, Any], start: tuple[float, float], end: tuple[float, float],
          left: float, right: float) -> str:
    (x1, y1), (x2, y2) = start, end
    if edge["side"] == "right":
        gx = right + (edge["lane"] + 1) * LANE
        return (f"M{x1 + NODE_W:g},{y1 + NODE_H / 2:g} H{gx:g} V{y2 + NODE_H / 2:g} "
                f"H{x2 + NODE_W + 4:g}")
    if edge["side"] == "left":
        gx = left - (edge["lane"] + 1) * LANE
        return (f"M{x1:g},{y1 + NODE_H / 2:g} H{gx:g} V{y2 + NODE_H / 2:g} "
                f"H{x2 - 4:g}")
    mid = (y1 + NODE_H + y2) / 2
    return (f"M{x1 + NODE_W / 2:g},{y1 + NODE_H:g} C{x1 + NODE_W / 2:g},{mid:g} "
            f"{x2 + NODE_W / 2:g},{mid:g} {x2 + NODE_W / 2:g},{y2 - 4:g}")


# -- the model ------------------------------------------------------------------------------
def item_model(graph: Graph, state: ItemState, settings: EngineSettings, *,
               effects: Sequence[EffectRow] = (), web_base: str = "",
               report: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The details page's model of one started item (see the module docstring).

    Args:
        graph: the compiled graph.
        state: the item's committed state.
        settings: engine settings (``authorizedUsers``, ``gates``, ``publicUrl``).
        effects: every outbox row of the item (any status), oldest first.
        web_base: GitHub's web address (``https://github.com``) for the issue's and pull
            requests' links; "" when the item has no GitHub thread (the local tracker).
        report: :func:`engine.report.build_report` of the item when the caller has it
            (its ``agent`` block is carried over for agent work, issue 24 §2).

    Returns:
        A JSON-ready dictionary (strings, numbers, booleans, lists, dicts).
    """
    report = report if report is not None else build_report(graph, state, effects=effects)
    ref = state.ref
    issue = f"{web_base.rstrip('/')}/{ref.owner}/{ref.repo}/issues/{ref.number}" \
        if web_base else ""
    check = state.surface.get(SURFACE_KEY) or {}
    nodes = _nodes(graph, report)
    model: dict[str, Any] = {
        "version": MODEL_VERSION,
        "item": {"ref": str(ref), "owner": ref.owner, "repo": ref.repo, "number": ref.number,
                 "url": issue},
        "status": {"status": report["status"], "node": report["currentNode"] or "",
                   "where": where(report["status"], report["currentNode"] or ""),
                   "ok": bool(report["ok"]),
                   "headline": str(check.get("description") or "") if isinstance(check, Mapping)
                   else "",
                   "check": str(check.get("state") or "") if isinstance(check, Mapping) else ""},
        "graph": _graph(graph, state, nodes),
        "gate": _gate(graph, state, settings),
        "decisions": _decisions(state),
        "invalidated": _invalidated(state),
        "timeline": timeline(state, effects),
        "links": _links(state, settings, web_base, issue),
    }
    model["counts"] = {"nodes": len(nodes),
                       "pending": sum(1 for n in nodes if n["pending"]),
                       "done": sum(1 for n in nodes if not n["pending"])}
    agent = report.get("agent")
    # Like ``check``'s text, only agent work gets the block (issue 24 §2).
    if isinstance(agent, Mapping) and agent.get("authored"):
        model["agent"] = {"dispatcher": agent.get("dispatcher"),
                          "authored": bool(agent.get("authored")),
                          "signals": [str(s) for s in agent.get("signals") or ()]}
    return model


def _nodes(graph: Graph, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    visits_of = {n["id"]: n for n in report["nodes"]}
    out = []
    for node in graph.ordered():
        line = visits_of[node.id]
        if node.id == ESCALATED_NODE and line["status"] == "not reached":
            continue  # the side exit, drawn only when the item went there
        state = node_state(line["status"])
        out.append({"id": node.id, "description": node.description, "actor": node.actor,
                    "phase": node.phase, "terminal": node.terminal,
                    "state": state, "status": line["status"], "provenance": line["detail"],
                    "outcome": line["outcome"], "forced": line["forced"],
                    "current": node.id == report["currentNode"],
                    "pending": state in PENDING_STATES})
    return out


def _graph(graph: Graph, state: ItemState, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    drawn = layout([n["id"] for n in nodes],
                   [(e.source, e.target, e.outcome) for e in graph.edges])
    taken = _taken(state)
    for n in nodes:
        x, y = drawn["place"][n["id"]]
        n["x"], n["y"] = x, y
        n["visits"] = len(state.history(n["id"]))
    edges = [{**e, "taken": (e["from"], e["to"]) in taken} for e in drawn["edges"]]
    return {"name": state.loop or graph.name, "start": graph.start, "width": drawn["width"],
            "height": drawn["height"], "nodeWidth": NODE_W, "nodeHeight": NODE_H,
            "nodes": nodes, "edges": edges}


def _taken(state: ItemState) -> set[tuple[str, str]]:
    # The walk's steps: each visit to the next, in the order they began (issue 19 §2).
    rows = visit_history(state.visits)
    return {(a["node"], b["node"]) for a, b in zip(rows, rows[1:], strict=False)}


def _gate(graph: Graph, state: ItemState, settings: EngineSettings) -> dict[str, Any] | None:
    from engine.approvals import recorded_approvals, tally
    from engine.hooks.common import rule_for

    node_id = state.current_node
    if not node_id or not graph.has_node(node_id) or graph.node(node_id).terminal:
        return None
    node = graph.node(node_id)
    visit = state.visit(node_id)
    parked = state.parked.at_node(node_id)
    hooks = {h.name for h in node.exit}
    gate: dict[str, Any] = {"node": node_id, "visit": visit.number if visit else 1,
                            "description": node.description, "actor": node.actor,
                            "kind": "agent" if node.actor == "agent" else "other",
                            "reason": parked.reason}
    if "classify-feedback" in hooks:
        rule = rule_for(graph, settings, node_id)
        counted = recorded_approvals(state, node_id)
        count = tally(rule, counted)
        done = {a.by.lower().lstrip("@") for a in counted}
        names = rule.approvers or tuple(settings.authorized_users)
        gate.update(kind="approval", tally=count.summary(), have=count.count, need=count.needed,
                    approvedBy=[a.by for a in counted],
                    mayStillApprove=[n for n in names
                                     if "/" in n or n.lower().lstrip("@") not in done],
                    preventSelfApproval=rule.prevent_self_approval)
    elif "quiz-attested" in hooks:
        rule = rule_for(graph, settings, node_id)
        gate.update(kind="quiz", mayAttest=rule.who(settings.authorized_users),
                    attester=rule.attester, quizComments=_quiz_urls(state, node_id))
    return gate


def web_url(value: Any) -> str:
    """``value`` as text when it is an ``https://`` or ``http://`` address, else "": the
    page links only web pages (a stored ``javascript:`` or relative value is shown as
    nothing rather than linked)."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else ""


def _quiz_urls(state: ItemState, node_id: str) -> list[str]:
    entry = (state.surface.get("quiz") or {}).get(node_id)
    if not isinstance(entry, Mapping):
        return []
    return [web_url(c.get("url")) for c in entry.get("comments") or ()
            if isinstance(c, Mapping) and web_url(c.get("url"))]


def _decisions(state: ItemState) -> list[dict[str, Any]]:
    # Every visit's decision, in the order the visits began (issue 19 §2).
    out = []
    for row in visit_history(state.visits):
        doc = row.get("decision")
        if not isinstance(doc, Mapping):
            continue
        attested = str(doc.get("attestedBy") or "")
        entry = {"node": row["node"], "visit": row["visit"], "current": row["current"],
                 "outcome": str(doc.get("outcome") or row.get("outcome") or
                                ("attested" if attested else "decided")),
                 "by": attested or str(doc.get("by") or ""),
                 "via": str(doc.get("via") or ("reply" if doc.get("by") else "")),
                 "at": str(doc.get("attestedAt") or doc.get("at") or ""),
                 "evidence": web_url(doc.get("comment")),
                 "text": str(doc.get("text") or ""),
                 "attestation": bool(attested),
                 "verifiedEditor": bool(attested) and doc.get("via") == "tick",
                 "approvals": _counted(state, row["node"], row["visit"])}
        out.append(entry)
    return out


def _counted(state: ItemState, node_id: str, number: int) -> list[dict[str, Any]]:
    entry = (state.surface.get("approvals") or {}).get(node_id)
    if not isinstance(entry, Mapping) or entry.get("visit", number) != number:
        return []
    return [{"by": str(a.get("by") or ""), "outcome": str(a.get("outcome") or ""),
             "via": str(a.get("via") or ""), "at": str(a.get("at") or ""),
             "evidence": web_url(a.get("comment"))}
            for a in entry.get("approvals") or () if isinstance(a, Mapping)]


def _invalidated(state: ItemState) -> list[dict[str, Any]]:
    coverage = state.surface.get(COVERAGE_KEY) or {}
    return [{"node": str(e.get("node") or ""), "visit": int(e.get("visit") or 0),
             "outcome": str(e.get("outcome") or "passed"),
             "by": [str(b) for b in e.get("by") or ()], "at": str(e.get("at") or ""),
             "pull": int(e.get("pull") or 0), "covered": str(e.get("covered") or ""),
             "pushed": str(e.get("pushed") or "")}
            for e in coverage.get("invalidated") or () if isinstance(e, Mapping)]


# -- the timeline ---------------------------------------------------------------------------
def timeline(state: ItemState, effects: Sequence[EffectRow] = ()) -> list[dict[str, Any]]:
    """Every visit (entered, left), decision, forced move, operator request and effect
    (outbox row) of the item, oldest first.

    Returns:
        ``[{at, kind, node, visit, text, link, status}]``; ``kind`` is ``entered``,
        ``left``, ``decision``, ``approval``, ``forced``, ``request`` or ``effect``. Entries
        without a time (visits rebuilt from old state) come first; equal times keep the
        walk's order (the visits' ``seq``, then the outbox rows' ids).
    """
    items: list[tuple[str, int, dict[str, Any]]] = []
    order = 0

    def add(at: str, **entry: Any) -> None:
        nonlocal order
        order += 1
        items.append((at, order, {"at": at, "node": "", "visit": 0, "link": "",
                                  "status": "", **entry}))

    for row in visit_history(state.visits):
        node, number = row["node"], row["visit"]
        add(row["enteredAt"] or "", kind="entered", node=node, visit=number,
            text=f"entered {node} (visit {number})" + (" by force" if row.get("forced") else ""))
        _decision_entries(add, row, state)
        if row["exitedAt"]:
            add(row["exitedAt"], kind="left", node=node, visit=number,
                text=f"left {node} with {row['outcome'] or 'no outcome (moved by force)'}")
    for move in state.forced:
        add(move.at, kind="forced", node=move.to_node,
            text=f"forced from {move.from_node} to {move.to_node} by {move.by}: {move.reason}")
    for request in (state.surface.get("operatorRequests") or {}).values():
        if isinstance(request, Mapping):
            add(str(request.get("at") or ""), kind="request", status=str(request.get("status")),
                text=f"operator request {request.get('id')} ({request.get('verb')}) by "
                     f"{request.get('by')}: {request.get('status')}")
    for effect in effects:
        add(effect.created_at, kind="effect", status=effect.status, text=effect.describe()
            + (f" — {effect.last_error}" if effect.last_error else ""),
            link=_effect_link(effect))
    items.sort(key=lambda i: (i[0], i[1]))
    return [entry for _, _, entry in items]


def _decision_entries(add: Any, row: Mapping[str, Any], state: ItemState) -> None:
    doc = row.get("decision")
    if not isinstance(doc, Mapping):
        return
    node, number = row["node"], row["visit"]
    counted = _counted(state, node, number)
    for approval in counted if len(counted) > 1 else ():
        add(approval["at"], kind="approval", node=node, visit=number, link=approval["evidence"],
            text=f"{node} (visit {number}): {approval['outcome']} by "
                 f"@{approval['by'].lstrip('@')} via {approval['via'] or 'reply'}")
    who = doc.get("attestedBy") or doc.get("by") or "unknown"
    verb = "attested" if doc.get("attestedBy") else str(doc.get("outcome") or "decided")
    add(str(doc.get("attestedAt") or doc.get("at") or row["exitedAt"] or ""), kind="decision",
        node=node, visit=number, link=web_url(doc.get("comment")),
        text=f"{node} (visit {number}): {verb} by {who} via {doc.get('via') or 'reply'}")


def _effect_link(effect: EffectRow) -> str:
    if isinstance(effect.effect, PostComment):
        return web_url((effect.result or {}).get("url"))
    return ""


# -- links ----------------------------------------------------------------------------------
def _links(state: ItemState, settings: EngineSettings, web_base: str,
           issue: str) -> dict[str, Any]:
    coverage = state.surface.get(COVERAGE_KEY) or {}
    pulls: set[int] = set()
    for entry in (coverage.get("nodes") or {}).values():
        if isinstance(entry, Mapping):
            pulls.update(int(p) for p in (entry.get("heads") or {}) if str(p).isdigit())
    pulls.update(int(e.get("pull") or 0) for e in coverage.get("invalidated") or ()
                 if isinstance(e, Mapping) and e.get("pull"))
    ref = state.ref
    base = web_base.rstrip("/")
    quizzes, explainers = [], []
    for node, entry in sorted((state.surface.get("quiz") or {}).items()):
        if not isinstance(entry, Mapping):
            continue
        quizzes += [{"node": node, "url": url} for url in _quiz_urls(state, node)]
        location = str(entry.get("location") or "")
        if location:
            explainers.append({"node": node, "location": location, "url": web_url(location)})
    return {"issue": issue, "page": details_page(settings.public_url, ref),
            "pulls": [{"number": n, "url": f"{base}/{ref.owner}/{ref.repo}/pull/{n}"
                       if base else ""} for n in sorted(pulls)],
            "quizComments": quizzes, "explainers": explainers}
