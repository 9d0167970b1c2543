"""Issue 23 §4: the pictures of the Slack card, the approval message, App Home and the GitHub
checklist are drawn from the real renderers by one command (``docs/pictures.py``), so they
cannot drift: the committed HTML sources must equal what the renderers give now."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import cli
from tests.conftest import REPO_ROOT

PICTURES = REPO_ROOT / "docs" / "pictures"
NAMES = ("card", "approval", "home", "checklist")
CHROMIUM = Path("/usr/bin/chromium")


def _pictures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pictures", REPO_ROOT / "docs/pictures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_html_sources_are_what_the_renderers_give_now() -> None:
    module = _pictures()
    assert set(module.sources()) == set(NAMES)
    assert module.drifted() == [], "run .venv/bin/python docs/pictures.py and commit the result"
    assert module.main(["--check"]) == 0


def test_a_changed_renderer_is_drift(tmp_path: Path) -> None:
    module = _pictures()
    module.write_sources(tmp_path)
    assert module.drifted(tmp_path) == []
    page = tmp_path / "approval.html"
    page.write_text(page.read_text("utf-8").replace("Request changes", "Reject"), "utf-8")
    (tmp_path / "home.html").unlink()
    assert module.drifted(tmp_path) == ["approval", "home"]


def test_the_slack_pictures_show_every_word_the_preview_command_prints() -> None:
    # The approval message as `loopgate slack preview approval` prints it: its buttons and
    # its text reach the picture (mrkdwn drawn: the link by its label, the mentions kept).
    shown = json.loads(CliRunner().invoke(cli, ["slack", "preview", "approval"]).output)
    page = (PICTURES / "approval.html").read_text("utf-8")
    for label in ("Approve", "Approve with comments", "Request changes"):
        assert f">{label}</span>" in page
    assert '<span class="button primary">Approve</span>' in page
    assert '<span class="button danger">Request changes</span>' in page
    assert "<code>requirements-approval</code> waits for an approval" in page
    assert '<a href="#">acme/widgets#7</a>' in page and "@U0ALICE" in page
    assert "Or reply on the GitHub issue" in json.dumps(shown)
    assert "Or reply on the GitHub issue: approved, approved with comments" in page


def test_the_card_and_checklist_pictures_show_the_rows_ticked_as_the_graph_says() -> None:
    card = (PICTURES / "card.html").read_text("utf-8")
    checklist = (PICTURES / "checklist.html").read_text("utf-8")
    # design-critic-review is opt-in (off unless ticked); brainstorming is on by default.
    assert re.search(r'option off"><span class="box">☐</span><span>design-critic-review', card)
    assert re.search(r'option on"><span class="box">☑</span><span>brainstorming', card)
    assert '<input type="checkbox"> design-critic-review' in checklist
    assert '<input type="checkbox" checked> brainstorming' in checklist
    assert "the-loop:phase-selection" not in checklist  # markers are not shown, as on GitHub
    assert ">Execute</span>" in card


def test_mrkdwn_escapes_everything_and_draws_only_slack_markup() -> None:
    module = _pictures()
    # loopgate escapes &, < and > before sending (Slack's rule); the picture shows them as
    # characters and never as HTML.
    assert module.mrkdwn("*<https://x.test/1|a&lt;b>* _it_ `c` <@U1>\nnext &amp; "
                         "&lt;script&gt;") == (
        '<b><a href="#">a&lt;b</a></b> <i>it</i> <code>c</code> '
        '<span class="mention">@U1</span><br>next &amp; &lt;script&gt;')


def test_the_committed_pngs_are_small_and_shown_in_the_docs_and_readme() -> None:
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    page = (REPO_ROOT / "docs" / "pictures.md").read_text("utf-8")
    for name in NAMES:
        png = PICTURES / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size < 200_000, name
        assert f"(pictures/{name}.png)" in page
    assert "(docs/pictures/card.png)" in readme and "(docs/pictures/checklist.png)" in readme


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at "
                    "/usr/bin/chromium (apt-get install chromium)")
def test_the_command_screenshots_each_source_with_headless_chromium(
        tmp_path: Path, browser: Any) -> None:
    module = _pictures()
    pngs = module.screenshot(module.write_sources(tmp_path), browser)
    assert [p.name for p in pngs] == [f"{name}.png" for name in NAMES]
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width = int.from_bytes(data[16:20], "big")
        height = int.from_bytes(data[20:24], "big")
        assert width == module.WIDTH and height > 100, (png.name, width, height)
