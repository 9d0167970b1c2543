"""The ``loopgate`` merge gate (issue 11 §1): what the required check on a delivering pull
request says about one work item, and about all the items one pull request delivers.

States (GitHub's commit-status words; the bridge maps them onto a check run's
``status``/``conclusion``): ``pending`` while the item is before the merge node,
``success`` once it passed (``mergeGate.after``, default ``human-approval``; ``complete``
= only at the end), ``failure`` when the item escalated. A pull request delivering
several items is ``success`` only when every one passed, ``failure`` when any escalated.

Pure: the runtime records an item's :class:`GateCheck` in ``surface.mergeGate`` on every
transition and emits a :class:`~engine.effects.PublishGate`; the performer reads the
verdicts of every item a pull request delivers from the store when it publishes, so the
newest state is what lands on the newest head commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.graph.model import Graph
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, PASS, SKIPPED
from engine.state import ItemState, ItemStatus

__all__ = ["CHECK_NAME", "PENDING", "SUCCESS", "FAILURE", "GateCheck", "item_check",
           "combine", "SURFACE_KEY", "MAX_DESCRIPTION"]

#: The check run name / commit status context branch protection names.
CHECK_NAME = "loopgate"
PENDING = "pending"
SUCCESS = "success"
FAILURE = "failure"
#: Where an item's verdict lives in its state.
SURFACE_KEY = "mergeGate"
#: A commit status description longer than this is cut (GitHub shows one short line).
MAX_DESCRIPTION = 140
_PASSED = (PASS, SKIPPED, APPROVED, APPROVED_WITH_COMMENTS)


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MAX_DESCRIPTION else one[: MAX_DESCRIPTION - 1] + "…"


@dataclass(frozen=True)
class GateCheck:
    """The check's content.

    Attributes:
        state: :data:`PENDING`, :data:`SUCCESS` or :data:`FAILURE`.
        description: one line (≤ :data:`MAX_DESCRIPTION` characters).
        summary: Markdown for a check run's output (where the item stands, its node
            table, links); a commit status has no room for it.
        details_url: a link for the check ("" for none): the quiz comment, else the item.
    """

    state: str
    description: str
    summary: str = ""
    details_url: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored document ``{state, description, summary, detailsUrl}``."""
        return {"state": self.state, "description": self.description, "summary": self.summary,
                "detailsUrl": self.details_url}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GateCheck:
        """Read :meth:`to_json` back."""
        return cls(str(doc.get("state") or PENDING), str(doc.get("description") or ""),
                   str(doc.get("summary") or ""), str(doc.get("detailsUrl") or ""))


def _passed(graph: Graph, state: ItemState, after: str) -> bool:
    # A forced move never satisfies a gate (README "force"): success needs the merge node's
    # own pass, or a walk (not a force) onto the end when the merge node is the end.
    if after == "complete" or (graph.has_node(after) and graph.node(after).terminal):
        return _walked_to_end(state, after)
    if not graph.has_node(after):
        return False
    record = state.nodes.get(after)
    if record is None or record.outcome not in _PASSED or not record.exited_at:
        return False
    if _forced_over(graph, state, after, record.exited_at):
        return False
    if state.status == ItemStatus.COMPLETE:
        return True
    # Sent back before the merge node (changes requested): not passed any more.
    current = state.current_node
    return graph.has_node(current) and graph.position(current) > graph.position(after)


def _walked_to_end(state: ItemState, after: str) -> bool:
    end = state.current_node
    if state.status != ItemStatus.COMPLETE or (after != "complete" and end != after):
        return False
    record = state.nodes.get(end)
    entered = record.entered_at if record is not None else ""
    return not any(m.get("to") == end and str(m.get("at") or "") >= entered
                   for m in state.forced)


def _forced_over(graph: Graph, state: ItemState, after: str, passed_at: str) -> bool:
    """True when a forced move since ``after`` passed went from it (or before it) to past it:
    the pass on record is stale, the gate did not let the item through that time."""
    mark = graph.position(after)
    for move in state.forced:
        source, target = str(move.get("from") or ""), str(move.get("to") or "")
        if not (graph.has_node(source) and graph.has_node(target)):
            continue
        crossed = graph.position(source) <= mark < graph.position(target)
        if crossed and str(move.get("at") or "") >= passed_at:
            return True
    return False


def _links(state: ItemState) -> tuple[list[str], str]:
    lines, first = [], ""
    for node, entry in sorted((state.surface.get("quiz") or {}).items()):
        if not isinstance(entry, Mapping):
            continue
        for comment in entry.get("comments") or ():
            url = str(comment.get("url") or "") if isinstance(comment, Mapping) else ""
            if url:
                lines.append(f"- quiz `{node}`: {url}")
                first = first or url
        if entry.get("location"):
            lines.append(f"- explainer page of `{node}`: {entry['location']}")
    return lines, first


def _summary(graph: Graph, state: ItemState, text: str) -> tuple[str, str]:
    from engine.report import build_report, render_table  # report imports the runtime

    table = render_table(build_report(graph, state))
    links, first = _links(state)
    parts = [f"**{state.ref}** — {text}", "", "```", table.rstrip(), "```"]
    if links:
        parts += ["", *links]
    return "\n".join(parts), first


def item_check(graph: Graph, state: ItemState, after: str) -> GateCheck:
    """The check for one work item.

    Args:
        graph: the compiled graph.
        state: the item's state.
        after: ``mergeGate.after`` (a node id, or ``complete``).

    Returns:
        ``failure`` when escalated, ``success`` when ``after`` passed by its own gate
        (a forced move never counts: neither a force onto the end nor one past ``after``),
        else ``pending`` saying where the item waits.
    """
    node = state.current_node or "-"
    if state.status == ItemStatus.ESCALATED:
        reason = str(state.parked.get("reason") or "")
        state_word, text = FAILURE, f"escalated at {state.parked.get('node') or node}: {reason}"
    elif _passed(graph, state, after):
        state_word = SUCCESS
        text = ("work item complete" if state.status == ItemStatus.COMPLETE
                else f"{after} passed")
    elif state.status == ItemStatus.COMPLETE:  # only a force gets here: it never passes
        state_word, text = PENDING, f"forced to {node}; {after} never passed its gate"
    else:
        reason = str(state.parked.get("reason") or "in progress")
        where = f"at {node} (the merge gate)" if node == after else f"at {node}, before {after}"
        state_word, text = PENDING, f"{where}: {reason}"
    description = _line(f"{state.ref}: {text}")
    summary, url = _summary(graph, state, text)
    return GateCheck(state_word, description, summary, url)


def combine(checks: Sequence[tuple[str, GateCheck | None]]) -> GateCheck:
    """The check of a pull request delivering several items.

    Args:
        checks: ``(item ref text, its check or None when not started)``.

    Returns:
        ``failure`` when any item escalated; ``success`` only when every item passed;
        else ``pending`` naming the items still waiting.
    """
    if len(checks) == 1 and checks[0][1] is not None:
        return checks[0][1]
    known = [(ref, c if c is not None else GateCheck(PENDING, f"{ref}: not started"))
             for ref, c in checks]
    failed = [c for _, c in known if c.state == FAILURE]
    waiting = [ref for ref, c in known if c.state == PENDING]
    summary = "\n\n---\n\n".join(c.summary or c.description for _, c in known)
    url = next((c.details_url for _, c in known if c.details_url), "")
    if failed:
        return GateCheck(FAILURE, _line(failed[0].description), summary, url)
    if waiting:
        return GateCheck(PENDING, _line(f"{len(known) - len(waiting)} of {len(known)} work "
                                        f"items passed; waiting: {', '.join(waiting)}"),
                         summary, url)
    return GateCheck(SUCCESS, _line(f"all {len(known)} work items passed"), summary, url)
