"""Shared test configuration: where the read-only fixtures live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: ../shared beside the checkout (CI lays a copy there); override with LOOPGATE_SHARED.
SHARED = Path(os.environ.get("LOOPGATE_SHARED", REPO_ROOT.parent / "shared")).resolve()
FIXTURES = SHARED / "fixtures"


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
