"""GitHub bridge benchmark (issue 3, "Benchmarks"). Not run by the tests.

Against the loopback fake GitHub (tests/fakes/github.py), with the real PyGithub/gql
clients, SQLite store, runtime, shipped graph and hooks:

(a) REST requests per poll cycle for 500 open work items in 5 repositories with nothing
    new — target: at most 3 conditional requests per repository (comments, start labels,
    and since issue 11 the open pull requests' heads for the ``loopgate`` check), all 304,
    none counted against the rate limit — next to the per-item design it replaces (one
    thread read per item per cycle, ≥ 500 counted requests).
(b) GraphQL ``CommentEdits`` queries for 1, 100 and 150 quiz ticks seen in one poll cycle
    — target 1, 1, 2 (⌈K/100⌉). Spec files are read from a local ``workspace`` here, so the
    count isolates the tick lookups (with the contents API each gate evaluation would also
    ask for the item's delivering pull requests).
(c) Webhook tick → gate decision latency over N ticks: from just before the signed
    ``issue_comment.edited`` POST to the moment the dispatcher committed the decision;
    "ours" subtracts the time spent waiting on the (loopback) GitHub API calls.

Prints a Markdown table. Usage: ``.venv/bin/python bench/github_bench.py [--ticks 1000]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes.github

import requests  # noqa: E402

from bot.config import validate_mapping  # noqa: E402
from bot.services import Services  # noqa: E402
from bot.web.server import Server, build_wsgi_app  # noqa: E402
from bridges.github.poller import Poller  # noqa: E402
from bridges.ingress.dispatcher import Dispatcher  # noqa: E402
from engine.hooks.markers import attestation_line  # noqa: E402
from engine.ports import Comment  # noqa: E402
from engine.refs import WorkItemRef  # noqa: E402
from engine.state import ItemStatus  # noqa: E402
from tests.fakes.github import FakeGitHub  # noqa: E402

SECRET = "It's a Secret to Everybody"
SPEC_CHAIN = ("brainstorming", "requirements-definition", "requirements-approval", "design",
              "test-planning", "design-approval")
RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | https://example.invalid/artifact/{n} |
| Published as | own artifact |
| Questions | 3 |
"""


def _services(fake: FakeGitHub, tmp: Path, name: str, repos: list[str],
              workspace: Path | None = None) -> Services:
    data: dict[str, Any] = {
        "authorizedUsers": ["alice"],
        "github": {"repos": repos, "apiUrl": fake.api_url, "graphqlUrl": fake.graphql_url,
                   "pollIntervalSeconds": 0}}
    if workspace is not None:
        data["workspace"] = str(workspace)
    return Services.build(validate_mapping(data, "bench"), db_path=str(tmp / f"{name}.db"))


# -- (a) ---------------------------------------------------------------------------------
def bench_poll_cost(fake: FakeGitHub, tmp: Path, items: int, repos: int) -> dict[str, Any]:
    names = [f"acme/repo{r}" for r in range(repos)]
    services = _services(fake, tmp, "a", names)
    refs = []
    for name in names:
        fake.create_repo(name)
        for i in range(items // repos):
            number = fake.create_issue(name, f"item {i}", author="alice")
            fake.add_comment(name, number, "context", as_user="alice")
            fake.advance(2)  # items and their comments arrived over time, not in one second
            ref = WorkItemRef(*name.split("/"), number)
            with services.store.transaction(ref) as tx:  # an open, started work item
                state = tx.create(services.graph.name)
                state.current_node, state.status = "design", ItemStatus.PARKED
            refs.append(ref)
    dispatcher = Dispatcher(services)
    poller = Poller.from_services(services, dispatcher, initial_lookback=3600)
    poller.poll_once()
    poller.poll_once()  # settle: the overlap window is read once after a change
    fake.reset_log()
    report = poller.poll_once()
    cycle = {"requests": report.requests, "not_modified": fake.count(status=304),
             "counted": fake.count(counted=True), "deliveries": sum(r.deliveries
                                                                    for r in report.repos)}
    fake.reset_log()
    client = services.ports.tracker.client
    for ref in refs:  # the per-item design: re-read every thread every cycle
        client.list_comments(ref.owner, ref.repo, ref.number)
    naive = {"requests": len(fake.requests), "counted": fake.count(counted=True)}
    dispatcher.close()
    services.close()
    return {"cycle": cycle, "naive": naive, "repos": repos, "items": len(refs)}


def bench_idle_after_change(fake: FakeGitHub, tmp: Path, repos: int = 5) -> list[int]:
    """Counted requests of the cycles right after priming, then after one new comment
    (issue 21 §5: 0 for every idle cycle; before, the first was charged 2 per repo)."""
    names = [f"acme/idle{r}" for r in range(repos)]
    services = _services(fake, tmp, "d", names)
    for name in names:
        fake.create_repo(name)
        number = fake.create_issue(name, "item", author="alice")
        fake.add_comment(name, number, "context", as_user="alice")
    dispatcher = Dispatcher(services)
    poller = Poller.from_services(services, dispatcher, initial_lookback=3600)
    counted = []
    for cycle in range(6):
        if cycle == 3:
            fake.advance(2)
            fake.add_comment(names[0], 1, "news", as_user="alice")
        fake.reset_log()
        poller.poll_once()
        counted.append(fake.count(counted=True))
    dispatcher.close()
    services.close()
    return counted


# -- (b) ---------------------------------------------------------------------------------
class _Walker:
    """Walks work items to a waiting spec-quiz through the runtime (local workspace)."""

    def __init__(self, fake: FakeGitHub, services: Services, workspace: Path, repo: str):
        self.fake, self.services, self.workspace, self.repo = fake, services, workspace, repo

    def to_spec_quiz(self) -> tuple[WorkItemRef, int]:
        number = self.fake.create_issue(self.repo, "bench", author="alice")
        ref = WorkItemRef(*self.repo.split("/"), number)
        runtime = self.services.runtime
        runtime.start(ref)
        rows = "\n".join(f"- [ ] {t}" for t in SPEC_CHAIN)
        reply = self.fake.add_comment(self.repo, number, f"the-loop execute\n{rows}",
                                      as_user="alice")
        runtime.advance(ref, {"comments": [Comment(reply.id, "alice", reply.body,
                                                   reply.created_at, reply.updated_at,
                                                   reply.node_id, "", number)]})
        spec = self.workspace / "docs/specs" / f"issue-{number}"
        (spec / "evidence").mkdir(parents=True, exist_ok=True)
        for name in ("requirements.md", "design.md", "testing-plan.md"):
            (spec / name).write_text(f"{name} of {number}\n")
        (spec / "evidence/spec-explainer.md").write_text(RECORD.format(n=number))
        state = runtime.complete(ref, "spec-explainer", "agent")
        assert state.current_node == "spec-quiz", state.parked
        [quiz] = [c for c in self.fake.comments_on(self.repo, number)
                  if "the-loop:quiz spec-quiz" in c.body]
        return ref, quiz.id

    def tick(self, comment_id: int, editor: str = "alice", round_: int = 0) -> str:
        body = self.fake.comments[comment_id].body.split("\n<!-- round", 1)[0]
        body = body.replace(attestation_line("spec", True), attestation_line("spec"))
        ticked = body.replace(attestation_line("spec"), attestation_line("spec", True))
        # A later round of the same comment needs a new body: a tick is keyed by its hash.
        self.fake.edit_comment(comment_id, f"{ticked}\n<!-- round {round_} -->", editor)
        return self.fake.comments[comment_id].body


def bench_tick_queries(fake: FakeGitHub, tmp: Path, batches: list[int]) -> list[dict[str, Any]]:
    repo = "acme/quiz"
    fake.create_repo(repo)
    workspace = tmp / "workspace-b"
    services = _services(fake, tmp, "b", [repo], workspace)
    walker = _Walker(fake, services, workspace, repo)
    dispatcher = Dispatcher(services)
    poller = Poller.from_services(services, dispatcher, initial_lookback=3600)
    rows = []
    for k in batches:
        walked = [walker.to_spec_quiz() for _ in range(k)]
        poller.poll_once()
        poller.poll_once()
        for _, comment_id in walked:
            walker.tick(comment_id)
        fake.reset_log()
        poller.poll_once()
        queries = [q for q in fake.graphql_log if "CommentEdits" in q["query"]]
        advanced = sum(1 for ref, _ in walked
                       if services.store.load(ref).current_node == "tasks-breakdown")
        rows.append({"ticks": k, "queries": len(queries), "graphql_total": len(fake.graphql_log),
                     "advanced": advanced})
    dispatcher.close()
    services.close()
    return rows


# -- (c) ---------------------------------------------------------------------------------
class _GitHubTime:
    """Accumulates wall time spent inside GitHub calls (REST and GraphQL), per thread."""

    def __init__(self) -> None:
        self.local = threading.local()

    def wrap(self, obj: Any, name: str) -> None:
        original = getattr(obj, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.local.spent = getattr(self.local, "spent", 0.0) + time.perf_counter() - start

        setattr(obj, name, timed)

    def take(self) -> float:
        spent = getattr(self.local, "spent", 0.0)
        self.local.spent = 0.0
        return spent


def bench_latency(fake: FakeGitHub, tmp: Path, ticks: int, items: int = 20) -> dict[str, Any]:
    repo = "acme/latency"
    fake.create_repo(repo)
    workspace = tmp / "workspace-c"
    services = _services(fake, tmp, "c", [repo], workspace)
    walker = _Walker(fake, services, workspace, repo)
    walked = [walker.to_spec_quiz() for _ in range(items)]
    github_time = _GitHubTime()
    tracker = services.ports.tracker
    github_time.wrap(tracker.graphql, "execute")
    github_time.wrap(tracker.client, "_call")
    dispatcher = Dispatcher(services)
    finished: dict[str, tuple[float, float]] = {}
    handle = dispatcher.handle

    def timed_handle(delivery: Any) -> Any:
        github_time.take()
        result = handle(delivery)
        finished[delivery.delivery_id] = (time.perf_counter(), github_time.take())
        return result

    dispatcher.handle = timed_handle  # type: ignore[method-assign]
    dispatcher.start()
    app = build_wsgi_app(services, dispatcher, webhook_secret=SECRET, slack_routes=False)
    server = Server(app, "127.0.0.1", 0, threads=4).start()
    session = requests.Session()
    total, ours = [], []
    for n in range(ticks):
        ref, comment_id = walked[n % items]
        services.runtime.force(ref, "spec-quiz", "bench: tick again", "bench")
        walker.tick(comment_id, round_=n)
        headers, body = fake.webhook("issue_comment", "edited", repo=repo, number=ref.number,
                                     comment_id=comment_id, secret=SECRET,
                                     delivery_id=f"bench-{n}")
        start = time.perf_counter()
        response = session.post(f"{server.url}/github/webhook", data=body, headers=headers,
                                timeout=10)
        assert response.status_code == 202, response.text
        dispatcher.wait_idle(10)
        end, spent_on_github = finished[f"bench-{n}"]
        assert services.store.load(ref).current_node == "tasks-breakdown"
        total.append((end - start) * 1000)
        ours.append((end - start - spent_on_github) * 1000)
    server.stop()
    dispatcher.stop()
    dispatcher.close()
    services.close()
    return {"ticks": ticks, "total": _percentiles(total), "ours": _percentiles(ours)}


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=1000)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--repos", type=int, default=5)
    args = parser.parse_args()
    with FakeGitHub() as fake, tempfile.TemporaryDirectory() as tmpdir:
        os.environ["GITHUB_TOKEN"] = fake.token
        os.environ["LOOPGATE_GITHUB_WRITE_INTERVAL"] = "0"
        tmp = Path(tmpdir)
        a = bench_poll_cost(fake, tmp, args.items, args.repos)
        b = bench_tick_queries(fake, tmp, [1, 100, 150])
        c = bench_latency(fake, tmp, args.ticks)
        d = bench_idle_after_change(fake, tmp)
    cycle, naive = a["cycle"], a["naive"]
    print("| benchmark | measured | target |")
    print("|---|---|---|")
    print(f"| (a) poll cycle, {a['items']} open items in {a['repos']} repos, nothing new | "
          f"{cycle['requests']} requests ({cycle['requests'] / a['repos']:.0f} per repo), "
          f"{cycle['not_modified']} × 304, {cycle['counted']} counted, "
          f"{cycle['deliveries']} deliveries | ≤ 3 per repo, all 304, 0 counted |")
    print(f"| (a) per-item design, same items | {naive['requests']} requests, "
          f"{naive['counted']} counted | (for comparison: ≥ 500) |")
    for row in b:
        target = -(-row["ticks"] // 100)
        print(f"| (b) {row['ticks']} tick(s) in one cycle | {row['queries']} CommentEdits "
              f"quer{'y' if row['queries'] == 1 else 'ies'} ({row['graphql_total']} GraphQL in "
              f"all), {row['advanced']}/{row['ticks']} gates passed | {target} |")
    print(f"| (c) webhook tick → gate decision, {c['ticks']} ticks | "
          f"ours p50 {c['ours']['p50']:.1f} ms, p99 {c['ours']['p99']:.1f} ms "
          f"(with loopback GitHub calls: p50 {c['total']['p50']:.1f} ms, "
          f"p99 {c['total']['p99']:.1f} ms) | — |")
    print(f"| (d) counted requests per cycle, 5 repos: priming, 2 idle, a new comment, 2 idle | "
          f"{', '.join(map(str, d))} | idle cycles 0 (issue 21 §5) |")


if __name__ == "__main__":
    main()
