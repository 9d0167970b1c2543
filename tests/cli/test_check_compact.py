"""``check --all --format json`` at scale (issue 21 §3): the streamed output is the same JSON
as item by item, and ``--compact`` leaves out only node-line keys holding their defaults and
``decisions``, which ``visits`` holds (each node's last visit's decision)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli.check_cmd import decisions_from_visits
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
        assert {k: v for k, v in doc.items() if k not in ("report", "decisions")} == {
            k: v for k, v in small.items() if k != "report"}
        assert "decisions" not in small  # rebuilt from visits, as documented
        assert decisions_from_visits(small["visits"]) == doc["decisions"]
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


def _walked(home: Path) -> list[str]:  # noqa: F811
    """Items in varied real states, walked by the CLI verbs: parked at phase selection,
    selected (with a non-ASCII claim), skipped by declaration, forced past a gate,
    escalated, and a claim a gate blocked."""
    items = [f"acme/widgets#{n}" for n in (1, 2, 3, 4, 5)]
    for ref in items:
        assert run(home, "start", ref).exit_code == 0
    for ref in items[1:3]:  # before the selection, force acts at once: #4 and #5 stay
        assert run(home, "advance", ref, "--comment",
                   f"alice={home / 'execute.md'}").exit_code == 0
    assert run(home, "skip", items[2], "--node", "review-chain", "--reason",
               "docs only — größe").exit_code == 0
    assert run(home, "force", items[3], "--to", "design", "--reason", "stuck").exit_code == 0
    assert run(home, "force", items[4], "--to", "escalated", "--reason", "x").exit_code == 0
    assert run(home, "complete", items[1], "--node", "brainstorming", "--actor",
               "agent-ü").exit_code == 1
    return items


def _old_compact(document: dict) -> dict:
    # --compact as first defined: every node-line key whose value is its default, dropped;
    # then (issue 21 §3's 7 kB) `decisions` left out, which the visits rebuild.
    lines = [{k: v for k, v in line.items()
              if not (k in DEFAULTS and type(v) is type(DEFAULTS[k]) and v == DEFAULTS[k])}
             for line in document["report"]["nodes"]]
    assert decisions_from_visits(document["visits"]) == document["decisions"]
    return {k: ({**v, "nodes": lines} if k == "report" else v)
            for k, v in document.items() if k != "decisions"}


def test_the_streamed_bytes_are_each_items_json_on_varied_states(home: Path) -> None:  # noqa: F811
    items = _walked(home)
    for extra in ((), ("--compact",)):
        streamed = run(home, "check", "--all", "--format", "json", *extra).output
        lines = streamed.splitlines()
        assert lines[0] == "[" and lines[-1] == "]"
        assert len(lines) == len(items) + 2
        for ref, line in zip(items, lines[1:-1], strict=True):
            one = check_json(home, ref)
            want = _old_compact(one) if extra else one
            # The bytes the standard library writes for the same value, key order kept.
            assert line.rstrip(",") == json.dumps(want, ensure_ascii=False,
                                                  separators=(",", ":")), (ref, extra)


def test_the_stream_is_the_same_bytes_whatever_its_chunk(home: Path,  # noqa: F811
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # check --all gathers its lines and writes them every _CHUNK bytes (issue 21 §3: a
    # write per item was a system call per item): a chunk smaller than one line (a write
    # per item) and one larger than the whole output (one write) give the same bytes.
    _walked(home)
    outputs = outputs_by_chunk(monkeypatch,
                               lambda: run(home, "check", "--all", "--format", "json").output)
    assert outputs[0] == outputs[1]
    assert [doc["workItem"] for doc in json.loads(outputs[0])] == [
        f"acme/widgets#{n}" for n in (1, 2, 3, 4, 5)]


def test_compact_leaves_decisions_out_of_a_selected_item(home: Path) -> None:  # noqa: F811
    # The phase selection's decision carries the frozen graph: the full form has it under
    # `decisions` and under `visits`; the compact form only under `visits` (issue 21 §3).
    selected(home)
    [full] = check_json(home, "--all")
    [small] = check_json(home, "--all", "--compact")
    frozen = full["decisions"]["phase-selection"]["frozenGraph"]
    assert frozen and "decisions" not in small
    assert small["visits"]["phase-selection"][-1]["decision"]["frozenGraph"] == frozen
    assert json.dumps(small).count('"frozenGraph"') == 1
    assert json.dumps(full).count('"frozenGraph"') == 2


def test_the_stream_writes_every_byte_to_a_raw_stdout_that_takes_part_of_a_write() -> None:
    # With PYTHONUNBUFFERED=1 (deploy/Dockerfile sets it) sys.stdout.buffer is a raw FileIO,
    # whose write may take only part of what it is given (a pipe's 64 kB, a disk filling,
    # a non-blocking pipe: None) and returns the count, raising nothing. check --all's 1 MB
    # writes were cut short without a word: `check --all | head -c 50` exited 0 where main
    # exited 1 (EPIPE), its output a 64 kB prefix.
    from bot.cli import check_cmd

    class RawPipe:
        """A raw stream taking at most 1,000 bytes a call, and nothing every third."""

        def __init__(self) -> None:
            self.taken = bytearray()
            self.calls = 0

        def write(self, data: bytes | bytearray | memoryview) -> int | None:
            self.calls += 1
            if self.calls % 3 == 0:
                return None  # would block
            part = bytes(data[:1000])
            self.taken += part
            return len(part)

        def fileno(self) -> int:
            return sys.__stdout__.fileno()  # select() sees a writable descriptor

    class Stdout:
        def __init__(self) -> None:
            self.buffer = RawPipe()

        def flush(self) -> None:
            pass

    out = Stdout()
    data = bytearray(b"".join(b"%06d," % i for i in range(5000)))  # 35,000 bytes
    check_cmd._byte_writer(out)(data)
    assert bytes(out.buffer.taken) == bytes(data)


def outputs_by_chunk(monkeypatch: pytest.MonkeyPatch, check_all: Callable[[], str]
                     ) -> list[str]:
    """``check_all()``'s output with ``check --all`` writing every byte as it comes (a chunk
    of 1) and with one write at the end (a chunk larger than any output)."""
    from bot.cli import check_cmd

    outputs = []
    for chunk in (1, 1 << 30):
        monkeypatch.setattr(check_cmd, "_CHUNK", chunk)
        outputs.append(check_all())
    return outputs
