"""Issue 19 §2 through the CLI, offline (local tracker, SQLite): a gate sent
back with ``changes requested`` on its first visit and approved on its second — ``check``
(text and JSON) says approved, ``--history`` and the JSON's ``visits`` keep both, and the
event log records each visit's decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import cli

ITEM = "acme/widgets#7"
GATE = "requirements-approval"
LOCKED = "---\nstatus: approved\n---\n# Requirements\n\n## Requirements\n\n- R1 it works\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice, bob]\n")
    for name, text in (("execute.md", "the-loop execute\n- [ ] brainstorming\n"),
                       ("changes.md", "changes requested: R1 is vague\n"),
                       ("ok.md", "approved\n")):
        (tmp_path / name).write_text(text)
    return tmp_path


def lg(home: Path, *args: str, code: int = 0) -> str:
    # In process (click's runner) from the checkout: the spec files are read from there.
    argv = ["--db", str(home / "db" / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
            *args]
    done = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert done.exit_code == code, (args, done.output)
    return done.stdout


def deliver(home: Path) -> None:
    spec = home / "docs" / "specs" / "issue-7"
    spec.mkdir(parents=True, exist_ok=True)
    # Each delivery changes the file: an unchanged artifact after "changes requested" is
    # refused (issue 23).
    path = spec / "requirements.md"
    revision = path.read_text().count("revision") + 1 if path.exists() else 1
    path.write_text(LOCKED + "".join(f"- R{n + 1} revision {n}\n"
                                     for n in range(1, revision + 1)))
    out = lg(home, "complete", ITEM, "--node", "requirements-definition", "--actor", "agent")
    assert out.startswith(f"{ITEM}: at {GATE} — parked"), out


@pytest.fixture
def answered_twice(home: Path) -> Path:
    lg(home, "start", ITEM)
    lg(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}")
    deliver(home)
    out = lg(home, "advance", ITEM, "--comment", f"alice={home / 'changes.md'}")
    assert out.startswith(f"{ITEM}: at requirements-definition"), out
    deliver(home)
    out = lg(home, "advance", ITEM, "--comment", f"bob={home / 'ok.md'}")
    assert out.startswith(f"{ITEM}: at design"), out
    return home


def test_check_json_shows_the_current_visit_and_every_visit(answered_twice: Path) -> None:
    doc: dict[str, Any] = json.loads(lg(answered_twice, "check", ITEM, "--format", "json"))
    assert (doc["decisions"][GATE]["by"], doc["decisions"][GATE]["outcome"]) == (
        "@bob", "approved")
    visits = doc["visits"][GATE]
    assert [(v["visit"], v["outcome"], v["decision"]["by"], v["decision"]["outcome"])
            for v in visits] == [(1, "changes-requested", "@alice", "changes-requested"),
                                 (2, "approved", "@bob", "approved")]
    assert visits[0]["exitedAt"] <= visits[1]["enteredAt"]  # one second can hold both
    assert visits[0]["decision"]["commentId"] != visits[1]["decision"]["commentId"]
    gate = next(n for n in doc["report"]["nodes"] if n["id"] == GATE)
    assert gate["detail"] == "outcome approved; decided by @bob, visit 2"
    assert "history" not in doc["report"]

    with_history = json.loads(lg(answered_twice, "check", ITEM, "--format", "json",
                                 "--history"))
    rows = [r for r in with_history["report"]["history"] if r["node"] == GATE]
    assert [(r["visit"], r["current"], r["decision"]["by"]) for r in rows] == [
        (1, False, "@alice"), (2, True, "@bob")]


def test_check_text_and_history(answered_twice: Path) -> None:
    table = lg(answered_twice, "check", ITEM)
    [line] = [x for x in table.splitlines() if x.strip().startswith(GATE)]
    assert line.split(None, 2)[1:] == ["passed", "outcome approved; decided by @bob, visit 2"]
    assert "changes" not in line and "visits, oldest first" not in table

    text = lg(answered_twice, "check", ITEM, "--history")
    assert text.startswith(table.rstrip("\n"))
    history = text[len(table.rstrip("\n")):].strip("\n").splitlines()
    assert history[0] == f"{ITEM} — visits, oldest first"
    gate = [x.strip() for x in history if x.strip().startswith(f"{GATE} visit")]
    assert len(gate) == 2
    assert gate[0].startswith(f"{GATE} visit 1: entered ")
    assert " with changes-requested; decided by @alice (changes-requested) at " in gate[0]
    assert not gate[0].endswith("current")
    assert " with approved; decided by @bob (approved) at " in gate[1]
    assert gate[1].endswith(" — current")
    assert history[-1].strip().startswith("design visit 1: entered ")
    assert history[-1].endswith("still open — current")


def test_the_event_log_records_each_visits_decision(answered_twice: Path) -> None:
    events = json.loads(lg(answered_twice, "events", ITEM, "--format", "json"))
    decided = [e["data"] for e in events
               if e["kind"] == "graph.decided" and e["data"]["node"] == GATE]
    assert [(d["visit"], d["outcome"], d["by"]) for d in decided] == [
        (1, "changes-requested", "@alice"), (2, "approved", "@bob")]
    text = lg(answered_twice, "events", ITEM)
    assert sum(1 for x in text.splitlines() if "graph.decided" in x and GATE in x) == 2
