"""The ``check`` report of one work item: node status words and provenance lines.

Status words (issue 2 §4): ``passed``, ``skipped`` (with provenance), ``not selected``,
``waiting``, ``blocked`` (reason), ``escalated``, ``not reached``, ``current``, and
``forced past`` for a node the pointer was moved off by ``force`` (never a pass); a gate
whose latest visit sent the item back reads ``changes requested`` (outcome
``changes-requested``) or ``sent back`` (a quiz gone ``stale``): it is ahead of the item
again and unmet, never passed (the details page draws it waiting).

Rules the report keeps (opt-in design, "Security design"):

* a skipped node is never reported as passed;
* "not selected" is never dressed as a declaration, and a declaration never as "not
  selected": each has its own provenance line;
* an opt-in node without a selection reads "not selected" in both modes, whatever its
  records say (deleting a selection reverts to not selected, never pass);
* a forged skip on a node that cannot be skipped is inert (the node is walked) and is
  listed under ``invalidSkips`` as "not skippable".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from engine.dispatch import report as agent_report
from engine.effects import FAILED, PENDING, RUNNING, EffectRow
from engine.graph.model import Graph, Node
from engine.outcomes import CHANGES_REQUESTED, SKIPPED, STALE
from engine.records import Skip
from engine.reviewers import summary_lines
from engine.runtime import (
    ESCALATED_NODE,
    NOT_SELECTED,
    NOT_SELECTED_SKIP,
    declared_skips,
    is_selected,
)
from engine.state import STATE_VERSION, ItemState, ItemStatus
from engine.visits import Visit

__all__ = [
    "NOT_SELECTED_LINE",
    "SATISFIED",
    "SENT_BACK",
    "build_report",
    "compact_line",
    "LINE_DEFAULTS",
    "document_view",
    "render_history",
    "visit_history",
    "skip_provenance",
    "render_table",
    "render_compact",
    "where",
]

NOT_SELECTED_LINE = "not selected — an opt-in phase, off unless it is ticked at phase-selection"
NO_DECLARATION_LINE = "recorded as skipped, but no declaration is on record"
NOT_STARTED = "not started"
#: Status words that satisfy a node (anything else on a non-terminal node is unmet).
SATISFIED = ("passed", "skipped", "not selected")
#: The status word of a gate whose latest visit ended with an outcome that sends the item
#: back: it waits to be walked again (never "passed").
SENT_BACK = {CHANGES_REQUESTED: "changes requested", STALE: "sent back"}


def skip_provenance(skip: Skip) -> str:
    """The provenance line of one trusted skip (from ``declared_skips``).

    Returns:
        ``NOT_SELECTED_LINE`` for ``via: not-selected``, else
        "skipped by declaration — via <via>, token '<t>', by <who>, reason: <r>", without
        the ", reason: <r>" part when the entry has no reason (a selection's unticked row;
        issue 14 §9).
    """
    if skip.via == NOT_SELECTED:
        return NOT_SELECTED_LINE
    line = (f"skipped by declaration — via {skip.via or 'unknown'}, token '{skip.token}', "
            f"by {skip.by or 'unknown'}")
    line = f"{line}, reason: {skip.reason}" if skip.reason else line
    if skip.confirmed_by:  # issue 19 §5: an operator request someone confirmed
        line += f"; confirmed by @{skip.confirmed_by} via {skip.confirmed_via}"
    return line


class _Line(NamedTuple):
    # A tuple, not a frozen dataclass: check --all builds one per node per item (issue 21 §3).
    status: str
    detail: str = ""
    satisfied: bool = False


#: The lines that never vary, made once (a line is an immutable tuple).
_NOT_SELECTED = _Line("not selected", NOT_SELECTED_LINE, True)
_CURRENT = _Line("current")
_NOT_REACHED = _Line("not reached")


def _skip_line(skip: Skip) -> _Line:
    if skip.via == NOT_SELECTED:
        return _NOT_SELECTED
    return _Line("skipped", skip_provenance(skip), True)


def _decision_note(visit: Visit | None) -> str:
    """``; decided by <who>[ via <via>]`` (``; attested by <who>`` for a quiz) for the
    current visit's decision, with ``, visit <n>`` from the second visit on (issue 19 §2:
    a re-entered gate shows its latest answer, never its first); "" when it has none."""
    decision = visit.decision if visit is not None else None
    if decision is None or not decision.by:
        return ""
    doc = decision.document
    if doc.get("attestedBy"):
        note = f"; attested by {doc['attestedBy']}"
    else:
        via = f" via {doc['via']}" if doc.get("via") else ""
        note = f"; decided by {decision.by}{via}"
    return note + (f", visit {visit.number}" if visit is not None and visit.number > 1 else "")


class _Reader:
    """Computes each node's line for one state, in one mode."""

    def __init__(self, graph: Graph, state: ItemState, recompute: bool) -> None:
        self.graph = graph
        self.state = state
        self.recompute = recompute
        self.declared = declared_skips(graph, state)

    def line(self, node: Node) -> _Line:
        state = self.state
        if node.id == state.current_node:
            return self._current(node)
        if node.opt_in and not is_selected(self.graph, state, node.id):
            return _NOT_SELECTED
        record = state.nodes.get(node.id)
        skip = self.declared.get(node.id)
        if self.recompute and skip is not None:
            return _skip_line(skip)
        if record is not None and record.outcome == SKIPPED:
            return _skip_line(skip) if skip is not None else _Line("skipped", NO_DECLARATION_LINE)
        if record is not None and record.outcome == ESCALATED_NODE:
            return _Line("escalated", record.last_block)
        if record is not None and record.exited_at and record.outcome:
            note = _decision_note(state.visit(node.id))
            if record.outcome in SENT_BACK:
                return _Line(SENT_BACK[record.outcome], f"outcome {record.outcome}{note}; the "
                             "item went back: this gate waits to be walked again")
            return _Line("passed", f"outcome {record.outcome}{note}", True)
        if record is not None and record.exited_at and record.forced:
            return _Line("forced past", "moved past by force: never passed")
        if skip is not None:
            return _skip_line(skip)  # planned: the walk will route around it
        return _NOT_REACHED

    def _current(self, node: Node) -> _Line:
        state = self.state
        parked = state.parked.at_node(node.id)
        reason = parked.reason
        if node.terminal:
            if node.id == ESCALATED_NODE or state.status == ItemStatus.ESCALATED:
                return _Line("escalated", "the item was escalated to a person")
            return _Line("current", "the walk is complete")
        if state.status == ItemStatus.ESCALATED:
            return _Line("escalated", reason)
        if parked.blocked:
            return _Line("blocked", reason)
        if state.status == ItemStatus.PARKED:
            return _Line("waiting", reason)
        return _CURRENT


def _invalid_skips(graph: Graph, state: ItemState) -> list[dict[str, Any]]:
    out = []
    for node_id, entry in state.skips.items():
        if not graph.has_node(node_id):
            out.append({"node": node_id, "reason": "unknown node", "entry": entry.to_json()})
            continue
        node = graph.node(node_id)
        if not node.skippable or node.required:
            out.append({"node": node_id, "reason": "not skippable", "entry": entry.to_json()})
    return out


def _invalid_opt_ins(graph: Graph, state: ItemState) -> list[dict[str, Any]]:
    return [
        {"node": node_id, "reason": "not an opt-in phase", "entry": entry.to_json()}
        for node_id, entry in state.opt_ins.items()
        if not is_selected(graph, state, node_id)
    ]


def _attestations(state: ItemState) -> list[dict[str, Any]]:
    # The current visit's attestation per quiz (issue 19 §2).
    out = []
    for node_id in state.visits:
        decision = state.decision(node_id)
        doc = decision.document if decision is not None else {}
        if doc.get("attestedBy"):
            out.append({"node": node_id, "attestedBy": doc.get("attestedBy"),
                        "attestedAt": doc.get("attestedAt"), "comment": doc.get("comment")})
    return out


def _phase_selection(graph: Graph, state: ItemState) -> dict[str, Any] | None:
    decision = state.decision(graph.start)
    if decision is None:
        return None
    doc = decision.document
    return {"node": graph.start, "by": doc.get("by"), "via": doc.get("via"),
            "at": doc.get("at")}


def visit_history(visits: Mapping[str, Sequence[Visit]]) -> list[dict[str, Any]]:
    """Every visit of every node, in the order they began (issue 19 §2: the history stays
    readable after a gate is re-entered).

    Args:
        visits: ``ItemState.visits`` (node id -> visits, oldest first).

    Returns:
        ``[{node, visit, enteredAt, exitedAt, outcome, current, decision}]`` in the order
        the visits began (their ``seq``; visits rebuilt from old state, which have none,
        first, by time then node order); ``current`` is true for each node's latest
        visit; ``decision`` is the record as the gate wrote it, or None.
    """
    rows = []
    for order, (node_id, seq) in enumerate(visits.items()):
        for visit in seq:
            doc = visit.to_json()
            rows.append((visit.seq, visit.entered_at or visit.exited_at, order, visit.number, {
                "node": node_id, "visit": visit.number, "enteredAt": visit.entered_at,
                "exitedAt": visit.exited_at, "outcome": visit.outcome,
                "current": visit is seq[-1], "decision": doc.get("decision"),
                **({"forced": True} if visit.forced else {}),
                **({"inferred": True} if visit.inferred else {})}))
    rows.sort(key=lambda r: r[:4])
    return [r[4] for r in rows]


def render_history(work_item: str, visits: Mapping[str, Sequence[Visit]]) -> str:
    """The ``check ITEM --history`` text: one line per visit, oldest first.

    Args:
        work_item: the item's ref as text (the heading).
        visits: ``ItemState.visits``.

    Each line: ``<node> visit <n>: entered <t>, left <t> with <outcome>[; decided by <who>
    via <how> at <t> (<comment>)][ — current]``; an open visit reads ``still open``.
    Returns ``<item> — no visits recorded`` when there are none.
    """
    lines = [f"{work_item} — visits, oldest first"]
    for row in visit_history(visits):
        lines.append("  " + _history_line(row))
    return "\n".join(lines) if len(lines) > 1 else f"{work_item} — no visits recorded"


def _history_line(row: Mapping[str, Any]) -> str:
    entered = row["enteredAt"] or "(time not recorded)"
    if row["exitedAt"]:
        left = f"left {row['exitedAt']} with {row['outcome'] or 'no outcome (moved by force)'}"
    else:
        left = "still open"
    line = f"{row['node']} visit {row['visit']}: entered {entered}, {left}"
    decision = row.get("decision")
    if isinstance(decision, Mapping):
        line += _history_decision(decision)
    if row.get("forced") and row["outcome"]:
        line += " [entered by force]"
    if row.get("inferred"):
        line += " [rebuilt from a record written before visits were kept]"
    return line + (" — current" if row["current"] else "")


def _history_decision(doc: Mapping[str, Any]) -> str:
    who = doc.get("attestedBy") or doc.get("by") or "unknown"
    verb = "attested by" if doc.get("attestedBy") else "decided by"
    how = f" ({doc['outcome']})" if doc.get("outcome") else ""
    via = f" via {doc['via']}" if doc.get("via") else ""
    at = f" at {doc['at']}" if doc.get("at") else ""
    where = f" — {doc['comment']}" if doc.get("comment") else ""
    text = f" — “{doc['text']}”" if doc.get("text") else ""
    return f"; {verb} {who}{how}{via}{at}{where}{text}"


def document_view(state: ItemState) -> dict[str, Any]:
    """``state.to_document()`` without the deep copy: the same keys and values, sharing the
    state's containers (``check --all`` reads 10,000 states; copying each one's frozen
    selection graph twice would cost more than reading them). Treat it as read-only.
    ``decisions`` is each node's CURRENT visit's decision (the key's meaning is kept so
    consumers do not break); ``visits`` holds every visit (issue 19 §2).
    """
    # visits_to_json and current_decisions in one pass: each node's current decision is
    # the one dict its last visit's document holds (the same JSON, made once).
    visits: dict[str, list[dict[str, Any]]] = {}
    decisions: dict[str, dict[str, Any]] = {}
    for node, seq in state.visits.items():
        docs = visits[node] = [v.to_json() for v in seq]
        if seq and seq[-1].decision is not None:
            decisions[node] = docs[-1]["decision"]
    return {
        "version": STATE_VERSION,
        "workItem": str(state.ref),
        "currentNode": state.current_node,
        "status": state.status,
        "startedAt": state.started_at,
        "nodes": {k: v.to_mapping() for k, v in state.nodes.items()},
        "decisions": decisions,
        "visits": visits,
        "forced": [m.to_json() for m in state.forced],
        "parked": state.parked.to_json(),
        "completions": {k: v.to_json() for k, v in state.completions.items()},
        "skips": {k: v.to_json() for k, v in state.skips.items()},
        "optIns": {k: v.to_json() for k, v in state.opt_ins.items()},
        "surface": state.surface,
        "loop": state.loop,
    }


#: The report's view of :data:`~engine.runtime.NOT_SELECTED_SKIP` (every unticked opt-in
#: node of every item has it): made once, copied per report.
_NOT_SELECTED_VIEW = {**NOT_SELECTED_SKIP.to_json(),
                      "provenance": skip_provenance(NOT_SELECTED_SKIP)}


def _skip_view(skip: Skip) -> dict[str, Any]:
    """A trusted skip's entry under the report's ``skips``: its document plus its
    ``provenance`` line."""
    if skip is NOT_SELECTED_SKIP:
        return _NOT_SELECTED_VIEW.copy()
    return {**skip.to_json(), "provenance": skip_provenance(skip)}


def effect_lines(rows: Sequence[EffectRow]) -> list[dict[str, Any]]:
    """The ``effects`` section of a report: each outbox row still owed or given up,
    ``{row, effect, status, attempts, notBefore, error}`` (issue 10 §2: a write that could
    not happen is visible, never silent)."""
    return [{"row": r.id, "effect": r.describe(), "status": r.status, "attempts": r.attempts,
             "notBefore": r.not_before, "error": r.last_error}
            for r in rows if r.status in (PENDING, RUNNING, FAILED)]


class _Blank(NamedTuple):
    """A graph's report lines for an item that reached none of its nodes, made once per
    graph (check --all, issue 21 §3); callers copy the dicts."""

    lines: tuple[dict[str, Any], ...]  # per node: the "not reached" line
    unmet: tuple[dict[str, Any] | None, ...]  # per node: its unmet entry (None: terminal)
    position: dict[str, int]  # node id -> position
    opt_in: tuple[str, ...]  # the opt-in nodes, which the reader always decides
    compact: tuple[dict[str, Any], ...]  # per node: the "not reached" line, compact


#: id(graph) -> (graph, its blank lines).
_BLANKS: dict[int, tuple[Graph, _Blank]] = {}


def _blank(graph: Graph) -> _Blank:
    entry = _BLANKS.get(id(graph))
    if entry is None or entry[0] is not graph:  # an id can be reused by a later graph
        if len(_BLANKS) >= 16:
            _BLANKS.clear()
        ordered = graph.ordered()
        entry = (graph, _Blank(
            tuple({"id": n.id, "status": "not reached", "detail": "", "outcome": "",
                   "attempts": 0, "forced": False} for n in ordered),
            tuple(None if n.terminal else {"node": n.id, "status": "not reached"}
                  for n in ordered),
            {n.id: i for i, n in enumerate(ordered)},
            tuple(n.id for n in ordered if n.opt_in),
            tuple({"id": n.id, "status": "not reached"} for n in ordered)))
        _BLANKS[id(graph)] = entry
    return entry[1]


#: A node line's keys a compact line leaves out when they hold these values (``check
#: --compact``, issue 21 §3).
LINE_DEFAULTS: dict[str, Any] = {"detail": "", "outcome": "", "attempts": 0, "forced": False}


def compact_line(line: dict[str, Any]) -> dict[str, Any]:
    """``line`` (a report's node line) less the keys of :data:`LINE_DEFAULTS` that hold
    their default (same type and value): a fresh dict, keys in their order."""
    out = line.copy()
    for key, default in LINE_DEFAULTS.items():
        value = out.get(key, LINE_DEFAULTS)
        if type(value) is type(default) and value == default:
            del out[key]
    return out


def _node_lines(graph: Graph, state: ItemState, reader: _Reader, compact: bool = False,
                shared: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The report's ``nodes`` and ``unmet``. A node never entered, not current, without a
    declared skip and not opt-in reads "not reached" (the reader's last line): its line is
    copied from the graph's blank ones (``shared``: is the graph's blank one, the same
    dict for every item); the reader decides only the others (a few per item, where a
    graph has dozens of nodes). ``compact``: each line as :func:`compact_line` makes
    it."""
    blank = _blank(graph)
    lines = blank.compact if compact else blank.lines
    nodes = list(lines) if shared else list(map(dict.copy, lines))  # no Python loop
    unmet = list(blank.unmet)
    index = blank.position
    ordered = graph.ordered()
    asked = {index[n] for n in (*state.nodes, state.current_node, *reader.declared,
                                *blank.opt_in) if n in index}
    if len(index) != len(ordered):  # ids repeated (a graph the compiler would refuse)
        asked = set(range(len(ordered)))
    for i in asked:
        node = ordered[i]
        line = reader.line(node)
        record = state.nodes.get(node.id)
        nodes[i] = {"id": node.id, "status": line.status, "detail": line.detail,
                    "outcome": record.outcome if record else "",
                    "attempts": record.attempts if record else 0,
                    "forced": bool(record and record.forced)}
        if compact:
            nodes[i] = compact_line(nodes[i])
        unmet[i] = (None if node.terminal or line.satisfied
                    else {"node": node.id, "status": line.status})
    if shared:
        return nodes, [*filter(None, unmet)]  # the entries are never empty: None goes
    return nodes, [u if i in asked else u.copy() for i, u in enumerate(unmet) if u is not None]


def build_report(graph: Graph, state: ItemState, *, recompute: bool = False,
                 effects: Sequence[EffectRow] = (), compact: bool = False,
                 shared: bool = False) -> dict[str, Any]:
    """The ``check`` report of one item.

    Args:
        graph: the compiled graph the item walks.
        state: the item's committed state.
        recompute: derive statuses from :func:`engine.runtime.declared_skips` and the
            records instead of the stored outcomes (both modes agree on "not selected").
        effects: the item's outbox rows (any status; only the owed and failed ones are
            reported).
        compact: each ``nodes`` line leaves out the keys holding their defaults
            (:func:`compact_line`; ``check --compact``, issue 21 §3): for JSON only, as
            :func:`render_table` reads every key.
        shared: the ``nodes`` and ``unmet`` entries of nodes the item never reached are
            the graph's own dicts, the same objects in every report of the graph, not
            copies (``check``, which only prints its reports; issue 21 §3: the copies
            were a tenth of building a report): never change such a report.

    Returns:
        ``{workItem, loop, currentNode, status, ok, recompute, unmet, nodes, decisions,
        parked, forced, skips, optIns, invalidSkips, invalidOptIns, attestations,
        phaseSelection, completions, effects, operatorRequests, agent, document}``
        (``agent``: ``{dispatcher, authored, signals}``, issue 24 §2); ``nodes`` is
        ``[{id, status, detail, outcome, attempts, forced}]`` in graph order; ``skips`` is
        the trusted view with a ``provenance`` line per node; ``unmet`` is
        ``[{node, status}]`` for every non-terminal node that is not passed, skipped or
        not selected; ``decisions`` is the current visit's decision per node (issue 19
        §2); ``ok`` is true only for a complete item with nothing unmet. The report shares
        the state's containers (see :func:`document_view`): treat it as read-only.
    """
    reader = _Reader(graph, state, recompute)
    nodes, unmet = _node_lines(graph, state, reader, compact, shared)
    status = state.status if state.current_node else NOT_STARTED
    document = document_view(state)
    return {
        "workItem": document["workItem"],
        "loop": state.loop or graph.name,
        "currentNode": state.current_node,
        "status": status,
        "ok": status == ItemStatus.COMPLETE and not unmet,
        "recompute": recompute,
        "unmet": unmet,
        "nodes": nodes,
        "decisions": document["decisions"],
        "parked": document["parked"],
        "forced": document["forced"],
        "skips": {k: _skip_view(v) for k, v in reader.declared.items()},
        "optIns": {k: v.to_json() for k, v in state.opt_ins.items()
                   if is_selected(graph, state, k)},
        "invalidSkips": _invalid_skips(graph, state),
        "invalidOptIns": _invalid_opt_ins(graph, state),
        "attestations": _attestations(state),
        "phaseSelection": _phase_selection(graph, state),
        "completions": document["completions"],
        "effects": effect_lines(effects),
        "operatorRequests": operator_requests(state),
        "agent": agent_report(graph, state),
        "document": document,
    }


def operator_requests(state: ItemState) -> list[dict[str, Any]]:
    """The item's operator requests (issue 19 §5), oldest first: the stored documents of
    ``surface.operatorRequests`` (see :mod:`engine.operator`)."""
    stored = state.surface.get("operatorRequests")
    if not isinstance(stored, Mapping):
        return []
    out = [dict(v) for v in stored.values() if isinstance(v, Mapping)]
    return sorted(out, key=lambda r: str(r.get("at") or ""))


def _request_line(request: Mapping[str, Any]) -> str:
    nodes = ", ".join(request.get("nodes") or ())
    does = (f"force to {request.get('to')} past {nodes}" if request.get("verb") == "force"
            else f"skip {nodes}")
    rid, status = request.get("id"), request.get("status")
    line = (f"operator request {rid}: {status} — {does}, by {request.get('by')}, "
            f"reason: {request.get('reason')}")
    if status == "pending":
        line += f"; an authorized person replies 'the-loop confirm {rid}'"
        refused = request.get("refused") or ()
        if refused:
            last = refused[-1]
            line += f" (last refused: @{last.get('by')}: {last.get('reason')})"
    confirmed = request.get("confirmed") or {}
    if confirmed:
        line += f"; confirmed by @{confirmed.get('by')} via {confirmed.get('via')}"
    return line


def where(status: str, node: str) -> str:
    """The item's status and node in words: ``parked at gate``; a finished walk reads
    ``complete`` (``complete (ended at done)`` when its terminal node has another name),
    never "complete at complete" (issue 14 §9).

    Args:
        status: the item status (:class:`~engine.state.ItemStatus` value).
        node: the current node id ("" when none).
    """
    if not node:
        return status
    if status in (ItemStatus.COMPLETE, ItemStatus.ESCALATED):
        return status if node == status else f"{status} (ended at {node})"
    return f"{status} at {node}"


def _plain(text: str, _status: str) -> str:
    return text


def render_table(report: Mapping[str, Any],
                 paint: Callable[[str, str], str] = _plain) -> str:
    """The ``check --format text`` text of one report.

    Args:
        report: from :func:`build_report`.
        paint: ``(text, status word) -> text`` applied to each status word (padding stays
            outside; the CLI colours status words on a terminal, the default leaves them
            plain).

    Returns:
        A heading line, one aligned row per node (id, status, detail), then unmet nodes,
        forced moves, invalid skips and attestations when there are any.
    """
    ok = "yes" if report["ok"] else "no"
    state = paint(where(report["status"], report["currentNode"] or ""), report["status"])
    lines = [f"{report['workItem']} — {report['loop']} — {state} — ok: {ok}"]
    width_id = max((len(n["id"]) for n in report["nodes"]), default=4)
    width_status = max((len(n["status"]) for n in report["nodes"]), default=6)
    for n in report["nodes"]:
        cell = paint(n["status"], n["status"]) + " " * (width_status - len(n["status"]))
        row = f"  {n['id']:<{width_id}}  {cell}  {n['detail']}"
        lines.append(row.rstrip())
    lines.extend(_table_footer(report))
    return "\n".join(lines)


def render_compact(report: Mapping[str, Any],
                   paint: Callable[[str, str], str] = _plain) -> str:
    """The ``check --compact`` text of one report: one line, :func:`render_table`'s heading
    (item, graph, where it stands, ok), then, when a node is unmet, ``— unmet:`` naming each
    unmet node that was reached with its status and counting those not reached
    (``— unmet: design (waiting), 12 not reached``).

    Args:
        report: from :func:`build_report`.
        paint: as for :func:`render_table` (applied to the item's status words).
    """
    ok = "yes" if report["ok"] else "no"
    state = paint(where(report["status"], report["currentNode"] or ""), report["status"])
    line = f"{report['workItem']} — {report['loop']} — {state} — ok: {ok}"
    unmet = report["unmet"]
    parts = [f"{u['node']} ({paint(u['status'], u['status'])})" for u in unmet
             if u["status"] != "not reached"]
    ahead = sum(1 for u in unmet if u["status"] == "not reached")
    parts += [f"{ahead} not reached"] if ahead else []
    return line + (" — unmet: " + ", ".join(parts) if parts else "")


def _table_footer(report: Mapping[str, Any]) -> list[str]:
    lines = []
    if report["unmet"]:
        lines.append("unmet: " + ", ".join(u["node"] for u in report["unmet"]))
    for move in report["forced"]:
        lines.append(f"forced: {move.get('from')} → {move.get('to')} by {move.get('by')}, "
                     f"reason: {move.get('reason')}")
    for bad in report["invalidSkips"]:
        lines.append(f"invalid skip: {bad['node']} ({bad['reason']}; inert)")
    for bad in report["invalidOptIns"]:
        lines.append(f"invalid opt-in: {bad['node']} ({bad['reason']}; inert)")
    for att in report["attestations"]:
        lines.append(f"attested: {att['node']} by {att['attestedBy']} at {att['attestedAt']} "
                     f"({att['comment']})")
    selection = report.get("phaseSelection")
    if selection and selection.get("by"):
        lines.append(f"phase selection: by {selection['by']} via {selection.get('via')}")
    for effect in report.get("effects") or ():
        lines.append(_effect_line(effect))
    lines.extend(_request_line(r) for r in report.get("operatorRequests") or ())
    lines.extend(_review_lines(report))
    lines.extend(agent_lines(report.get("agent") or {}))
    return lines


def agent_lines(agent: Mapping[str, Any]) -> list[str]:
    """``check``'s lines for the report's ``agent`` (issue 24 §2): ``agent-authored: …``
    per signal and ``dispatched by @login``; none when the work is not agent-authored (the
    ``phase selection: by …`` line already names who executed it)."""
    if not agent.get("authored"):
        return []
    lines = [f"agent-authored: {signal}" for signal in agent.get("signals") or ()]
    if agent.get("dispatcher"):
        lines.append(f"dispatched by @{agent['dispatcher']}")
    return lines


def _review_lines(report: Mapping[str, Any]) -> list[str]:
    # Issue 24 §3: what the current gate visit asked on GitHub, and who was refused or
    # left out (a courtesy, never a gate matter; kept in surface.reviewRequests).
    document = report.get("document") or {}
    surface = document.get("surface") or {}
    node = str(report.get("currentNode") or "")
    owner = str(report.get("workItem") or "").partition("/")[0]
    return summary_lines(surface, node, owner) if node else []


def _effect_line(effect: Mapping[str, Any]) -> str:
    if effect["status"] == FAILED:
        return (f"effect failed: {effect['effect']} (row {effect['row']}): {effect['error']}; "
                "`loopgate effects retry` re-queues it")
    line = f"effect owed: {effect['effect']} (row {effect['row']}, {effect['status']}"
    if effect["attempts"]:
        line += f", {effect['attempts']} failed tries, next at {effect['notBefore']}"
    line += ")"
    return line + (f": {effect['error']}" if effect["error"] else "")
