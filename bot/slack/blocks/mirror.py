"""The phase-selection card mirrors the GitHub checklist (issue 14 §15).

Two pure helpers over Block Kit dicts, independent of how the card lays its rows out:

* :func:`with_selection` ticks the card's checkboxes (``initial_options``) as the GitHub
  checklist says, for the redraw after the checklist was edited on GitHub. The redraw
  carries a new revision in every block id: Slack asks for a new ``block_id`` on each
  iteration of a message, otherwise clients may keep the old checkbox state (NOTES.md §1).
* :func:`initial_state` reads a clicked message's ``initial_options`` back as
  ``state.values`` entries, so a checkbox block missing from a click's state keeps what
  the card showed, not the graph's defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from bot.slack.blocks import ids

__all__ = ["with_selection", "initial_state", "ticked_values"]


def _checkboxes(block: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    # (group prefix, checkbox elements) of an actions block of the card; ("", []) otherwise.
    parsed = ids.parse_block_id(str(block.get("block_id") or ""))
    if parsed is None or parsed.prefix not in ids.CHECKBOX_GROUPS:
        return "", []
    return parsed.prefix, [e for e in block.get("elements") or ()
                           if isinstance(e, dict) and e.get("type") == "checkboxes"]


def ticked_values(prefix: str, values: Sequence[str], *, skips: Collection[str],
                  opt_ins: Collection[str], explainer: bool) -> list[str]:
    """The option values of one checkbox group that a selection ticks.

    Args:
        prefix: ``ids.BLOCK_PHASES`` | ``ids.BLOCK_OPT_INS`` | ``ids.BLOCK_SETTINGS``.
        values: the group's option values (node ids, or ``ids.EXPLAINER_VALUE``).
        skips: skipped node ids (a phase row is ticked unless skipped).
        opt_ins: opted-in node ids (an opt-in row is ticked only when opted in).
        explainer: the Settings row's state.

    Returns:
        The ticked values, in the given order.
    """
    if prefix == ids.BLOCK_PHASES:
        return [v for v in values if v not in skips]
    if prefix == ids.BLOCK_OPT_INS:
        return [v for v in values if v in opt_ins]
    return [v for v in values if v == ids.EXPLAINER_VALUE and explainer]


def with_selection(blocks: Sequence[Mapping[str, Any]], *, skips: Collection[str],
                   opt_ins: Collection[str], explainer: bool) -> list[dict[str, Any]]:
    """A copy of a card's blocks whose checkboxes are ticked as a selection says.

    Args:
        blocks: the card as Block Kit dicts (``Block.to_dict()``).
        skips, opt_ins, explainer: the selection (see :func:`ticked_values`).

    Returns:
        New dicts; ``initial_options`` is set, or removed when nothing is ticked (Slack
        refuses an empty ``initial_options`` list).
    """
    out = [copy.deepcopy(dict(b)) for b in blocks]
    for block in out:
        prefix, elements = _checkboxes(block)
        for element in elements:
            options = element.get("options") or []
            ticked = set(ticked_values(prefix, [str(o.get("value")) for o in options],
                                       skips=skips, opt_ins=opt_ins, explainer=explainer))
            chosen = [o for o in options if str(o.get("value")) in ticked]
            if chosen:
                element["initial_options"] = chosen
            else:
                element.pop("initial_options", None)
    return out


def initial_state(blocks: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """``state.values`` as the card was drawn: block id → action id → the checkboxes'
    ``initial_options`` (``[]`` when none), for every checkbox block of the card."""
    state: dict[str, Any] = {}
    for block in blocks or ():
        _prefix, elements = _checkboxes(block)
        for element in elements:
            action = str(element.get("action_id") or "")
            state.setdefault(str(block["block_id"]), {})[action] = {
                "type": "checkboxes",
                "selected_options": list(element.get("initial_options") or []),
            }
    return state
