"""Without ``../shared`` the suite says so (issue 14 §10): a test of the real stack over
the fake GitHub fails with the suite's "shared fixtures not found" message, not with an
unrelated error from inside the fake."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT


def test_bot_login_tests_name_the_missing_shared_fixtures(tmp_path: Path) -> None:
    env = {**os.environ, "LOOPGATE_SHARED": str(tmp_path / "no-shared")}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            "-o", "addopts=", "tests/bridges/test_bot_login.py"]
    result = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "4 errors" in out
    assert out.count(f"shared fixtures not found at {tmp_path / 'no-shared' / 'fixtures'}"
                     " (set LOOPGATE_SHARED)") >= 4, out
    assert "FileNotFoundError" not in out and "AssertionError" not in out
