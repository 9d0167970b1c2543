"""The explainer assignments name their record exactly (issue 14 §3), through the
``loopgate`` console script offline: the spec-explainer assignment shows the record's
table (with the allowed depths) and the render command, and the table copied from it, with
the page at its Location, passes the gate on the first claim."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"
SPEC_CHAIN = ("brainstorming", "requirements-definition", "requirements-approval", "design",
              "test-planning", "design-approval")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "loopgate.yaml").write_text(f"authorizedUsers: [alice]\nworkspace: {tmp_path}\n")
    return tmp_path


def script(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    env["XDG_STATE_HOME"] = str(home / "state")
    return forkserver.run([*loopgate_argv(), *args], cwd=home, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def _at_spec_explainer(home: Path) -> str:
    spec = home / "docs" / "specs" / "issue-7"
    spec.mkdir(parents=True)
    for name in ("requirements.md", "design.md", "testing-plan.md"):
        (spec / name).write_text(f"{name}\n")
    rows = "\n".join(f"- [ ] {token}" for token in SPEC_CHAIN)
    (home / "execute.md").write_text(f"the-loop execute\n{rows}\n")
    assert script(home, "start", ITEM).returncode == 0
    moved = script(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}")
    assert moved.stdout.startswith(f"{ITEM}: at spec-explainer"), moved.stdout + moved.stderr
    thread = script(home, "comments", ITEM).stdout
    return thread.split("**Assignment — `spec-explainer`**", 1)[1].split("\n#", 1)[0]


def test_the_spec_explainer_assignment_shows_the_record_table_depths_and_render_command(
        home: Path) -> None:
    assignment = _at_spec_explainer(home)
    assert ("- Render the page: `loopgate explainer render docs/specs/issue-7/explainer/"
            "spec.yaml --out docs/specs/issue-7/explainer/explainer.html`") in assignment
    assert "write the record `docs/specs/issue-7/evidence/spec-explainer.md`" in assignment
    assert ("  | Field | Value |\n  |---|---|\n  | Depth | standard |\n"
            "  | Location | docs/specs/issue-7/explainer/explainer.html |\n"
            "  | Published as | committed HTML |\n  | Questions | 3 |") in assignment
    assert ("Depth: one of `micro` (0 questions), `standard` (3 questions), `deep` "
            "(5 questions)") in assignment
    assert "Command: `explain`" in assignment


def test_the_table_copied_from_the_assignment_passes_the_first_claim(home: Path) -> None:
    assignment = _at_spec_explainer(home)
    table = re.search(r"```markdown\n(.*?)\n\s*```", assignment, re.S)
    assert table is not None
    record = "\n".join(line.strip() for line in table.group(1).splitlines()) + "\n"
    path = re.search(r"write the record `([^`]+)`", assignment).group(1)
    page = re.search(r"--out ([^`\s]+)`", assignment).group(1)
    (home / path).parent.mkdir(parents=True, exist_ok=True)
    (home / path).write_text(record)
    (home / page).parent.mkdir(parents=True, exist_ok=True)
    (home / page).write_text("<html>explainer</html>\n")
    claim = script(home, "complete", ITEM, "--node", "spec-explainer", "--actor", "agent")
    assert claim.returncode == 0, claim.stdout + claim.stderr
    assert claim.stdout.startswith(f"{ITEM}: at spec-quiz"), claim.stdout


def test_the_claim_and_check_say_what_the_posted_quiz_waits_for(home: Path) -> None:
    # Issue 23 ("Smaller"): not "the comment is being posted" once it is on the thread.
    assignment = _at_spec_explainer(home)
    table = re.search(r"```markdown\n(.*?)\n\s*```", assignment, re.S)
    assert table is not None
    spec = home / "docs" / "specs" / "issue-7"
    (spec / "evidence").mkdir(parents=True, exist_ok=True)
    (spec / "evidence" / "spec-explainer.md").write_text(
        "\n".join(line.strip() for line in table.group(1).splitlines()) + "\n")
    (spec / "explainer").mkdir(exist_ok=True)
    (spec / "explainer" / "explainer.html").write_text("<html>explainer</html>\n")
    waiting = ("waiting for an authorized user to reply on spec-quiz with the spec quiz "
               "line: - [x] I have read the spec explainer and taken the spec quiz.")
    claim = script(home, "complete", ITEM, "--node", "spec-explainer")
    assert claim.stdout == f"{ITEM}: at spec-quiz — parked: {waiting}\n", claim.stdout
    assert f"spec-quiz                waiting       {waiting}" in script(home, "check",
                                                                         ITEM).stdout
