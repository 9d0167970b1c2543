"""Phase selection: the checklist comment and its gate (issue #2 §6, opt-in design,
explainer design C2).

Hooks: ``post-phase-selection`` (entry) posts the checklist once; ``classify-phase-selection``
(exit) waits for an authorized reply carrying the execute keyword and turns the ticked rows
into skips and opt-ins.

Pure functions a chat surface (the Slack bot) reuses: :func:`checklist_rows`,
:func:`render_checklist`, :func:`parse_rows`, :func:`selection_from_rows`, :func:`parse_selection`,
:func:`selection_records`, :func:`reply_body`, :func:`confirmation_text`,
:func:`frozen_graph`.

Row parsing (issue #2 §6):

======================  ==========  =================  ================
row                     ticked      unticked           absent
======================  ==========  =================  ================
default-on (skippable)  runs        declared skip      runs
opt-in                  selected    not selected       not selected
protected               runs        refused, named     runs
``explainer`` setting   on          off (4 skips)      on
======================  ==========  =================  ================

Rows inside HTML comments or fenced code blocks are not rows (GitHub renders no box for
them). Unknown tokens are ignored, and named in the confirmation. Bullets ``-``/``*``,
marks ``[x]``/``[X]``/``[ ]``, optional backticks around the token and CRLF line endings
are accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.effects import MAX_BODY, RECORD_CHECKLIST, PostComment
from engine.events import Selection as ChatSelection
from engine.graph.model import EXPLAINER_SET, Graph, Node
from engine.hooks.chat_decision import surface_label
from engine.hooks.common import (
    at_login,
    degrade,
    event_comments,
    is_self_authored,
    latest,
    node_entered,
    posted_by_loopgate,
    safe_notify,
    trusted_skipped_ids,
)
from engine.hooks.markers import (
    CONFIRMATION_MARKER,
    PHASE_SELECTION_MARKER,
    says,
    with_self_marker,
)
from engine.hooks.quiz_visits import written_during
from engine.hooks.registry import HookContext, HookResult, hook
from engine.identity import Actor
from engine.outcomes import SELECTED
from engine.ports import Comment, CommentEdits, TrackerError
from engine.records import OptIn, SelectionDecision, Skip
from engine.refs import WorkItemRef
from engine.settings import EngineSettings

__all__ = [
    "confirmation_head",
    "EXPLAINER_TOKEN",
    "OPTIONAL_HEADING",
    "SETTINGS_HEADING",
    "EXPLAINER_ROW",
    "settings_default_line",
    "ChecklistRows",
    "Row",
    "Selection",
    "DEFAULT_SELECTION",
    "checklist_rows",
    "render_checklist",
    "CHECKLIST_BUDGET",
    "parse_rows",
    "visible_lines",
    "selection_from_rows",
    "parse_selection",
    "selection_records",
    "reply_body",
    "confirmation_text",
    "explainer_line",
    "unknown_row_line",
    "frozen_graph",
    "find_checklist",
    "ChecklistRefused",
    "checklist_editor_problem",
    "verify_checklist_editors",
    "post_phase_selection",
    "classify_phase_selection",
]

#: The checklist's non-phase token for the explainer setting (explainer design C2).
EXPLAINER_TOKEN = EXPLAINER_SET
OPTIONAL_HEADING = "**Optional phases — off unless you tick them.**"
SETTINGS_HEADING = "#### 🎓 Explain the change and quiz the author?"


def settings_default_line(graph: Graph) -> str:
    """The Settings section's default line, naming how many nodes (and which) unticking
    the ``explainer`` row skips: the graph's ``explainer`` skip set, so the count can
    never disagree with what the row turns off."""
    members = _explainer_members(graph)
    names = ", ".join(f"`{m}`" for m in members)
    return (f"**Default:** yes, already ticked. Untick it to skip all {len(members)}: "
            f"{names}.")


EXPLAINER_ROW = (
    "- [x] `explainer` — a spec explainer and quiz before code generation, an explainer of "
    "the change for the reviewer, and a code quiz before review is requested."
)

_ROW = re.compile(
    r"^[ \t]*[-*][ \t]+\[(?P<mark>[ xX])\][ \t]+`?(?P<token>[A-Za-z0-9][A-Za-z0-9_-]*)`?(?=\s|$)"
)

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}(?=[^`]*$)|~{3,})")
_COMMENT_START = re.compile(r"^[ \t]*<!--")


# -- rows -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChecklistRows:
    """The checklist's sections.

    Attributes:
        default_on: skippable, non-opt-in nodes outside the explainer set (ticked rows).
        opt_in: opt-in nodes (unticked rows with their description).
        protected: nodes that always run (plain bullets).
        explainer: the graph defines the ``explainer`` skip set (Settings section shown).
    """

    default_on: list[Node]
    opt_in: list[Node]
    protected: list[Node]
    explainer: bool


def _explainer_members(graph: Graph) -> tuple[str, ...]:
    return (
        tuple(graph.skip_sets.get(EXPLAINER_SET, ())) if graph.has_skip_set(EXPLAINER_SET) else ()
    )


def checklist_rows(graph: Graph) -> ChecklistRows:
    """Split the graph's nodes into the checklist's sections (issue #2 §6)."""
    hidden = set(_explainer_members(graph))
    default_on = [
        n
        for n in graph.ordered()
        if n.skippable and not n.opt_in and not n.terminal and not n.required and n.id not in hidden
    ]
    opt_in = [n for n in graph.opt_in_nodes() if n.id not in hidden]
    return ChecklistRows(
        default_on, opt_in, list(graph.protected()), graph.has_skip_set(EXPLAINER_SET)
    )


#: The checklist's share of GitHub's 65,536-character body limit: the rest is left for the
#: effect marker the performer adds (issue 10 §2: a body over the limit is never sent).
CHECKLIST_BUDGET = MAX_BODY - 100
#: Description lengths tried, longest first, when the checklist would not fit.
_DESCRIPTION_LIMITS = (None, 500, 200, 80, 30, 0)


def render_checklist(graph: Graph, settings: EngineSettings) -> str:
    """The checklist comment body, markers included (issue #2 §6, explainer design C2).

    It fits :data:`CHECKLIST_BUDGET` characters when any shortening can make it fit:
    opt-in descriptions are shortened (then dropped); every row and marker stays.

    Args:
        graph: the compiled graph.
        settings: for the execute keyword.

    Returns:
        Markdown ending with the phase-selection marker and the self-authored marker.
    """
    body = ""
    for limit in _DESCRIPTION_LIMITS:
        body = _checklist_body(graph, settings, limit)
        if len(body) <= CHECKLIST_BUDGET:
            break
    return body


def _described(node: Node, limit: int | None) -> str:
    text = node.description if limit is None else _shorten(node.description, limit)
    return f"- [ ] {node.id} — {text}".rstrip(" —")


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…" if limit else ""


def _checklist_body(graph: Graph, settings: EngineSettings, limit: int | None) -> str:
    rows = checklist_rows(graph)
    keyword = settings.execute_keyword
    parts = [
        f"### 🔁 Phase selection — `{graph.name}`",
        "",
        f"Choose the phases this work item walks, then reply **`{keyword}`** to start. "
        "Untick a phase to skip it; tick an optional phase to run it. Tick the boxes here "
        f"and reply with just `{keyword}`, or paste this checklist into your reply (a "
        "checklist in the reply wins). Only replies from authorized users count.",
        "",
        # Each row says what it is (issue 12 §4); the token stays first, so it parses.
        *[_described(n, limit).replace("- [ ]", "- [x]", 1) for n in rows.default_on],
    ]
    if rows.opt_in:
        parts += ["", f"{OPTIONAL_HEADING} These do not run by default:", ""]
        parts += [_described(n, limit) for n in rows.opt_in]
    if rows.protected:
        parts += ["", "**Always run** (protected; unticking them is refused):", ""]
        parts += [f"- {n.id}" for n in rows.protected]
    if rows.explainer:
        parts += ["", SETTINGS_HEADING, "", settings_default_line(graph), "", EXPLAINER_ROW]
    return with_self_marker("\n".join(parts), PHASE_SELECTION_MARKER)


@dataclass(frozen=True)
class Row:
    """One checkbox row: its token (node id or ``explainer``) and whether it is ticked."""

    token: str
    ticked: bool


def visible_lines(text: str | None) -> list[str]:
    """The lines of ``text`` GitHub renders as Markdown: without HTML comment blocks
    (a line starting ``<!--`` through the line holding ``-->``, or to the end when never
    closed) and fenced code blocks (```` ``` ```` or ``~~~``, closed by a fence of the same
    character at least as long, or running to the end).

    Args:
        text: a comment body (None reads as empty; CRLF accepted).

    Returns:
        The remaining lines, in order.
    """
    out: list[str] = []
    fence: str | None = None
    in_comment = False
    for line in (text or "").splitlines():
        if in_comment:
            in_comment = "-->" not in line
        elif fence is not None:
            if re.fullmatch(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*", line):
                fence = None
        elif opening := _FENCE.match(line):
            fence = opening["fence"]
        elif _COMMENT_START.match(line):
            in_comment = "-->" not in line[line.index("<!--") + 4:]
        else:
            out.append(line)
    return out


def parse_rows(text: str | None) -> list[Row]:
    """Every checkbox row of ``text`` in order (any token; CRLF accepted). Rows inside
    HTML comments or fenced code blocks are not rows: GitHub renders no box for them
    (see :func:`visible_lines`)."""
    rows = []
    for line in visible_lines(text):
        match = _ROW.match(line)
        if match:
            rows.append(Row(match["token"], match["mark"] in "xX"))
    return rows


@dataclass(frozen=True)
class Selection:
    """What a checklist says.

    Attributes:
        skips: default-on nodes left unticked (declaration order).
        opt_ins: opt-in nodes ticked (declaration order).
        refused: protected nodes left unticked (named back; they run).
        explainer_on: False only when the explainer row is present and unticked.
        readable: at least one row named a checklist token of this graph.
        unknown: tokens of rows that name no checklist row (first-seen order), reported
            in the confirmation and otherwise ignored.
    """

    skips: list[str] = field(default_factory=list)
    opt_ins: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    explainer_on: bool = True
    readable: bool = False
    unknown: list[str] = field(default_factory=list)

    def skipped_nodes(self, graph: Graph) -> list[str]:
        """``skips`` plus the explainer set's members when the explainer row is off."""
        extra = [] if self.explainer_on else list(_explainer_members(graph))
        return [*self.skips, *[n for n in extra if n not in self.skips]]


#: The full default process: nothing skipped, nothing opted in, explainer on.
DEFAULT_SELECTION = Selection()


def selection_from_rows(rows: Iterable[Row], graph: Graph) -> Selection:
    """Apply the row rules of issue #2 §6 to ``rows`` (a later row for a token wins).

    Args:
        rows: rows parsed from a comment, or built by a chat surface from its checkboxes.
        graph: the compiled graph.

    Returns:
        The :class:`Selection`; ``readable`` is False when no row named a token of the
        checklist.
    """
    sections = checklist_rows(graph)
    known = {n.id for n in (*sections.default_on, *sections.opt_in, *sections.protected)}
    if sections.explainer:
        known.add(EXPLAINER_TOKEN)
    ticks = {row.token: row.ticked for row in rows if row.token in known}
    return Selection(
        skips=[n.id for n in sections.default_on if ticks.get(n.id) is False],
        opt_ins=[n.id for n in sections.opt_in if ticks.get(n.id) is True],
        refused=[n.id for n in sections.protected if ticks.get(n.id) is False],
        explainer_on=ticks.get(EXPLAINER_TOKEN) is not False,
        readable=bool(ticks),
        unknown=list(dict.fromkeys(row.token for row in rows if row.token not in known)),
    )


def parse_selection(text: str | None, graph: Graph) -> Selection:
    """:func:`selection_from_rows` over :func:`parse_rows` of ``text``."""
    return selection_from_rows(parse_rows(text), graph)


def selection_records(
    selection: Selection, graph: Graph, actor: str, *, exclude: Iterable[str] = ()
) -> tuple[dict[str, Skip], dict[str, OptIn]]:
    """The skip and opt-in records a selection declares.

    Args:
        selection: the parsed selection.
        graph: the compiled graph.
        actor: the login that answered (with or without ``@``).
        exclude: node ids not to touch (already entered).

    Returns:
        ``(skips, opt_ins)``: ``{node: Skip("selection", token, "@actor")}`` (token
        ``explainer`` for the explainer set's members) and
        ``{node: OptIn("selection", "@actor")}``.
    """
    by = at_login(actor)
    skip_out = set(exclude)
    skips: dict[str, Skip] = {}
    for node_id in selection.skipped_nodes(graph):
        if node_id in skip_out:
            continue
        token = node_id if node_id in selection.skips else EXPLAINER_TOKEN
        skips[node_id] = Skip("selection", token, by)
    opt_ins = {n: OptIn("selection", by) for n in selection.opt_ins if n not in skip_out}
    return skips, opt_ins


def reply_body(graph: Graph, settings: EngineSettings, selection: Selection) -> str:
    """A reply carrying the execute keyword and a full checklist stating ``selection``
    (what a person pastes into their reply)."""
    rows = checklist_rows(graph)
    skipped = set(selection.skips)
    chosen = set(selection.opt_ins)
    lines = [settings.execute_keyword, ""]
    lines += [f"- [{' ' if n.id in skipped else 'x'}] {n.id}" for n in rows.default_on]
    lines += [f"- [{'x' if n.id in chosen else ' '}] {n.id}" for n in rows.opt_in]
    if rows.explainer:
        lines.append(f"- [{'x' if selection.explainer_on else ' '}] `{EXPLAINER_TOKEN}`")
    return "\n".join(lines) + "\n"


def ticked_selection(graph: Graph, skips: Iterable[str], opt_ins: Iterable[str],
                     explainer_on: bool = True) -> Selection:
    """The :class:`Selection` of a checklist ticked on a chat surface (issue 20 §1): every
    default-on row ticked unless in ``skips``, every opt-in row ticked when in ``opt_ins``,
    the explainer row (when the graph shows one) as ``explainer_on`` — the rows
    :func:`reply_body` writes, under the same row rules (:func:`selection_from_rows`)."""
    rows = checklist_rows(graph)
    skipped, chosen = set(skips), set(opt_ins)
    out = [Row(n.id, n.id not in skipped) for n in rows.default_on]
    out += [Row(n.id, n.id in chosen) for n in rows.opt_in]
    if rows.explainer:
        out.append(Row(EXPLAINER_TOKEN, explainer_on))
    return selection_from_rows(out, graph)


# -- confirmation and frozen graph ------------------------------------------------------
_VIA_TEXT = {
    "reply": "from the checklist in the reply",
    "checklist": "from the checklist ticked in place",
    "default": "the checklist could not be read, so the full default process runs",
}


def _names(ids: Iterable[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def explainer_line(graph: Graph, explainer_on: bool, actor: str) -> str:
    """``Explainer and quizzes: on`` or ``… off, as declared by @x — <members> skipped``."""
    if explainer_on:
        return "Explainer and quizzes: on"
    members = ", ".join(_explainer_members(graph))
    return f"Explainer and quizzes: off, as declared by {at_login(actor)} — {members} skipped"


def confirmation_head(actor: str, via: str) -> str:
    """The confirmation comment's first line: who answered, and how (``via`` as in
    :func:`confirmation_text`). ``loopgate verify`` finds a chat selection's echo by it
    (issue 22 §3)."""
    how = _VIA_TEXT.get(via) or f"from {surface_label(via)}"
    return f"✅ **Phase selection recorded** by {at_login(actor)} — {how}."


def confirmation_text(
    graph: Graph,
    selection: Selection,
    actor: str,
    *,
    via: str,
    not_changed: Sequence[str] = (),
) -> str:
    """The confirmation comment body (issue #2 §6), without markers.

    Args:
        graph: the compiled graph.
        selection: what was selected.
        actor: who answered (login, with or without ``@``).
        via: ``reply``, ``checklist``, ``default`` or a chat surface's name (``slack``).
        not_changed: nodes a row asked to skip or select that were already entered.

    Returns:
        Markdown, one statement per paragraph, with exactly one "Explainer and quizzes" line
        when the graph defines the explainer set.
    """
    by = at_login(actor)
    lines = [confirmation_head(actor, via)]
    skips = [s for s in selection.skips if s not in not_changed]
    lines.append(f"Skipped by {by}: {_names(skips)}." if skips else "Skipped: none.")
    offered = [n.id for n in checklist_rows(graph).opt_in]
    chosen = [n for n in selection.opt_ins if n not in not_changed]
    if chosen:
        lines.append(f"Also running: {_names(chosen)}.")
    unchosen = [n for n in offered if n not in chosen]
    if unchosen:
        lines.append(f"Not running (offered, not selected): {_names(unchosen)}.")
    if selection.refused:
        lines.append(f"Refused: {_names(selection.refused)} — protected phases always run.")
    if not_changed:
        lines.append(f"Not changed (already entered): {_names(not_changed)}.")
    lines += [unknown_row_line(graph, token) for token in selection.unknown]
    if graph.has_skip_set(EXPLAINER_SET):
        lines.append(explainer_line(graph, selection.explainer_on, actor))
    return "\n\n".join(lines)


def unknown_row_line(graph: Graph, token: str) -> str:
    """The confirmation's line for a row that names no checklist row.

    Args:
        graph: the compiled graph.
        token: the row's token.

    Returns:
        ``ignored: TOKEN — not a phase of this loop`` (a node of the graph that has no
        row of its own, such as an explainer member, reads ``not a row of this
        checklist``).
    """
    why = "not a row of this checklist" if graph.has_node(token) else "not a phase of this loop"
    return f"ignored: {token} — {why}"


def frozen_graph(
    graph: Graph, ref: WorkItemRef, skipped: Iterable[str], opt_ins: Iterable[str]
) -> dict[str, Any]:
    """The portable record of the walk as selected (issue #2 §6, opt-in design).

    Args:
        graph: the compiled graph.
        ref: the work item.
        skipped: node ids that will not run by declaration.
        opt_ins: opt-in node ids that were selected.

    Returns:
        ``{loop, workItem, nodes: [{id, phase, skipped, selectable, optIn}]}``; an
        unselected opt-in node is ``skipped: true, optIn: true`` ("nobody asked for it"),
        a removed default phase ``skipped: true, optIn: false``.
    """
    skipped_ids = set(skipped)
    chosen = set(opt_ins)
    nodes = []
    for node in graph.ordered():
        is_skipped = node.id in skipped_ids or (node.opt_in and node.id not in chosen)
        nodes.append(
            {
                "id": node.id,
                "phase": node.phase,
                "skipped": bool(is_skipped),
                "selectable": bool(node.skippable and not node.required and not node.terminal),
                "optIn": bool(node.opt_in),
            }
        )
    return {"loop": graph.name, "workItem": str(ref), "nodes": nodes}


# -- post-phase-selection ---------------------------------------------------------------
def find_checklist(
    comments: Sequence[Comment], settings: EngineSettings, comment_id: int | None = None
) -> Comment | None:
    """loopgate's checklist comment among ``comments``.

    The id recorded when it was posted wins; otherwise the earliest self-authored comment
    carrying the phase-selection marker and posted by loopgate
    (:func:`~engine.hooks.common.posted_by_loopgate`), so a look-alike cannot replace it.
    """
    marked = [c for c in comments if PHASE_SELECTION_MARKER in (c.body or "")]
    if comment_id is not None:
        for comment in marked:
            if comment.id == comment_id:
                return comment
    for comment in marked:
        if posted_by_loopgate(comment, settings):
            return comment
    return None


def _surface_entry(comment: Comment) -> dict[str, Any]:
    return {"phaseSelection": {"commentId": comment.id, "url": comment.url}}


@hook("post-phase-selection")
def post_phase_selection(ctx: HookContext) -> HookResult:
    """Post the checklist once (marker scan). Records ``surface.phaseSelection``
    ``{commentId, url}``. Tracker failure: ``graph.hook_degraded``, never a crash."""
    tracker = ctx.ports.tracker
    try:
        existing = find_checklist(tracker.list_comments(ctx.ref), ctx.settings)
    except TrackerError as exc:
        # Entry runs once: better a possible duplicate than no checklist at all.
        degrade(ctx, "post-phase-selection", f"could not scan for the checklist: {exc}")
        existing = None
    if existing is not None:
        _notify_pending(ctx, existing)
        return HookResult.passed("checklist already posted", surface=_surface_entry(existing))
    # Posted after commit; the performer records it in surface.phaseSelection.
    key = ctx.emit(PostComment(ctx.ref, render_checklist(ctx.graph, ctx.settings),
                               record=RECORD_CHECKLIST))
    _notify_pending(ctx, None)
    return HookResult.passed("checklist posting",
                             surface={RECORD_CHECKLIST: {"posting": key}})


def _notify_pending(ctx: HookContext, checklist: Comment | None) -> None:
    # The chat surface's card mirrors the checklist (issue 4 §3); a notice never gates. Queued after
    # the checklist's post, so its URL is filled in when the notice is sent.
    safe_notify(
        ctx,
        "post-phase-selection",
        "phase-selection-pending",
        {"node": ctx.node.id, "url": checklist.url if checklist else ""},
        links="" if checklist else RECORD_CHECKLIST,
    )


# -- classify-phase-selection -----------------------------------------------------------
def _wait_reason(ctx: HookContext, others: Sequence[Comment], keyword: str) -> str:
    who = ", ".join(at_login(u) for u in ctx.settings.authorized_users) or "an authorized user"
    reason = f"waiting for {who} to reply `{ctx.settings.execute_keyword}`"
    ignored = sorted(
        {
            at_login(c.author or "unknown")
            for c in others
            if not ctx.settings.is_authorized(c.author) and says(c.body, keyword)
        }
    )
    if ignored:
        reason += f" (ignored {', '.join(ignored)}: not authorized)"
    return reason


def _earlier_note(ctx: HookContext, earlier: Sequence[Comment]) -> str:
    # Names the replies of an earlier visit that were offered again and did not count.
    if not earlier:
        return ""
    visit = ctx.state.visit(ctx.node.id)
    number = visit.number if visit is not None else 0
    names = ", ".join(sorted({at_login(c.author or "unknown") for c in earlier}))
    ctx.log("graph.comment_not_counted", {"node": ctx.node.id,
                                          "comments": [c.id for c in earlier],
                                          "reason": f"written before visit {number}"})
    return (f" (not counted: {names} replied `{ctx.settings.execute_keyword}` before "
            f"visit {number} began; reply again)")


# -- who edited the checklist (issue 19 §1) --------------------------------------------------
class ChecklistRefused(Exception):
    """loopgate's checklist was edited by someone who may not choose phases, so its body
    is nobody's selection (issue 19 §1: a verdict is bound to who really said it).

    Attributes:
        editor: the editor's login ("" when GitHub names nobody).
        reason: one sentence for the wait reason and the log (also ``str(exc)``).
    """

    def __init__(self, editor: str, reason: str) -> None:
        super().__init__(reason)
        self.editor = editor
        self.reason = reason


def _checklist_editors(edits: CommentEdits) -> list[Actor]:
    # Every editor GitHub shows: the history and, when the comment was edited at all, its
    # latest ``editor`` (the history may lag behind it, platform-facts A8).
    out = [e.actor for e in edits.edits]
    if edits.last_edited_at or edits.editor:
        out.append(edits.editor_actor)
    return out


def checklist_editor_problem(
    edits: CommentEdits | None, settings: EngineSettings
) -> ChecklistRefused | None:
    """Whether the checklist's body may be read as a selection, given who edited it.

    Rule (issue 19 §1, applied to the phase-selection checklist): every edit in the history,
    and the comment's latest editor, is loopgate itself
    (:meth:`EngineSettings.is_loopgate`) or a user the phase-selection gate authorizes
    (:meth:`EngineSettings.is_authorized`, the rule for the ``execute`` reply). An editor
    GitHub does not name (null, A7) or a history longer than was read is not trusted.

    Args:
        edits: :meth:`~engine.ports.Tracker.comment_edits`'s entry for the checklist, None
            when the tracker does not know it.
        settings: loopgate's identity and the authorized users.

    Returns:
        None when the body may be used; else a :class:`ChecklistRefused` naming the editor.
    """
    if edits is None:
        return ChecklistRefused("", "the checklist could not be found on the tracker to "
                                    "check who edited it")
    if not edits.complete:
        return ChecklistRefused("", "the checklist has a longer edit history than could be "
                                    "checked")
    for editor in _checklist_editors(edits):
        if not editor.known:
            return ChecklistRefused("", "the checklist was edited by someone GitHub does not "
                                        "name, who may not choose phases")
        if settings.is_loopgate(editor) or settings.is_authorized(editor.login):
            continue
        return ChecklistRefused(editor.login, f"the checklist was edited by "
                                              f"{at_login(editor.login)}, who may not choose "
                                              "phases")
    return None


def verify_checklist_editors(tracker: Any, settings: EngineSettings, comment_id: int) -> None:
    """Check who edited loopgate's checklist before its body is used (issue 19 §1).

    Args:
        tracker: the :class:`~engine.ports.Tracker`; one whose ``comments_editable`` is
            False (the offline thread: nobody edits another's comment there) is not asked.
        settings: loopgate's identity and the authorized users.
        comment_id: the checklist's comment id.

    Raises:
        ChecklistRefused: someone who may not choose phases edited it
            (:func:`checklist_editor_problem`).
        TrackerError: the lookup failed or was rate limited (callers fail closed: wait).
    """
    if not tracker.comments_editable:
        return
    found = tracker.comment_edits([comment_id])
    problem = checklist_editor_problem(found.get(comment_id), settings)
    if problem is not None:
        raise problem


def _checklist_selection(ctx: HookContext) -> Selection | None:
    # The posted checklist's current body; None when it cannot be found or read.
    # ChecklistRefused: someone who may not choose phases edited it (issue 19 §1).
    recorded = (ctx.state.surface.get("phaseSelection") or {}).get("commentId")
    comments = ctx.ports.tracker.list_comments(ctx.ref)  # TrackerError propagates: wait
    checklist = find_checklist(comments, ctx.settings, recorded)
    if checklist is None:
        return None
    selection = parse_selection(checklist.body, ctx.graph)
    if not selection.readable:
        return None
    verify_checklist_editors(ctx.ports.tracker, ctx.settings, checklist.id)
    return selection


class _ChecklistMissing(Exception):
    """The posted checklist is not on the thread yet, or could not be posted."""


def _unposted_checklist(ctx: HookContext) -> str:
    # "" when the checklist was posted (or predates the outbox); else why it is not there.
    entry = ctx.state.surface.get(RECORD_CHECKLIST) or {}
    if entry.get("postFailed"):
        return (f"the phase-selection checklist could not be posted ({entry['postFailed']}); "
                "an operator can re-queue it with `loopgate effects retry`")
    if entry.get("posting") and not entry.get("commentId"):
        return "the phase-selection checklist is still being posted"
    return ""


def _choose_selection(ctx: HookContext, reply: Comment) -> tuple[Selection, str]:
    in_reply = parse_selection(reply.body, ctx.graph)
    if in_reply.readable:
        selection, via = in_reply, "reply"
    else:
        from_checklist = _checklist_selection(ctx)
        missing = _unposted_checklist(ctx) if from_checklist is None else ""
        if missing:  # nobody could tick what is not there: never the default then
            raise _ChecklistMissing(missing)
        if from_checklist is not None:
            selection, via = from_checklist, "checklist"
        else:
            selection, via = DEFAULT_SELECTION, "default"
    chat_via = str(ctx.event.get("via") or "")
    if chat_via and chat_via != "reply":  # a legacy chat event's comments
        via = chat_via
    if in_reply.unknown and not in_reply.readable:  # the reply's stray rows are still reported
        unknown = list(dict.fromkeys([*in_reply.unknown, *selection.unknown]))
        selection = replace(selection, unknown=unknown)
    return selection, via


def _selection_decision(
    ctx: HookContext,
    answer: tuple[str, str, int],
    via: str,
    selection: Selection,
    skips: Mapping[str, Any],
    opt_ins: Mapping[str, Any],
) -> SelectionDecision:
    # answer: (author, comment URL, comment id); a chat selection has ("login", "", 0).
    author, url, comment_id = answer
    skipped = (trusted_skipped_ids(ctx.graph, ctx.state) - set(opt_ins)) | set(skips)
    return SelectionDecision(
        by=at_login(author), via=via, at=ctx.now_iso(), comment=url,
        comment_id=comment_id, skips=list(skips), opt_ins=list(opt_ins),
        refused=list(selection.refused),
        explainer=bool(ctx.graph.has_skip_set(EXPLAINER_SET) and selection.explainer_on),
        frozen_graph=frozen_graph(ctx.graph, ctx.ref, skipped, opt_ins),
    )


def _post_confirmation(ctx: HookContext, text: str) -> None:
    ctx.emit(PostComment(ctx.ref, with_self_marker(text, CONFIRMATION_MARKER)))


def _refused_checklist(ctx: HookContext, reply: Comment, exc: ChecklistRefused) -> HookResult:
    # The reply named no rows and the checklist's body is not its approver's: wait, saying
    # who edited it and how to choose instead (issue 19 §1).
    ctx.log("graph.checklist_not_counted", {"node": ctx.node.id, "reply": reply.id,
                                            "by": at_login(reply.author),
                                            "editor": exc.editor, "reason": exc.reason})
    return HookResult.wait(
        f"{exc.reason}; reply with the checklist in your `{ctx.settings.execute_keyword}` "
        "reply (paste it and tick there)"
    )


@hook("classify-phase-selection")
def classify_phase_selection(ctx: HookContext) -> HookResult:
    """Turn the latest authorized reply carrying the execute keyword into a selection.

    Reads only the triggering event's comments; a checklist inside the reply wins
    (``via: reply``), else the posted checklist's current body (``via: checklist``), else
    the full default process (``via: default``). A tracker failure while reading the
    checklist, or its edit history, waits ``unverified`` — never a default selection. A
    checklist edited by someone who may not choose phases is not read: the gate waits
    naming the editor (issue 19 §1, :func:`checklist_editor_problem`). Nodes already
    entered are not changed.

    Returns:
        pass with outcome ``selected`` and data ``skips``, ``optIns``, ``refused``,
        ``decision``; or wait naming what is awaited.
    """
    chat = ctx.event.get("selection")
    if isinstance(chat, ChatSelection):
        return _chat_selection(ctx, chat)
    keyword = ctx.settings.execute_keyword.strip().lower()
    others = [c for c in event_comments(ctx) if not is_self_authored(c, ctx.settings)]
    decisive = [
        c
        for c in others
        if ctx.settings.is_authorized(c.author) and says(c.body, keyword)
    ]
    # Issue 19 §2: a reply written before this visit began (the gate re-entered) does not
    # choose for it, as review replies and quiz lines do not.
    earlier = [c for c in decisive if not written_during(ctx, ctx.node.id, c)]
    reply = latest([c for c in decisive if c not in earlier])
    if reply is None:
        return HookResult.wait(_wait_reason(ctx, others, keyword) + _earlier_note(ctx, earlier))
    try:
        selection, via = _choose_selection(ctx, reply)
    except _ChecklistMissing as exc:
        # The reply is offered again (unverified) and decided once the checklist is there.
        return HookResult.wait(f"{exc}; `{ctx.settings.execute_keyword}` is decided once "
                               "it is on the issue", unverified=True)
    except ChecklistRefused as exc:
        return _refused_checklist(ctx, reply, exc)
    except TrackerError as exc:
        ctx.log("graph.checklist_unverified", {"node": ctx.node.id, "reply": reply.id,
                                               "reason": str(exc)})
        return HookResult.wait(
            f"could not read the phase-selection checklist ({exc}); "
            f"reply `{ctx.settings.execute_keyword}` again once the tracker answers",
            unverified=True,
        )
    return _selected(ctx, (reply.author, reply.url, reply.id), selection, via)


def _chat_selection(ctx: HookContext, chat: ChatSelection) -> HookResult:
    """A selection made on a chat surface (issue 20 §1): the rows as ticked there, by the
    clicker's linked login, recorded with the surface's ``via``; only an authorized user's
    counts (the rule of the ``execute`` reply)."""
    if chat.node != ctx.node.id or not ctx.settings.is_authorized(chat.by):
        keyword = ctx.settings.execute_keyword.strip().lower()
        return HookResult.wait(_wait_reason(ctx, [], keyword))
    selection = ticked_selection(ctx.graph, chat.skips, chat.opt_ins, chat.explainer_on)
    return _selected(ctx, (chat.by, "", 0), selection, chat.via)


def _selected(ctx: HookContext, answer: tuple[str, str, int], selection: Selection,
              via: str) -> HookResult:
    # The gate passes with ``selection`` made by answer = (author, comment URL, id).
    author = answer[0]
    touched = [*selection.skipped_nodes(ctx.graph), *selection.opt_ins]
    not_changed = [n for n in touched if node_entered(ctx.state, n)]
    skips, opt_ins = selection_records(selection, ctx.graph, author, exclude=not_changed)
    decision = _selection_decision(ctx, answer, via, selection, skips, opt_ins)
    confirmation = confirmation_text(
        ctx.graph, selection, author, via=via, not_changed=not_changed
    )
    _post_confirmation(ctx, confirmation)
    # A selection made on the thread (or a chat surface) rewrites the chat card (issue 4 §3).
    safe_notify(
        ctx,
        "classify-phase-selection",
        "phase-selection-done",
        {"node": ctx.node.id, "decision": decision.to_json(), "confirmation": confirmation},
    )
    return HookResult.passed(
        f"selected by {at_login(author)} via {via}",
        outcome=SELECTED,
        skips=skips,
        optIns=opt_ins,
        refused=list(selection.refused),
        decision=decision,
    )
