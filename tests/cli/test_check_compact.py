"""``check --all --format json`` at scale (issue 21 §3): the streamed output is the same JSON
as item by item, and ``--compact`` leaves out only node-line keys holding their defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_item_cli import ITEM, check_json, home, run, selected  # noqa: F401

DEFAULTS = {"detail": "", "outcome": "", "attempts": 0, "forced": False}


def test_compact_leaves_out_only_default_node_keys(home: Path) -> None:  # noqa: F811
    selected(home)
    assert run(home, "start", "acme/widgets#8").exit_code == 0
    full = check_json(home, "--all")
    compact = check_json(home, "--all", "--compact")
    assert [d["workItem"] for d in compact] == ["acme/widgets#7", "acme/widgets#8"]
    dropped = 0
    for doc, small in zip(full, compact, strict=True):
        assert {k: v for k, v in doc.items() if k != "report"} == {
            k: v for k, v in small.items() if k != "report"}
        for line, short in zip(doc["report"]["nodes"], small["report"]["nodes"], strict=True):
            assert {**DEFAULTS, **short} == line
            dropped += len(line) - len(short)
            assert all(short.get(k, v) == v or k not in DEFAULTS for k, v in line.items())
    assert dropped > 20
    one = check_json(home, ITEM, "--compact")
    assert one == compact[0]
    assert len(json.dumps(compact)) < len(json.dumps(full)) * 0.9


@pytest.mark.parametrize("text", ["non-ASCII: größe ✓"])
def test_the_streamed_output_is_utf8_json(home: Path, text: str) -> None:  # noqa: F811
    assert run(home, "start", ITEM).exit_code == 0  # before the selection: force acts at once
    assert run(home, "force", ITEM, "--to", "design", "--reason", text).exit_code == 0
    [doc] = check_json(home, "--all")
    assert doc["forced"][-1]["reason"] == text
