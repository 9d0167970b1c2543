"""The phase-selection card, its read-only confirmation and the item's live status card.

Pure functions over the compiled graph returning lists of ``slack_sdk.models.blocks``
objects (issue 4 §3). The card mirrors the GitHub checklist comment (issue 2 §6): default-on
phase rows ticked, opt-in rows unticked with their description, a Settings row for the
``explainer`` skip set ticked by default, protected nodes as a context line, and an Execute
button with a confirm dialog.

Block Kit limits (NOTES.md §1) are enforced here because the SDK classes do not enforce
them all: at most 10 options per checkboxes element (longer groups are split into several
blocks), option text and description at most 75 characters (truncated with "…"; the full
text is repeated in a context block), option values at most 150 characters, at most 50
blocks per message. Block ids carry the message revision so a rewritten message gets
fresh ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    Option,
    PlainTextObject,
    SectionBlock,
)

from bot.slack.blocks import ids
from bot.slack.blocks.escaping import escape  # noqa: F401  -- re-exported: one helper
from engine.graph.model import EXPLAINER_SET, Graph, Node
from engine.hooks.phase_selection import (
    Row,
    Selection,
    checklist_rows,
    confirmation_text,
    selection_from_rows,
)
from engine.ports import IssueInfo
from engine.refs import WorkItemRef

__all__ = [
    "MAX_BLOCKS",
    "MAX_OPTIONS",
    "MAX_OPTION_TEXT",
    "MAX_OPTION_VALUE",
    "EXPLAINER_LABEL",
    "EXPLAINER_DESCRIPTION",
    "CardRows",
    "card_rows",
    "state_rows",
    "selection_from_state",
    "selection_from_decision",
    "confirmation_lines",
    "details_link",
    "phase_selection_node_id",
    "markdown_to_mrkdwn",
    "phase_selection_card",
    "node_option",
    "stage_of",
    "phase_chunks",
    "status_card",
    "truncate",
    "escape",
    "chunked",
]

MAX_BLOCKS = 50
MAX_OPTIONS = 10
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150

EXPLAINER_LABEL = "explainer — explain the change and quiz the author"
#: The Settings row's text of the explainer design C2.
EXPLAINER_DESCRIPTION = (
    "a spec explainer and quiz before code generation, an explainer of the change for "
    "the reviewer, and a code quiz before review is requested"
)


# -- text helpers ----------------------------------------------------------------------
def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def chunked(items: Sequence[Any], size: int = MAX_OPTIONS) -> list[Sequence[Any]]:
    """Split ``items`` into consecutive chunks of at most ``size`` (none when empty)."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def _section(text: str, block_id: str | None = None) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=truncate_keep_lines(text)), block_id=block_id)


def truncate_keep_lines(text: str, limit: int = MAX_SECTION_TEXT) -> str:
    """Like :func:`truncate` but keeps line breaks (for multi-line section text)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _item_link(info: IssueInfo, page_url: str = "") -> str:
    label = f"{info.ref}"
    link = f"<{info.url}|{label}>" if info.url else label
    # The page's link goes before the title, which is cut first (a section's text holds
    # 3,000 characters, platform-facts C4): a cut never breaks the link.
    return f"*{link}*{details_link(page_url)} {escape(truncate(info.title, 2500))}"


#: The longest details-page URL linked from Slack (``server.publicUrl`` plus
#: ``/items/<owner>/<repo>/<n>``; GitHub names are at most 39 + 100 characters).
MAX_PAGE_URL = 300


def details_link(page_url: str) -> str:
    """`` · <page|Details page>`` (mrkdwn) for the item's details page (issue 22 §2: the
    URL from ``engine.checksummary.details_page`` of ``server.publicUrl``), "" when there
    is none or it is longer than :data:`MAX_PAGE_URL` (a cut URL would lead nowhere)."""
    if not page_url or len(page_url) > MAX_PAGE_URL:
        return ""
    return f" · <{escape(page_url)}|Details page>"


# -- rows ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CardRows:
    """The checklist rows of a graph, in declaration order (the engine's
    :func:`engine.hooks.phase_selection.checklist_rows`, so card and comment agree).

    Attributes:
        default_on: skippable, non-opt-in, non-terminal nodes outside the explainer set.
        opt_in: opt-in nodes (off unless ticked).
        protected: nodes that can never be skipped.
        explainer: the graph declares the ``explainer`` skip set (Settings row shown).
        explainer_nodes: the members of that set.
    """

    default_on: tuple[Node, ...]
    opt_in: tuple[Node, ...]
    protected: tuple[Node, ...]
    explainer: bool
    explainer_nodes: tuple[str, ...] = ()


def card_rows(graph: Graph) -> CardRows:
    """The rows the card shows: exactly the GitHub checklist's sections (issue 2 §6).

    Explainer-set nodes never appear as phase rows: the Settings row stands for them.
    """
    rows = checklist_rows(graph)
    members = tuple(graph.skip_sets.get(EXPLAINER_SET, ())) if rows.explainer else ()
    return CardRows(tuple(rows.default_on), tuple(rows.opt_in), tuple(rows.protected),
                    rows.explainer, members)


# -- the selection read from a card ----------------------------------------------------
def _state_chunks(values: Mapping[str, Any], prefix: str) -> dict[int, set[str]]:
    """Chunk index -> the option values selected in that chunk, for blocks of ``prefix``."""
    found: dict[int, set[str]] = {}
    for bid, actions in (values or {}).items():
        parsed = ids.parse_block_id(str(bid))
        if parsed is None or parsed.prefix != prefix or not isinstance(actions, Mapping):
            continue
        chosen: set[str] = set()
        for action in actions.values():
            if isinstance(action, Mapping):
                for opt in action.get("selected_options") or ():
                    if isinstance(opt, Mapping) and isinstance(opt.get("value"), str):
                        chosen.add(opt["value"])
        found[parsed.index] = chosen
    return found


def _group_rows(
    values: Mapping[str, Any], prefix: str, chunks: Sequence[Sequence[str]], default: bool
) -> list[Row]:
    # A chunk whose block is absent from the state keeps its defaults; a value that is not
    # one of the chunk's own options is ignored (a payload cannot move a row between groups).
    present = _state_chunks(values, prefix)
    rows: list[Row] = []
    for index, chunk in enumerate(chunks):
        chosen = present.get(index)
        rows += [Row(t, default if chosen is None else t in chosen) for t in chunk]
    return rows


def state_rows(graph: Graph, values: Mapping[str, Any] | None) -> list[Row]:
    """Every checkbox row of the card as the message state says it (NOTES.md §2).

    Args:
        graph: the compiled graph the card was built from.
        values: ``body["state"]["values"]``: block id -> action id ->
            ``{"type": "checkboxes", "selected_options": [{"value": ...}, ...]}``.

    Returns:
        One :class:`Row` per phase row, opt-in row and (when shown) the explainer row. A
        row whose block is missing from the state keeps its default: default-on and
        explainer rows ticked, opt-in rows unticked.
    """
    rows = card_rows(graph)
    values = values or {}
    phases = [[n.id for n in chunk] for _stage, chunk in phase_chunks(graph, rows)]
    out = _group_rows(values, ids.BLOCK_PHASES, phases, True)
    out += _group_rows(values, ids.BLOCK_OPT_INS, chunked([n.id for n in rows.opt_in]), False)
    if rows.explainer:
        out += _group_rows(values, ids.BLOCK_SETTINGS, [[ids.EXPLAINER_VALUE]], True)
    return out


def selection_from_state(graph: Graph, values: Mapping[str, Any] | None) -> Selection:
    """The engine's :class:`Selection` for a card's state (row rules of issue 2 §6)."""
    return selection_from_rows(state_rows(graph, values), graph)


# -- the card --------------------------------------------------------------------------
def _option(value: str, text: str, description: str = "") -> Option:
    if len(value) > MAX_OPTION_VALUE:
        raise ValueError(f"option value longer than {MAX_OPTION_VALUE} characters: {value!r}")
    desc = truncate(description, MAX_OPTION_TEXT) if description else None
    return Option(value=value, text=PlainTextObject(text=truncate(text, MAX_OPTION_TEXT)),
                  description=PlainTextObject(text=desc) if desc else None)


def _checkbox_blocks(
    prefix: str, action_id: str, options: Sequence[Option], ticked: bool, revision: int
) -> list[Block]:
    blocks: list[Block] = []
    for index, chunk in enumerate(chunked(list(options))):
        element = CheckboxesElement(
            action_id=action_id, options=list(chunk),
            initial_options=list(chunk) if ticked else None,
        )
        blocks.append(ActionsBlock(block_id=ids.block_id(prefix, revision, index),
                                   elements=[element]))
    return blocks


def _full_text_context(pairs: Iterable[tuple[str, str]]) -> list[Block]:
    # Descriptions cut to 75 characters in an option are repeated here in full.
    lines = [f"• `{name}` — {escape(text)}" for name, text in pairs
             if len(" ".join(text.split())) > MAX_OPTION_TEXT]
    if not lines:
        return []
    return [ContextBlock(elements=[MarkdownTextObject(text=truncate_keep_lines("\n".join(lines)))])]


def _execute_button(ref: WorkItemRef, revision: int) -> Block:
    confirm = ConfirmObject(
        title="Execute phase selection?",
        text=(f"This answers the phase-selection gate of {ref} with the boxes as they are "
              "ticked now. The first answer wins; it cannot be changed from Slack."),
        confirm="Execute", deny="Cancel",
    )
    button = ButtonElement(text="Execute", action_id=ids.ACTION_EXECUTE, value=str(ref),
                           style="primary", confirm=confirm)
    return ActionsBlock(block_id=ids.block_id(ids.BLOCK_EXECUTE, revision), elements=[button])


def _protected_line(rows: CardRows) -> list[Block]:
    if not rows.protected:
        return []
    names = ", ".join(n.id for n in rows.protected)
    text = f"Always run (protected, cannot be unticked): {names}"
    return [ContextBlock(elements=[MarkdownTextObject(text=truncate_keep_lines(text))])]


def _node_rows(nodes: Sequence[Node], heading: str, block_id: str, action_id: str,
               ticked: bool, revision: int) -> list[Block]:
    # A heading, the checkbox elements (split at 10), and the full descriptions the
    # 75-character option text may have cut.
    if not nodes:
        return []
    options = [node_option(n) for n in nodes]
    checks = _checkbox_blocks(block_id, action_id, options, ticked, revision)
    return [_section(heading), *checks,
            *_full_text_context((n.id, n.description) for n in nodes)]


def node_option(node: Node) -> Option:
    """A checkbox option for ``node``: ``<id> — <description>`` cut to Block Kit's 75
    characters as its text, the description (itself cut to 75, NOTES.md §1) as the
    option's description, so a newcomer reads what a row means (issue 12 §4)."""
    label = f"{node.id} — {node.description}" if node.description else node.id
    return _option(node.id, label, node.description)


def _phase_blocks(graph: Graph, rows: CardRows, revision: int) -> list[Block]:
    # One checkbox element per stage (split at 10), each under its stage's name; the
    # chunk index in the block id counts across stages, as state_rows reads it back.
    blocks: list[Block] = [_section("*Phases* — ticked phases run; untick one to skip it.")]
    index = 0
    for stage, chunk in phase_chunks(graph, rows):
        element = CheckboxesElement(action_id=ids.ACTION_PHASES,
                                    options=[node_option(n) for n in chunk],
                                    initial_options=[node_option(n) for n in chunk])
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"*{escape(stage)}*")]))
        blocks.append(ActionsBlock(block_id=ids.block_id(ids.BLOCK_PHASES, revision, index),
                                   elements=[element]))
        index += 1
    blocks += _full_text_context((n.id, n.description) for n in rows.default_on)
    return blocks


def stage_of(graph: Graph) -> dict[str, str]:
    """Node id -> its stage: the ``phase:`` label in force there (a node without one is in
    its predecessor's stage in declaration order), ``Other`` before any phase.

    Returns:
        A title-cased stage name per node (``Requirements``, ``Needs review``).
    """
    out: dict[str, str] = {}
    current = ""
    for node in graph.ordered():
        current = node.phase or current
        out[node.id] = (current.replace("-", " ").capitalize() if current else "Other")
    return out


def phase_chunks(graph: Graph, rows: CardRows | None = None
                 ) -> list[tuple[str, tuple[Node, ...]]]:
    """The phase rows grouped by stage, in order, each group split at 10 options.

    Returns:
        ``(stage, nodes)`` per checkbox element; the list index is the block id's index.
    """
    rows = rows or card_rows(graph)
    stages = stage_of(graph)
    groups: list[tuple[str, list[Node]]] = []
    for node in rows.default_on:
        stage = stages.get(node.id, "Other")
        if not groups or groups[-1][0] != stage:
            groups.append((stage, []))
        groups[-1][1].append(node)
    return [(stage, tuple(chunk)) for stage, nodes in groups for chunk in chunked(nodes)]


def _opt_in_blocks(rows: CardRows, revision: int) -> list[Block]:
    return _node_rows(rows.opt_in, "*Optional phases — off unless you tick them*",
                      ids.BLOCK_OPT_INS, ids.ACTION_OPT_INS, False, revision)


def _settings_blocks(rows: CardRows, revision: int) -> list[Block]:
    if not rows.explainer:
        return []
    option = _option(ids.EXPLAINER_VALUE, EXPLAINER_LABEL, EXPLAINER_DESCRIPTION)
    head = _section("*Settings* — 🎓 Explain the change and quiz the author? Untick to skip "
                    f"all of: {', '.join(rows.explainer_nodes)}.")
    return [head, *_checkbox_blocks(ids.BLOCK_SETTINGS, ids.ACTION_SETTINGS, [option], True,
                                    revision),
            *_full_text_context([(ids.EXPLAINER_VALUE, EXPLAINER_DESCRIPTION)])]


def _header(text: str) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=truncate(text, MAX_HEADER_TEXT)))


def phase_selection_card(
    graph: Graph, info: IssueInfo, *, revision: int = 0, keyword: str = "the-loop execute",
    page_url: str = "",
) -> list[Block]:
    """The interactive phase-selection card (issue 4 §3).

    Args:
        graph: the compiled graph the item walks.
        info: title, link and author of the work item.
        revision: the message revision (block ids carry it).
        keyword: the execute keyword, named in the GitHub fallback line.
        page_url: the item's details page (issue 22 §2), linked after the title; "" for
            none (``server.publicUrl`` unset).

    Returns:
        At most 50 blocks. A graph too large for one message gets a compact card that
        sends the person to the GitHub checklist instead.
    """
    rows = card_rows(graph)
    blocks: list[Block] = [
        _header(f"Phase selection · {info.ref}"),
        _section(_item_link(info, page_url)),
        *_phase_blocks(graph, rows, revision),
        *_opt_in_blocks(rows, revision),
        *_settings_blocks(rows, revision),
        *_protected_line(rows),
        DividerBlock(),
        _execute_button(info.ref, revision),
        ContextBlock(elements=[MarkdownTextObject(
            text=f"Or reply `{escape(keyword)}` on the GitHub issue with the checklist.")]),
    ]
    if len(blocks) > MAX_BLOCKS:
        return _compact_card(info, keyword, len(rows.default_on) + len(rows.opt_in), page_url)
    return blocks


def _compact_card(info: IssueInfo, keyword: str, row_count: int,
                  page_url: str = "") -> list[Block]:
    text = (f"This graph offers {row_count} phase rows, more than one Slack message can hold. "
            f"Tick them in the checklist comment on GitHub and reply `{escape(keyword)}` there.")
    return [_header(f"Phase selection · {info.ref}"), _section(_item_link(info, page_url)),
            _section(text)]


# -- the read-only confirmation and the live status card --------------------------------
#: The hook whose node is the phase-selection gate.
CLASSIFY_HOOK = "classify-phase-selection"


def phase_selection_node_id(graph: Graph) -> str:
    """The phase-selection gate of ``graph``: the node whose exit chain runs
    ``classify-phase-selection`` (the start node when none does)."""
    for node in graph.ordered():
        if any(h.name == CLASSIFY_HOOK for h in node.exit):
            return node.id
    return graph.start


def selection_from_decision(graph: Graph, decision: Mapping[str, Any]) -> Selection:
    """Rebuild the :class:`Selection` a recorded phase-selection decision states.

    Args:
        graph: the compiled graph.
        decision: ``state.decisions[<phase-selection node>]`` as the gate recorded it
            (``skips``, ``optIns``, ``refused``, ``explainer``).
    """
    rows = card_rows(graph)
    phase_ids = {n.id for n in rows.default_on}
    skips = [s for s in decision.get("skips") or () if s in phase_ids]
    return Selection(
        skips=skips,
        opt_ins=[str(s) for s in decision.get("optIns") or ()],
        refused=[str(s) for s in decision.get("refused") or ()],
        explainer_on=bool(decision.get("explainer", True)) or not rows.explainer,
        readable=True,
    )


def markdown_to_mrkdwn(text: str) -> str:
    """GitHub Markdown bold (``**x**``) to Slack mrkdwn bold (``*x*``)."""
    return text.replace("**", "*")


def confirmation_lines(graph: Graph, decision: Mapping[str, Any]) -> str:
    """The confirmation comment's lines for a recorded decision, as Slack mrkdwn, plus
    when it was made (the same lines the engine posts on the issue)."""
    by = str(decision.get("by") or "someone")
    text = confirmation_text(graph, selection_from_decision(graph, decision), by,
                             via=str(decision.get("via") or "reply"))
    when = str(decision.get("at") or "")
    lines = markdown_to_mrkdwn(text).replace("\n\n", "\n")
    return lines + (f"\nExecuted at {when}." if when else "")


def status_card(
    graph: Graph,
    info: IssueInfo,
    *,
    current_node: str,
    status: str,
    decision: Mapping[str, Any] | None,
    revision: int,
    page_url: str = "",
) -> list[Block]:
    """The item's live status card: the read-only rewrite of the phase-selection card.

    Args:
        graph: the compiled graph.
        info: title, link and author of the work item.
        current_node: the item's pointer.
        status: the item's status word (``running``, ``parked``, ``complete`` ...).
        decision: the phase-selection decision, or None while phase selection waits.
        revision: the message revision (fresh block ids on every rewrite).
        page_url: the item's details page (issue 22 §2), linked after the title; "" for
            none.

    Returns:
        Read-only blocks (no interactive elements), at most 50.
    """
    rows = card_rows(graph)
    blocks: list[Block] = [
        _header(f"{info.ref} · {truncate(info.title, 100)}"),
        _section(_item_link(info, page_url), ids.block_id(ids.BLOCK_NOTICE, revision, 0)),
        _section(f"*Now:* `{current_node or '—'}` ({status or 'not started'})",
                 ids.block_id(ids.BLOCK_NOTICE, revision, 1)),
    ]
    if decision:
        blocks.append(_section(confirmation_lines(graph, decision),
                               ids.block_id(ids.BLOCK_NOTICE, revision, 2)))
    else:
        blocks.append(_section("Phase selection is waiting for an answer.",
                               ids.block_id(ids.BLOCK_NOTICE, revision, 2)))
    blocks.extend(_protected_line(rows))
    return blocks
