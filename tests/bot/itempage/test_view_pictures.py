"""Issue 22 §2: the details page's pictures (light, dark, 375 px) are drawn from the real
renderer by ``docs/page_pictures.py``, committed, and shown in the docs and the README; the
committed HTML source is what the renderer gives now (a changed page fails here until the
command is run again)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import CHROMIUM, REPO_ROOT

PICTURES = REPO_ROOT / "docs" / "pictures"
PNGS = ("item-page-light.png", "item-page-dark.png", "item-page-375.png")


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("page_pictures",
                                                  REPO_ROOT / "docs/page_pictures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_source_is_what_the_renderer_gives_now(tmp_path: Path) -> None:
    module = _module()
    assert module.source() == module.source()  # the sample's clock is fixed
    assert not module.drifted(), "run .venv/bin/python docs/page_pictures.py and commit"
    assert module.main(["--check"]) == 0
    assert module.drifted(tmp_path)  # missing is drift
    module.write_source(tmp_path)
    assert not module.drifted(tmp_path)
    page = tmp_path / "item-page.html"
    page.write_text(page.read_text("utf-8").replace("1 of 2", "2 of 2"), "utf-8")
    assert module.drifted(tmp_path)


def test_the_sample_shows_a_gate_sent_back_and_waiting_again() -> None:
    html = (PICTURES / "item-page.html").read_text("utf-8")
    assert "Approvals: <strong>1 of 2</strong> — approved by @alice" in html
    assert "changes-requested</strong> by @bob" in html
    assert 'data-node="requirements-approval" data-state="current"' in html
    assert 'data-node="brainstorming" data-state="skipped"' in html


def test_the_pngs_are_committed_small_and_shown_in_the_docs_and_readme() -> None:
    docs = (REPO_ROOT / "docs" / "pictures.md").read_text("utf-8")
    for name in PNGS:
        data = (PICTURES / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 200_000, name
        assert f"(pictures/{name})" in docs
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    [line] = [ln for ln in readme.splitlines() if "docs/pictures/item-page" in ln]
    assert "(docs/pictures/item-page-light.png)" in line


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at "
                    "/usr/bin/chromium (apt-get install chromium)")
def test_the_command_takes_light_dark_and_phone_screenshots(tmp_path: Path,
                                                             browser: Any) -> None:
    module = _module()
    pngs = module.screenshot(module.write_source(tmp_path), browser)
    assert [p.name for p in pngs] == list(PNGS)
    widths = [int.from_bytes(p.read_bytes()[16:20], "big") for p in pngs]
    heights = {int.from_bytes(p.read_bytes()[20:24], "big") for p in pngs}
    assert widths == [900, 900, 375] and heights == {module.HEIGHT}
    assert pngs[0].read_bytes() != pngs[1].read_bytes()  # dark differs from light
