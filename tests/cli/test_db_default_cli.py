"""Which database a command uses (issue 14 §2), through the ``loopgate`` console script:
with a loopgate.yaml, ``.loopgate/loopgate.db`` beside it; ``--db``, ``$LOOPGATE_DB`` and
the config's ``database`` still win; without a config file, the XDG state folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    clean["XDG_STATE_HOME"] = str(tmp_path / "state")
    return clean


def _folder(root: Path, name: str, extra: str = "") -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "loopgate.yaml").write_text(f"authorizedUsers: [alice]\n{extra}")
    return folder


def script(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``loopgate`` console script in ``cwd`` with ``env``."""
    return forkserver.run([*loopgate_argv(), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def _in_use(cwd: Path, env: dict[str, str], *args: str) -> str:
    result = script(cwd, env, *args, "--help")
    assert result.returncode == 0, result.stderr
    # click wraps a long path inside the help column: the path is the help's last word.
    tail = result.stdout.split("In use here:", 1)[1].split("--config", 1)[0]
    return "".join(tail.split())


def test_each_folder_with_a_config_has_its_own_database(
    tmp_path: Path, env: dict[str, str]
) -> None:
    first, second = _folder(tmp_path, "first"), _folder(tmp_path, "second")
    for folder in (first, second):
        result = script(folder, env, "start", ITEM)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"{ITEM}: at phase-selection"), result.stdout
        assert (folder / ".loopgate" / "loopgate.db").is_file()
    assert not (tmp_path / "state").exists()


def test_a_given_config_puts_the_database_beside_it(tmp_path: Path, env: dict[str, str]) -> None:
    folder = _folder(tmp_path, "project")
    config = str(folder / "loopgate.yaml")
    assert script(tmp_path, env, "--config", config, "start", ITEM).returncode == 0
    assert (folder / ".loopgate" / "loopgate.db").is_file()
    assert _in_use(tmp_path, env, "--config", config) == str(folder / ".loopgate" / "loopgate.db")


def test_db_flag_env_and_database_key_take_precedence(tmp_path: Path, env: dict[str, str]) -> None:
    keyed = _folder(tmp_path, "keyed", f"database: {tmp_path / 'key.db'}\n")
    assert _in_use(keyed, env) == str(tmp_path / "key.db")
    assert script(keyed, env, "start", ITEM).returncode == 0
    assert (tmp_path / "key.db").is_file() and not (keyed / ".loopgate").exists()
    plain = _folder(tmp_path, "plain")
    assert _in_use(plain, {**env, "LOOPGATE_DB": str(tmp_path / "env.db")}) == str(
        tmp_path / "env.db")
    assert _in_use(plain, env, "--db", str(tmp_path / "flag.db")) == str(tmp_path / "flag.db")
    assert script(plain, env, "--db", str(tmp_path / "flag.db"), "start", ITEM).returncode == 0
    assert (tmp_path / "flag.db").is_file() and not (plain / ".loopgate").exists()


def test_without_a_config_the_database_stays_in_the_state_folder(
    tmp_path: Path, env: dict[str, str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    expected = tmp_path / "state" / "loopgate" / "loopgate.db"
    assert _in_use(empty, env) == str(expected)
    assert script(empty, env, "start", ITEM).returncode == 0
    assert expected.is_file() and not (empty / ".loopgate").exists()
