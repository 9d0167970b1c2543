"""Issue 23 acceptance: the README's offline first work item, walked to ``complete`` through
the ``loopgate`` console script by doing what the assignments and their procedures say —
every assignment's ``Command:`` has a procedure ``loopgate procedure`` prints, and the
example each procedure gives passes its node's gate on the first claim."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from engine.evidence import render_record
from tests.conftest import REPO_ROOT
from tests.e2e.stack import loopgate_argv

ITEM = "acme/widgets#7"
SPEC = Path("docs/specs/issue-7")
EXAMPLES = REPO_ROOT / "templates" / "explainer" / "examples"
#: The README's execute reply: brainstorming off, the opt-in design critic review on.
EXECUTE = "the-loop execute\n- [ ] brainstorming\n- [x] design-critic-review\n"
#: The typed attestation lines loopgate's quiz comments give offline.
SPEC_QUIZ = "- [x] I have read the spec explainer and taken the spec quiz.\n"
CODE_QUIZ = "- [x] I have read the explainer and taken the code quiz.\n"
LOG = SPEC / "execution-log.md"


def script(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    env["XDG_STATE_HOME"] = str(home / "state")
    return subprocess.run([*loopgate_argv(), *args], cwd=home, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def procedure_example(command: str) -> str:
    """The first Markdown example of a procedure, as printed by ``loopgate procedure``."""
    text = script(REPO_ROOT, "procedure", command).stdout
    match = re.search(r"```markdown\n(.*?)```", text, re.S)
    assert match is not None, f"{command}.md has no Markdown example"
    return match.group(1)


class Agent:
    """Does, at each agent node, what that node's procedure says (files in the checkout)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.commands: list[str] = []

    def write(self, name: Path, text: str) -> None:
        path = self.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")

    def log(self, command: str, heading: str | None = None) -> None:
        section = procedure_example(command)
        if heading:  # critic-review.md: "At design-critic-review the heading is ..."
            section = section.replace("## Critic review", f"## {heading}", 1)
        old = (self.home / LOG).read_text("utf-8") if (self.home / LOG).exists() else ""
        self.write(LOG, old + "\n" + section)

    def explain(self, variant: str) -> None:
        content = yaml.safe_load((EXAMPLES / f"{variant}.yaml").read_text("utf-8"))
        content["workItem"] = ITEM
        source = SPEC / "explainer" / f"{variant}.yaml"
        self.write(source, yaml.safe_dump(content, sort_keys=False, allow_unicode=True))
        page = SPEC / "explainer" / "explainer.html"
        done = script(self.home, "explainer", "render", str(source), "--out", str(page))
        assert done.returncode == 0, done.stdout + done.stderr
        record, section = (("spec-explainer.md", "Spec explainer") if variant == "spec"
                           else ("explainer.md", "Explainer"))
        self.write(SPEC / "evidence" / record,
                   render_record(section, content["depth"], str(page), "committed HTML",
                                 len(content["quiz"]["questions"])))

    def briefing(self) -> None:
        text = script(self.home, "briefing", ITEM).stdout
        example = procedure_example("pr-briefing")
        for title in ("What changed", "Where to look closely", "Risks and how they were checked"):
            body = example.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
            text = re.sub(rf"(## {re.escape(title)}\n\n)<!--.*?-->", lambda m, b=body: m[1]
                          + b.strip(), text, flags=re.S)
        self.write(SPEC / "pr-briefing.md", text)

    def work(self, node: str, command: str) -> None:
        self.commands.append(command)
        assert (REPO_ROOT / "templates" / "commands" / f"{command}.md").is_file(), command
        if command in ("requirements", "design", "testing-plan", "tasks"):
            names = {"requirements": "requirements.md", "design": "design.md",
                     "testing-plan": "testing-plan.md", "tasks": "tasks.md"}
            self.write(SPEC / names[command], procedure_example(command))
        elif command == "implement":  # tick every task, then the log's section
            tasks = self.home / SPEC / "tasks.md"
            tasks.write_text(tasks.read_text("utf-8").replace("- [ ]", "- [x]"), "utf-8")
            self.log(command)
        elif command == "critic-review":
            self.log(command, "Design critic review" if node == "design-critic-review" else None)
        elif command == "explain":
            self.explain("spec" if node == "spec-explainer" else "code")
        elif command == "pr-briefing":
            self.briefing()
        else:
            self.log(command)


def _command(home: Path, node: str) -> str:
    thread = script(home, "comments", ITEM).stdout
    assignment = thread.rsplit(f"**Assignment — `{node}`**", 1)[1].split("\n#", 1)[0]
    match = re.search(r"- Command: `([a-z-]+)` — the procedure to follow at this node", assignment)
    assert match is not None, assignment
    return match.group(1)


def _reply(home: Path, text: str) -> str:
    (home / "reply.md").write_text(text)
    done = script(home, "advance", ITEM, "--comment", f"alice={home / 'reply.md'}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


HUMAN = {"requirements-approval": "approved\n", "design-approval": "approved\n",
         "spec-quiz": SPEC_QUIZ, "code-quiz": CODE_QUIZ,
         "human-approval": "approved\n"}


def test_the_readme_first_work_item_walks_to_complete_by_following_the_procedures(
        tmp_path: Path) -> None:
    home = tmp_path
    (home / "loopgate.yaml").write_text("authorizedUsers: [alice]\nworkspace: .\n")
    assert script(home, "start", ITEM).returncode == 0
    out = _reply(home, EXECUTE)
    agent = Agent(home)
    for _ in range(30):  # 21 nodes to walk; a loop that does not end is a failure
        node = re.match(rf"{re.escape(ITEM)}: at ([a-z-]+)", out)
        if node is None:
            break
        if node.group(1) in HUMAN:
            out = _reply(home, HUMAN[node.group(1)])
            assert not out.startswith(f"{ITEM}: at {node.group(1)} "), out
            continue
        command = _command(home, node.group(1))
        agent.work(node.group(1), command)
        claim = script(home, "complete", ITEM, "--node", node.group(1))
        assert claim.returncode == 0, f"{command}: {claim.stdout}{claim.stderr}"
        out = claim.stdout
    assert out == f"{ITEM}: complete\n"
    assert agent.commands == ["requirements", "design", "critic-review", "testing-plan",
                              "explain", "tasks", "implement", "verify", "self-review",
                              "critic-review", "security-review", "explain", "evidence",
                              "capability-docs", "pr-briefing"]
    # Issue 23 §2: every gate a person passed is announced on the thread, once, naming who,
    # and the item's completion is said; the phase selection confirms itself.
    thread = script(home, "comments", ITEM).stdout
    for gate in HUMAN:
        said = re.findall(rf"✅ `{re.escape(gate)}` passed — [^\n]*@alice", thread)
        assert len(said) == 1, (gate, said)
    assert "The work item is complete." in thread
