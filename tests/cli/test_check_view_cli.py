"""``check`` on a terminal (issue 14 §9), through the ``loopgate`` console script: status
words in colour on a terminal only (never through a pipe or with NO_COLOR), a finished walk
reads "complete" (never "complete at complete"), and ``check --all`` ends with a summary
table and filters by ``--node`` and ``--status``."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.stack import loopgate_argv

ESC = "\x1b["


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    return tmp_path


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "NO_COLOR")}
    env["XDG_STATE_HOME"] = str(home / "state")
    return {**env, **extra}


def script(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run([*loopgate_argv(), *args], cwd=home, env=_env(home, **env),
                          capture_output=True, text=True, timeout=60, check=False)


def on_terminal(home: Path, *args: str, **env: str) -> str:
    """Run with standard output on a pseudo-terminal; returns what it printed."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([*loopgate_argv(), *args], cwd=home, env=_env(home, **env),
                              stdout=follower, stderr=subprocess.PIPE, timeout=60, check=False)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, proc.stderr
    return b"".join(chunks).decode("utf-8")


def test_check_colours_status_words_on_a_terminal_only(home: Path) -> None:
    assert script(home, "start", "acme/widgets#7").returncode == 0
    colored = on_terminal(home, "check", "acme/widgets#7")
    assert f"{ESC}33mparked at phase-selection{ESC}0m" in colored
    assert f"{ESC}2mnot reached{ESC}0m" in colored
    piped = script(home, "check", "acme/widgets#7")
    assert ESC not in piped.stdout and "parked at phase-selection" in piped.stdout
    assert ESC not in on_terminal(home, "check", "acme/widgets#7", NO_COLOR="1")
    forced = script(home, "check", "acme/widgets#7", "--color", "always")
    assert f"{ESC}33mparked at phase-selection{ESC}0m" in forced.stdout
    never = on_terminal(home, "check", "acme/widgets#7", "--color", "never")
    assert ESC not in never
    # the plain text is the same with and without colour, once the codes are removed
    assert never.replace("\r\n", "\n") == piped.stdout


def test_a_finished_walk_reads_complete_not_complete_at_complete(home: Path) -> None:
    assert script(home, "start", "acme/widgets#7").returncode == 0
    forced = script(home, "force", "acme/widgets#7", "--to", "complete", "--reason", "done")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.strip() == "acme/widgets#7: complete"
    heading = script(home, "check", "acme/widgets#7").stdout.splitlines()[0]
    assert heading.startswith("acme/widgets#7 — pdlc-work-item-loop — complete — ok:")
    assert "complete at complete" not in heading


def _three_items(home: Path) -> None:
    for n in (1, 2, 3):
        assert script(home, "start", f"acme/widgets#{n}").returncode == 0
    assert script(home, "force", "acme/widgets#3", "--to", "complete", "--reason",
                  "r").returncode == 0


def test_check_all_ends_with_a_summary_table(home: Path) -> None:
    _three_items(home)
    result = script(home, "check", "--all")
    assert result.returncode == 0, result.stderr
    tail = result.stdout.rstrip("\n").split("\n\n")[-1].splitlines()
    assert tail == [
        "summary: 3 items",
        "  node             status    items",
        "  phase-selection  parked        2",
        "  complete         complete      1",
    ]


def test_check_all_filters_by_node_and_status(home: Path) -> None:
    _three_items(home)
    done = script(home, "check", "--all", "--status", "complete").stdout
    assert "acme/widgets#3 — " in done and "acme/widgets#1 — " not in done
    assert "summary: 1 item\n" in done
    waiting = script(home, "check", "--all", "--node", "phase-selection").stdout
    assert [line.split(" — ")[0] for line in waiting.splitlines()
            if line.startswith("acme/")] == ["acme/widgets#1", "acme/widgets#2"]
    assert "summary: 2 items" in waiting
    none = script(home, "check", "--all", "--node", "design", "--status", "parked")
    assert none.returncode == 0 and none.stdout.startswith("summary: 0 items")
    bad = script(home, "check", "--all", "--node", "nope")
    assert bad.returncode == 2 and "'nope' is not a node of pdlc-work-item-loop" in bad.stderr
    one = script(home, "check", "acme/widgets#1", "--status", "parked")
    assert one.returncode == 2 and "--node and --status filter --all" in one.stderr


def test_check_node_without_all_says_the_filters_need_all(home: Path) -> None:
    result = script(home, "check", "--node", "design")
    assert result.returncode == 2
    # Issue 23 §3: click's usage errors are one loopgate line, naming the command's help.
    assert result.stderr == ("loopgate: --node and --status filter --all: give --all, not "
                             "ITEM (see `loopgate check --help`)\n")
    status = script(home, "check", "--status", "parked")
    assert "--node and --status filter --all" in status.stderr


def test_check_all_compact_text_is_one_line_per_item_then_the_summary(home: Path) -> None:
    # --compact in text mode was ignored (the full table per item); it is one line per item:
    # where it stands, ok, the unmet nodes reached (with their status) and a count of the
    # rest; --all still ends with the summary table.
    _three_items(home)
    result = script(home, "check", "--all", "--compact")
    assert result.returncode == 0, result.stderr
    loop = "pdlc-work-item-loop"
    assert result.stdout.splitlines() == [
        f"acme/widgets#1 — {loop} — parked at phase-selection — ok: no — unmet: "
        "phase-selection (waiting), 20 not reached",
        f"acme/widgets#2 — {loop} — parked at phase-selection — ok: no — unmet: "
        "phase-selection (waiting), 20 not reached",
        f"acme/widgets#3 — {loop} — complete — ok: no — unmet: "
        "phase-selection (forced past), 20 not reached",
        "", "summary: 3 items", "  node             status    items",
        "  phase-selection  parked        2", "  complete         complete      1"]
    one = script(home, "check", "acme/widgets#1", "--compact")
    assert one.stdout == result.stdout.splitlines()[0] + "\n"
    help_text = " ".join(script(home, "check", "--help").stdout.split())
    assert "--compact Text: one line per item (where it stands, ok, its unmet nodes;" in help_text
