"""The explainer's data files ship in the wheel (setuptools package-data covers them)."""

from __future__ import annotations

import tomllib
from pathlib import PurePosixPath

from tests.conftest import REPO_ROOT

EXPLAINER_FILES = (
    "explainer/content.schema.json", "explainer/page.html.j2", "explainer/examples/spec.yaml",
    "explainer/examples/code.yaml", "reference/explainer.md", "commands/explain.md",
    "pr-briefing.md",
)


def test_every_explainer_template_matches_a_package_data_pattern() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["templates"]
    for name in EXPLAINER_FILES:
        assert (REPO_ROOT / "templates" / name).is_file(), name
        path = PurePosixPath(name)
        assert any(path.match(p) or path.match(p.removeprefix("**/")) for p in patterns), name


def test_templates_read_through_importlib_resources() -> None:
    from importlib import resources

    root = resources.files("templates")
    for name in EXPLAINER_FILES:
        assert root.joinpath(name).is_file(), name
