"""A cluster of ``loopgate serve`` replicas behind a round-robin sender, and the script of
mixed deliveries the replica fault test (tests/e2e/test_e2e_replicas_fault.py) and the
bench (bench/replicas_bench.py) run against it (issue 15).

The script, per work item, in order: the author adds the start label (``issues.labeled``);
once the checklist is on the issue, the author replies ``the-loop execute`` (an execute
reply); the reviewer comments ``approved`` (an approval, at a node that does not take it:
evaluated and ignored); an unauthorized user replies ``the-loop execute`` (refused); the
approval is hidden and shown again (``issue_comment.edited`` with the body unchanged:
dropped). A fixed, seeded 10% of deliveries are sent a second time, to a different replica.
Items run concurrently; each delivery goes to the next replica in turn, and to the one after
when a replica does not answer (a balancer's health check).

Not in the script (said plainly): quiz ticks and Slack Executes, which need artifacts,
explainer pages and agent claims per item (the two-replica e2e walk covers them).
"""

from __future__ import annotations

import json
import random
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from engine.hooks.markers import PHASE_SELECTION_MARKER
from tests.e2e.stack import (
    AUTHOR,
    GITHUB_SECRET,
    REPO,
    REVIEWER,
    START_LABEL,
    Home,
    ServeProcess,
    loopgate_markers,
    wait_until,
)
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack

__all__ = ["Cluster", "Script", "normalized", "settled", "run_script", "Outcome",
           "DELIVERIES_PER_ITEM", "SETTLED_AT"]

DELIVERIES_PER_ITEM = 5
#: Where the script leaves every item: the execute reply keeps the checklist's default
#: selection, so the item waits at the first agent node.
SETTLED_AT = "brainstorming"
_COMMENT_ID = re.compile(r"issuecomment-\d+")
_INBOX_DEPTH = re.compile(r'^loopgate_queue_depth\{queue="inbox"\} (\S+)$', re.MULTILINE)
_TIMESTAMP_KEYS = {"at", "enteredAt", "exitedAt", "startedAt", "updatedAt", "frozenAt",
                   "createdAt", "decidedAt"}


class Cluster:
    """``replicas`` serve processes on one database (a PostgreSQL URL, or "" for one
    SQLite file), sharing one checkout."""

    def __init__(self, root: Path, gh: FakeGitHub, slack: FakeSlack, replicas: int, *,
                 database_url: str = "", password: str = "", poll_interval: int = 1,
                 env: dict[str, str] | None = None) -> None:
        self.homes = [Home(root / f"replica-{i}", gh, slack, poll_interval=poll_interval,
                           database_url=database_url, database_password=password)
                      for i in range(replicas)]
        self.extra_env = dict(env or {})
        for home in self.homes:
            home.root.mkdir(parents=True, exist_ok=True)
            home.write()
            config = yaml.safe_load(home.config.read_text("utf-8"))
            config["workspace"] = str(self.homes[0].workspace)
            home.config.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
        self.servers = [_Serve(home, self.extra_env) for home in self.homes]

    def start(self) -> Cluster:
        """Start every replica, one after the other (the first takes the poller)."""
        for server in self.servers:
            server.start()
        return self

    def urls(self) -> list[str]:
        """The replicas' base URLs (a killed one keeps its URL: it answers nothing)."""
        return [s.url for s in self.servers]

    def stop(self) -> list[int]:
        """SIGTERM every replica; their exit codes."""
        return [s.stop() for s in self.servers]

    def logs(self) -> str:
        return "\n".join(s.log() for s in self.servers)


class _Serve(ServeProcess):
    """A serve process with extra environment (test-rig knobs)."""

    def __init__(self, home: Home, extra: dict[str, str]) -> None:
        super().__init__(home)
        self._extra = extra
        original = home.env
        home.env = lambda: {**original(), **self._extra}  # type: ignore[method-assign]


@dataclass
class Script:
    """The deliveries of :data:`DELIVERIES_PER_ITEM` per item over ``items`` work items.

    Attributes:
        acks: seconds from sending to the answer, per answered request.
        sent, duplicates, failovers: counts of deliveries, second sends, re-sends after a
            replica did not answer.
    """

    gh: FakeGitHub
    urls: Callable[[], list[str]]
    items: int
    seed: int = 15
    duplicate_rate: float = 0.10
    acks: list[float] = field(default_factory=list)
    sent: int = 0
    duplicates: int = 0
    failovers: int = 0
    numbers: list[int] = field(default_factory=list)
    on_delivery: Callable[[int], None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _turn: int = 0

    def run(self, workers: int = 8) -> float:
        """Run every item's steps (items concurrently); returns the wall time (seconds)."""
        self.numbers = [self.gh.create_issue(REPO, f"Item {i}", "Script item.", author=AUTHOR)
                        for i in range(self.items)]
        rng = random.Random(self.seed)
        twice = [[rng.random() < self.duplicate_rate for _ in range(DELIVERIES_PER_ITEM)]
                 for _ in self.numbers]
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(self._item, n, t) for n, t in zip(self.numbers, twice,
                                                                           strict=True)]:
                future.result()
        return time.perf_counter() - started

    def _item(self, number: int, twice: list[bool]) -> None:
        self.gh.add_label(REPO, number, START_LABEL)
        self._deliver(twice[0], "issues", "labeled", number=number, label=START_LABEL,
                      sender=AUTHOR)
        wait_until(lambda: self._comments(number, PHASE_SELECTION_MARKER),
                   f"the checklist on #{number}", timeout=300)
        reply = self.gh.add_comment(REPO, number, "the-loop execute", as_user=AUTHOR)
        self._deliver(twice[1], "issue_comment", "created", number=number,
                      comment_id=reply.id, sender=AUTHOR)
        approval = self.gh.add_comment(REPO, number, "approved", as_user=REVIEWER)
        self._deliver(twice[2], "issue_comment", "created", number=number,
                      comment_id=approval.id, sender=REVIEWER)
        outsider = self.gh.add_comment(REPO, number, "the-loop execute", as_user="mallory")
        self._deliver(twice[3], "issue_comment", "created", number=number,
                      comment_id=outsider.id, sender="mallory")
        self._deliver(twice[4], "issue_comment", "edited", number=number,
                      comment_id=approval.id, sender=REVIEWER, previous_body="approved")

    def _comments(self, number: int, needle: str) -> list[Any]:
        return [c for c in self.gh.comments_on(REPO, number) if needle in c.body]

    def _deliver(self, twice: bool, event: str, action: str, **kwargs: Any) -> None:
        headers, body = self.gh.webhook(event, action, repo=REPO, secret=GITHUB_SECRET,
                                        **kwargs)
        with self._lock:
            self._turn += 1
            turn = self._turn
            self.sent += 1
            self.duplicates += int(twice)
        index = self._post(turn, headers, body)
        if twice:
            self._post(index + 1, headers, body)  # the same delivery at another replica
        if self.on_delivery is not None:
            self.on_delivery(turn)

    def _post(self, turn: int, headers: dict[str, str], body: bytes) -> int:
        urls = self.urls()
        for step in range(len(urls) * 3):
            index = (turn + step) % len(urls)
            started = time.perf_counter()
            try:
                response = requests.post(f"{urls[index]}/github/webhook", data=body,
                                         headers=headers, timeout=10)
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
                # refused, or cut mid-answer by the SIGKILL: GitHub would redeliver, and so
                # does this sender, at the next replica (a delivery the killed one took is
                # a duplicate there)
                with self._lock:
                    self.failovers += 1
                time.sleep(0.05)
                continue
            with self._lock:
                self.acks.append(time.perf_counter() - started)
            assert response.status_code in (200, 202), (response.status_code, response.text)
            return index
        raise AssertionError("no replica answered the delivery")

    def p99_ms(self) -> float:
        """The 99th percentile ack, milliseconds."""
        return statistics.quantiles(self.acks, n=100)[98] * 1000

    def markers(self) -> dict[int, Counter[str]]:
        """Per item (by script position), how many times each loopgate marker was posted."""
        out: dict[int, Counter[str]] = {}
        for i, number in enumerate(self.numbers):
            found: Counter[str] = Counter()
            for comment in self.gh.comments_on(REPO, number):
                found.update(loopgate_markers(comment.body))
            out[i] = found
        return out


def _inboxes_empty(urls: list[str]) -> bool:
    """Every replica that answers reports ``loopgate_queue_depth{queue="inbox"} 0`` on
    ``/metrics`` (read from the database at scrape time): no delivery is still kept,
    in hand or leased by a killed replica. A replica that does not answer is skipped."""
    answered = False
    for url in urls:
        try:
            text = requests.get(f"{url}/metrics", timeout=10).text
        except requests.RequestException:
            continue
        found = _INBOX_DEPTH.search(text)
        if found is None or float(found.group(1)) != 0:
            return False
        answered = True
    return answered


def settled(home: Home, script: Script, expect_node: str, timeout: float = 300) -> Any:
    """Wait until every scripted item stands at ``expect_node`` in ``check --all`` and
    nothing is owed (inbox handled, outbox empty); returns the check document. The
    inboxes are looked at first: ``check --all`` is read only once no delivery accepted
    (``202``) is still waiting to be handled, so none can change the document later."""
    def done() -> Any:
        if not _inboxes_empty(script.urls()):
            return None
        doc = json.loads(home.cli("check", "--all", "--format", "json").stdout)
        items = doc if isinstance(doc, list) else doc.get("items", [])
        if len(items) < script.items or any(i.get("currentNode") != expect_node
                                            for i in items):
            return None
        # The document itself must owe nothing too: an effect still running when it was
        # read (done by the time the outbox is listed below) would differ between runs.
        if any((i.get("report") or {}).get("effects") for i in items):
            return None
        owed = home.cli("effects", "list", "--format", "json", ok=False)
        return doc if owed.returncode == 0 and json.loads(owed.stdout or "[]") == [] else None
    return wait_until(done, f"every item at {expect_node} with nothing owed", timeout,
                      interval=1.0)


#: Keys holding a comment id under another name (issue 19 §2: the newest comment seen when
#: a visit began); ids differ between two runs of one script.
_COMMENT_ID_KEYS = frozenset({"lastCommentSeen", "afterComment"})


def normalized(doc: Any, numbers: list[int]) -> Any:
    """``check --all`` with what differs between two runs of one script taken out: times,
    and issue numbers and comment ids (replaced by the item's position in the script)."""
    position = {n: i for i, n in enumerate(numbers)}

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()
                    if k not in _TIMESTAMP_KEYS and k not in _COMMENT_ID_KEYS
                    and not k.lower().endswith(("id", "url"))}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str):
            value = _COMMENT_ID.sub("issuecomment-N", value)
            for number, i in position.items():
                value = value.replace(f"{REPO}#{number}", f"{REPO}#item{i}")
                value = value.replace(f"/issues/{number}#", f"/issues/item{i}#")
        return value

    items = doc if isinstance(doc, list) else doc.get("items", [])
    return sorted((clean(i) for i in items), key=lambda i: json.dumps(i, sort_keys=True))


@dataclass
class Outcome:
    """One run of the script: the script (acks, counts), ``check --all`` at the end, and
    the seconds from the first delivery until every item settled with nothing owed."""

    script: Script
    doc: Any
    seconds: float

    @property
    def per_second(self) -> float:
        """Deliveries handled per second (sent ÷ time until settled)."""
        return self.script.sent / self.seconds


def run_script(cluster: Cluster, gh: FakeGitHub, items: int, *, kill_at: float | None = None,
               restart_after: float = 0.0, settle_timeout: float = 600) -> Outcome:
    """Run the script against ``cluster``; with ``kill_at`` (a fraction of the
    deliveries), SIGKILL the first replica (the poller's leader) then and start it again
    ``restart_after`` seconds later."""
    script = Script(gh, cluster.urls, items)
    restarts: list[threading.Thread] = []
    kill_turn = int(items * DELIVERIES_PER_ITEM * kill_at) if kill_at is not None else -1

    def maybe_kill(turn: int) -> None:
        if turn != kill_turn:
            return
        leader = cluster.servers[0]
        leader.kill()
        died = time.monotonic()

        def restart() -> None:
            # Its deliveries in hand stay leased until the lease runs out; restarted after
            # that, its own replay at start takes them (as would the others' later).
            while time.monotonic() - died < restart_after:
                time.sleep(0.1)
            leader.start()

        restarts.append(threading.Thread(target=restart))
        restarts[-1].start()

    script.on_delivery = maybe_kill
    started = time.perf_counter()
    script.run()
    for thread in restarts:
        thread.join(120)
    doc = settled(cluster.homes[-1], script, SETTLED_AT, settle_timeout)
    return Outcome(script, doc, time.perf_counter() - started)
