"""Issue 24 §4 offline: ``loopgate simulate ITEM --as LOGIN --approve NODE`` prints what the
gate would do and writes nothing — the stored state, the event log, the outbox and the
offline thread (a SQLite table too) are as they were; the real reply then does what it
said. Bad input exits 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli

ITEM = "acme/widgets#7"
GATE = "requirements-approval"
REQUIREMENTS = "---\nstatus: approved\n---\n# Requirements\n\n## Requirements\n\n1. It works.\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "loopgate.yaml").write_text(
        f"authorizedUsers: [alice, bob]\nworkspace: {tmp_path}\n"
        f"gates:\n  {GATE}:\n    approvals: 2\n")
    (tmp_path / "execute.md").write_text("the-loop execute\n- [ ] brainstorming\n")
    (tmp_path / "approved.md").write_text("approved\n")
    spec = tmp_path / "docs" / "specs" / "issue-7" / "requirements.md"
    spec.parent.mkdir(parents=True)
    spec.write_text(REQUIREMENTS)
    return tmp_path


def run(home: Path, *args: str) -> Result:
    argv = ["--db", str(home / "db" / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
            *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def _at_gate(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}"
               ).exit_code == 0
    done = run(home, "complete", ITEM, "--node", "requirements-definition")
    assert done.output.startswith(f"{ITEM}: at {GATE}"), done.output


def _everything(home: Path) -> dict[str, Any]:
    return {"check": json.loads(run(home, "check", ITEM, "--format", "json").output),
            "events": run(home, "events", ITEM).output,
            "effects": run(home, "effects", "list", ITEM, "--status", "all",
                           "--format", "json").output,
            "thread": run(home, "comments", ITEM).output}


def test_simulate_says_what_would_happen_and_writes_nothing(home: Path) -> None:
    _at_gate(home)
    before = _everything(home)

    one = run(home, "simulate", ITEM, "--as", "alice", "--approve", GATE)
    stranger = run(home, "simulate", ITEM, "--as", "mallory", "--approve", GATE,
                   "--format", "json")

    assert one.exit_code == 0, one.output
    assert one.output.splitlines()[:3] == [
        f"{ITEM}: @alice's approval at {GATE} would count",
        f"stays at {GATE} (parked): 1 of 2 approvals: @alice — waiting for @bob to reply "
        f"on {GATE}: approved, approved with comments, or changes requested",
        "approvals: 1 of 2 approvals: @alice"]
    answer = json.loads(stranger.output)
    assert (answer["counted"], answer["reason"], answer["to"]) == (
        False, "@mallory is not among the approvers of this gate (@alice, @bob)", GATE)
    assert _everything(home) == before

    real = run(home, "advance", ITEM, "--comment", f"alice={home / 'approved.md'}")
    assert real.output.startswith(f"{ITEM}: at {GATE} — parked: 1 of 2 approvals: @alice")
    moved = run(home, "simulate", ITEM, "--as", "bob", "--approve", GATE)
    assert moved.output.splitlines()[1].startswith(f"moves: {GATE} -> design (parked)")
    real = run(home, "advance", ITEM, "--comment", f"bob={home / 'approved.md'}")
    assert real.output.startswith(f"{ITEM}: at design"), real.output


def test_a_decision_simulated_on_the_cli_says_so_in_its_effects(home: Path) -> None:
    # The effects name the surface actually asked (the CLI), not Slack.
    _at_gate(home)
    answer = json.loads(run(home, "simulate", ITEM, "--as", "alice", "--approve", GATE,
                            "--format", "json").output)
    [echo] = [e for e in answer["effects"] if e.startswith("post-comment ")]
    assert echo == f"post-comment '✅ **Approved** at `{GATE}` by @alice — from the CLI.'"
    assert not any("Slack" in e for e in answer["effects"])


@pytest.mark.parametrize(("args", "message"), [
    (("--as", "bob"), "loopgate: give either --as LOGIN --approve NODE, or --push PULL=SHA, "
                      "or --codeowners-change FILE"),
    ((), "loopgate: give either --as LOGIN --approve NODE, or --push PULL=SHA, "
         "or --codeowners-change FILE"),
    (("--as", "bob", "--approve", "desgin"),
     "loopgate: --approve: 'desgin' is not a node of pdlc-work-item-loop (unknown-node) — "
     "did you mean `design`?"),
])
def test_bad_input_is_one_line_and_exit_2(home: Path, args: tuple[str, ...],
                                          message: str) -> None:
    _at_gate(home)
    result = CliRunner().invoke(cli, ["--db", str(home / "db" / "loopgate.db"), "--config",
                                      str(home / "loopgate.yaml"), "simulate", ITEM, *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == message


def test_a_malformed_push_is_a_usage_error(home: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(home / "db" / "loopgate.db"), "--config",
                                      str(home / "loopgate.yaml"), "simulate", ITEM,
                                      "--push", "8=not-a-sha"])
    assert result.exit_code == 2
    assert "'8=not-a-sha' is not PULL=SHA" in result.output


def test_an_item_not_started_is_refused_with_exit_1(home: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(home / "db" / "loopgate.db"), "--config",
                                      str(home / "loopgate.yaml"), "simulate", ITEM,
                                      "--as", "bob", "--approve", GATE])
    assert result.exit_code == 1
    assert "not-started" in result.output


def test_a_codeowners_change_offline_says_who_owns_what_and_writes_nothing(home: Path) -> None:
    _at_gate(home)
    before = _everything(home)
    result = run(home, "simulate", ITEM, "--codeowners-change", "/web/app.ts",
                 "--codeowners-change", "web/app.ts")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{ITEM}: if its pull requests also changed web/app.ts",
        f"stays at {GATE} (parked): 0 of 2 approvals — waiting for @alice, @bob to reply on "
        f"{GATE}: approved, approved with comments, or changes requested",
        "approvals: 0 of 2 approvals",
        f"code owners at {GATE}, with web/app.ts changed:",
        f"  none: {GATE} covers no pull request",
        f"{GATE}'s rule names no codeowners: these owners approve nothing there",
        "(simulated: nothing was written)"]
    shown = json.loads(run(home, "simulate", ITEM, "--as", "bob", "--approve", GATE,
                           "--codeowners-change", "web/app.ts", "--format", "json").output)
    assert shown["codeownersChange"] == ["web/app.ts"]
    assert shown["codeOwners"]["problem"] == f"{GATE} covers no pull request"
    assert _everything(home) == before


@pytest.mark.parametrize("path", ["", "../etc/passwd", "web//app.ts", "web\\app.ts"])
def test_a_bad_codeowners_change_path_is_a_usage_error(home: Path, path: str) -> None:
    result = run(home, "simulate", ITEM, "--codeowners-change", path)
    assert result.exit_code == 2
    assert f"{path!r} is not a repository path (like src/app.py)" in result.output
