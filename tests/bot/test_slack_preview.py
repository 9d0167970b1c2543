"""Issue 12, Acceptance: the docs show the Block Kit JSON of the approval message and the
home tab as ``loopgate slack preview`` prints it — this fails when they drift. (Issue 23 §4
moved the two dumps from the README to docs/slack.md; the pictures drawn from the same
output are checked by tests/test_docs_pictures.py.)"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.cli import cli
from bot.cli.slack_cmd import KINDS
from tests.conftest import REPO_ROOT

SLACK_PAGE = (REPO_ROOT / "docs" / "slack.md").read_text("utf-8")


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


@pytest.mark.parametrize("kind", KINDS)
def test_docs_block_kit_json_matches_slack_preview(kind: str) -> None:
    result = CliRunner().invoke(cli, ["slack", "preview", kind])
    assert result.exit_code == 0, result.output

    block = _between(SLACK_PAGE, f"<!-- slack-preview:{kind}:start -->",
                     f"<!-- slack-preview:{kind}:end -->")

    assert block == f"```json\n{result.output.strip()}\n```"


def test_preview_approval_has_the_three_buttons_and_home_has_both_sections() -> None:
    runner = CliRunner()
    approval = json.loads(runner.invoke(cli, ["slack", "preview", "approval"]).output)
    home = json.loads(runner.invoke(cli, ["slack", "preview", "home"]).output)

    [actions] = [b for b in approval["blocks"] if b["type"] == "actions"]
    assert [e["text"]["text"] for e in actions["elements"]] == [
        "Approve", "Approve with comments", "Request changes"]
    headers = [b["text"]["text"] for b in home["blocks"] if b["type"] == "header"]
    assert headers == ["loopgate", "Waiting on you", "Your items"]
    assert home["type"] == "home"
