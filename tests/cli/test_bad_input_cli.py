"""Issue 23 §3: every bad input a new user met, through the ``loopgate`` console script —
one ``loopgate:`` line (no traceback), exit 2 for usage/config, 1 for a refusal, and the
nearest name for a node or gate; ``config check`` warns about what cannot work yet."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"
SECRETS = ("GITHUB_TOKEN", "GITHUB_WEBHOOK_SECRET")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\nworkspace: .\n")
    return tmp_path


def script(cwd: Path, *args: str, env: dict[str, str] | None = None,
           umask: int | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG", *SECRETS)}
    clean["XDG_STATE_HOME"] = str(cwd / "state")
    clean.update(env or {})
    preexec: Callable[[], object] | None = None
    if umask is not None:
        preexec = lambda: os.umask(umask)  # noqa: E731 -- runs in the child only
    return subprocess.run([*loopgate_argv(), *args], cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=60, check=False, preexec_fn=preexec)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("loopgate: "), lines[0]
    return lines[0]


# -- two tracebacks ------------------------------------------------------------------------
def test_a_folder_given_as_the_config_is_one_line_exit_2(home: Path) -> None:
    result = script(home, "--config", str(home), "config", "check")
    assert result.returncode == 2
    assert one_line(result) == (f"loopgate: {home} is a directory: give the path of a "
                                "loopgate.yaml file")
    assert script(home, "--config", str(home), "check", "--all").returncode == 2


def test_a_file_that_is_not_a_database_is_one_line_exit_2(home: Path) -> None:
    (home / "notadb.db").write_text("these are notes, not SQLite\n" * 100)
    result = script(home, "--db", "notadb.db", "check", "--all")
    assert result.returncode == 2
    assert one_line(result) == ("loopgate: cannot open notadb.db: file is not a database "
                                "(is it a loopgate database?)")
    for verb in (["effects"], ["comments", ITEM], ["db", "migrate"]):
        again = script(home, "--db", "notadb.db", *verb)
        assert again.returncode == 2, verb
        assert "file is not a database" in one_line(again)
    assert (home / "notadb.db").read_text() == "these are notes, not SQLite\n" * 100


# -- config check: what cannot work --------------------------------------------------------
GITHUB = "authorizedUsers: []\ngithub:\n  repos: [acme/widgets]\n"


def test_config_check_warns_about_unset_secret_variables_and_no_approvers(home: Path) -> None:
    (home / "loopgate.yaml").write_text(GITHUB)
    result = script(home, "config", "check")
    assert result.returncode == 0, result.stderr
    source = home / "loopgate.yaml"
    assert result.stderr.splitlines() == [
        f"loopgate: warning: {source}: authorizedUsers is empty: nobody can answer phase "
        "selection, a quiz or an approval gate whose rule names no approvers",
        f"loopgate: warning: {source}: github.tokenEnv: the environment variable "
        "GITHUB_TOKEN is not set here (serve cannot reach GitHub without it)",
        f"loopgate: warning: {source}: github.webhookSecretEnv: the environment variable "
        "GITHUB_WEBHOOK_SECRET is not set here (serve refuses to start without it unless "
        "--insecure-webhooks)",
    ]
    assert result.stdout.startswith(f"ok: {source} ")


def test_config_check_is_quiet_once_the_variables_and_approvers_are_set(home: Path) -> None:
    (home / "loopgate.yaml").write_text(GITHUB.replace("[]", "[alice]")
                                        + "  tokenEnv: MY_TOKEN\n")
    values = {"MY_TOKEN": "ghp_value-never-printed", "GITHUB_WEBHOOK_SECRET": "s3cret-value"}
    result = script(home, "config", "check", env=values)
    assert result.returncode == 0
    assert result.stderr == ""
    unset = script(home, "config", "check", env={"GITHUB_WEBHOOK_SECRET": "s3cret-value"})
    assert "github.tokenEnv: the environment variable MY_TOKEN is not set" in unset.stderr
    assert "s3cret-value" not in unset.stderr + unset.stdout


def test_a_misspelt_gate_in_config_check_gets_the_nearest_gate(home: Path) -> None:
    (home / "loopgate.yaml").write_text(
        "authorizedUsers: [alice]\ngates:\n  humn-approval: {approvals: 1}\n")
    result = script(home, "config", "check")
    assert result.returncode == 2
    assert one_line(result) == (
        f"loopgate: {home / 'loopgate.yaml'}: gates.humn-approval: pdlc-work-item-loop has "
        "no human gate 'humn-approval' — did you mean `human-approval`?")


# -- an unknown node: 2 and the nearest node in every verb ---------------------------------
@pytest.mark.parametrize("argv,option", [
    (["complete", ITEM, "--node", "desgin"], "--node"),
    (["force", ITEM, "--to", "desgin", "--reason", "r"], "--to"),
    (["check", "--all", "--node", "desgin"], "--node"),
    (["skip", ITEM, "--node", "desgin", "--reason", "r"], "--node"),
])
def test_an_unknown_node_exits_2_with_the_nearest_in_every_verb(
        home: Path, argv: list[str], option: str) -> None:
    assert script(home, "start", ITEM).returncode == 0
    result = script(home, *argv)
    assert result.returncode == 2
    assert one_line(result) == (f"loopgate: {option}: 'desgin' is not a node of "
                                "pdlc-work-item-loop (unknown-node) — did you mean `design`?")


def test_a_click_usage_error_is_one_loopgate_line_exit_2(home: Path) -> None:
    # An option no real one is near (`--bogus` is near `--jobs`: click suggests it).
    result = script(home, "check", "--xyzzy")
    assert result.returncode == 2
    # click's own words, which differ between versions (8.3.1: "No such option: --xyzzy")
    said = click.exceptions.NoSuchOption("--xyzzy").format_message().rstrip(".")
    assert one_line(result) == f"loopgate: {said} (see `loopgate check --help`)"
    assert script(home).returncode == 2  # a bare `loopgate` still shows its help
    assert "Commands:" in script(home).stderr + script(home).stdout


# -- explainer check on broken YAML --------------------------------------------------------
def test_explainer_check_on_broken_yaml_names_file_line_and_column(home: Path) -> None:
    (home / "spec.yaml").write_text("variant: spec\nquiz: [a, b\ndepth: micro\n")
    result = script(home, "explainer", "check", "spec.yaml")
    assert result.returncode == 1
    assert one_line(result) == ("loopgate: spec.yaml:3:6: not valid YAML: expected ',' or "
                                "']', but got ':' (while parsing a flow sequence)")
    assert "<unicode string>" not in result.stderr + result.stdout


# -- the smaller items ---------------------------------------------------------------------
def test_check_takes_an_issue_url_as_slash_loop_check_does(home: Path) -> None:
    assert script(home, "start", ITEM).returncode == 0
    by_ref = script(home, "check", ITEM, "--format", "json")
    by_url = script(home, "check", "https://github.com/acme/widgets/issues/7", "--format",
                    "json")
    assert by_url.returncode == 0, by_url.stderr
    assert by_url.stdout == by_ref.stdout
    wrong = script(home, "check", "https://github.com/acme/widgets/issues/x")
    assert wrong.returncode == 2
    assert "expected owner/repo#N or an issue URL" in one_line(wrong)


def test_briefing_of_a_never_started_item_is_one_line_exit_1(home: Path) -> None:
    result = script(home, "briefing", ITEM)
    assert result.returncode == 1
    assert one_line(result) == f"loopgate: refused: {ITEM} is not started (not-started)"
    assert result.stdout == ""


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o027, 0o640)])
def test_explainer_render_writes_the_page_with_the_usual_mode(
        home: Path, umask: int, mode: int) -> None:
    examples = Path(__file__).resolve().parents[2] / "templates" / "explainer" / "examples"
    page = home / "out" / "explainer.html"
    result = script(home, "explainer", "render", str(examples / "spec.yaml"), "--out",
                    str(page), umask=umask)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(page.stat().st_mode) == mode
    page.chmod(0o600)  # an existing page keeps its own mode when rendered again
    script(home, "explainer", "render", str(examples / "spec.yaml"), "--out", str(page))
    assert stat.S_IMODE(page.stat().st_mode) == 0o600


def test_explainer_render_to_a_place_it_cannot_write_is_one_line_exit_1(home: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "templates" / "explainer" / "examples"
    (home / "file").write_text("a file, not a folder\n")
    out = home / "file" / "explainer.html"
    result = script(home, "explainer", "render", str(examples / "spec.yaml"), "--out", str(out))
    assert result.returncode == 1
    assert one_line(result).startswith(f"loopgate: cannot write {out}: ")
