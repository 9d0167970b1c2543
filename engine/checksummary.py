"""The ``loopgate`` check run's output (issue 22 §1): a Markdown summary saying where a
work item stands and why (the title is the check's one-line description).

The summary holds, in this order: a headline, a picture of the graph's path (one row of
nodes marked done / current / waiting / skipped) with each node's provenance (who
decided, forced, skipped), the current gate and whom it waits on (a review gate's tally,
"1 of 2 approvals", and who may still approve, from the gate's rule), each decision of
the nodes' current visits with a link to its evidence (the deciding comment; a quiz's
comment and its verified editor), the approvals a push invalidated (``surface.
mergeCoverage``), every quiz comment and explainer page, and the link to the details
page (``server.publicUrl``).

Pure, and the only place the check's Markdown is written: ``engine.mergegate`` calls it,
the tracker sends what it returns. GitHub's limits (platform-facts F2; the OpenAPI
``output.summary`` ``maxLength: 65535``; github/docs#35252 reports that GitHub counts the
UTF-8 bytes: "summary exceeds a maximum bytesize of 65535"): a summary is cut so that its
UTF-8 encoding fits :data:`MAX_SUMMARY` bytes (so it fits in characters too), ending
with :data:`CUT_NOTE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.graph.model import Graph, Node
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.state import ItemState

__all__ = ["MAX_SUMMARY", "MAX_TITLE", "CUT_NOTE", "details_page", "item_summary",
           "fit", "path_picture", "waiting_on", "decision_lines", "invalidated_lines",
           "md", "rehead", "join_sections", "agent_line", "agent_people"]

#: GitHub's limit on ``output.summary`` (and ``output.text``), counted here in UTF-8 bytes.
MAX_SUMMARY = 65535
#: Our own bound on ``output.title`` (the check's description, ``mergegate.MAX_DESCRIPTION``):
#: GitHub documents none ([UNCERTAIN]; the OpenAPI ``output.title`` has no ``maxLength``).
MAX_TITLE = 140
#: The last line of a summary that was cut (issue 22, bad input).
CUT_NOTE = "… see the details page"

_MARKS = {"passed": "✅", "skipped": "⏭️", "not selected": "➖", "current": "⏳",
          "waiting": "⏳", "blocked": "⛔", "escalated": "❌", "forced past": "⚠️",
          "not reached": "⚪", "changes requested": "⚪", "sent back": "⚪"}
#: The side exit's node id (``engine.runtime.ESCALATED_NODE``; the runtime imports us).
ESCALATED_NODE = "escalated"
_MD_SPECIAL = set("\\`*_[]<>|~#")


def md(text: Any) -> str:
    """``text`` as one line of Markdown that renders literally (no links, images, HTML or
    table breaks from what people typed)."""
    one = " ".join(str(text).split())
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in one)


def _code(text: str) -> str:
    return f"`{text.replace('`', '')}`"


def details_page(public_url: str, ref: WorkItemRef) -> str:
    """The item's details page, ``<public_url>/items/<owner>/<repo>/<n>`` (issue 22 §2),
    or "" when ``server.publicUrl`` is unset."""
    base = public_url.strip().rstrip("/")
    return f"{base}/items/{ref.owner}/{ref.repo}/{ref.number}" if base else ""


# -- the path -----------------------------------------------------------------------------
def path_picture(report: Mapping[str, Any]) -> list[str]:
    """The graph's path as Markdown lines: one row of marked nodes, a legend, then a table
    of the nodes that have provenance (passed, skipped, forced, current).

    Args:
        report: :func:`engine.report.build_report` of the item.
    """
    cells = []
    for node in report["nodes"]:
        if node["id"] == ESCALATED_NODE and node["status"] == "not reached":
            continue  # the side exit, drawn only when the item went there
        mark = _MARKS.get(node["status"], "⚪")
        name = _code(node["id"])
        cells.append(f"{mark} **{name}**" if node["id"] == report["currentNode"]
                     else f"{mark} {name}")
    lines = [" → ".join(cells), "",
             "✅ done · ⏳ current · ⚪ waiting · ⏭️ skipped · ➖ not selected · "
             "⚠️ forced past · ⛔ blocked · ❌ escalated", ""]
    rows = [n for n in report["nodes"] if n["status"] != "not reached"]
    if rows:
        lines += ["| node | status | provenance |", "|---|---|---|"]
        lines += [f"| {_code(n['id'])} | {n['status']} | {md(n['detail']) or '—'} |"
                  for n in rows]
    moves = list(report.get("forced") or ())
    lines += [""] if moves else []
    for move in moves:
        lines.append(f"- forced: {_code(str(move.get('from')))} → {_code(str(move.get('to')))}"
                     f" by {md(move.get('by'))}, reason: {md(move.get('reason'))}")
    return lines


# -- the current gate ---------------------------------------------------------------------
def _hooks(node: Node) -> set[str]:
    return {h.name for h in node.exit}


def waiting_on(graph: Graph, state: ItemState, settings: EngineSettings) -> list[str]:
    """The current gate and whom it waits on, as Markdown lines ([] when the item is
    complete or escalated).

    A review gate (``classify-feedback``) shows its tally (``1 of 2 approvals: @alice``)
    and who may still approve (the rule's approvers, or ``authorizedUsers``, minus those
    who approved this visit; teams by name); a quiz gate (``quiz-attested``) who may
    attest and its quiz comment; an agent node the claim it waits for.
    """
    from engine.approvals import recorded_approvals, tally  # approvals imports settings only
    from engine.hooks.common import rule_for
    from engine.reviewers import summary_lines

    node_id = state.current_node
    if not node_id or not graph.has_node(node_id) or graph.node(node_id).terminal:
        return []
    node = graph.node(node_id)
    visit = state.visit(node_id)
    number = f" (visit {visit.number})" if visit is not None and visit.number > 1 else ""
    lines = [f"### Now at {_code(node_id)}{number}", ""]
    reason = state.parked.at_node(node_id).reason
    if reason:
        lines.append(f"- waiting: {md(reason)}")
    hooks = _hooks(node)
    if "classify-feedback" in hooks:
        rule = rule_for(graph, settings, node_id)
        counted = recorded_approvals(state, node_id)
        agent = agent_people(graph, state, rule)
        lines.append(f"- approvals: {md(tally(rule, counted, people=agent).summary())}")
        lines.append(f"- may still approve: {_still(rule, counted, settings)}")
        if rule.prevent_self_approval:
            lines.append("- preventSelfApproval: the authors of the work item and of the "
                         "delivering pull requests cannot approve" + _askers(agent))
        lines += [f"- {md(line)}" for line in  # issue 24 §3: who was asked on GitHub
                  summary_lines(state.surface, node_id, state.ref.owner)]
    elif "quiz-attested" in hooks:
        rule = rule_for(graph, settings, node_id)
        lines.append(f"- may attest: {md(rule.who(settings.authorized_users))}"
                     + (" (only an assignee or the author)" if rule.attester != "any" else ""))
        lines += [f"- quiz comment: {url}" for url in _quiz_urls(state, node_id)]
    elif node.actor == "agent":
        lines.append(f"- waits on the agent working {_code(node_id)} (its `complete` claim)")
    return lines


def agent_people(graph: Graph, state: ItemState, rule: Any) -> Any:
    """For an agent-aware rule (``agentAuthored``, issue 24 §2): the
    :class:`~engine.approvals.People` the gate last decided with, as ``surface.agent``
    and the walk say (the count it needs, who dispatched the agent); None otherwise."""
    from engine.approvals import People
    from engine.dispatch import report

    if not rule.agent_approvals:
        return None
    found = report(graph, state)
    stored = state.surface.get("agent")
    asked = tuple(str(r) for r in (stored.get("requesters") or ())
                  ) if isinstance(stored, Mapping) else ()
    dispatcher = str(found["dispatcher"] or "") if rule.prevent_self_approval else ""
    return People(dispatcher=dispatcher, agent_authored="; ".join(found["signals"]),
                  requesters=asked if rule.prevent_self_approval else ())


def _askers(people: Any) -> str:
    names = [n for n in (people.dispatcher, *people.requesters) if n] if people else []
    if not names:
        return ""
    return ", nor who asked for the agent's work (" + md(", ".join(
        f"@{n}" for n in dict.fromkeys(names))) + ")"


def _still(rule: Any, counted: Sequence[Any], settings: EngineSettings) -> str:
    done = {a.by.lower().lstrip("@") for a in counted}
    names = rule.approvers or tuple(settings.authorized_users)
    left = [n for n in names if "/" in n or n.lower().lstrip("@") not in done]
    return md(", ".join(f"@{n.lstrip('@')}" for n in left)) or "nobody else is named"


def _quiz_urls(state: ItemState, node_id: str) -> list[str]:
    entry = (state.surface.get("quiz") or {}).get(node_id)
    if not isinstance(entry, Mapping):
        return []
    return [str(c.get("url")) for c in entry.get("comments") or ()
            if isinstance(c, Mapping) and c.get("url")]


# -- decisions ----------------------------------------------------------------------------
def decision_lines(graph: Graph, state: ItemState) -> list[str]:
    """Each node's current-visit decision with its evidence, in graph order: ``- `node`
    (visit n): approved by @bob via reply — <comment URL>``; a quiz: ``attested by
    @carol (the verified editor of the quiz comment, via tick) — <quiz comment URL>``;
    every counted approval of a review gate's visit when there were several.
    """
    lines = []
    for node in graph.ordered():
        visit = state.visit(node.id)
        decision = visit.decision if visit is not None else None
        if decision is None or visit is None:
            continue
        doc = decision.document
        where = f"{_code(node.id)} (visit {visit.number})"
        if doc.get("attestedBy"):
            how = "verified editor of the quiz comment" if doc.get("via") == "tick" \
                else "typed the attestation line"
            lines.append(f"- {where}: attested by {md(doc['attestedBy'])} ({how}, "
                         f"via {md(doc.get('via') or '?')}) — {_evidence(decision.comment)}")
            continue
        outcome = md(decision.outcome or visit.outcome or "decided")
        who = md(decision.by or "unknown")
        lines.append(f"- {where}: {outcome} by {who} via {md(decision.via or '?')} — "
                     f"{_evidence(decision.comment)}")
        lines += _counted_lines(state, node.id, visit.number)
    return ["### Decisions (current visits)", "", *lines] if lines else []


def _evidence(url: str) -> str:
    return url if url else "no comment (a Slack click or a default)"


def _counted_lines(state: ItemState, node_id: str, number: int) -> list[str]:
    entry = (state.surface.get("approvals") or {}).get(node_id)
    if not isinstance(entry, Mapping) or entry.get("visit", number) != number:
        return []
    counted = [a for a in entry.get("approvals") or () if isinstance(a, Mapping)]
    if len(counted) < 2:
        return []
    return [f"  - {md(a.get('outcome'))} by @{md(a.get('by'))} via {md(a.get('via') or '?')}"
            f" — {_evidence(str(a.get('comment') or ''))}" for a in counted]


# -- invalidated approvals ------------------------------------------------------------------
def invalidated_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Approvals a push invalidated: ``- `human-approval` visit 1, approved by @alice at
    `abc1234`, superseded by push `def5678` (#8)``.

    Args:
        entries: ``surface.mergeCoverage.invalidated`` (see
            :func:`engine.mergegate.note_sent_back`) and/or the ones found when a check is
            bound to a head (:func:`engine.mergegate.invalidated_by`).
    """
    lines = []
    for e in entries:
        by = ", ".join(f"@{md(b)}" for b in e.get("by") or ()) or "nobody on record"
        visit = f" visit {e['visit']}" if e.get("visit") else ""
        lines.append(f"- {_code(str(e.get('node')))}{visit}: {md(e.get('outcome') or 'passed')}"
                     f" by {by} at {_code(str(e.get('covered'))[:7])}, superseded by push "
                     f"{_code(str(e.get('pushed'))[:7])} (#{e.get('pull')})")
    return ["### Invalidated by a push", "", *lines] if lines else []


# -- assembling ---------------------------------------------------------------------------
def item_summary(graph: Graph, state: ItemState, headline: str, settings: EngineSettings,
                 invalidated: Sequence[Mapping[str, Any]] = ()) -> str:
    """The Markdown summary of one item, cut to GitHub's limit (:func:`fit`).

    Args:
        graph: the compiled graph.
        state: the item's state.
        headline: the verdict in words (the check's description without the ref).
        settings: the engine settings (``authorizedUsers``, ``gates``, ``publicUrl``).
        invalidated: the approvals a push invalidated (:func:`invalidated_lines`).

    Returns:
        Markdown of at most :data:`MAX_SUMMARY` UTF-8 bytes.
    """
    from engine.report import build_report  # report imports the runtime

    page = details_page(settings.public_url, state.ref)
    report = build_report(graph, state)
    parts = [f"**{md(state.ref)}** — {md(headline)}", "", *path_picture(report)]
    for section in (agent_line(report.get("agent") or {}),
                    waiting_on(graph, state, settings), decision_lines(graph, state),
                    invalidated_lines(invalidated), _links(state)):
        if section:
            parts += ["", *section]
    if page:
        parts += ["", f"Details: {page}"]
    return fit("\n".join(parts), page)


def agent_line(agent: Mapping[str, Any]) -> list[str]:
    """One line when the work is agent-authored (issue 24 §2): ``**Agent-authored**: <why>;
    dispatched by @login``; ``[]`` otherwise (the report's ``agent``)."""
    if not agent.get("authored"):
        return []
    line = "**Agent-authored**: " + md("; ".join(agent.get("signals") or ()))
    if agent.get("dispatcher"):
        line += f" — dispatched by @{md(agent['dispatcher'])}"
    return [line]


def _links(state: ItemState) -> list[str]:
    # Every quiz comment loopgate posted and each explainer page, whatever the visit.
    lines = []
    for node, entry in sorted((state.surface.get("quiz") or {}).items()):
        if not isinstance(entry, Mapping):
            continue
        lines += [f"- quiz {_code(node)}: {url}" for url in _quiz_urls(state, node)]
        if entry.get("location"):
            lines.append(f"- explainer page of {_code(node)}: {md(entry['location'])}")
    return ["### Quiz comments and explainer pages", "", *lines] if lines else []


def fit(summary: str, page: str = "", limit: int = MAX_SUMMARY) -> str:
    """``summary`` when its UTF-8 encoding fits ``limit`` bytes; else its longest prefix
    (cut at a line end where one is near) that fits with :data:`CUT_NOTE` (and the page's
    link, when known) after it. Issue 22, bad input."""
    if len(summary.encode("utf-8")) <= limit:
        return summary
    tail = f"\n\n{CUT_NOTE}" + (f": {page}" if page else "")
    room = limit - len(tail.encode("utf-8"))
    head = summary.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    line_end = head.rfind("\n")
    if line_end > len(head) - 2000:
        head = head[:line_end]
    return head.rstrip() + tail


def rehead(summary: str, headline: str, extra: Sequence[str] = ()) -> str:
    """``summary`` with its first line replaced by ``headline`` and ``extra`` lines after
    it (a check bound to a head that a push moved, :func:`engine.mergegate.bind_to_head`),
    cut to the limit again."""
    _, _, rest = summary.partition("\n")
    block = [headline, *([""] + list(extra) if extra else [])]
    return fit("\n".join(block) + ("\n" + rest if rest else ""), _page_of(summary))


def _page_of(summary: str) -> str:
    # The page a summary links: its "Details:" line, or the cut note's link.
    for line in reversed(summary.splitlines()):
        for lead in ("Details: ", f"{CUT_NOTE}: "):
            if line.startswith(lead):
                return line[len(lead):]
    return ""


def join_sections(sections: Sequence[str], page: str = "") -> str:
    """Several items' summaries in one (a pull request delivering several items: each
    item's section, separated by a rule), cut to the limit."""
    return fit("\n\n---\n\n".join(s for s in sections if s), page)
