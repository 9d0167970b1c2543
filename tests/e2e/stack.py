"""The end-to-end stack: loopback fakes, ``loopgate serve`` as a subprocess, the CLI as a
subprocess, and the steps a person (or an agent) takes to walk one work item.

Everything here is driven from outside the product, the way a user drives it:

* GitHub is :class:`tests.fakes.github.FakeGitHub` (REST + GraphQL on 127.0.0.1); webhook
  deliveries are built by the fake from the real payloads of ../shared/fixtures/github
  (``repository``/``issue``/``comment``/``sender`` replaced by the fake's objects),
  re-serialised and signed with the webhook secret (``X-Hub-Signature-256``).
* Slack is :class:`tests.fakes.slack.FakeSlack` (``slack.apiUrl``); the Execute click is a
  ``block_actions`` payload built from the fixture
  ``slack/interactivity/block_actions.button.json`` and the card's *real* blocks, signed
  (v0) and posted to ``/slack/events`` on the serve port.
* ``loopgate serve`` runs in a subprocess (:class:`ServeProcess`) with a loopgate.yaml in
  a temporary directory; tokens and secrets exist only in the subprocess environment.
* Agents claim nodes with ``loopgate complete ITEM --node N`` after the test wrote their
  artifacts into the workspace (:class:`Artifacts`); the explainer page is rendered by
  ``loopgate explainer render`` and its record by :func:`engine.evidence.render_record`.

:class:`Walk` holds the reusable steps (start, Execute in Slack, claim, approve, tick a
quiz, wait for a comment by marker) and the scenario's journey in small pieces, so the
webhook, poller, stale and restart scenarios share one walk.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from engine.evidence import render_record
from engine.hooks.markers import CONFIRMATION_MARKER, PHASE_SELECTION_MARKER
from tests.fakes.github import FakeComment, FakeGitHub
from tests.fakes.github_app import generate_private_key
from tests.fakes.slack import FakeSlack, SlackCall, interaction_body, signed_post
from tests.forkserver import run_loopgate

__all__ = [
    "REPO", "AUTHOR", "REVIEWER", "SLACK_USER", "CHANNEL", "START_LABEL", "PR_BRANCH",
    "SPEC_AGENTS", "CODE_AGENTS", "EXPECTED_MARKERS", "ServeProcess", "Home", "Artifacts",
    "Walk", "wait_until", "free_port", "loopgate_argv",
]

REPO = "acme/widgets"
#: The issue author: authorized, linked in Slack, executes the selection and takes quizzes.
AUTHOR = "alice"
#: An authorized reviewer who answers the approval gates on GitHub.
REVIEWER = "bob"
SLACK_USER = "UALICE"
CHANNEL = "C0LOOPGATE"
START_LABEL = "loop:start"
PR_BRANCH = "issue-{n}-widget"

GITHUB_SECRET = "e2e webhook secret"  # test values, never real secrets
#: App mode: the variable ``github.app.privateKeyEnv`` names (it holds the .pem file's path).
APP_KEY_ENV = "LOOPGATE_GITHUB_APP_KEY"
SLACK_SECRET = "e2e-slack-signing-secret"
SLACK_TOKEN = "xoxb-e2e-bot-token"

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LOOPGATE_SHARED", REPO_ROOT.parent / "shared")).resolve()
BLOCK_ACTIONS_FIXTURE = SHARED / "fixtures/slack/interactivity/block_actions.button.json"
EXAMPLES = REPO_ROOT / "templates" / "explainer" / "examples"

#: Agent nodes between the Execute click and design-approval (brainstorming is unticked,
#: design-critic-review ticked), and those between the spec quiz and the code quiz.
SPEC_AGENTS = ("requirements-definition", "design", "design-critic-review", "test-planning")
CODE_AGENTS = ("tasks-breakdown", "implementation", "verification", "self-review",
               "critic-review", "security-review", "code-explainer", "evidence",
               "capability-docs", "reviewer-briefing")
#: Every loopgate comment of the walk to human-approval, by marker, each exactly once.
EXPECTED_MARKERS = Counter({
    "phase-selection": 1, "selection-confirmation": 1,
    **{f"assignment {n}": 1 for n in ("phase-selection", *SPEC_AGENTS[:1],
                                      "requirements-approval", *SPEC_AGENTS[1:],
                                      "design-approval", "spec-explainer", *CODE_AGENTS,
                                      "human-approval")},
    "review-request requirements-approval": 1, "review-request design-approval": 1,
    "review-request human-approval": 1,
    "quiz spec-quiz": 1, "quiz code-quiz": 1,
    # Issue 23 §2: each gate passed says so once (the selection confirms itself).
    **{f"gate-passed {n}": 1 for n in ("requirements-approval", "design-approval",
                                       "spec-quiz", "code-quiz")},
})


# -- small utilities -------------------------------------------------------------------
def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 20.0,
               interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy (a liveness bound, never a
    timed assertion); raise naming ``what`` when ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def loopgate_argv() -> list[str]:
    """How a user starts loopgate: the ``loopgate`` console script of this environment
    (beside the interpreter), else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("loopgate")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-c", "import sys; from bot.cli import main; sys.exit(main())"]


def loopgate_markers(body: str) -> list[str]:
    """The loopgate markers of one comment body, short form (``assignment design``,
    ``quiz spec-quiz``, ``phase-selection`` ...)."""
    out = []
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith("<!-- the-loop:") or line.startswith(
                ("<!-- the-loop:agent-comment", "<!-- the-loop:entry ",
                 "<!-- the-loop:effect ")):
            continue  # the self marker, an entry's revision and an effect's key ride along
        words = line[len("<!-- the-loop:"):].rstrip("->").split()
        out.append(" ".join(w for w in words[:2] if "=" not in w))
    return out


# -- the home directory: config, workspace, database, environment ------------------------
@dataclass
class Home:
    """One installation: ``loopgate.yaml``, a checkout, a database and an environment.

    Attributes:
        root: the temporary directory.
        gh: the fake GitHub.
        slack: the fake Slack.
        poll_interval: ``github.pollIntervalSeconds``.
        port: ``server.port``.
    """

    root: Path
    gh: FakeGitHub
    slack: FakeSlack
    poll_interval: int = 0
    port: int = field(default_factory=free_port)
    #: A PostgreSQL URL (no password) instead of the SQLite file; the password goes into
    #: the environment as PGPASSWORD (issue 15).
    database_url: str = ""
    database_password: str = ""

    @property
    def config(self) -> Path:
        return self.root / "loopgate.yaml"

    @property
    def db(self) -> Path:
        return self.root / "state" / "loopgate.db"

    @property
    def workspace(self) -> Path:
        return self.root / "checkout"

    @property
    def app_key(self) -> Path:
        """App mode: the App's private key file (``github.app.privateKeyEnv`` names it)."""
        return self.root / "loopgate-app.pem"

    def write(self) -> Home:
        """Write loopgate.yaml (the workspace is relative to it, as a user writes it)."""
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.db.parent.mkdir(parents=True, exist_ok=True)
        github: dict[str, Any] = {
            "repos": [REPO], "apiUrl": self.gh.api_url, "graphqlUrl": self.gh.graphql_url,
            "pollIntervalSeconds": self.poll_interval, "startLabel": START_LABEL}
        if self.gh.app is not None:  # App mode: no token at all, the App's key instead
            self.app_key.write_text(generate_private_key(), "utf-8")  # the FakeApp's key
            github["app"] = {"appId": self.gh.app.app_id, "privateKeyEnv": APP_KEY_ENV}
        config = {
            "authorizedUsers": [AUTHOR, REVIEWER],
            "workspace": "checkout",
            "github": github,
            "server": {"host": "127.0.0.1", "port": self.port},
            "slack": {"channel": CHANNEL, "apiUrl": self.slack.base_url,
                      "identities": {SLACK_USER: AUTHOR}},
        }
        self.config.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
        return self

    def env(self) -> dict[str, str]:
        """The subprocess environment: this one minus loopgate's own variables, plus the
        tokens and secrets the config names (set nowhere else)."""
        drop = ("LOOPGATE_CONFIG", "LOOPGATE_DB", "SLACK_APP_TOKEN", "GITHUB_TOKEN",
                "GITHUB_WEBHOOK_SECRET", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
                APP_KEY_ENV)
        env = {k: v for k, v in os.environ.items() if k not in drop}
        if self.gh.app is None:
            env["GITHUB_TOKEN"] = self.gh.token
        else:
            env[APP_KEY_ENV] = str(self.app_key)
        env.update(GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
                   SLACK_BOT_TOKEN=SLACK_TOKEN, SLACK_SIGNING_SECRET=SLACK_SECRET,
                   LOOPGATE_SLACK_PACE_SECONDS="0", LOOPGATE_GITHUB_WRITE_INTERVAL="0",
                   PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
        if self.database_password:
            env["PGPASSWORD"] = self.database_password
        return env

    def argv(self, *args: str) -> list[str]:
        db = self.database_url or str(self.db)
        return [*loopgate_argv(), "--db", db, "--config", str(self.config), *args]

    def cli(self, *args: str, ok: bool = True,
            spawn: bool = False) -> subprocess.CompletedProcess[str]:
        """Run ``loopgate ARGS`` with this home's config and database, in a new process:
        forked from the test process's fork server (:mod:`tests.forkserver`: every module
        imported already), or, with ``spawn``, the console script started from scratch.

        Args:
            args: the subcommand and its arguments.
            ok: assert exit code 0 (the output is in the message otherwise).
            spawn: start the ``loopgate`` console script itself (a fresh interpreter).
        """
        if spawn:
            done = subprocess.run(self.argv(*args), cwd=self.root, env=self.env(), text=True,
                                  capture_output=True, timeout=60, check=False)
        else:
            done = run_loopgate(self.argv(*args)[len(loopgate_argv()):], cwd=self.root,
                                env=self.env(), timeout=60)
        if ok:
            assert done.returncode == 0, (f"loopgate {' '.join(args)} exited "
                                          f"{done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done


# -- the server subprocess ---------------------------------------------------------------
class ServeProcess:
    """``loopgate serve`` in a subprocess; its stdout and stderr lines are collected."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.proc: subprocess.Popen[str] | None = None
        self.out: list[str] = []
        self.err: list[str] = []
        self.earlier: list[str] = []  # stderr of the runs before a restart
        self.url = ""
        self._cond = threading.Condition()

    def start(self, timeout: float = 30.0) -> ServeProcess:
        """Start it (again, after :meth:`kill`) and wait for ``loopgate: listening on``."""
        self.earlier += self.err
        self.out, self.err = [], []
        self.proc = subprocess.Popen(self.home.argv("serve"), cwd=self.home.root,
                                     env=self.home.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()
        proc = self.proc
        line = wait_until(lambda: self._listening() or proc.poll() is not None,
                          "the listening line", timeout)
        if not isinstance(line, str) and "address already in use" in self.log().lower():
            # another test took the free port first: pick a new one (first start only)
            assert not self.earlier, "the port was taken while the server restarted"
            self.home.port = free_port()
            self.home.write()
            return self.start(timeout)
        assert isinstance(line, str), f"serve exited {proc.poll()}:\n{self.log()}"
        self.url = line.rsplit(" ", 1)[1]
        assert self.url == f"http://127.0.0.1:{self.home.port}", line
        return self

    def _listening(self) -> str:
        with self._cond:
            return next((x for x in self.out if x.startswith("loopgate: listening on ")), "")

    def _read(self, stream: Any, into: list[str]) -> None:
        for line in stream:
            with self._cond:
                into.append(line.rstrip("\n"))
                self._cond.notify_all()

    def log(self) -> str:
        """Everything it wrote to stderr so far (every run)."""
        with self._cond:
            return "\n".join(self.earlier + self.err)

    def wait_log(self, needle: str, timeout: float = 20.0) -> str:
        """Wait for a stderr line containing ``needle`` and return it."""
        def found() -> str:
            with self._cond:
                return next((x for x in self.err if needle in x), "")
        return wait_until(found, f"a server log line with {needle!r}", timeout)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit code (a leftover process is killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise


# -- artifacts an agent writes -------------------------------------------------------------
def _locked(title: str, sections: dict[str, str]) -> str:
    body = "".join(f"\n## {name}\n\n{text}\n" for name, text in sections.items())
    return f"---\nstatus: approved\n---\n# {title}\n{body}"


class Artifacts:
    """Writes what each agent node produces into ``<workspace>/docs/specs/issue-<n>/``.

    Args:
        home: the installation (workspace and CLI).
        ref: ``owner/repo#N``.
        number: the issue number.
    """

    def __init__(self, home: Home, ref: str, number: int) -> None:
        self.home = home
        self.ref = ref
        self.rel = f"docs/specs/issue-{number}"
        self.dir = home.workspace / self.rel
        self.page = f"{self.rel}/explainer/explainer.html"
        self.design_revision = 1
        self.renders: list[str] = []  # what `loopgate explainer render` printed

    def write(self, name: str, text: str) -> None:
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")

    def read(self, name: str) -> str:
        return (self.dir / name).read_text("utf-8")

    def log_section(self, title: str, text: str) -> None:
        """Append ``## <title>`` to execution-log.md (each review node owns a section)."""
        path = self.dir / "execution-log.md"
        old = path.read_text("utf-8") if path.exists() else "# Execution log\n"
        self.write("execution-log.md", f"{old}\n## {title}\n\n{text}\n")

    def design(self) -> str:
        return _locked("Design", {
            "Architecture": f"A widget service behind the API (revision {self.design_revision}).",
            "Security design": "Only authorized users create widgets.",
            "Testing strategy": "Unit tests per rule; one end-to-end walk.",
        })

    def change_spec(self) -> None:
        """Edit the design after the quiz was posted (its digest changes)."""
        self.design_revision += 1
        self.write("design.md", self.design())

    def explainer(self, variant: str) -> None:
        """Render the example content for this item with ``loopgate explainer render``
        (the code content is re-rendered into the same page) and write its record."""
        content = yaml.safe_load((EXAMPLES / f"{variant}.yaml").read_text("utf-8"))
        content["workItem"] = self.ref
        source = self.home.root / f"{variant}-content.yaml"
        source.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True), "utf-8")
        done = self.home.cli("explainer", "render", str(source), "--out",
                             str(self.home.workspace / self.page))
        assert done.stdout.startswith(f"wrote {self.home.workspace / self.page}"), done.stdout
        self.renders.append(done.stdout)
        record, section = (("evidence/spec-explainer.md", "Spec explainer") if variant == "spec"
                           else ("evidence/explainer.md", "Explainer"))
        questions = len(content["quiz"]["questions"])
        self.write(record, render_record(section, content["depth"], self.page,
                                         "committed HTML", questions))

    def for_node(self, node: str) -> None:
        """Write what ``node``'s exit gate checks."""
        writers: dict[str, Callable[[], None]] = {
            "requirements-definition": lambda: self.write("requirements.md", _locked(
                "Requirements", {"Requirements": "- R1: a user can create a widget."})),
            "design": lambda: self.write("design.md", self.design()),
            "design-critic-review": lambda: self.log_section(
                "Design critic review", "A second model read design.md: no blocking finding."),
            "test-planning": lambda: self.write("testing-plan.md", _locked(
                "Testing plan", {"Test matrix": "| rule | test |\n|---|---|\n| R1 | t1 |"})),
            "spec-explainer": lambda: self.explainer("spec"),
            "tasks-breakdown": lambda: self.write("tasks.md", _locked(
                "Tasks", {"Task list": "- [ ] T1 widget model\n- [ ] T2 widget API"})),
            "implementation": self._implement,
            "code-explainer": lambda: self.explainer("code"),
            "reviewer-briefing": self._briefing,
        }
        sections = {"verification": "Verification", "self-review": "Self review",
                    "critic-review": "Critic review", "security-review": "Security review",
                    "evidence": "Evidence", "capability-docs": "Capability docs"}
        if node in sections:
            self.log_section(sections[node], f"{sections[node]} done for {self.ref}.")
        else:
            writers[node]()

    def _briefing(self) -> None:
        # The template's sections hold HTML comments the gate reads as empty: fill them in.
        text = self.home.cli("briefing", self.ref).stdout
        self.write("pr-briefing.md", re.sub(r"<!--.*?-->", f"Filled in for {self.ref}.", text))

    def _implement(self) -> None:
        self.write("tasks.md", self.read("tasks.md").replace("- [ ]", "- [x]"))
        self.log_section("Implementation", "T1 and T2 implemented.")


# -- the walk -------------------------------------------------------------------------------
@dataclass
class Walk:
    """One work item walked through ``loopgate serve``.

    Attributes:
        home: the installation.
        server: the running ``loopgate serve``.
        webhooks: True: every GitHub action is also delivered as a signed webhook; False:
            only the poller sees them.
        number: the issue number (after :meth:`open_issue`).
        pr: the delivering pull request's number (after :meth:`open_pull_request`).
    """

    home: Home
    server: ServeProcess
    webhooks: bool = True
    number: int = 0
    pr: int = 0
    artifacts: Artifacts | None = None
    deliveries: list[str] = field(default_factory=list)
    #: True once a claim ran the console script from scratch (:meth:`claim`).
    spawned: bool = False

    @property
    def gh(self) -> FakeGitHub:
        return self.home.gh

    @property
    def slack(self) -> FakeSlack:
        return self.home.slack

    @property
    def ref(self) -> str:
        return f"{REPO}#{self.number}"

    @property
    def files(self) -> Artifacts:
        assert self.artifacts is not None, "open_issue() first"
        return self.artifacts

    # -- GitHub side ---------------------------------------------------------------------
    def open_issue(self, title: str = "Add a widget") -> int:
        self.number = self.gh.create_issue(REPO, title, "We need widgets.", author=AUTHOR)
        self.artifacts = Artifacts(self.home, self.ref, self.number)
        return self.number

    def webhook(self, event: str, action: str, *, number: int | None = None,
                wait: bool = True, **kwargs: Any) -> requests.Response:
        """Deliver a signed webhook about the fake's current data (no-op without webhooks).

        Args:
            event: ``issues``, ``issue_comment``.
            action: ``labeled``, ``created``, ``edited``.
            number: the issue or PR (default: the work item).
            wait: wait until the server's dispatcher logged the delivery as handled.
            kwargs: passed to :meth:`FakeGitHub.webhook` (``comment_id``, ``label``,
                ``sender``, ``previous_body``).
        """
        headers, body = self.gh.webhook(event, action, repo=REPO,
                                        number=number or self.number, secret=GITHUB_SECRET,
                                        **kwargs)
        response = requests.post(f"{self.server.url}/github/webhook", data=body,
                                 headers=headers, timeout=10)
        assert response.status_code == 202, (response.status_code, response.text)
        delivery = headers["X-GitHub-Delivery"]
        self.deliveries.append(delivery)
        if wait:
            self.server.wait_log(f"delivery={delivery} ")
        return response

    def comments(self, needle: str = "", number: int | None = None) -> list[FakeComment]:
        return [c for c in self.gh.comments_on(REPO, number or self.number) if needle in c.body]

    def wait_comment(self, needle: str, count: int = 1, number: int | None = None,
                     timeout: float = 20.0) -> list[FakeComment]:
        """Wait until ``count`` comments containing ``needle`` are on the thread."""
        return wait_until(lambda: (found := self.comments(needle, number)) and
                          len(found) >= count and found,
                          f"{count} comment(s) with {needle!r} on #{number or self.number}",
                          timeout)

    def start(self) -> FakeComment:
        """The author labels the issue with the start label; returns the checklist."""
        self.gh.add_label(REPO, self.number, START_LABEL)
        if self.webhooks:
            self.webhook("issues", "labeled", label=START_LABEL, sender=AUTHOR)
        return self.wait_comment(PHASE_SELECTION_MARKER)[0]

    def approve(self, gate: str, next_marker: str) -> FakeComment:
        """The reviewer answers ``gate`` with ``approved``; waits for ``next_marker``."""
        comment = self.gh.add_comment(REPO, self.number, "approved", as_user=REVIEWER)
        if self.webhooks:
            self.webhook("issue_comment", "created", comment_id=comment.id, sender=REVIEWER)
        self.wait_comment(next_marker)
        return comment

    def tick(self, comment: FakeComment, *, number: int | None = None,
             wait: bool = True) -> requests.Response | None:
        """The author ticks the quiz box (the fake records the edit with the author as
        editor, so GraphQL names them) and GitHub sends ``issue_comment.edited``."""
        before = comment.body
        self.gh.tick_quiz(comment.id, AUTHOR)
        assert self.gh.comments[comment.id].body != before, "nothing to tick"
        if not self.webhooks:
            return None
        return self.webhook("issue_comment", "edited", number=number or self.number,
                            comment_id=comment.id, sender=AUTHOR, previous_body=before,
                            wait=wait)

    def approve_to_complete(self) -> dict[str, Any]:
        """The reviewer approves human-approval on the issue; waits until the item is
        complete (its ``loop:complete`` label) and returns ``check --format json``."""
        comment = self.gh.add_comment(REPO, self.number, "approved", as_user=REVIEWER)
        if self.webhooks:
            self.webhook("issue_comment", "created", comment_id=comment.id, sender=REVIEWER)
        wait_until(lambda: "loop:complete" in self.gh.labels_of(REPO, self.number),
                   f"{self.ref} complete")
        return self.check()

    def open_pull_request(self) -> int:
        self.pr = self.gh.open_pr(REPO, PR_BRANCH.format(n=self.number), closes=[self.number],
                                  title=f"Widgets (closes #{self.number})", author=AUTHOR)
        return self.pr

    # -- agents --------------------------------------------------------------------------
    def claim(self, node: str) -> str:
        """Write ``node``'s artifacts, then ``loopgate complete ITEM --node N``. The walk's
        first claim starts the console script from scratch, as an agent's shell does; the
        others are forked (:meth:`Home.cli`)."""
        self.files.for_node(node)
        spawn, self.spawned = not self.spawned, True
        return self.home.cli("complete", self.ref, "--node", node, spawn=spawn).stdout

    def check(self) -> dict[str, Any]:
        """``loopgate check ITEM --format json``."""
        return json.loads(self.home.cli("check", self.ref, "--format", "json").stdout)

    # -- Slack side ----------------------------------------------------------------------
    def card(self) -> SlackCall:
        """The phase-selection card posted in the channel."""
        def posted() -> SlackCall | None:
            return next((c for c in self.slack.calls_to("chat.postMessage")
                         if c.args.get("channel") == CHANNEL and _has_execute(c)), None)
        return wait_until(posted, "the phase-selection card in Slack")

    def execute(self, untick: Sequence[str] = (), tick: Sequence[str] = (), *,
                secret: str = SLACK_SECRET, status: int = 200) -> Any:
        """Press Execute on the card after changing boxes: a signed ``block_actions``
        request whose ``state.values`` are built from the card's blocks as posted.

        Args:
            untick: option values the person unticked.
            tick: option values the person ticked.
            secret: the signing secret (another one forges the request).
            status: the HTTP status the server must answer.
        """
        card = self.card()
        blocks = _blocks(card)
        ts = str(card.response["ts"])
        payload = json.loads(BLOCK_ACTIONS_FIXTURE.read_text("utf-8"))
        button = next(e for b in blocks for e in b.get("elements") or ()
                      if e.get("type") == "button")
        button_block = next(b for b in blocks if button in (b.get("elements") or ()))
        payload.update({
            "user": {**payload["user"], "id": SLACK_USER, "username": AUTHOR, "name": AUTHOR},
            "container": {**payload["container"], "message_ts": ts, "channel_id": CHANNEL,
                          "is_ephemeral": False},
            "channel": {"id": CHANNEL, "name": "loopgate"},
            "message": {"type": "message", "ts": ts, "text": card.args.get("text", ""),
                        "blocks": blocks},
            "state": {"values": _state_values(blocks, untick, tick)},
            "response_url": self.slack.response_url,
            "actions": [{**payload["actions"][0], "action_id": button["action_id"],
                         "block_id": button_block["block_id"], "text": button["text"],
                         "value": button["value"], "style": button.get("style", "")}],
        })
        reply = signed_post(f"{self.server.url}/slack/events", interaction_body(payload),
                            secret)
        assert reply.status == status, (reply.status, reply.body)
        return reply

    def dm_posts(self) -> list[SlackCall]:
        return [c for c in self.slack.calls_to("chat.postMessage")
                if str(c.args.get("channel", "")).startswith("D")]

    def updates(self, needle: str) -> list[SlackCall]:
        return [c for c in self.slack.calls_to("chat.update") if needle in c.args.get("text", "")]

    # -- journeys (shared by every scenario) ---------------------------------------------
    def to_phase_selection(self) -> FakeComment:
        self.open_issue()
        return self.start()

    def select_in_slack(self) -> None:
        """Untick brainstorming, tick design-critic-review, Execute (a forged click first:
        refused with 401); wait until the item left phase-selection (its confirmation
        comment and the next assignment)."""
        forged = self.execute(untick=["brainstorming"], tick=["design-critic-review"],
                              secret="not the signing secret", status=401)
        assert forged.json() == {"error": "invalid signature"}
        self.execute(untick=["brainstorming"], tick=["design-critic-review"])
        self.wait_comment(CONFIRMATION_MARKER)
        self.wait_comment("the-loop:assignment requirements-definition ")

    def to_requirements_approval(self) -> None:
        self.claim("requirements-definition")

    def to_design_approval(self) -> None:
        self.approve("requirements-approval", "the-loop:assignment design ")
        for node in SPEC_AGENTS[1:]:
            self.claim(node)

    def to_spec_quiz(self) -> FakeComment:
        self.approve("design-approval", "the-loop:assignment spec-explainer ")
        self.claim("spec-explainer")
        return self.comments("the-loop:quiz spec-quiz ")[-1]

    def to_code_quiz(self) -> FakeComment:
        """From tasks-breakdown to code-quiz; the PR is opened before the briefing."""
        for node in CODE_AGENTS:
            if node == "reviewer-briefing":
                self.open_pull_request()
            self.claim(node)
        return self.wait_comment("the-loop:quiz code-quiz ", number=self.pr)[0]

    def posted_markers(self) -> Counter[str]:
        """How many times each loopgate marker was posted, over the issue and the PR."""
        found: Counter[str] = Counter()
        for number in (self.number, self.pr):
            if number:
                for comment in self.gh.comments_on(REPO, number):
                    found.update(loopgate_markers(comment.body))
        return found

    def slack_posts(self) -> Counter[tuple[str, str]]:
        """chat.postMessage calls by (channel, text)."""
        return Counter((str(c.args.get("channel")), str(c.args.get("text")))
                       for c in self.slack.calls_to("chat.postMessage"))


def _blocks(call: SlackCall) -> list[dict[str, Any]]:
    blocks = call.args.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


def _has_execute(call: SlackCall) -> bool:
    return any(e.get("action_id") == "loopgate.execute"
               for b in _blocks(call) for e in b.get("elements") or ())


def _state_values(blocks: Iterable[dict[str, Any]], untick: Sequence[str],
                  tick: Sequence[str]) -> dict[str, Any]:
    """The message state after the person changed boxes: every checkboxes element with
    its selected options (initial options, minus ``untick``, plus ``tick``)."""
    values: dict[str, Any] = {}
    for block in blocks:
        for element in block.get("elements") or ():
            if element.get("type") != "checkboxes":
                continue
            chosen = [o for o in element.get("options") or ()
                      if (o in (element.get("initial_options") or ()) or o["value"] in tick)
                      and o["value"] not in untick]
            values[block["block_id"]] = {element["action_id"]: {
                "type": "checkboxes", "selected_options": chosen}}
    return values
