"""A real PostgreSQL server for the tests, started from the machine's binaries (issue 15 §2).

Debian's ``postgresql`` package puts ``initdb``/``pg_ctl`` under
``/usr/lib/postgresql/<major>/bin``; the newest major found there (or on ``PATH``) is used.
The cluster lives in a temporary directory, listens on 127.0.0.1 at a free port and on a
unix socket inside that directory, and is stopped (``pg_ctl stop -m fast``) and removed at
the end of the test session. ``initdb`` refuses to run as root, so when the tests run as
root the server runs as the ``postgres`` user (``runuser``), with the directory owned by it.

Password authentication is real: TCP connections use ``scram-sha-256`` with the password
:data:`PASSWORD`, the socket trusts the OS user (only used to set up).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "find_bindir", "start_server", "PASSWORD", "USER"]

USER = "loopgate"
PASSWORD = "pw-" + secrets.token_hex(8)
_START_TIMEOUT_S = 60


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: the newest
    ``/usr/lib/postgresql/<major>/bin``, else the one on ``PATH``; None when absent."""
    found = []
    for path in Path("/usr/lib/postgresql").glob("*/bin"):
        if (path / "initdb").is_file() and path.parent.name.isdigit():
            found.append((int(path.parent.name), path))
    if found:
        return max(found)[1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    """A running test cluster.

    Attributes:
        bindir: the binaries used.
        root: the temporary directory (data in ``root/data``, socket in ``root``).
        port: the TCP port on 127.0.0.1.
        run_as: the OS user running the server (``postgres`` when the tests are root).
    """

    bindir: Path
    root: Path
    port: int
    run_as: str | None

    def url(self, dbname: str = "postgres", *, password: bool = False) -> str:
        """A ``postgresql://`` URL for ``dbname`` as :data:`USER` (with the password only
        when asked: loopgate takes it from the environment)."""
        secret = f":{PASSWORD}" if password else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{dbname}"

    def conninfo(self, dbname: str = "postgres") -> str:
        """A libpq conninfo string with the password (for test set-up code)."""
        return (f"host=127.0.0.1 port={self.port} dbname={dbname} user={USER} "
                f"password={PASSWORD}")

    def create_database(self) -> str:
        """Create a fresh, empty database and return its name."""
        name = "t_" + secrets.token_hex(6)
        self._admin(f'CREATE DATABASE "{name}" OWNER {USER}')
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, closing whatever connections are still open on it."""
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(sql)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory."""
        _run(self, [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast",
                    "-w", "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(server: PgServer, argv: list[str], *, check: bool = True
         ) -> subprocess.CompletedProcess[str]:
    if server.run_as:
        argv = ["runuser", "-u", server.run_as, "--", *argv]
    return subprocess.run(argv, check=check, capture_output=True, text=True,
                          timeout=_START_TIMEOUT_S)


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root, but there is no 'postgres' user to run "
                           "the test PostgreSQL server as") from None
    return "postgres"


def start_server(bindir: Path) -> PgServer:
    """initdb a cluster in a temporary directory and start it (``pg_ctl -w start``).

    Raises:
        RuntimeError: initdb or the start failed (the server's log is in the message).
    """
    run_as = _run_as()
    root = Path(tempfile.mkdtemp(prefix="loopgate-pg-"))
    server = PgServer(bindir, root, _free_port(), run_as)
    if run_as:
        entry = pwd.getpwnam(run_as)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if run_as:
        os.chown(pwfile, pwd.getpwnam(run_as).pw_uid, -1)
    try:
        _run(server, [str(bindir / "initdb"), "-D", str(root / "data"), "-U", USER,
                      "--pwfile", str(pwfile), "--auth-local=trust",
                      "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
        _start(server)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        out = getattr(exc, "stderr", "") or ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"test PostgreSQL failed to start: {out}\n{log}") from None
    return server


def _start(server: PgServer) -> None:
    for attempt in range(3):
        opts = (f"-c listen_addresses=127.0.0.1 -c port={server.port} "
                f"-c unix_socket_directories={server.root} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        result = _run(server, [str(server.bindir / "pg_ctl"), "-D", str(server.root / "data"),
                               "-l", str(server.root / "log"), "-o", opts, "-w",
                               "-t", str(_START_TIMEOUT_S), "start"], check=False)
        if result.returncode == 0:
            return
        # The port may have been taken between choosing and binding: take another.
        server.port = _free_port()
        time.sleep(0.1 * (attempt + 1))
    raise subprocess.CalledProcessError(result.returncode, "pg_ctl start", stderr=result.stderr)
