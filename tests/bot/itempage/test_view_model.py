"""Issue 22 §2, the details page's model and HTML (``bot.itempage.view`` over
``engine.itempage``), on items walked through the real runtime over the in-memory tracker
(the shipped graph, a merge gate asking two approvals, as tests/engine/test_check_summary.py):
node states with provenance, the current gate's "1 of 2", every visit's decision with its
evidence, invalidated approvals, the timeline, links, the optional agent block, the layout,
escaping, the pending-only view, and the CSP's style hash.

The browser side (Chromium) is test_view_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from types import SimpleNamespace
from typing import Any

from bot.itempage.view import (
    CONTENT_SECURITY_POLICY,
    STYLE,
    page_model,
    render_page,
    render_status_page,
)
from engine.approvals import ApprovalRule
from engine.graph.compiler import shipped_graph
from engine.itempage import PENDING_STATES, STATES, item_model, layout
from engine.local.memory_tracker import MemoryTracker
from engine.records import Attestation
from engine.refs import WorkItemRef
from engine.report import build_report
from engine.runtime import Runtime
from engine.settings import EngineSettings
from tests.engine.test_merge_coverage import REF, USERS, _runtime

A, B = "a" * 40, "b" * 40
BASE = "https://loopgate.example.com"
GITHUB = "https://github.com"


def at_merge_gate(tracker: MemoryTracker, public_url: str = BASE) -> Runtime:
    """An item started, ``brainstorming`` declared away, forced to the merge gate (two
    approvals), with pull request #8 at head A by dave."""
    tracker.add_pull_request(REF, 8, author="dave", head_sha=A)
    runtime = _runtime(tracker, gate_rules={"human-approval": ApprovalRule(approvals=2)},
                       public_url=public_url)
    runtime.start(REF)
    runtime.declare_skips(REF, ["brainstorming"], "not needed", "alice")
    runtime.force(REF, "human-approval", "test", "tester")
    return runtime


def approve(runtime: Runtime, tracker: MemoryTracker, who: str) -> str:
    """``who`` replies "approved" on the thread; returns the comment's URL."""
    comment = tracker.add_comment_as(REF, who, "approved")
    runtime.advance(REF, {"comments": [comment]})
    return comment.url


def model_of(runtime: Runtime, **extra: Any) -> dict[str, Any]:
    """The page model of REF as the route builds it (``page_model`` over services)."""
    services = SimpleNamespace(graph=runtime.graph, store=runtime.store,
                               settings=runtime.settings, config=None, **extra)
    model = page_model(services, REF)
    assert model is not None
    return model


def walked_model(stage: str = "waiting") -> dict[str, Any]:
    """A model for the browser tests: ``waiting`` (1 of 2 at the merge gate after a push
    invalidated two approvals) or ``passed``."""
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    approve(runtime, tracker, "alice")
    approve(runtime, tracker, "bob")
    if stage == "waiting":
        tracker.push(8, B)
        runtime.publish_gate(REF, pulls=(8,))
        approve(runtime, tracker, "alice")
    state = runtime.store.load(REF)
    return item_model(runtime.graph, state, runtime.settings,
                      effects=runtime.store.effects.rows(REF), web_base=GITHUB)


def _node(model: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in model["graph"]["nodes"] if n["id"] == node_id)


# -- the model ------------------------------------------------------------------------------
def test_waiting_at_the_merge_gate_names_each_nodes_state_and_whom_it_waits_on() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    first = approve(runtime, tracker, "alice")
    model = model_of(runtime)
    assert model["version"] == 1
    assert model["item"] == {"ref": "acme/widgets#7", "owner": "acme", "repo": "widgets",
                             "number": 7, "url": ""}  # no github section: no issue page
    assert model["status"]["where"] == "parked at human-approval"
    assert model["status"]["check"] == "pending"
    states = {n["id"]: n["state"] for n in model["graph"]["nodes"]}
    assert states["phase-selection"] == "forced-past"
    assert states["brainstorming"] == "skipped"
    assert states["design-critic-review"] == "not-selected"
    assert states["code-quiz"] == "waiting"
    assert states["human-approval"] == "current"
    assert "escalated" not in states  # the side exit, not reached
    assert set(states.values()) <= set(STATES)
    assert _node(model, "brainstorming")["provenance"] == (
        "skipped by declaration — via declaration, token 'brainstorming', by alice, "
        "reason: not needed")
    assert _node(model, "human-approval")["pending"] is True
    assert _node(model, "brainstorming")["pending"] is False
    gate = model["gate"]
    assert (gate["node"], gate["kind"], gate["visit"]) == ("human-approval", "approval", 1)
    assert (gate["have"], gate["need"], gate["tally"]) == (1, 2, "1 of 2 approvals: @alice")
    assert gate["approvedBy"] == ["alice"] and gate["mayStillApprove"] == ["bob", "carol"]
    assert model["links"]["page"] == f"{BASE}/items/acme/widgets/7"
    assert model["links"]["pulls"] == []  # none recorded until a vouching gate covers one
    assert model["counts"]["pending"] == sum(
        1 for n in model["graph"]["nodes"] if n["state"] in PENDING_STATES)
    # the open visit's decision is not made yet: no decision, the approval is in the tally
    assert model["decisions"] == []
    assert json.loads(json.dumps(model)) == model  # JSON-ready: nothing but JSON types
    assert first.startswith("https://github.com/acme/widgets/issues/7#issuecomment-")


def test_a_passed_gate_lists_its_decision_every_approval_and_the_step_taken() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    first = approve(runtime, tracker, "alice")
    second = approve(runtime, tracker, "bob")
    model = model_of(runtime)
    assert model["status"]["where"] == "complete" and model["gate"] is None
    [decision] = model["decisions"]
    assert decision["node"] == "human-approval" and decision["visit"] == 1
    assert (decision["outcome"], decision["by"], decision["via"]) == ("approved", "@bob",
                                                                      "reply")
    assert decision["evidence"] == second and decision["current"] is True
    assert [(a["by"], a["evidence"]) for a in decision["approvals"]] == [
        ("alice", first), ("bob", second)]
    assert _node(model, "human-approval")["state"] == "done"
    taken = [(e["from"], e["to"]) for e in model["graph"]["edges"] if e["taken"]]
    assert taken == [("human-approval", "complete")]
    kinds = [(t["kind"], t["node"]) for t in model["timeline"] if t["kind"] != "effect"]
    assert kinds.index(("entered", "human-approval")) < kinds.index(
        ("decision", "human-approval")) < kinds.index(("left", "human-approval")) < \
        kinds.index(("entered", "complete"))
    links = [t["link"] for t in model["timeline"] if t["kind"] == "approval"]
    assert links == [first, second]
    posted = [t for t in model["timeline"] if t["kind"] == "effect"
              and "post-comment (phase-selection)" in t["text"]]
    assert posted and posted[0]["status"] == "done"
    assert posted[0]["link"].startswith("https://github.com/acme/widgets/issues/7#issuecomment")


def test_a_push_shows_the_approvals_it_invalidated_and_every_visits_decision() -> None:
    model = walked_model("waiting")
    assert model["invalidated"] == [{
        "node": "human-approval", "visit": 1, "outcome": "approved", "by": ["alice", "bob"],
        "at": model["invalidated"][0]["at"], "pull": 8, "covered": A, "pushed": B}]
    assert model["gate"]["visit"] == 2 and model["gate"]["tally"] == "1 of 2 approvals: @alice"
    assert _node(model, "human-approval")["visits"] == 2
    [earlier] = model["decisions"]
    assert (earlier["visit"], earlier["current"], earlier["by"]) == (1, False, "@bob")
    assert model["item"]["url"] == "https://github.com/acme/widgets/issues/7"
    assert model["links"]["pulls"] == [{"number": 8,
                                        "url": "https://github.com/acme/widgets/pull/8"}]
    ats = [t["at"] for t in model["timeline"] if t["at"]]
    assert ats == sorted(ats)


def test_a_quiz_gate_names_its_comment_and_the_verified_editor() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    runtime.force(REF, "code-quiz", "test", "tester")
    state = runtime.store.load(REF)
    url = "https://github.com/acme/widgets/issues/7#issuecomment-42"
    state.surface["quiz"] = {"code-quiz": {"comments": [{"id": 42, "url": url}],
                                           "location": "https://pages.example/x.html"}}
    model = item_model(runtime.graph, state, runtime.settings)
    assert model["gate"]["kind"] == "quiz" and model["gate"]["quizComments"] == [url]
    assert model["gate"]["mayAttest"] == "@alice, @bob, @carol"
    assert model["links"]["explainers"] == [{"node": "code-quiz",
                                             "location": "https://pages.example/x.html",
                                             "url": "https://pages.example/x.html"}]
    state.record_decision("code-quiz", Attestation(
        "2026-03-01T12:31:00Z", "@carol", "2026-03-01T12:30:59Z", url, 42, "tick").to_json())
    [decision] = item_model(runtime.graph, state, runtime.settings)["decisions"]
    assert (decision["by"], decision["attestation"], decision["verifiedEditor"]) == (
        "@carol", True, True)
    assert decision["evidence"] == url and decision["at"] == "2026-03-01T12:30:59Z"


def test_an_unknown_item_has_no_model_and_an_agent_block_is_carried_over() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    services = SimpleNamespace(graph=runtime.graph, store=runtime.store,
                               settings=runtime.settings, config=None)
    assert page_model(services, WorkItemRef("acme", "widgets", 99)) is None
    state = runtime.store.load(REF)
    report = build_report(runtime.graph, state)
    assert "agent" not in item_model(runtime.graph, state, runtime.settings, report=report)
    report["agent"] = {"dispatcher": "alice", "authored": True, "signals": ["a [bot] pull"]}
    model = item_model(runtime.graph, state, runtime.settings, report=report)
    assert model["agent"] == {"dispatcher": "alice", "authored": True,
                              "signals": ["a [bot] pull"]}
    page = render_page(model)
    assert "Agent-authored; dispatched by @alice" in page and "a [bot] pull" in page


# -- the layout -----------------------------------------------------------------------------
def test_the_layout_is_layered_deterministic_and_keeps_back_edges_apart() -> None:
    graph = shipped_graph()
    ids = [n.id for n in graph.ordered() if n.id != "escalated"]
    edges = [(e.source, e.target, e.outcome) for e in graph.edges]
    drawn = layout(ids, edges)
    assert drawn == layout(ids, edges)
    ys = [drawn["place"][n][1] for n in ids]
    assert ys == sorted(ys) and len(set(ys)) == len(ids)  # a chain: one node per layer
    back = [e for e in drawn["edges"] if e["back"]]
    assert {(e["from"], e["to"]) for e in back} == {
        ("requirements-approval", "requirements-definition"), ("design-approval", "design"),
        ("spec-quiz", "spec-explainer"), ("code-quiz", "code-explainer"),
        ("human-approval", "implementation")}
    # human-approval → implementation spans code-quiz → code-explainer: different lanes
    lanes = {(e["from"], e["to"]): e["lane"] for e in back}
    assert lanes[("human-approval", "implementation")] != lanes[("code-quiz", "code-explainer")]
    pass_and_skip = next(e for e in drawn["edges"] if e["from"] == "brainstorming")
    assert pass_and_skip["outcomes"] == ["pass", "skipped"]  # parallel edges drawn once
    assert drawn["width"] <= 340  # one column: fits a phone's width at about 1:1
    branch = layout(["a", "b", "c", "d"], [("a", "b", "x"), ("a", "c", "y"), ("b", "d", "p"),
                                           ("c", "d", "p")])
    assert branch["place"]["b"][1] == branch["place"]["c"][1] != branch["place"]["d"][1]
    assert branch["place"]["b"][0] < branch["place"]["c"][0]
    assert all(e["side"] == "" for e in branch["edges"])  # nothing in between: straight
    # a skip edge a → c would run through b's box: it goes round on the left
    chain = layout(["a", "b", "c"], [("a", "b", "pass"), ("b", "c", "pass"),
                                     ("a", "c", "skipped")])
    around = next(e for e in chain["edges"] if (e["from"], e["to"]) == ("a", "c"))
    assert (around["side"], around["lane"], around["back"]) == ("left", 0, False)
    assert chain["place"]["a"][0] > 14 and around["points"].startswith(
        f"M{chain['place']['a'][0]:g},")


# -- the HTML -------------------------------------------------------------------------------
def test_the_page_shows_the_gate_the_path_decisions_invalidations_and_timeline() -> None:
    model = walked_model("waiting")
    page = render_page(model, viewer="alice")
    assert page.startswith("<!DOCTYPE html>")
    assert '<a href="https://github.com/acme/widgets/issues/7">acme/widgets#7</a>' in page
    assert "Approvals: <strong>1 of 2</strong> — approved by @alice" in page
    assert "May still approve: @bob, @carol" in page
    assert 'data-node="human-approval" data-state="current"' in page
    assert "▶ current" in page and "↷ skipped" in page and "⚠ forced past" in page
    assert ("superseded by push <code>bbbbbbb</code> "
            '(<a href="https://github.com/acme/widgets/pull/8">#8</a>)') in page
    assert '<h2 id="timeline">Timeline</h2>' in page and "signed in as @alice" in page
    assert re.findall(r"<h(\d)", page)[:3] == ["1", "2", "2"]  # headings in order
    assert '<a class="skip" href="#main">' in page and '<main id="main"' in page
    assert '<a href="7" aria-current="true">Everything</a>' in page
    assert "<script" not in page


def test_the_pending_only_view_hides_everything_done() -> None:
    model = walked_model("waiting")
    page = render_page(model, pending_only=True)
    assert 'id="pending-switch" href="7?pending=1" aria-current="true"' in page
    assert 'data-state="done"' not in page and 'data-state="skipped"' not in page
    assert 'class="n n-forced-past"' not in page  # not in the picture either
    assert 'data-node="human-approval" data-state="current"' in page
    assert 'data-node="code-quiz" data-state="waiting"' in page
    assert 'id="timeline"' not in page and 'id="decisions"' not in page
    assert "Invalidated by a push" in page  # why it is pending again
    full = render_page(model)
    assert full.count('class="node"') == model["counts"]["nodes"]
    assert page.count('class="node"') == model["counts"]["pending"]


def test_what_people_typed_is_escaped() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha=A)
    runtime = _runtime(tracker)
    runtime.start(REF)
    runtime.force(REF, "human-approval", '<script>alert(1)</script> "x" & y', "<b>tester</b>")
    page = render_page(model_of(runtime))
    assert "<script>alert" not in page and "<b>tester" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &#34;x&#34; &amp; y" in page


def test_the_csp_allows_only_the_pages_own_stylesheet() -> None:
    digest = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode()
    assert CONTENT_SECURITY_POLICY.startswith("default-src 'none'; ")
    assert f"style-src 'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none': no script
    page = render_page(walked_model("passed"))
    assert f"<style>{STYLE}</style>" in page  # the exact text the hash covers
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert not re.search(r'(src|href)="(https?:)?//(?!github\.com/)', page)


def test_a_status_page_says_nothing_of_any_item() -> None:
    page = render_status_page(404, "Not found", "There is no such work item, or you cannot "
                              "see it.")
    assert "<title>404 Not found — loopgate</title>" in page
    assert "<h1>Not found</h1>" in page and f"<style>{STYLE}</style>" in page
    assert "items/" not in page and "acme" not in page
    forbidden = render_status_page(403, "<No access>", "Sign in with <GitHub>.")
    assert "&lt;No access&gt;" in forbidden and "Sign in with &lt;GitHub&gt;." in forbidden
    signin = render_status_page(403, "Sign in", "Only people who can read the repository.",
                                action=("Sign in with GitHub", "/auth/login?next=/items/a/b/1"))
    assert '<a href="/auth/login?next=/items/a/b/1">Sign in with GitHub</a>' in signin
    for bad in ("javascript:alert(1)", "//evil.example/x"):
        assert "href" not in render_status_page(403, "t", "m", action=("Go", bad)).split(
            "<main")[1]


def test_settings_without_a_public_url_give_no_page_link() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker, public_url="")
    assert model_of(runtime)["links"]["page"] == ""
    assert EngineSettings(authorized_users=USERS).public_url == ""


def test_a_gate_that_sent_the_item_back_is_waiting_again_not_done() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    asked = tracker.add_comment_as(REF, "bob", "changes requested: rename the flag")
    state = runtime.advance(REF, {"comments": [asked]})
    assert state.current_node == "implementation"
    model = model_of(runtime)
    gate = _node(model, "human-approval")
    assert (gate["state"], gate["outcome"], gate["pending"]) == ("waiting",
                                                                 "changes-requested", True)
    taken = {(e["from"], e["to"]) for e in model["graph"]["edges"] if e["taken"]}
    assert ("human-approval", "implementation") in taken  # the back edge it took
    back = next(e for e in model["graph"]["edges"]
                if (e["from"], e["to"]) == ("human-approval", "implementation"))
    assert back["back"] is True and back["lane"] >= 0
    [decision] = model["decisions"]
    assert (decision["outcome"], decision["by"], decision["evidence"]) == (
        "changes-requested", "@bob", asked.url)
    assert 'data-node="human-approval" data-state="waiting"' in render_page(model,
                                                                         pending_only=True)


def test_check_the_summary_and_the_page_agree_a_gate_that_sent_the_item_back_waits() -> None:
    # The report never calls a gate that requested changes "passed" while the item sits
    # behind it: check (text and JSON), the check run's summary and the page say the same.
    from engine.checksummary import path_picture
    from engine.report import render_table

    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    asked = tracker.add_comment_as(REF, "bob", "changes requested: rename the flag")
    state = runtime.advance(REF, {"comments": [asked]})
    report = build_report(runtime.graph, state)
    [line] = [n for n in report["nodes"] if n["id"] == "human-approval"]
    assert (line["status"], line["outcome"]) == ("changes requested", "changes-requested")
    assert line["detail"] == ("outcome changes-requested; decided by @bob; the item went back: "
                              "this gate waits to be walked again")
    assert {"node": "human-approval", "status": "changes requested"} in report["unmet"]
    [row] = [r for r in render_table(report).splitlines()
             if r.strip().startswith("human-approval")]
    assert "changes requested" in row and "passed" not in row
    picture = path_picture(report)
    assert "⚪ `human-approval`" in picture[0]
    assert any(r.startswith("| `human-approval` | changes requested | ") for r in picture)
    gate = _node(model_of(runtime), "human-approval")
    assert (gate["state"], gate["status"]) == ("waiting", "changes requested")


def test_only_web_addresses_are_linked() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    runtime.force(REF, "code-quiz", "test", "tester")
    state = runtime.store.load(REF)
    state.surface["quiz"] = {"code-quiz": {
        "comments": [{"id": 1, "url": "javascript:alert(1)"}],
        "location": "docs/specs/issue-7/explainer.html"}}
    state.record_decision("code-quiz", Attestation(
        "2026-03-01T12:31:00Z", "@carol", "2026-03-01T12:30:59Z", "javascript:alert(2)", 1,
        "tick").to_json())
    model = item_model(runtime.graph, state, runtime.settings)
    assert model["gate"]["quizComments"] == [] and model["links"]["quizComments"] == []
    assert model["decisions"][0]["evidence"] == ""
    assert model["links"]["explainers"] == [{"node": "code-quiz", "url": "",
                                             "location": "docs/specs/issue-7/explainer.html"}]
    page = render_page(model)
    assert "javascript:" not in page
    assert "docs/specs/issue-7/explainer.html" in page  # shown, not linked


def test_a_status_page_for_a_success_names_no_status_code() -> None:
    page = render_status_page(200, "Signed out", "You are signed out.")
    assert "<title>Signed out — loopgate</title>" in page and "HTTP 200" not in page


def test_every_model_matches_its_published_json_schema() -> None:
    # templates/itempage/model.schema.json is the documented shape of the page's JSON.
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("templates").joinpath(
        "itempage/model.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    models = [model_of(runtime), walked_model("waiting"), walked_model("passed")]
    approve(runtime, tracker, "alice")
    state = runtime.store.load(REF)
    report = build_report(runtime.graph, state)
    report["agent"] = {"dispatcher": None, "authored": False, "signals": []}
    models.append(item_model(runtime.graph, state, runtime.settings, report=report))
    for model in models:
        errors = [e.message for e in validator.iter_errors(json.loads(json.dumps(model)))]
        assert errors == []
    broken = dict(models[0], version=2)
    assert not validator.is_valid(broken)


def test_an_escalated_item_draws_the_side_exit_in_a_row_of_its_own() -> None:
    tracker = MemoryTracker()
    runtime = at_merge_gate(tracker)
    runtime.force(REF, "escalated", "a conflict needs a person", "tester")
    model = model_of(runtime)
    assert model["status"]["where"] == "escalated" and model["gate"] is None
    nodes = model["graph"]["nodes"]
    assert nodes[-1]["id"] == "escalated" and nodes[-1]["state"] == "escalated"
    assert nodes[-1]["pending"] is True
    assert nodes[-1]["y"] > max(n["y"] for n in nodes[:-1])
    assert len({n["x"] for n in nodes}) == 1  # still one column
    assert "✕ escalated" in render_page(model)
