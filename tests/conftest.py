"""Shared test configuration: where the read-only fixtures live."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: ../shared beside the checkout (CI lays a copy there); override with LOOPGATE_SHARED.
SHARED = Path(os.environ.get("LOOPGATE_SHARED", REPO_ROOT.parent / "shared")).resolve()
FIXTURES = SHARED / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile loopgate's packages once, in the controlling process, before any test.

    Why: an editable install leaves no ``.pyc`` files, and machines that set
    ``PYTHONDONTWRITEBYTECODE`` (this one does) never write them on import, so every real
    spawn of ``loopgate serve`` would compile ~200 modules from source again (~0.15 s of CPU
    each start). :mod:`compileall` writes them regardless and skips files already current.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    import compileall

    for package in ("engine", "bridges", "bot"):
        compileall.compile_dir(str(REPO_ROOT / package), quiet=1, workers=1)


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
NO_CHROMIUM = "Debian chromium is not installed at /usr/bin/chromium (apt-get install chromium)"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium per test session (per xdist worker), shared by every browser
    test: Playwright's sync API cannot be started a second time in a thread where it runs."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The shared fixtures folder (GitHub and Slack payloads, schemas)."""
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES} (set LOOPGATE_SHARED)")
    return FIXTURES


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository checkout."""
    return REPO_ROOT


@pytest.fixture(scope="session", autouse=True)
def _fork_servers() -> Iterator[None]:
    """Stop the CLI fork servers (:mod:`tests.forkserver`) this process started."""
    yield
    from tests.forkserver import stop_all

    stop_all()


@pytest.fixture(scope="session")
def pg_server():  # noqa: ANN201 - tests.pgserver.PgServer, imported lazily
    """A real PostgreSQL server for the session (issue 15 §2), from the machine's binaries;
    the tests that use it are skipped only when no PostgreSQL binaries exist."""
    from tests.pgserver import find_bindir, start_server

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (initdb) under /usr/lib/postgresql/*/bin or on "
                    "PATH: apt-get install -y postgresql (.ci/run does)")
    server = start_server(bindir)
    yield server
    server.stop()


@pytest.fixture
def pg_database(pg_server):  # noqa: ANN001, ANN201
    """A fresh, empty database on the session's server: its conninfo (with the password);
    dropped after the test."""
    name = pg_server.create_database()
    yield pg_server.conninfo(name)
    pg_server.drop_database(name)
