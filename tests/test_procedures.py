"""Issue 23 §1: every command a shipped graph names has its procedure under
``templates/commands/``, and each procedure names what its node's gate checks: the files
(exact names, under the spec directory), every ``## section``, the lock, the checkboxes and
the claim command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.procedures import (
    UnknownProcedure,
    missing_procedures,
    procedure_names,
    procedure_text,
)
from engine.graph.compiler import compile_file, compile_graph
from engine.graph.model import Graph, Node
from engine.hooks.artifacts import split_alternatives
from tests.conftest import REPO_ROOT
from tests.e2e.stack import loopgate_argv

SHIPPED = sorted((REPO_ROOT / "graphs").glob("*.yaml"))
#: Every command the issue lists for the shipped graph (issue 23 §1).
ISSUE_COMMANDS = {"brainstorm", "requirements", "design", "critic-review", "testing-plan",
                  "explain", "tasks", "implement", "verify", "self-review", "security-review",
                  "evidence", "capability-docs", "pr-briefing"}


def _graphs() -> list[Graph]:
    return [compile_file(path) for path in SHIPPED]


def _command_nodes() -> list[tuple[str, Node]]:
    return [(graph.name, node) for graph in _graphs() for node in graph.ordered()
            if node.command]


def test_there_is_a_shipped_graph_and_it_names_every_command_of_the_issue() -> None:
    assert SHIPPED, "no graph under graphs/"
    assert {node.command for _, node in _command_nodes()} == ISSUE_COMMANDS


def test_every_command_of_every_shipped_graph_has_a_procedure() -> None:
    for graph in _graphs():
        assert missing_procedures(graph) == [], graph.name
    for _, node in _command_nodes():
        assert (REPO_ROOT / "templates" / "commands" / f"{node.command}.md").is_file()


def test_a_graph_naming_a_command_without_a_procedure_is_reported() -> None:
    graph = compile_graph({
        "version": 1, "name": "tiny", "start": "write",
        "nodes": [
            {"id": "write", "actor": "agent", "command": "haiku", "exit": ["validate-artifacts"],
             "produces": "poem.md"},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        "edges": [{"from": "write", "to": "done", "on": "pass"}],
    })
    assert missing_procedures(graph) == [("write", "haiku")]


def _gate_params(node: Node) -> list[dict]:
    return [dict(ref.params) for ref in node.exit if ref.name == "validate-artifacts"]


def _files(node: Node) -> list[str]:
    names = [name for alts in (*node.produces, *node.validates) for name in alts]
    for params in _gate_params(node):
        names += [name for alts in split_alternatives(params.get("validates"))
                  for name in alts]
    return names


@pytest.mark.parametrize("graph_name,node", _command_nodes(),
                         ids=[f"{g}:{n.id}" for g, n in _command_nodes()])
def test_the_procedure_names_what_the_gate_checks(graph_name: str, node: Node) -> None:
    text = procedure_text(node.command)
    assert f"`{node.id}`" in text, f"{node.command}.md does not name the node {node.id}"
    for name in _files(node):
        assert f"SPEC/{name}" in text, f"{node.command}.md does not name SPEC/{name}"
    for params in _gate_params(node):
        for section in params.get("sections") or ():
            assert f"## {section}" in text, f"{node.command}.md lacks '## {section}'"
        if params.get("locked"):
            assert "status: approved" in text, f"{node.command}.md: the lock"
        if params.get("checkmarks") == "complete":
            assert "`- [ ]`" in text and "`- [x]`" in text, f"{node.command}.md: checkboxes"
    claim = f"loopgate complete ITEM --node {node.id}"
    assert claim in text or ("loopgate complete ITEM --node NODE" in text), node.command
    assert "exits 1" in text or "exit 1" in text, f"{node.command}.md: what a refusal is"


def test_procedure_text_refuses_a_name_that_is_not_a_procedure() -> None:
    with pytest.raises(UnknownProcedure, match="no procedure named 'haiku'"):
        procedure_text("haiku")
    with pytest.raises(UnknownProcedure):
        procedure_text("../pr-briefing")  # never a path outside the folder
    assert "requirements" in procedure_names()


def _script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    return subprocess.run([*loopgate_argv(), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_console_script_prints_a_procedure_and_refuses_an_unknown_one(
        tmp_path: Path) -> None:
    shown = _script("procedure", "requirements", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (REPO_ROOT / "templates/commands/requirements.md").read_text("utf-8")
    listed = _script("procedure", cwd=tmp_path)
    assert listed.stdout.split() == sorted(ISSUE_COMMANDS)
    wrong = _script("procedure", "desgin", cwd=tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("loopgate: no procedure named 'desgin'")
    assert wrong.stderr.rstrip().endswith("did you mean `design`?")
    assert len(wrong.stderr.splitlines()) == 1
