"""The deployment files of issue 13 §5: the systemd unit passes ``systemd-analyze verify``
(where systemd is installed) and says what the issue asks; the Dockerfile runs as a user
that is not root, keeps the database on a volume and checks readiness."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.stack import loopgate_argv

UNIT = REPO_ROOT / "deploy" / "loopgate.service"
DOCKERFILE = REPO_ROOT / "deploy" / "Dockerfile"
INSTALLED = "/opt/loopgate/bin/loopgate"


def _settings(text: str) -> dict[str, list[str]]:
    """``key -> values`` of a unit file (a key may repeat), comments left out."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    script = loopgate_argv()[0]
    if not Path(script).name == "loopgate":
        pytest.skip("no loopgate console script in this environment to point ExecStart at")
    # verify checks that ExecStart exists: point it at this environment's loopgate.
    unit = tmp_path / "loopgate.service"
    unit.write_text(UNIT.read_text("utf-8").replace(INSTALLED, script), "utf-8")
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_the_systemd_unit_restarts_on_failure_with_a_state_directory_and_an_env_file() -> None:
    settings = _settings(UNIT.read_text("utf-8"))
    assert settings["ExecStart"] == [f"{INSTALLED} serve"]
    assert settings["Restart"] == ["on-failure"]
    assert settings["RestartPreventExitStatus"] == ["2"]  # a startup error is not retried
    assert settings["StateDirectory"] == ["loopgate"]
    assert "LOOPGATE_DB=/var/lib/loopgate/loopgate.db" in settings["Environment"]
    assert settings["EnvironmentFile"] == ["/etc/loopgate/loopgate.env"]
    assert settings["KillSignal"] == ["SIGTERM"]
    assert not any("TOKEN" in v or "SECRET" in v for v in settings["Environment"])


def test_the_dockerfile_runs_as_non_root_with_a_volume_and_a_readiness_healthcheck() -> None:
    lines = [" ".join(part.split()) for part in
             DOCKERFILE.read_text("utf-8").replace("\\\n", " ").splitlines()
             if part.strip() and not part.lstrip().startswith("#")]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users == ["loopgate"]
    assert 'VOLUME ["/var/lib/loopgate"]' in lines
    assert any("LOOPGATE_DB=/var/lib/loopgate/loopgate.db" in line for line in lines)
    [health] = [line for line in lines if line.startswith("HEALTHCHECK ")]
    assert health.endswith('CMD ["loopgate", "status"]')  # exits 0 only on /readyz 200
    assert "STOPSIGNAL SIGTERM" in lines
    # every package the wheel ships is copied in, from folders that exist
    copied = [shlex.split(line)[1] for line in lines if line.startswith("COPY ")]
    for source in copied:
        assert (REPO_ROOT / source).exists(), source
    for package in ("engine", "bridges", "bot", "graphs", "templates"):
        assert package in copied
