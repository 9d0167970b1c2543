"""The README's generated parts stay in step with the code (issue 6)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from bot.cli import cli
from bot.config_doc import END, START, render_reference
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text("utf-8")


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def test_config_reference_matches_the_schema() -> None:
    assert _between(README, START, END) == render_reference().strip("\n")


def test_mermaid_picture_matches_graph_show() -> None:
    shown = CliRunner().invoke(cli, ["graph", "show", "--format", "mermaid"]).output
    block = _between(README, "<!-- graph:start -->", "<!-- graph:end -->")
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
