"""Issue 23 §4: the documentation site builds with ``mkdocs build --strict`` (a broken
internal link or anchor fails it) and the README's relative links resolve — the same two
checks ``.ci/run`` runs after the test command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"


def _check_links() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_links", REPO_ROOT / "docs/check_links.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(config: Path, site: Path) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(config_file=str(config), strict=True, site_dir=str(site)))


def test_the_site_builds_strict_and_every_page_is_in_the_nav(tmp_path: Path) -> None:
    _build(REPO_ROOT / "mkdocs.yml", tmp_path / "site")

    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text("utf-8"))
    in_nav = {next(iter(entry.values())) for entry in config["nav"]}
    pages = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    assert pages == in_nav
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page == "index.md" else
                                     f"{page[:-3]}/index.html")
        assert built.exists(), page
    assert config["theme"]["name"] == "mkdocs"  # the built-in theme: nothing fetched


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    from mkdocs.exceptions import Abort

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[there](other.md#nowhere)\n", "utf-8")
    (docs / "other.md").write_text("# Other\n\n[gone](missing.md)\n", "utf-8")
    config = tmp_path / "mkdocs.yml"
    text = (REPO_ROOT / "mkdocs.yml").read_text("utf-8")
    config.write_text(re.sub(r"(?ms)^nav:.*", "nav:\n  - index.md\n  - other.md\n", text),
                      "utf-8")

    with pytest.raises(Abort, match="2 warnings"):
        _build(config, tmp_path / "site")


def test_the_readme_relative_links_resolve() -> None:
    assert _check_links().broken_links(README) == []


def test_the_link_check_names_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A title\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Set up (fresh machine)\n\n[ok](a.md#a-title) [self](#set-up-fresh-machine)"
                    "\n[no](gone.md) [bad](a.md#b-title) [web](https://example.com/x)\n"
                    "`[code](not-a-link.md)`\n```\n[fenced](nor-this.md)\n```\n", "utf-8")

    assert _check_links().broken_links(page) == [
        f"{page}:4: gone.md: no such file",
        f"{page}:4: a.md#b-title: a.md has no heading #b-title",
    ]


def test_the_readme_reads_in_ten_minutes_and_links_every_page() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 250
    for page in sorted((REPO_ROOT / "docs").glob("*.md")):
        if page.name != "index.md":
            assert f"(docs/{page.name})" in text, page.name
    assert "```json" not in text  # the Block Kit JSON lives on docs/slack.md


def test_ci_builds_the_site_and_checks_the_readme_links_after_the_test_command() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    tests_at = ci.index(".venv/bin/pytest -q -n 2")
    assert ci.index("mkdocs build --strict") > tests_at
    assert ci.index("docs/check_links.py README.md") > tests_at
