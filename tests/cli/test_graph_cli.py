"""``loopgate graph show`` and ``loopgate graph validate`` (issue #2 §7): output and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import cli
from engine.graph.compiler import shipped_graph, shipped_graph_path
from engine.hooks.registry import REGISTRY, HookResult, HookSpec

_CONTRACT = {
    "set-phase-label": (), "log-entry": (), "deliver-assignment": (), "request-review": (),
    "post-phase-selection": (), "classify-phase-selection": (), "classify-feedback": (),
    "record-feedback": (), "notify": ("event",),
    "validate-artifacts": ("validates", "sections", "locked", "checkmarks"),
    "post-quiz-attestation": ("node", "record", "on", "digest"), "quiz-attested": ("digest",),
}

MINI = """\
version: 1
name: mini
start: a
nodes:
  - {id: a, actor: agent, skippable: true, exit: [log-entry]}
  - {id: done, actor: code, terminal: true}
edges:
  - {from: a, to: done, on: pass}
  - {from: a, to: done, on: skipped}
"""


def _noop(ctx: Any) -> HookResult:
    return HookResult.passed()


@pytest.fixture(autouse=True)
def complete_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The CLI compiles against the process-wide REGISTRY: import the shipped hooks and stand
    in (for this test only) for any contract hook that is not written yet."""
    import engine.hooks  # noqa: F401

    for name, params in _CONTRACT.items():
        if name not in REGISTRY:
            monkeypatch.setitem(REGISTRY._specs, name, HookSpec(name, _noop, frozenset(params)))
    monkeypatch.delenv("LOOPGATE_CONFIG", raising=False)
    shipped_graph.cache_clear()
    yield
    shipped_graph.cache_clear()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- validate --------------------------------------------------------------------------
def test_validate_the_shipped_graph_exits_0_with_a_summary(runner: CliRunner) -> None:
    path = str(shipped_graph_path())
    result = runner.invoke(cli, ["graph", "validate", path])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "ok: pdlc-work-item-loop — 24 nodes, 50 edges, 3 skip sets (0 warnings)\n"
    )


def test_validate_prints_warnings_after_the_summary(runner: CliRunner, tmp_path: Path) -> None:
    path = _write(tmp_path, "dup.yaml", MINI + "  - {from: a, to: a, on: pass}\n")
    result = runner.invoke(cli, ["graph", "validate", str(path)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "ok: mini — 2 nodes, 3 edges, 0 skip sets (1 warning)"
    assert lines[1].startswith("warning: edge #3 {from: a, to: a, on: pass} repeats")


def test_validate_a_refused_graph_exits_2_naming_the_offender(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = _write(tmp_path, "bad.yaml", MINI.replace("  - {from: a, to: done, on: skipped}\n", ""))
    result = runner.invoke(cli, ["graph", "validate", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "node 'a' is skippable but has no `on: skipped` edge" in result.stderr
    assert "add {from: a, to: done, on: skipped}" in result.stderr
    assert str(path) in result.stderr


def test_validate_a_missing_file_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["graph", "validate", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2
    assert "cannot read the graph file" in result.stderr


def test_validate_needs_a_file_argument(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["graph", "validate"]).exit_code == 2


# -- show ------------------------------------------------------------------------------
def test_show_file_as_json(runner: CliRunner, tmp_path: Path) -> None:
    path = _write(tmp_path, "mini.yaml", MINI)
    result = runner.invoke(cli, ["graph", "show", "--file", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["name"], data["start"], data["skipSets"]) == ("mini", "a", {})
    assert [n["id"] for n in data["nodes"]] == ["a", "done"]
    assert data["nodes"][0]["skippable"] is True and data["nodes"][0]["optIn"] is False
    assert data["edges"][1] == {"from": "a", "to": "done", "on": "skipped"}


def test_show_file_as_mermaid(runner: CliRunner, tmp_path: Path) -> None:
    path = _write(tmp_path, "mini.yaml", MINI)
    result = runner.invoke(cli, ["graph", "show", "--file", str(path), "--format", "mermaid"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "flowchart TD"
    assert "  a -->|pass / skipped| done" in result.stdout.splitlines()


def test_show_defaults_to_the_configured_shipped_graph_as_text(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./loopgate.yaml: the defaults, loop = the shipped graph
    result = runner.invoke(cli, ["graph", "show"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "pdlc-work-item-loop (version 1), start: phase-selection"
    )
    assert "design-critic-review" in result.stdout


def test_show_reads_the_graph_path_named_in_the_config(
    runner: CliRunner, tmp_path: Path
) -> None:
    _write(tmp_path, "mini.yaml", MINI)
    config = _write(tmp_path, "loopgate.yaml", "loop: mini.yaml\n")
    result = runner.invoke(cli, ["--config", str(config), "graph", "show", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == "mini"


def test_show_a_broken_configured_graph_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    _write(tmp_path, "mini.yaml", MINI.replace("start: a", "start: zz"))
    config = _write(tmp_path, "loopgate.yaml", "loop: mini.yaml\n")
    result = runner.invoke(cli, ["--config", str(config), "graph", "show"])
    assert result.exit_code == 2
    assert "start 'zz' is not a declared node" in result.stderr


def test_show_rejects_an_unknown_format(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["graph", "show", "--format", "svg"])
    assert result.exit_code == 2
