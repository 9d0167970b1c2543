"""Issue 23 ("Smaller"): after ``changes requested`` the new assignment quotes what the
reviewer wrote, and the same artifact is not accepted again — offline, through the
``loopgate`` console script."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"
REQUIREMENTS = "---\nstatus: approved\n---\n# Requirements\n\n## Requirements\n\n1. It works.\n"
REVIEW = ("changes requested\n\nPlease add what happens when the file is missing.\n"
          "And number the error cases.\n")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "loopgate.yaml").write_text(f"authorizedUsers: [alice]\nworkspace: {tmp_path}\n")
    (tmp_path / "execute.md").write_text("the-loop execute\n- [ ] brainstorming\n")
    (tmp_path / "review.md").write_text(REVIEW)
    return tmp_path


def script(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    env["XDG_STATE_HOME"] = str(home / "state")
    return subprocess.run([*loopgate_argv(), *args], cwd=home, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def _assignments(home: Path, node: str) -> list[str]:
    thread = script(home, "comments", ITEM).stdout
    parts = thread.split(f"**Assignment — `{node}`**")[1:]
    return [part.split("\n#", 1)[0] for part in parts]


def _sent_back(home: Path) -> Path:
    requirements = home / "docs" / "specs" / "issue-7" / "requirements.md"
    requirements.parent.mkdir(parents=True)
    requirements.write_text(REQUIREMENTS)
    assert script(home, "start", ITEM).returncode == 0
    assert script(home, "advance", ITEM, "--comment", f"alice={home / 'execute.md'}"
                  ).returncode == 0
    first = script(home, "complete", ITEM, "--node", "requirements-definition")
    assert first.stdout.startswith(f"{ITEM}: at requirements-approval"), first.stdout
    back = script(home, "advance", ITEM, "--comment", f"alice={home / 'review.md'}")
    assert back.stdout.startswith(f"{ITEM}: at requirements-definition"), back.stdout
    return requirements


def test_the_new_assignment_quotes_what_the_reviewer_asked_for(home: Path) -> None:
    _sent_back(home)
    first, again = _assignments(home, "requirements-definition")
    assert "Changes requested" not in first
    assert again.count("- Changes requested by @alice at `requirements-approval` ([reply]("
                       "local://acme/widgets#7/comment-") == 1
    assert ("; change what they ask for (the gate will not accept `requirements.md` or "
            "`bugfix.md` unchanged):\n") in again
    assert ("  > changes requested\n  >\n  > Please add what happens when the file is "
            "missing.\n  > And number the error cases.\n") in again
    assert "the-loop:" not in again.split("- Produce:")[0]  # no marker quoted


def test_the_same_artifact_is_not_accepted_again_after_changes_requested(home: Path) -> None:
    requirements = _sent_back(home)
    same = script(home, "complete", ITEM, "--node", "requirements-definition")
    assert same.returncode == 1
    assert same.stdout == (
        f"{ITEM}: at requirements-definition — parked: requirements.md unchanged since "
        "@alice requested changes at requirements-approval: change what they asked for, "
        "then claim again\n")
    requirements.write_text(REQUIREMENTS + "2. A missing file is named in the error.\n")
    changed = script(home, "complete", ITEM, "--node", "requirements-definition")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert changed.stdout.startswith(f"{ITEM}: at requirements-approval")
