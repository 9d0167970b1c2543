"""Dependencies (issue 14 §17): the lock file pins every runtime dependency at a version
pyproject.toml allows, names the one command that regenerates it (the README names it
too, with the install command that uses the lock), and CI proves the declared floors by
running the unit tier on the lowest direct versions (uv from PyPI)."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO_ROOT

LOCK = REPO_ROOT / "requirements.lock"
COMPILE = ("uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes "
           "-o requirements.lock")


def _requirements() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return [Requirement(text) for text in project["dependencies"]]


def _pins() -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([^\s;\\]+)", LOCK.read_text("utf-8"),
                      re.M)
    return {canonicalize_name(name): version for name, version in pins}


def test_the_lock_pins_every_runtime_dependency_within_its_declared_range() -> None:
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements.lock: regenerate it"
        assert requirement.specifier.contains(pins[name]), (
            f"requirements.lock pins {name}=={pins[name]}, outside {requirement.specifier}")


def test_the_lock_and_the_readme_name_the_command_that_makes_it_and_the_one_using_it() -> None:
    assert COMPILE in LOCK.read_text("utf-8")
    readme = " ".join((REPO_ROOT / "README.md").read_text("utf-8").split())
    assert COMPILE in readme
    assert ".venv/bin/pip install -q -r requirements.lock && .venv/bin/pip install -q " \
           "--no-deps ." in readme


def test_ci_runs_the_unit_tier_on_the_lowest_direct_versions_with_uv_from_pypi() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    assert "pip install -q uv" in ci
    assert "uv pip install" in ci and "--resolution lowest-direct" in ci
    assert re.search(r"pytest .*-m \"not e2e and not browser\".*--ignore=tests/e2e", ci)


def test_the_known_bad_floors_are_excluded() -> None:
    # gql 3.5 fails GraphQL queries ("Not an AST Node"); sqlite-utils before 4.0 has no
    # Migrations; PyGithub before 2.6 takes no `lazy` (found by the lowest-direct run).
    declared = {canonicalize_name(r.name): r.specifier for r in _requirements()}
    assert not declared["gql"].contains("3.5.3")
    assert not declared["sqlite-utils"].contains("3.39")
    assert not declared["pygithub"].contains("2.5.0")
    assert declared["gql"].contains("4.0.0") and declared["sqlite-utils"].contains("4.0")
