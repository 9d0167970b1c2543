"""``loopgate explainer render|check|redact`` and ``loopgate briefing``: output and exit codes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from bot.cli import cli, explainer_cmd
from bot.cli.context import CliContext
from engine.refs import WorkItemRef
from tests.explainer.conftest import EXAMPLES, example
from tests.explainer.test_explainer_redact import planted_github_token, planted_slack_token

ITEM = "acme/widgets#42"


def _tabs(html: str) -> list[str]:
    return re.findall(r'<button type="button" role="tab"[^>]*>([^<]*)</button>', html)


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_the_commands_are_registered_on_the_loopgate_cli() -> None:
    assert set(cli.commands["explainer"].commands) == {"render", "check", "redact"}
    assert "briefing" in cli.commands


def test_check_prints_ok_for_a_good_file(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["explainer", "check", str(EXAMPLES / "spec.yaml")])
    assert (result.exit_code, result.output) == (0, "ok\n")


def test_check_lists_each_violation_and_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    data = example("spec")
    data["quiz"]["questions"][1]["options"][0]["correct"] = True
    data["quiz"]["questions"][2]["options"][1]["text"] = "All of the above"
    path = _write(tmp_path / "spec.yaml", data)
    result = runner.invoke(cli, ["explainer", "check", str(path)])
    assert result.exit_code == 1
    assert f"{path}: question 2: exactly one option must be correct (found 2)\n" in result.output
    assert f"{path}: question 3, option B: no \"all/none of the above\" options" in result.output


def test_check_of_a_missing_file_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["explainer", "check", str(tmp_path / "absent.yaml")])
    assert result.exit_code == 2


def test_render_writes_a_spec_page_then_the_code_rerender_adds_two_tabs(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "docs" / "specs" / "issue-42" / "explainer" / "explainer.html"
    first = runner.invoke(cli, ["explainer", "render", str(EXAMPLES / "spec.yaml"),
                                "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert first.output == f"wrote {out} (tabs: Spec explainer, Spec quiz)\n"
    assert _tabs(out.read_text("utf-8")) == ["Spec explainer", "Spec quiz"]
    second = runner.invoke(cli, ["explainer", "render", str(EXAMPLES / "code.yaml"),
                                 "--out", str(out)])
    assert second.exit_code == 0, second.output
    html = out.read_text("utf-8")
    assert _tabs(html) == ["Spec explainer", "Spec quiz", "Explainer", "Code quiz"]
    assert "Why does the spec quiz take two nodes instead of one?" in html


def test_render_refuses_a_rule_violation_and_writes_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    data = example("spec")
    data["depth"] = "deep"
    path, out = _write(tmp_path / "spec.yaml", data), tmp_path / "page.html"
    result = runner.invoke(cli, ["explainer", "render", str(path), "--out", str(out)])
    assert result.exit_code == 1
    assert "questions per depth: deep needs exactly 5 questions (found 3" in result.output
    assert not out.exists()


def test_render_refuses_a_planted_secret_naming_line_and_kind(
    runner: CliRunner, tmp_path: Path
) -> None:
    data = example("spec")
    data["sections"]["background"]["paragraphs"].append(f"Use {planted_github_token()} here.")
    data["sections"]["risks"]["items"].append(f"Slack: {planted_slack_token()}")
    path, out = _write(tmp_path / "spec.yaml", data), tmp_path / "page.html"
    result = runner.invoke(cli, ["explainer", "render", str(path), "--out", str(out)])
    assert result.exit_code == 1
    lines = path.read_text("utf-8").splitlines()
    gh_line = next(i for i, line in enumerate(lines, 1) if "Use gh" in line)
    slack_line = next(i for i, line in enumerate(lines, 1) if "Slack: xo" in line)
    assert f"{path}:{gh_line}: GitHub Token\n" in result.output
    assert f"{path}:{slack_line}: Slack Token\n" in result.output
    assert re.search(rf"{re.escape(str(out))}:\d+: GitHub Token \(rendered page, not written\)",
                     result.output)
    assert "refusing to write" in result.output
    assert not out.exists()


def test_render_refuses_to_overwrite_a_page_that_is_not_loopgates(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "index.html"
    out.write_text("<html>someone else's page</html>", "utf-8")
    result = runner.invoke(cli, ["explainer", "render", str(EXAMPLES / "spec.yaml"),
                                 "--out", str(out)])
    assert result.exit_code == 1
    assert "not a loopgate explainer page" in result.output
    assert out.read_text("utf-8") == "<html>someone else's page</html>"


def test_redact_exits_0_on_a_clean_file(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["explainer", "redact", str(EXAMPLES / "code.yaml")])
    assert result.exit_code == 0
    assert result.output == f"clean: {EXAMPLES / 'code.yaml'}\n"


def test_redact_lists_path_line_kind_and_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    page = tmp_path / "explainer.html"
    page.write_text(f"<p>ok</p>\n<p>{planted_slack_token()}</p>\n<p>{planted_github_token()}</p>\n",
                    "utf-8")
    result = runner.invoke(cli, ["explainer", "redact", str(page)])
    assert result.exit_code == 1
    assert result.output.startswith(f"{page}:2: Slack Token\n{page}:3: GitHub Token\n")


# --- loopgate briefing -------------------------------------------------------------


class FakeArtifacts:
    """An ArtifactStore over a dict of spec-directory files."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read(self, ref: WorkItemRef, name: str) -> bytes | None:
        text = self.files.get(name)
        return None if text is None else text.encode("utf-8")

    def list(self, ref: WorkItemRef) -> list[str]:
        return sorted(self.files)

    def repo_path_exists(self, ref: WorkItemRef, path: str) -> bool:
        return False

    def spec_dir(self, ref: WorkItemRef) -> str:
        return f"docs/specs/issue-{ref.number}"

    def branch(self, ref: WorkItemRef) -> str:
        return "main"


class FakeStore:
    """The store's ``load``: every item is started (at reviewer-briefing) unless named."""

    def __init__(self, never_started: tuple[str, ...] = ()) -> None:
        self.never_started = never_started

    def load(self, ref: WorkItemRef) -> Any:
        if str(ref) in self.never_started:
            return None
        return type("S", (), {"current_node": "reviewer-briefing"})()


class FakeServices:
    def __init__(self, artifacts: FakeArtifacts, store: FakeStore | None = None) -> None:
        self.ports = type("P", (), {"artifacts": artifacts})()
        self.store = store or FakeStore()

    def close(self) -> None:
        return None


def _briefing(files: dict[str, str]) -> Any:
    group = click.Group()
    explainer_cmd.register(group)
    obj = CliContext(_cache={"services": FakeServices(FakeArtifacts(files))})
    return CliRunner().invoke(group, ["briefing", ITEM], obj=obj)


RECORD = ("## Explainer\n\n| Field | Value |\n|---|---|\n| Depth | deep |\n"
          "| Location | docs/specs/issue-42/explainer/explainer.html |\n"
          "| Published as | committed HTML |\n| Questions | 5 |\n")


def test_briefing_starts_with_the_explainer_when_its_record_exists() -> None:
    result = _briefing({"requirements.md": "r", "design.md": "d", "evidence/explainer.md": RECORD,
                        "evidence/spec-explainer.md": "s"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("- ")]
    assert rows[0] == "- Start here: the explainer (docs/specs/issue-42/explainer/explainer.html)"
    assert rows[1:] == [
        "- Requirements: docs/specs/issue-42/requirements.md",
        "- Design: docs/specs/issue-42/design.md",
        "- Evidence: docs/specs/issue-42/evidence/spec-explainer.md",
    ]
    assert result.output.startswith(f"## Reviewer briefing: {ITEM}\n")


def test_briefing_has_no_explainer_row_without_the_record() -> None:
    result = _briefing({"requirements.md": "r", "design.md": "d",
                        "evidence/spec-explainer.md": "s"})
    assert result.exit_code == 0, result.output
    assert "Start here" not in result.output
    first = next(line for line in result.output.splitlines() if line.startswith("- "))
    assert first == "- Requirements: docs/specs/issue-42/requirements.md"


def test_briefing_keeps_the_row_when_the_record_is_unreadable() -> None:
    result = _briefing({"evidence/explainer.md": "no section here\n"})
    assert result.exit_code == 0
    assert ("- Start here: the explainer (docs/specs/issue-42/evidence/explainer.md)"
            in result.output)


def test_briefing_refuses_a_bad_item() -> None:
    group = click.Group()
    explainer_cmd.register(group)
    result = CliRunner().invoke(group, ["briefing", "widgets-42"], obj=CliContext())
    assert result.exit_code == 2
    assert "not a work item reference" in result.output
