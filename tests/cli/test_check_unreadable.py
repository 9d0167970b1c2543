"""``check`` of a database holding a stored item that cannot be read ("bad input gets a clear
error and loses nothing"): every form of ``check --all`` shows the item in its place with
its error, every other item byte for byte as before, names the keys on stderr and exits 3
(``--fail-on`` or not); ``check ITEM`` of it, and any verb, is one line and exit 3; on
SQLite and on a real PostgreSQL server (the same database copied there)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli
from bridges.postgres.copy import copy_sqlite_to_postgres
from bridges.postgres.store import PostgresStore
from engine.store.rows import CHILD_TABLES
from tests.cli.test_check_compact import outputs_by_chunk
from tests.cli.test_item_cli import home  # noqa: F401
from tests.cli.test_item_cli import run as run_sqlite
from tests.fakes.github import FakeGitHub
from tests.pgserver import PASSWORD, PgServer

ITEMS = [f"acme/widgets#{n}" for n in (11, 12, 13, 14, 15)]
BAD_KEY = "acme/widgets#013"  # #13 stored under a key that does not parse: sorts as 13
KEY_ERROR = ("unreadable: the stored key: not a work item reference: 'acme/widgets#013' "
             "(expected owner/repo#N)")
JSON_ERROR = ("unreadable: visits row of node 'phase-selection': not JSON (Expecting "
              "property name enclosed in double quotes: line 1 column 14 (char 13))")
STDERR = ("loopgate: 2 stored items could not be read: acme/widgets#12, acme/widgets#013 "
          "(each is shown in its place, with its error)\n")
FORMS = [("--format", "json"), ("--format", "json", "--compact"),
         ("--format", "json", "--history"), (), ("--compact",), ("--history",)]


def _db(home: Path) -> Path:  # noqa: F811
    return home / "db" / "loopgate.db"


def _walk(home: Path) -> None:  # noqa: F811
    """Five items in varied real states, walked by the CLI verbs."""
    for ref in ITEMS:
        assert run_sqlite(home, "start", ref).exit_code == 0
    for ref in ITEMS[:3]:
        assert run_sqlite(home, "advance", ref, "--comment",
                          f"alice={home / 'execute.md'}").exit_code == 0
    assert run_sqlite(home, "skip", ITEMS[2], "--node", "review-chain", "--reason",
                      "docs only — größe").exit_code == 0
    assert run_sqlite(home, "force", ITEMS[3], "--to", "design", "--reason",
                      "stuck").exit_code == 0


def _spoil(home: Path) -> None:  # noqa: F811
    """#13 moved to a key that does not parse (every row of it), and #12's phase-selection
    visits row cut short: no longer JSON."""
    conn = sqlite3.connect(_db(home), isolation_level=None)
    try:
        for table in ("items", *CHILD_TABLES):
            conn.execute(f"UPDATE {table} SET item = ? WHERE item = ?", (BAD_KEY, ITEMS[2]))
        assert conn.execute("SELECT COUNT(*) FROM skips WHERE item = ?",
                            (BAD_KEY,)).fetchone()[0] == 6  # its child rows came along
        done = conn.execute("UPDATE visits SET data = ? WHERE item = ? AND node = ?",
                            ('[{"visit": 1,', ITEMS[1], "phase-selection"))
        assert done.rowcount == 1
    finally:
        conn.close()


def _json_lines(output: str) -> list[str]:
    lines = output.splitlines()
    assert lines[0] == "[" and lines[-1] == "]"
    return [line.rstrip(",") for line in lines[1:-1]]


def _error_line(key: str, error: str) -> str:
    return json.dumps({"workItem": key, "error": error}, ensure_ascii=False,
                      separators=(",", ":"))


def _text_blocks(output: str) -> tuple[list[str], str]:
    """``check --all`` text: the items' blocks (a blank line between them) and the
    summary (from ``summary:`` on)."""
    body, _sep, summary = output.rpartition("\nsummary: ")
    return body.split("\n\n"), "summary: " + summary


@pytest.mark.parametrize("form", FORMS, ids=" ".join)
def test_every_form_of_check_all_shows_the_unreadable_items_in_place_and_exits_3(
        home: Path, form: tuple[str, ...]) -> None:  # noqa: F811
    _walk(home)
    healthy = run_sqlite(home, "check", "--all", *form)
    assert healthy.exit_code == 0
    _spoil(home)
    spoiled = _runner_result(home, "check", "--all", *form)
    _assert_spoiled(form, healthy.output, spoiled)


@pytest.mark.parametrize("form", [("--format", "json"), ()], ids=" ".join)
def test_a_blob_in_a_text_column_is_unreadable_not_a_lost_run(
        home: Path, form: tuple[str, ...]) -> None:  # noqa: F811
    # SQLite keeps a BLOB in a TEXT column as it is; read as the item's status it failed to
    # encode (JSON: every item's output lost, a traceback) or to sort (the text summary).
    _walk(home)
    healthy = run_sqlite(home, "check", "--all", *form)
    conn = sqlite3.connect(_db(home), isolation_level=None)
    try:
        conn.execute("UPDATE items SET status = ? WHERE item = ?", (b"parked", ITEMS[3]))
    finally:
        conn.close()
    spoiled = _runner_result(home, "check", "--all", *form)
    error = "unreadable: the item's row: column status: text was expected, not a BLOB"
    assert spoiled.exit_code == 3
    assert spoiled.stderr == (f"loopgate: 1 stored item could not be read: {ITEMS[3]} "
                              "(each is shown in its place, with its error)\n")
    if form:
        lines = _json_lines(healthy.output)
        assert _json_lines(spoiled.stdout) == [*lines[:3], _error_line(ITEMS[3], error),
                                               lines[4]]
        return
    blocks, _summary = _text_blocks(healthy.output)
    got, summary = _text_blocks(spoiled.stdout)
    assert got == [*blocks[:3], f"{ITEMS[3]}: {error}", blocks[4]]
    assert summary.endswith("  ?                unreadable      1\n")


def _runner_result(home: Path, *args: str) -> Result:  # noqa: F811
    argv = ["--db", str(_db(home)), "--config", str(home / "loopgate.yaml"), *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def _assert_spoiled(form: tuple[str, ...], healthy: str, spoiled: Result) -> None:
    assert spoiled.exit_code == 3
    assert spoiled.stderr == STDERR
    if "json" in form:
        lines = _json_lines(healthy)
        want = [lines[0], _error_line(ITEMS[1], JSON_ERROR), _error_line(BAD_KEY, KEY_ERROR),
                lines[3], lines[4]]
        assert _json_lines(spoiled.stdout) == want
        assert [d.get("workItem") for d in json.loads(spoiled.stdout)] == [
            ITEMS[0], ITEMS[1], BAD_KEY, ITEMS[3], ITEMS[4]]
        return
    if "--compact" in form:  # one line per item, then the summary
        lines = healthy.splitlines()
        want = [lines[0], f"{ITEMS[1]}: {JSON_ERROR}", f"{BAD_KEY}: {KEY_ERROR}",
                *lines[3:5]]
        assert spoiled.stdout.splitlines()[:5] == want
        _assert_summary(spoiled.stdout[spoiled.stdout.index("\nsummary: ") + 1:])
        return
    blocks, _summary = _text_blocks(healthy)
    got, summary = _text_blocks(spoiled.stdout)
    assert len(blocks) == len(ITEMS)
    assert got == [blocks[0], f"{ITEMS[1]}: {JSON_ERROR}", f"{BAD_KEY}: {KEY_ERROR}",
                   blocks[3], blocks[4]]
    _assert_summary(summary)


def _assert_summary(summary: str) -> None:
    assert summary == (
        "summary: 5 items\n"
        "  node             status      items\n"
        "  phase-selection  parked          1\n"
        "  brainstorming    parked          1\n"
        "  design           parked          1\n"
        "  ?                unreadable      2\n")


def test_fail_on_is_outranked_and_the_filters_keep_the_unreadable(
        home: Path) -> None:  # noqa: F811
    _walk(home)
    _spoil(home)
    tripped = _runner_result(home, "check", "--all", "--fail-on", "unmet", "--format", "json")
    assert tripped.exit_code == 3 and tripped.stderr == STDERR
    assert len(json.loads(tripped.stdout)) == 5
    parked_at_design = _runner_result(home, "check", "--all", "--node", "design", "--compact")
    assert parked_at_design.exit_code == 3
    assert parked_at_design.stdout.splitlines()[:3] == [
        f"{ITEMS[1]}: {JSON_ERROR}", f"{BAD_KEY}: {KEY_ERROR}",
        f"{ITEMS[3]} — pdlc-work-item-loop — parked at design — ok: no — unmet: "
        "phase-selection (forced past), design (waiting), 19 not reached"]


def test_the_stream_is_the_same_bytes_whatever_its_chunk(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    _walk(home)
    _spoil(home)
    outputs = outputs_by_chunk(
        monkeypatch, lambda: _runner_result(home, "check", "--all", "--format", "json").stdout)
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])) == 5


def test_one_unreadable_item_is_one_line_and_exit_3_in_every_verb(
        home: Path) -> None:  # noqa: F811
    _walk(home)
    _spoil(home)
    line = f"loopgate: {ITEMS[1]}: {JSON_ERROR}\n"
    for argv in (["check", ITEMS[1]], ["check", ITEMS[1], "--format", "json"],
                 ["advance", ITEMS[1]], ["complete", ITEMS[1], "--node", "brainstorming"],
                 ["comments", ITEMS[1]], ["briefing", ITEMS[1]],
                 ["simulate", ITEMS[1], "--as", "alice", "--approve", "brainstorming"]):
        result = _runner_result(home, *argv)
        assert (result.exit_code, result.stdout, result.stderr) == (3, "", line), argv
    # The key asked for is not the one stored: that item is not started, as before.
    missing = _runner_result(home, "check", ITEMS[2])
    assert missing.exit_code == 1
    assert missing.stderr == "loopgate: refused: acme/widgets#13 is not started (not-started)\n"


def test_check_all_over_postgresql_is_the_same(home: Path, pg_server: PgServer,  # noqa: F811
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _walk(home)
    healthy = {form: run_sqlite(home, "check", "--all", *form).output for form in FORMS}
    _spoil(home)
    name = pg_server.create_database()
    try:
        store = PostgresStore(pg_server.conninfo(name))
        try:
            copy_sqlite_to_postgres(_db(home), store)
        finally:
            store.close()
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
        # PostgreSQL serves the GitHub bridge's replicas: a github section, whose token the
        # command line checks at start (against the fake GitHub).
        with FakeGitHub() as github:
            github.create_repo("acme/widgets")
            monkeypatch.setenv("GITHUB_TOKEN", github.token)
            config = home / "github.yaml"
            config.write_text(f"authorizedUsers: [alice]\ngithub:\n  repos: [acme/widgets]\n"
                              f"  apiUrl: {github.api_url}\n  graphqlUrl: {github.graphql_url}\n")
            _check_on(pg_server.url(name), config, healthy, home)
    finally:
        pg_server.drop_database(name)


def _check_on(url: str, config: Path, healthy: dict[tuple[str, ...], str],
              home: Path) -> None:  # noqa: F811
    for form in FORMS:
        argv = ["--db", url, "--config", str(config), "check", "--all", *form]
        on_pg = CliRunner().invoke(cli, argv, catch_exceptions=False)
        _assert_spoiled(form, healthy[form], on_pg)
        assert on_pg.stdout == _runner_result(home, "check", "--all", *form).stdout
