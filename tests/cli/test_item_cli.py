"""The work item verbs of the CLI (issue 2 §7): the offline flow on the shipped graph with
the local tracker, output shapes, and exit codes (0 ok, 1 refusal / --fail-on, 2 usage)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli
from engine.report import NOT_SELECTED_LINE
from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"
DOC_KEYS = {"version", "workItem", "currentNode", "nodes", "decisions", "forced", "parked",
            "completions", "skips", "optIns", "surface", "loop"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    (tmp_path / "execute.md").write_text("the-loop execute\n")
    return tmp_path


def run(home: Path, *args: str, input: str | None = None) -> Result:
    argv = ["--db", str(home / "db" / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
            *args]
    return CliRunner().invoke(cli, argv, input=input, catch_exceptions=False)


def script(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``loopgate`` console script itself (not click's runner) on ``home``."""
    argv = [*loopgate_argv(), "--db", str(home / "db" / "loopgate.db"),
            "--config", str(home / "loopgate.yaml"), *args]
    return subprocess.run(argv, cwd=home, capture_output=True, text=True, timeout=60,
                          check=False)


def check_json(home: Path, *extra: str) -> Any:
    result = run(home, "check", *extra, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def node_status(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in doc["report"]["nodes"] if n["id"] == node_id)


def selected(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("argv", [
    ["start", "acme/widgets"], ["advance", "widgets#7"], ["complete", "#7", "--node", "x"],
    ["skip", "acme/widgets#0", "--node", "design", "--reason", "r"],
    ["force", "acme/widgets#x", "--to", "design", "--reason", "r"],
    ["check", "nope"], ["comments", "acme#7"], ["events", "a/b#-1"],
])
def test_a_malformed_item_is_a_usage_error(home: Path, argv: list[str]) -> None:
    result = run(home, *argv)
    assert result.exit_code == 2
    assert "not a work item reference" in result.output


def test_start_parks_at_phase_selection_and_posts_the_checklist(home: Path) -> None:
    result = run(home, "start", ITEM)
    assert result.exit_code == 0
    assert result.output.startswith("acme/widgets#7: at phase-selection — parked: ")
    comments = run(home, "comments", ITEM)
    assert comments.exit_code == 0
    assert "#1 loopgate" in comments.output and "- [x] brainstorming" in comments.output
    assert run(home, "start", ITEM).output == result.output  # idempotent


def test_advance_with_a_comment_selects_and_walks_on(home: Path) -> None:
    selected(home)
    doc = check_json(home, ITEM)
    assert doc["currentNode"] == "brainstorming"
    assert doc["decisions"]["phase-selection"]["by"] == "@alice"
    thread = run(home, "comments", ITEM).output
    assert "alice" in thread and "the-loop execute" in thread
    log = run(home, "events", ITEM)
    assert log.exit_code == 0
    kinds = [line.split()[2] for line in log.output.splitlines()]
    assert kinds[0] == "graph.started" and "graph.parked" in kinds
    assert json.loads(run(home, "events", ITEM, "--format", "json").output)[0]["seq"] == 1


def test_check_json_prints_the_item_document_and_the_report(home: Path) -> None:
    selected(home)
    doc = check_json(home, ITEM)
    assert DOC_KEYS <= set(doc) and "report" in doc
    assert doc["workItem"] == ITEM and doc["loop"] == "pdlc-work-item-loop"
    assert doc["report"]["ok"] is False
    for extra in ((), ("--recompute",)):
        again = check_json(home, ITEM, *extra)
        critic = node_status(again, "design-critic-review")
        assert (critic["status"], critic["detail"]) == ("not selected", NOT_SELECTED_LINE)


def test_check_table_shows_statuses_and_provenance(home: Path) -> None:
    selected(home)
    assert run(home, "skip", ITEM, "--node", "design", "--reason", "tiny fix").exit_code == 0
    table = run(home, "check", ITEM)
    assert table.exit_code == 0
    assert table.output.splitlines()[0] == (
        "acme/widgets#7 — pdlc-work-item-loop — parked at brainstorming — ok: no")
    assert "skipped by declaration — via declaration, token 'design', by cli, reason: tiny fix" \
        in table.output
    assert NOT_SELECTED_LINE in table.output
    assert "phase selection: by @alice via checklist" in table.output


def test_refusals_exit_1(home: Path) -> None:
    result = run(home, "complete", ITEM, "--node", "design")
    assert result.exit_code == 1 and "not-started" in result.output
    assert run(home, "check", ITEM).exit_code == 1
    assert run(home, "advance", ITEM).exit_code == 1
    selected(home)
    for node, code in (("design", "not-current"), ("phase-selection", "already-past")):
        result = run(home, "complete", ITEM, "--node", node)
        assert result.exit_code == 1 and code in result.output
    # Issue 23 §3: a node the graph does not have is bad input, 2 in every verb.
    result = run(home, "complete", ITEM, "--node", "nope")
    assert result.exit_code == 2 and "unknown-node" in result.output
    result = run(home, "force", ITEM, "--to", "nowhere", "--reason", "r")
    assert result.exit_code == 2 and "unknown-node" in result.output


def test_a_claim_is_recorded_even_when_its_gate_blocks(home: Path) -> None:
    selected(home)
    result = run(home, "complete", ITEM, "--node", "brainstorming", "--actor", "agent-1")
    assert result.exit_code == 1
    doc = check_json(home, ITEM)
    assert doc["completions"]["brainstorming"]["by"] == "agent-1"


def test_a_claim_the_gate_blocks_exits_1_and_names_the_missing_artifact(home: Path) -> None:
    (home / "loopgate.yaml").write_text(f"authorizedUsers: [alice]\nworkspace: {home}\n")
    selected(home)
    result = run(home, "complete", ITEM, "--node", "brainstorming", "--actor", "agent-1")
    assert result.exit_code == 1
    assert "missing brainstorm.md" in result.output
    assert check_json(home, ITEM)["currentNode"] == "brainstorming"
    spec = home / "docs" / "specs" / "issue-7"
    spec.mkdir(parents=True)
    (spec / "brainstorm.md").write_text(
        "---\nstatus: approved\n---\n## Problem / opportunity\nWidgets jam.\n"
    )
    result = run(home, "complete", ITEM, "--node", "brainstorming", "--actor", "agent-1")
    assert result.exit_code == 0, result.output
    assert check_json(home, ITEM)["currentNode"] == "requirements-definition"


def test_skip_reports_accepted_and_refused_tokens(home: Path) -> None:
    selected(home)
    ok = run(home, "skip", ITEM, "--node", "review-chain", "--reason", "docs only")
    assert ok.exit_code == 0 and "skipped: critic-review (token 'review-chain')" in ok.output
    bad = run(home, "skip", ITEM, "--node", "design-critic-review", "--node", "brainstorming",
              "--reason", "r")
    assert bad.exit_code == 1
    assert "loopgate: refused: design-critic-review — " in bad.output
    assert "opt-in phase" in bad.output
    assert "a skip is a plan, not an amnesty" in bad.output
    assert run(home, "skip", ITEM, "--node", "design").exit_code == 2  # --reason required
    assert run(home, "skip", ITEM, "--node", "design", "--reason", " ").exit_code == 2


def test_force_is_reported_and_trips_fail_on_unmet(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "force", ITEM, "--to", "design", "--reason", "stuck gate")
    assert result.exit_code == 0 and "at design" in result.output
    table = run(home, "check", ITEM).output
    assert "forced: phase-selection → design by cli, reason: stuck gate" in table
    doc = check_json(home, ITEM)
    assert node_status(doc, "phase-selection")["status"] == "forced past"
    assert "phase-selection" not in doc["decisions"]
    assert run(home, "check", ITEM, "--fail-on", "unmet").exit_code == 1
    assert run(home, "check", ITEM, "--fail-on", "block").exit_code == 0


def test_fail_on_block_trips_on_an_escalated_item(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "force", ITEM, "--to", "escalated", "--reason", "give up").exit_code == 0
    assert run(home, "check", ITEM, "--fail-on", "block").exit_code == 1
    assert run(home, "check", ITEM).exit_code == 0


def test_check_all_lists_every_item(home: Path) -> None:
    for n in (9, 7, 10):
        assert run(home, "start", f"acme/widgets#{n}").exit_code == 0
    docs = check_json(home, "--all")
    assert [d["workItem"] for d in docs] == ["acme/widgets#7", "acme/widgets#9",
                                             "acme/widgets#10"]
    assert all(DOC_KEYS <= set(d) for d in docs)
    assert run(home, "check", "--all", "--fail-on", "unmet").exit_code == 1
    table = run(home, "check", "--all")
    assert table.output.count("— pdlc-work-item-loop —") == 3


def test_check_all_of_an_empty_database_is_an_empty_list(home: Path) -> None:
    assert check_json(home, "--all") == []


@pytest.mark.parametrize("argv", [["check"], ["check", ITEM, "--all"]])
def test_check_needs_exactly_one_of_item_or_all(home: Path, argv: list[str]) -> None:
    assert run(home, *argv).exit_code == 2


@pytest.mark.parametrize("spec", ["alice", "=reply.md", "alice=/nonexistent/reply.md"])
def test_a_bad_comment_option_is_a_usage_error(home: Path, spec: str) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "advance", ITEM, "--comment", spec).exit_code == 2


def test_a_comment_can_come_from_stdin(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "advance", ITEM, "--comment", "alice=-", input="the-loop execute\n")
    assert result.exit_code == 0 and "at brainstorming" in result.output


def test_an_unauthorized_comment_leaves_the_gate_waiting(home: Path) -> None:
    assert run(home, "start", ITEM).exit_code == 0
    result = run(home, "advance", ITEM, "--comment", f"mallory={home / 'execute.md'}")
    assert result.exit_code == 0 and "at phase-selection — parked" in result.output


def test_a_claim_on_a_human_gate_is_refused_through_the_console_script(home: Path) -> None:
    assert script(home, "start", ITEM).returncode == 0
    result = script(home, "complete", ITEM, "--node", "phase-selection")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "loopgate: refused: phase-selection is a human gate: human gates are answered on "
        "the thread, not claimed (human-gate)")
    assert "phase-selection" not in check_json(home, ITEM)["completions"]


def test_an_unauthorized_review_reply_is_named_in_the_wait(home: Path) -> None:
    (home / "ok.md").write_text("approved\n")
    assert run(home, "start", ITEM).exit_code == 0
    assert run(home, "force", ITEM, "--to", "requirements-approval", "--reason", "r"
               ).exit_code == 0
    result = run(home, "advance", ITEM, "--comment", f"bob={home / 'ok.md'}")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (
        "acme/widgets#7: at requirements-approval — parked: waiting for @alice to reply on "
        "requirements-approval: approved, approved with comments, or changes requested "
        "(ignored @bob: not authorized)")
    assert check_json(home, ITEM)["currentNode"] == "requirements-approval"


@pytest.mark.parametrize("verb", ["comments", "events"])
def test_reading_a_never_started_item_is_refused(home: Path, verb: str) -> None:
    result = script(home, verb, ITEM)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "loopgate: refused: acme/widgets#7 is not started (not-started)"


def test_a_selection_skip_prints_no_empty_reason(home: Path) -> None:
    # Issue 14 §9: an unticked row has no reason, so check prints no "reason:" for it.
    (home / "unticked.md").write_text("the-loop execute\n- [ ] brainstorming\n")
    assert script(home, "start", ITEM).returncode == 0
    assert script(home, "advance", ITEM, "--comment", f"alice={home / 'unticked.md'}"
                  ).returncode == 0
    result = script(home, "check", ITEM)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("brainstorming"))
    assert line.split(None, 2)[1:] == [
        "skipped", "skipped by declaration — via selection, token 'brainstorming', by @alice"]
    assert "reason:" not in result.stdout


def test_a_pass_clears_the_nodes_last_block(home: Path) -> None:
    # Issue 14 §9: lastBlock is the reason of a block still standing, not history.
    assert script(home, "start", ITEM).returncode == 0
    assert script(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}"
                  ).returncode == 0
    assert script(home, "complete", ITEM, "--node", "brainstorming").returncode == 1
    doc = json.loads(script(home, "check", ITEM, "--format", "json").stdout)
    assert doc["nodes"]["brainstorming"]["lastBlock"] == "missing brainstorm.md"
    spec = home / "docs" / "specs" / "issue-7"
    spec.mkdir(parents=True)
    (spec / "brainstorm.md").write_text(
        "---\nstatus: approved\n---\n## Problem / opportunity\nWidgets jam.\n"
    )
    assert script(home, "complete", ITEM, "--node", "brainstorming").returncode == 0
    doc = json.loads(script(home, "check", ITEM, "--format", "json").stdout)
    assert doc["currentNode"] == "requirements-definition"
    assert doc["nodes"]["brainstorming"]["outcome"] == "pass"
    assert doc["nodes"]["brainstorming"]["lastBlock"] == ""


SPEC_LINE = "- [x] I have read the spec explainer and taken the spec quiz."


def _offline_spec_quiz_ready(home: Path) -> str:
    # The spec artifacts and the explainer record of issue 7, and the typed line's file;
    # returns the explainer page's path.
    spec = home / "docs" / "specs" / "issue-7"
    (spec / "evidence").mkdir(parents=True)
    (spec / "explainer").mkdir()
    for name in ("requirements.md", "design.md", "testing-plan.md"):
        (spec / name).write_text(f"{name}\n")
    page = "docs/specs/issue-7/explainer/explainer.html"
    (home / page).write_text("<html>explainer</html>\n")
    (spec / "evidence" / "spec-explainer.md").write_text(
        "## Spec explainer\n\n| Field | Value |\n|---|---|\n| Depth | standard |\n"
        f"| Location | {page} |\n| Published as | committed HTML |\n| Questions | 3 |\n")
    (home / "hi.md").write_text("hello\n")
    (home / "typed.md").write_text(f"{SPEC_LINE}\n")
    return page


def test_offline_the_quiz_comment_and_wait_give_the_typed_line(home: Path) -> None:
    # Issue 14 §4: the local tracker has no box and no forge: no gh api / curl commands.
    page, line = _offline_spec_quiz_ready(home), SPEC_LINE
    assert script(home, "start", ITEM).returncode == 0
    assert script(home, "force", ITEM, "--to", "spec-quiz", "--reason", "r").returncode == 0
    waiting = script(home, "advance", ITEM, "--comment", f"alice={home / 'hi.md'}")
    assert waiting.returncode == 0, waiting.stderr
    waiting = script(home, "advance", ITEM, "--comment", f"alice={home / 'hi.md'}")
    assert waiting.stdout.strip() == (
        f"{ITEM}: at spec-quiz — parked: waiting for an authorized user to reply on spec-quiz "
        f"with the spec quiz line: {line}")
    thread = script(home, "comments", ITEM).stdout
    quiz = thread.split("🎓 **Spec quiz**", 1)[1]
    assert "gh api" not in thread and "raw.githubusercontent.com" not in thread
    assert f"`{page}` of the local checkout" in quiz
    assert f"reply with this line to attest\n\n```\n{line}\n```" in quiz
    passed = script(home, "advance", ITEM, "--comment", f"alice={home / 'typed.md'}")
    assert passed.returncode == 0 and "at spec-quiz" not in passed.stdout, passed.stdout


def test_offline_a_refused_typed_attestation_is_said_on_the_thread(home: Path) -> None:
    # Issue 23 §2: a typed line by someone who may not attest was silent; now the wait
    # names it and the thread says it once, as approval gates say "Not counted".
    _offline_spec_quiz_ready(home)
    assert script(home, "start", ITEM).returncode == 0
    assert script(home, "force", ITEM, "--to", "spec-quiz", "--reason", "r").returncode == 0
    assert script(home, "advance", ITEM, "--comment", f"alice={home / 'hi.md'}").returncode == 0
    refused = script(home, "advance", ITEM, "--comment", f"mallory={home / 'typed.md'}")
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.strip() == (
        f"{ITEM}: at spec-quiz — parked: waiting for an authorized user to reply on spec-quiz "
        f"with the spec quiz line: {SPEC_LINE} (not counted: @mallory (@mallory is not among "
        "the approvers of this gate (@alice)))")
    thread = script(home, "comments", ITEM).stdout
    assert thread.count("🚫 **Not counted — `spec-quiz`**: the attestation by @mallory does "
                        "not count: @mallory is not among the approvers of this gate (@alice). An "
                        "authorized user must reply with its line.") == 1
    assert "<!-- the-loop:attestation-refused spec-quiz mallory " in thread
    passed = script(home, "advance", ITEM, "--comment", f"alice={home / 'typed.md'}")
    assert passed.returncode == 0 and "at spec-quiz" not in passed.stdout, passed.stdout
    assert "✅ `spec-quiz` passed" in script(home, "comments", ITEM).stdout


def test_start_refuses_an_item_of_a_repository_nobody_watches(home: Path) -> None:
    (home / "loopgate.yaml").write_text("authorizedUsers: [alice]\n"
                                        "github:\n  repos: [acme/widgets, acme/gears]\n")
    result = run(home, "start", "other/unwatched#5")
    assert result.exit_code == 2
    assert result.output == (
        "loopgate: other/unwatched is not a watched repository (github.repos: acme/widgets, "
        "acme/gears): nothing would ever advance its work items\n")
    assert not (home / "db" / "loopgate.db").exists()
