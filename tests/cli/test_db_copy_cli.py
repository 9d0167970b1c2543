"""``loopgate db copy --to postgresql://…`` (issue 15 §4): an existing SQLite installation
— work items, events, outbox, bridge state, Slack tables, the webhook inbox — moves onto an
empty PostgreSQL database exactly, through the console script; a second copy is refused;
the password comes from the environment and is never printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.slack.notifier import OutboxNotifier
from bot.slack.slack_tables import load_thread, save_thread
from bridges.ingress.bridge_state import PollCursor, SqliteBridgeState
from bridges.ingress.inbox import SqliteInbox, inbox_path
from bridges.postgres.store import PostgresStore
from engine.effects import AddLabel, PostComment
from engine.records import ForcedMove, Skip
from engine.refs import WorkItemRef
from engine.state import NodeRecord
from engine.store.sqlite import SqliteStore
from tests import forkserver
from tests.pgserver import PASSWORD, PgServer

REFS = [WorkItemRef("acme", "widgets", n) for n in (3, 1, 2)]


def _installation(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    notifier = OutboxNotifier(store)
    for i, ref in enumerate(REFS):
        with store.transaction(ref) as tx:
            state = tx.create("pdlc-work-item-loop")
            state.current_node = "design"
            state.nodes["design"] = NodeRecord(attempts=i + 1, entered_at="t1")
            state.skips["brainstorming"] = Skip.from_json({"via": "selection", "by": "@alice"})
            state.forced.append(ForcedMove.from_json({"from": "a", "to": "design", "by": "@ops",
                                                      "reason": "r"}))
            tx.log("graph.started", {"node": "phase-selection"})
            tx.enqueue(f"k{i}", PostComment(ref, f"hello {i}", record="quiz:spec-quiz"))
            tx.enqueue(f"l{i}", AddLabel(ref, "loop:design"))
            notifier.send(ref, "quiz-pending", {"node": "spec-quiz"})
    store.kv_set("github", "botActor:x", {"login": "loopgate"})
    state = SqliteBridgeState(store)
    state.set_cursor("acme/widgets", "comments", PollCursor("2026-01-01T00:00:00Z", 'W/"e"'))
    state.mark_seen("acme/widgets", "comment", ["1", "2"])
    state.mark_handled("delivery:abc", "handled")
    save_thread(store, REFS[0], channel="C1", ts="1.1", revision=2, kind="card",
                author="alice")
    inbox = SqliteInbox(inbox_path(path))
    inbox.put("guid-1", "issues", b'{"a": 1}')
    inbox.put("guid-2", "issues", b'{"a": 2}')
    inbox.done("guid-2", "handled")
    inbox.close()
    return store


def _copy(path: Path, url: str) -> subprocess.CompletedProcess[str]:
    loopgate = str(Path(sys.executable).parent / "loopgate")
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    env.pop("LOOPGATE_DATABASE_URL", None)
    env.pop("LOOPGATE_CONFIG", None)
    return forkserver.run([loopgate, "--db", str(path), "db", "copy", "--to", url],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=path.parent)


def test_db_copy_moves_a_sqlite_installation_onto_postgresql(
        tmp_path: Path, pg_server: PgServer) -> None:
    path = tmp_path / "loopgate.db"
    sqlite = _installation(path)
    name = pg_server.create_database()
    try:
        done = _copy(path, pg_server.url(name))
        assert done.returncode == 0, done.stderr
        assert "items" in done.stdout and PASSWORD not in done.stdout + done.stderr
        pg = PostgresStore(pg_server.conninfo(name))
        try:
            assert [s.to_document() for s in pg.load_all()] == \
                [s.to_document() for s in sqlite.load_all()]
            assert pg.refs() == sorted(REFS)
            for ref in REFS:
                assert pg.events(ref) == sqlite.events(ref)
                assert pg.load(ref).revision == sqlite.load(ref).revision == 1
            assert [(r.id, r.key, r.status, r.effect) for r in pg.effects.rows()] == \
                [(r.id, r.key, r.status, r.effect) for r in sqlite.effects.rows()]
            assert pg.kv_items("github") == {"botActor:x": {"login": "loopgate"}}
            bridge = SqliteBridgeState(sqlite)
            from bridges.ingress.bridge_state import bridge_state

            shared = bridge_state(pg)
            assert shared.get_cursor("acme/widgets", "comments") == \
                bridge.get_cursor("acme/widgets", "comments")
            assert shared.seen("acme/widgets", "comment", ["1", "2", "3"]) == {"1", "2"}
            assert shared.handled("delivery:abc")
            assert load_thread(pg, REFS[0]) == load_thread(sqlite, REFS[0])
            outbox = pg.db().execute("SELECT item, event FROM slack_outbox ORDER BY id")
            assert outbox.fetchall() == [(str(r), "quiz-pending") for r in REFS]
            from bridges.ingress.inbox import webhook_inbox

            assert [e.delivery_id for e in webhook_inbox(pg).owed()] == ["guid-1"]
            with pg.transaction(REFS[0]) as tx:  # ids go on after the copied ones
                tx.log("graph.advanced", {"to": "x"})
                tx.enqueue("new", AddLabel(REFS[0], "loop:x"))
            assert pg.events(REFS[0])[-1]["seq"] > max(
                e["seq"] for r in REFS for e in sqlite.events(r))
            assert pg.effects.rows()[-1].id == len(sqlite.effects.rows()) + 1
        finally:
            pg.close()
        again = _copy(path, pg_server.url(name))
        assert again.returncode == 1
        assert "already holds items: copy into an empty database" in again.stderr
    finally:
        sqlite.close()
        pg_server.drop_database(name)
