"""Issue 13 through the ``loopgate`` console script: ``backup`` while ``serve`` runs,
``db migrate --check``, ``status``, ``--log-format json``, and startup errors that are one
line and exit 2 (port in use, database not writable)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests import forkserver
from tests.e2e.stack import free_port, loopgate_argv, wait_until

ITEMS = [f"acme/widgets#{n}" for n in range(1, 6)]


class Home:
    """An offline installation (no github, no slack): loopgate.yaml and a database."""

    def __init__(self, root: Path, port: int, server: str = "") -> None:
        self.root = root
        self.port = port
        self.db = root / "state" / "loopgate.db"
        root.mkdir(parents=True, exist_ok=True)
        (root / "loopgate.yaml").write_text(
            f"authorizedUsers: [alice]\nserver: {{host: 127.0.0.1, port: {port}{server}}}\n")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "LOOPGATE_LOG_FORMAT")}

    def argv(self, *args: str, db: Path | None = None) -> list[str]:
        return [*loopgate_argv(), "--db", str(db or self.db), "--config",
                str(self.root / "loopgate.yaml"), *args]

    def run(self, *args: str, db: Path | None = None) -> subprocess.CompletedProcess[str]:
        return forkserver.run(self.argv(*args, db=db), cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=60, check=False)


class Served:
    """``loopgate serve`` of a :class:`Home` in a subprocess."""

    def __init__(self, home: Home, *args: str) -> None:
        self.proc = subprocess.Popen(home.argv("serve", *args), cwd=home.root, env=home.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()
        line = wait_until(lambda: next((x for x in self.out if "listening on" in x), "")
                          or self.proc.poll() is not None, "the listening line", 30)
        assert isinstance(line, str), "\n".join(self.err)
        self.url = line.rsplit(" ", 1)[1]

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path, free_port())


@pytest.fixture
def served(home: Home) -> Iterator[Served]:
    for item in ITEMS:
        assert home.run("start", item).returncode == 0
    server = Served(home)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait(10)


def test_backup_while_serving_gives_a_database_check_all_reads_identically(
        home: Home, served: Served) -> None:
    writes = threading.Event()

    def writer() -> None:  # the database changes while the copy is taken
        n = 100
        while not writes.is_set():
            home.run("start", f"acme/widgets#{n}")
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        copy = home.root / "backups" / "copy.db"
        copy.parent.mkdir()
        done = home.run("backup", str(copy))
    finally:
        writes.set()
        thread.join(60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"backed up to {copy} ({copy.stat().st_size} bytes, quick_check ok)\n"
    assert requests.get(f"{served.url}/readyz", timeout=10).status_code == 200
    # the copy is one consistent snapshot: every item it holds reads as in the original
    backed = {d["workItem"]: d for d in json.loads(
        home.run("check", "--all", "--format", "json", db=copy).stdout)}
    now = {d["workItem"]: d for d in json.loads(
        home.run("check", "--all", "--format", "json").stdout)}
    assert set(ITEMS) <= set(backed) <= set(now)
    # (an item the writer was starting may be caught between start's two transactions)
    assert {item: backed[item] for item in ITEMS} == {item: now[item] for item in ITEMS}
    # with the writer stopped, a second backup reads identically, line by line
    again = home.root / "backups"
    assert home.run("backup", str(again)).returncode == 0
    [dated] = [p for p in again.iterdir() if p.name.startswith("loopgate-")]
    original = home.run("check", "--all")
    copied = home.run("check", "--all", db=dated)
    assert original.returncode == copied.returncode == 0, copied.stderr
    assert copied.stdout == original.stdout and len(original.stdout.splitlines()) >= 5
    assert served.stop() == 0
    refused = home.run("backup", str(copy))
    assert (refused.returncode, refused.stderr) == (
        2, f"loopgate: {copy} exists: pass --force to replace it\n")


def test_port_in_use_exits_2_with_one_line(home: Home) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", home.port))
        taken.listen()
        done = home.run("serve")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"loopgate: cannot listen on 127.0.0.1:{home.port}: address already in use (another "
        "process holds the port: stop it, or set server.port in loopgate.yaml)"]
    assert "listening on" not in done.stdout


def test_serve_on_a_database_that_is_not_writable_exits_2_with_one_line(home: Home) -> None:
    assert home.run("start", ITEMS[0]).returncode == 0
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "+i", str(home.db)], capture_output=True).returncode:
            pytest.skip("root without chattr +i: no way to make the file read-only")
    else:
        home.db.chmod(0o444)
    try:
        done = home.run("serve")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(home.db)], check=True)
        else:
            home.db.chmod(0o644)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"loopgate: the database is not writable: {home.db} is read-only"]


def test_db_migrate_check_lists_pending_migrations_before_an_upgrade(home: Home) -> None:
    home.db.parent.mkdir(parents=True)
    conn = sqlite3.connect(home.db)  # a database an older loopgate left: two sets applied
    conn.execute("CREATE TABLE _sqlite_migrations (migration_set TEXT, name TEXT, "
                 "applied_at TEXT)")
    conn.executemany("INSERT INTO _sqlite_migrations VALUES ('loopgate-engine', ?, 'then')",
                     [("0001_item_state",), ("0002_event_log",)])
    conn.commit()
    conn.close()
    done = home.run("db", "migrate", "--check")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"pending: loopgate-engine {name} ({home.db})"
        for name in ("0003_local_thread", "0004_kv", "0005_effects", "0006_visits")]
    assert sqlite3.connect(home.db).execute(  # --check wrote nothing
        "SELECT COUNT(*) FROM _sqlite_migrations").fetchone() == (2,)


def test_db_migrate_applies_and_then_nothing_is_pending(home: Home) -> None:
    assert home.run("db", "migrate").returncode == 0
    done = home.run("db", "migrate", "--check", "--format", "json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_status_prints_the_servers_checks_and_exits_0_when_ready(
        home: Home, served: Served) -> None:
    done = home.run("status")
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[0] == f"ready (http://127.0.0.1:{home.port}/readyz)"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["ok", "database"], ["ok", "dispatcher"], ["ok", "github_effects"]]
    served.stop()
    down = home.run("status")
    assert down.returncode == 1
    assert down.stdout.splitlines()[0] == (
        f"NOT READY: no loopgate serve answers at http://127.0.0.1:{home.port} "
        "(ConnectionError)")


def test_json_logs_parse_line_by_line(home: Home) -> None:
    server = Served(home, "--log-format", "json")
    try:
        assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200
    finally:
        assert server.stop() == 0
    assert len(server.err) >= 2
    records = [json.loads(line) for line in server.err]  # every line is one JSON object
    for record in records:
        assert {"time", "level", "logger", "event", "message"} <= set(record), record
    assert any(r["event"] == "loopgate.serve" and r["message"].startswith("listening url=")
               for r in records)


def test_metrics_are_served_unless_turned_off(home: Home, tmp_path: Path) -> None:
    server = Served(home)
    try:
        answer = requests.get(f"{server.url}/metrics", timeout=10)
        assert answer.status_code == 200
        assert "loopgate_work_items" in answer.text
        # acks first's counts, wired to the dispatcher's (no effects worker offline)
        acks_first = [line for line in answer.text.splitlines()
                      if line.startswith("loopgate_ack_first_")]
        assert acks_first == [f'loopgate_ack_first_{name}_total{{thread="dispatcher"}} 0.0'
                              for name in ("pauses", "overruns", "budget_refusals")]
    finally:
        assert server.stop() == 0
    off = Home(tmp_path / "off", free_port(), ", metrics: false")
    server = Served(off)
    try:
        assert requests.get(f"{server.url}/metrics", timeout=10).status_code == 404
        assert requests.get(f"{server.url}/readyz", timeout=10).status_code == 200
    finally:
        assert server.stop() == 0


def test_status_names_the_failing_check_and_exits_1(home: Home, served: Served) -> None:
    from tests.bridges.test_ops_health import read_only

    with read_only(home.db):
        done = home.run("status")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f"NOT READY (http://127.0.0.1:{home.port}/readyz): failing database"
    assert lines[1] == f"  FAIL database           {home.db} is read-only"


def test_backup_to_a_path_ending_in_a_slash_creates_that_folder(home: Home) -> None:
    assert home.run("start", ITEMS[0]).returncode == 0
    folder = home.root / "new" / "backups"
    done = home.run("backup", f"{folder}/")
    assert done.returncode == 0, done.stderr
    assert folder.is_dir()
    [dated] = [p for p in folder.iterdir() if p.name.startswith("loopgate-")]
    assert done.stdout.startswith(f"backed up to {dated} (")
    assert not (home.root / "new" / "backups.db").exists()


def test_backup_into_a_missing_folder_names_it(home: Home) -> None:
    assert home.run("start", ITEMS[0]).returncode == 0
    target = home.root / "missing" / "copy.db"
    refused = home.run("backup", str(target))
    assert (refused.returncode, refused.stderr) == (
        2, f"loopgate: no folder {target.parent} for the backup {target}: create it, or end "
           "PATH with / to have a folder made\n")
    assert not target.parent.exists()
