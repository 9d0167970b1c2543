"""The README's and the docs pages' generated parts stay in step with the code (issue 6);
since issue 23 §4 the reference and the graph picture live under docs/, and these tests
follow them there."""

from __future__ import annotations

import re

from click.testing import CliRunner

from bot.cli import cli
from bot.config_doc import END, START, render_reference
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text("utf-8")
#: The CLI and configuration reference (moved from the README, issue 23 §4).
REFERENCE = (REPO_ROOT / "docs" / "reference.md").read_text("utf-8")
#: The process graph page, with the Mermaid picture (moved from the README, issue 23 §4).
PROCESS = (REPO_ROOT / "docs" / "process.md").read_text("utf-8")


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def test_config_reference_matches_the_schema() -> None:
    assert _between(REFERENCE, START, END) == render_reference().strip("\n")


def test_mermaid_picture_matches_graph_show() -> None:
    shown = CliRunner().invoke(cli, ["graph", "show", "--format", "mermaid"]).output
    block = _between(PROCESS, "<!-- graph:start -->", "<!-- graph:end -->")
    assert block == f"```mermaid\n{shown.strip()}\n```"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    test_cmd = re.search(r"<!-- test-command -->\n```sh\n(.+?)\n```", README, re.S)
    assert test_cmd is not None
    install_and_test = test_cmd.group(1).strip().splitlines()[-1]
    assert install_and_test.split(" && ", 1)[1] in ci


def test_the_chromium_step_works_with_and_without_sudo() -> None:
    step = " ".join(_between(README, "Two prerequisites:", "<!-- test-command -->").split())
    assert "`sudo apt-get install -y chromium`" in step
    assert "as root where there is no `sudo`, `apt-get install -y chromium`" in step


def test_the_effects_synopsis_parses_as_written() -> None:
    row = next(line for line in REFERENCE.splitlines() if line.startswith("| `loopgate effects"))
    assert "`loopgate effects list [ITEM] [--status owed\\|failed\\|pending\\|all]" in row
    listed = CliRunner().invoke(cli, ["effects", "list", "--help"])
    assert listed.exit_code == 0 and "--status" in listed.output


def test_the_setup_names_every_endpoint_offline_serve_has_and_the_pull_request_event() -> None:
    assert "serving `/healthz`,\n`/readyz` and `/metrics` only" in README
    assert "events *Issues*, *Issue comments* and *Pull requests*" in README


def test_db_help_names_a_postgresql_url_and_its_environment_variable() -> None:
    from bot.cli import DB_HELP

    assert "postgresql://" in DB_HELP and "LOOPGATE_DATABASE_URL" in DB_HELP
    shown = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
    assert "LOOPGATE_DATABASE_URL" in shown
