"""Operator verbs need an authorized person (issue 19 §5), offline with the local tracker:
after the phase selection ``skip``/``force`` of a human gate only post a request, which an
authorized reply (``advance --comment alice=confirm.md``) applies and anyone else's does
not; before the selection, and for agent nodes, the verbs act at once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli

ITEM = "acme/widgets#7"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    (tmp_path / "execute.md").write_text("the-loop execute\n")
    return tmp_path


def run(home: Path, *args: str) -> Result:
    argv = ["--db", str(home / "db" / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
            *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def doc(home: Path) -> Any:
    result = run(home, "check", ITEM, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def selected(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}")
    assert result.exit_code == 0, result.output
    assert doc(home)["currentNode"] == "brainstorming"


def reply(home: Path, login: str, text: str) -> Result:
    path = home / f"{login}.md"
    path.write_text(text)
    return run(home, "advance", ITEM, "--comment", f"{login}={path}")


def request_id(result: Result) -> str:
    found = re.search(r"operator request ([0-9a-f]{8})", result.output)
    assert found, result.output
    return found.group(1)


def test_skip_of_a_human_gate_after_selection_posts_a_request_and_changes_nothing(
        home: Path) -> None:
    selected(home)
    before = doc(home)
    result = run(home, "skip", ITEM, "--node", "spec-quiz", "--node", "requirements-approval",
                 "--reason", "the agent wants out")
    assert result.exit_code == 1
    rid = request_id(result)
    assert result.stderr.startswith(
        "loopgate: pending: skip spec-quiz, requirements-approval needs an authorized person: "
        f"operator request {rid} is posted on the thread")
    after = doc(home)
    assert after["skips"] == before["skips"]  # nothing skipped
    request = after["surface"]["operatorRequests"][rid]
    assert (request["verb"], request["status"], request["by"]) == ("skip", "pending", "cli")
    assert request["nodes"] == ["spec-quiz", "requirements-approval"]
    thread = run(home, "comments", ITEM).output
    assert f"<!-- the-loop:operator-request {rid} -->" in thread
    assert f"the-loop confirm {rid}" in thread and "Reason given: the agent wants out" in thread
    table = run(home, "check", ITEM).output
    assert (f"operator request {rid}: pending — skip spec-quiz, requirements-approval, by cli, "
            "reason: the agent wants out; an authorized person replies "
            f"'the-loop confirm {rid}'") in table


def test_an_authorized_confirmation_applies_the_skip_and_records_who(home: Path) -> None:
    selected(home)
    rid = request_id(run(home, "skip", ITEM, "--node", "requirements-approval",
                         "--reason", "already approved in the RFC"))
    result = reply(home, "alice", f"the-loop confirm {rid}\n")
    assert result.exit_code == 0, result.output
    assert (f"confirmed: operator request {rid} by @alice: skip requirements-approval"
            in result.output)
    after = doc(home)
    skip = after["skips"]["requirements-approval"]
    assert (skip["confirmedBy"], skip["confirmedVia"], skip["request"]) == ("alice", "reply", rid)
    assert skip["by"] == "cli" and skip["reason"] == "already approved in the RFC"
    request = after["surface"]["operatorRequests"][rid]
    assert request["status"] == "confirmed"
    assert request["confirmed"]["by"] == "alice" and request["confirmed"]["via"] == "reply"
    assert "confirmed by @alice via reply" in run(home, "check", ITEM).output
    again = reply(home, "alice", f"the-loop confirm {rid}\n")  # nothing counts twice
    assert again.exit_code == 0
    assert doc(home)["surface"]["operatorRequests"][rid]["confirmed"] == request["confirmed"]


def test_a_confirmation_by_someone_not_authorized_is_refused(home: Path) -> None:
    selected(home)
    rid = request_id(run(home, "skip", ITEM, "--node", "spec-quiz", "--reason", "r"))
    result = reply(home, "mallory", f"the-loop confirm {rid}\n")
    assert result.exit_code == 1
    assert result.stderr == (
        f"loopgate: refused: the-loop confirm {rid} by @mallory: @mallory is not among the "
        "approvers of this gate (@alice) (at spec-quiz)\n")
    after = doc(home)
    assert "spec-quiz" not in after["skips"]
    request = after["surface"]["operatorRequests"][rid]
    assert request["status"] == "pending"
    assert request["refused"][0]["by"] == "mallory"
    events = json.loads(run(home, "events", ITEM, "--format", "json").output)
    refusals = [e for e in events if e["kind"] == "graph.operator_confirmation_refused"]
    assert refusals and refusals[0]["data"]["by"] == "mallory"
    assert f"`the-loop confirm {rid}` by @mallory did not count" in run(
        home, "comments", ITEM).output


def test_force_past_a_human_gate_waits_for_a_confirmation(home: Path) -> None:
    selected(home)
    result = run(home, "force", ITEM, "--to", "complete", "--reason", "ship it")
    assert result.exit_code == 1
    rid = request_id(result)
    assert doc(home)["currentNode"] == "brainstorming"
    assert doc(home)["forced"] == []
    confirmed = reply(home, "alice", f"Fine by me.\n\nthe-loop confirm {rid}\n")
    assert confirmed.exit_code == 0, confirmed.output
    after = doc(home)
    assert after["currentNode"] == "complete"
    move = after["forced"][0]
    assert (move["to"], move["confirmedBy"], move["request"]) == ("complete", "alice", rid)


def test_agent_nodes_and_moves_back_act_at_once(home: Path) -> None:
    selected(home)
    result = run(home, "skip", ITEM, "--node", "design", "--reason", "tiny")
    assert result.exit_code == 0 and "skipped: design (token 'design')" in result.output
    assert run(home, "force", ITEM, "--to", "brainstorming", "--reason", "redo").exit_code == 0


def test_before_the_selection_the_verbs_work_as_before(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "skip", ITEM, "--node", "spec-quiz", "--reason", "docs only")
    assert result.exit_code == 0 and "skipped: spec-quiz" in result.output
    assert "operatorRequests" not in doc(home)["surface"]


def test_giving_up_to_escalated_needs_no_confirmation(home: Path) -> None:
    selected(home)
    result = run(home, "force", ITEM, "--to", "escalated", "--reason", "stuck")
    assert result.exit_code == 0, result.output
    assert doc(home)["currentNode"] == "escalated"


def test_a_quoted_confirm_line_confirms_nothing(home: Path) -> None:
    selected(home)
    rid = request_id(run(home, "skip", ITEM, "--node", "spec-quiz", "--reason", "r"))
    result = reply(home, "alice", f"> the-loop confirm {rid}\n\nNot sure about this one.\n")
    assert result.exit_code == 0
    assert doc(home)["surface"]["operatorRequests"][rid]["status"] == "pending"
    assert "spec-quiz" not in doc(home)["skips"]


def test_a_human_gate_declared_skipped_before_the_selection_runs_unless_it_skips_it(
        home: Path) -> None:
    # The checklist shows the row as running; ticking it (or leaving it) keeps the gate.
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "skip", ITEM, "--node", "requirements-approval", "--node", "design",
               "--reason", "agent's plan").exit_code == 0
    result = reply(home, "alice", "the-loop execute\n- [x] requirements-approval\n")
    assert result.exit_code == 0, result.output
    after = doc(home)
    assert "requirements-approval" not in after["skips"]
    assert after["skips"]["design"]["via"] == "declaration"  # agent nodes: as before
    events = json.loads(run(home, "events", ITEM, "--format", "json").output)
    [overruled] = [e["data"] for e in events if e["kind"] == "graph.skips_overruled"]
    assert overruled["nodes"] == ["requirements-approval"]


def test_a_selection_that_skips_the_gate_too_keeps_the_declaration(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "skip", ITEM, "--node", "requirements-approval",
               "--reason", "approved in the RFC").exit_code == 0
    result = reply(home, "alice", "the-loop execute\n- [ ] requirements-approval\n")
    assert result.exit_code == 0, result.output
    assert "requirements-approval" in doc(home)["skips"]


def test_a_refused_confirmation_is_one_line_through_the_console_script(home: Path) -> None:
    # A fresh-eyes trial: the console script printed the log record's dict before the
    # one-liner; the refusal's structured log line is INFO (serve's logs), not stderr here.
    from tests.forkserver import run_loopgate

    selected(home)
    rid = request_id(run(home, "skip", ITEM, "--node", "spec-quiz", "--reason", "r"))
    (home / "mallory.md").write_text(f"the-loop confirm {rid}\n")
    done = run_loopgate(["--db", str(home / "db" / "loopgate.db"), "--config",
                         str(home / "loopgate.yaml"), "advance", ITEM, "--comment",
                         f"mallory={home / 'mallory.md'}"], cwd=home, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"loopgate: refused: the-loop confirm {rid} by @mallory: @mallory is not among the "
        "approvers of this gate (@alice) (at spec-quiz)"]
