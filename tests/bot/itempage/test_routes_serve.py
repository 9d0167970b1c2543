"""Issue 22 §2 through the console script: ``loopgate serve`` with ``server.signIn`` and a
secret's variable unset stops at start with one line naming the variable (exit 2, a
configuration error), and never listens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.stack import free_port, loopgate_argv

DROP = ("LOOPGATE_DB", "LOOPGATE_CONFIG", "LOOPGATE_LOG_FORMAT", "LOOPGATE_CLIENT_SECRET",
        "LOOPGATE_SESSION_SECRET", "GITHUB_TOKEN", "SLACK_APP_TOKEN", "SLACK_BOT_TOKEN")
CLIENT_SECRET = "client-secret-value-never-printed-0123"


@pytest.mark.parametrize(("present", "missing", "key"), [
    ({"LOOPGATE_SESSION_SECRET": "s" * 40}, "LOOPGATE_CLIENT_SECRET", "clientSecretEnv"),
    ({"LOOPGATE_CLIENT_SECRET": CLIENT_SECRET}, "LOOPGATE_SESSION_SECRET", "sessionSecretEnv"),
])
def test_serve_refuses_to_start_without_a_sign_in_secret(
        tmp_path: Path, present: dict[str, str], missing: str, key: str) -> None:
    port = free_port()
    (tmp_path / "loopgate.yaml").write_text(
        "authorizedUsers: [alice]\n"
        f"server: {{host: 127.0.0.1, port: {port}, publicUrl: 'http://127.0.0.1:{port}', "
        "signIn: {clientId: Iv1.5c8d0e1f2a3b4c5d}}\n")
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    env.update(present)
    argv = [*loopgate_argv(), "--db", str(tmp_path / "loopgate.db"), "--config",
            str(tmp_path / "loopgate.yaml"), "serve"]
    done = forkserver.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"loopgate: sign-in is configured (server.signIn) but the environment variable "
        f"{missing} (server.signIn.{key}) is not set")
    assert "listening on" not in done.stdout
    assert CLIENT_SECRET not in done.stderr + done.stdout
