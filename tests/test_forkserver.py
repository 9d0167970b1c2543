"""The CLI fork server of the tests (tests/forkserver.py, issue 23 §5): a forked call gives
what a fresh ``loopgate`` process gives — the same output, exit codes, environment,
working directory and standard input — and a call that overruns is killed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests import forkserver


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    clean["XDG_STATE_HOME"] = str(tmp_path / "state")
    return clean


def test_a_forked_call_prints_and_exits_as_the_console_script_does(
        tmp_path: Path, env: dict[str, str]) -> None:
    for args in (["--help"], ["check", "acme/widgets#7", "--format", "yaml"], ["nope"]):
        forked = forkserver.run_loopgate(args, cwd=tmp_path, env=env)
        spawned = subprocess.run([*forkserver.console_argv(), *args], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=60, check=False)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            spawned.returncode, spawned.stdout, spawned.stderr), args
    assert forked.returncode == 2 and "No such command 'nope'" in forked.stderr


def test_each_call_has_its_own_environment_and_working_directory(
        tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    here = forkserver.run_loopgate(["config", "show"], cwd=tmp_path / "a", env=env)
    assert here.returncode == 0, here.stderr
    assert str(tmp_path / "a" / "loopgate.yaml") in here.stdout
    elsewhere = forkserver.run_loopgate(
        ["config", "show"], cwd=tmp_path,
        env={**env, "LOOPGATE_DB": str(tmp_path / "from-env.db")})
    assert str(tmp_path / "from-env.db") in elsewhere.stdout
    assert str(tmp_path / "a" / "loopgate.yaml") not in elsewhere.stdout
    again = forkserver.run_loopgate(["config", "show"], cwd=tmp_path, env=env)
    assert str(tmp_path / "from-env.db") not in again.stdout  # nothing carried over


def test_standard_input_reaches_the_call(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    argv = ["--db", str(tmp_path / "x.db"), "--config", str(tmp_path / "loopgate.yaml")]
    assert forkserver.run_loopgate([*argv, "start", "acme/widgets#7"], cwd=tmp_path,
                                   env=env).returncode == 0
    moved = forkserver.run_loopgate([*argv, "advance", "acme/widgets#7", "--comment",
                                     "alice=-"], cwd=tmp_path, env=env,
                                    input="the-loop execute\n")  # FILE - reads stdin
    assert moved.returncode == 0, moved.stderr
    assert "brainstorming" in moved.stdout


def test_a_call_running_past_its_timeout_is_killed(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "loopgate.yaml").write_text(
        "authorizedUsers: [alice]\nserver: {host: 127.0.0.1, port: 0}\n")
    argv = ["--db", str(tmp_path / "x.db"), "--config", str(tmp_path / "loopgate.yaml"),
            "serve"]
    with pytest.raises(subprocess.TimeoutExpired):
        forkserver.run_loopgate(argv, cwd=tmp_path, env=env, timeout=2)
    # the server serves the next call: the killed one was reaped
    assert forkserver.run_loopgate(["--version"], cwd=tmp_path, env=env).returncode == 0
