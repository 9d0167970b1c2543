"""Hooks every node family uses, and helpers the other hook modules share.

Hooks: ``set-phase-label``, ``log-entry``, ``deliver-assignment``, ``request-review``,
``notify`` (issue #2 §3). None of them gates: a failed tracker *read* is logged as
``graph.hook_degraded`` and the hook passes (a label or a notice is not a gate). Writes are
effects (issue 10 §1): emitted here, committed with the state, carried out and retried by
a performer, so a failed write is never lost.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.approvals import ApprovalRule, People, Verdict, authorize, self_approval
from engine.codeowners import Ownership, ownership
from engine.codeowners import parse as parse_codeowners
from engine.dispatch import dispatcher as agent_dispatcher
from engine.dispatch import read_authorship
from engine.effects import AddLabel, Notify, PostComment, RemoveLabel, quiz_record
from engine.evidence import assignment_lines, record_kind
from engine.graph.model import Graph, HookRef, Node
from engine.hooks.markers import (
    assignment_marker,
    assignment_prefix,
    entry_marker,
    review_marker,
    review_prefix,
    with_self_marker,
)
from engine.hooks.registry import HookContext, HookResult, hook
from engine.ports import SELF_MARKER, Comment, TrackerError, codeowners_reader
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.state import ItemState

__all__ = [
    "PHASE_LABEL_PREFIX",
    "START_LABEL",
    "degrade",
    "safe_notify",
    "at_login",
    "is_self_authored",
    "posted_by_loopgate",
    "event_comments",
    "authorized_comments",
    "latest",
    "trusted_skipped_ids",
    "rule_for",
    "people_for",
    "agent_people",
    "agent_refusal",
    "code_owners_for",
    "covers_pull_request",
    "gate_rule",
    "gate_people",
    "team_lookup",
    "authorize_person",
    "node_entered",
    "has_marker",
    "assignment_text",
    "command_line",
    "requested_changes",
    "review_text",
    "notify_data",
    "set_phase_label",
    "log_entry",
    "deliver_assignment",
    "request_review",
    "notify",
]

log = logging.getLogger(__name__)

PHASE_LABEL_PREFIX = "loop:"
#: The default start label (``github.startLabel``); never removed by ``set-phase-label``.
START_LABEL = "loop:start"


# -- shared helpers ---------------------------------------------------------------------
def degrade(ctx: HookContext, hook_name: str, reason: str) -> None:
    """Log ``graph.hook_degraded {node, hook, reason}``: best-effort work did not happen."""
    log.warning("hook %s degraded on %s at %s: %s", hook_name, ctx.ref, ctx.node.id, reason)
    ctx.log("graph.hook_degraded", {"node": ctx.node.id, "hook": hook_name, "reason": reason})


def safe_notify(ctx: HookContext, hook_name: str, event: str, data: Mapping[str, Any],
                *, links: str = "") -> bool:
    """Emit a :class:`~engine.effects.Notify` effect for ``event`` (sent after commit, in
    order with the item's other effects); never raises.

    Args:
        ctx: the hook's context.
        hook_name: the emitting hook (kept for the signature's callers' logs).
        event: the event name.
        data: JSON-shaped event data.
        links: the :attr:`~engine.effects.PostComment.record` whose comment URLs are
            filled in when the notice is sent.

    Returns:
        True (the notice is queued with the commit).
    """
    ctx.emit(Notify(ctx.ref, event, dict(data), links))
    return True


def at_login(login: str) -> str:
    """``@login`` for a login given with or without the ``@``."""
    return "@" + (login or "").strip().lstrip("@")


def is_self_authored(comment: Comment, settings: EngineSettings) -> bool:
    """True for a comment that is never read as a person's command: it carries
    :data:`SELF_MARKER`, or loopgate wrote it (:meth:`EngineSettings.is_loopgate`)."""
    if SELF_MARKER in (comment.body or ""):
        return True
    return settings.is_loopgate(comment.actor)


def posted_by_loopgate(comment: Comment, settings: EngineSettings) -> bool:
    """True for a comment a gate may trust as loopgate's own: it carries
    :data:`SELF_MARKER` and, when loopgate's identity is known, loopgate is its author
    (kind and id where GitHub gives them: a ``User`` named like the App is not the App's
    ``Bot``; issue 9 §1, explainer design abuse case 6)."""
    if SELF_MARKER not in (comment.body or ""):
        return False
    return not settings.bot.known or settings.is_loopgate(comment.actor)


def event_comments(ctx: HookContext) -> list[Comment]:
    """The triggering event's comments (``ctx.event["comments"]``), ignoring non-comments."""
    return [c for c in (ctx.event.get("comments") or ()) if isinstance(c, Comment)]


def authorized_comments(ctx: HookContext) -> list[Comment]:
    """Event comments that are not self-authored and whose author is authorized."""
    return [
        c
        for c in event_comments(ctx)
        if not is_self_authored(c, ctx.settings) and ctx.settings.is_authorized(c.author)
    ]


def latest(comments: Sequence[Comment]) -> Comment | None:
    """The latest comment: by ``created_at`` (ISO strings), ties keep the given order."""
    if not comments:
        return None
    indexed = sorted(enumerate(comments), key=lambda pair: (pair[1].created_at or "", pair[0]))
    return indexed[-1][1]


# -- authorization (issue 11 §2) ----------------------------------------------------------
def rule_for(graph: Graph, settings: EngineSettings, node_id: str) -> ApprovalRule:
    """The approval rule of ``node_id``: loopgate.yaml's ``gates.<node>``, else the graph
    node's ``approval``, else one approval from ``authorizedUsers`` (issue 11 §2). The
    chat surface (App Home) calls it too.

    Raises:
        ConfigError: the graph's rule does not read (the compiler refuses that first).
    """
    configured = settings.gate_rules.get(node_id)
    if isinstance(configured, ApprovalRule):
        return configured
    if graph.has_node(node_id) and graph.node(node_id).approval:
        return ApprovalRule.from_json(graph.node(node_id).approval, f"nodes[{node_id}].approval")
    return ApprovalRule()


def gate_rule(ctx: HookContext, node_id: str | None = None) -> ApprovalRule:
    """:func:`rule_for` the hook's node (or ``node_id``)."""
    return rule_for(ctx.graph, ctx.settings, node_id or ctx.node.id)


def people_for(tracker: Any, ref: WorkItemRef, node_id: str, rule: ApprovalRule,
               settings: EngineSettings, *, attesting: bool = False, state: Any = None,
               graph: Graph | None = None) -> People:
    """Whose work gate ``node_id`` judges, read through ``tracker`` only when the rule
    needs it (``preventSelfApproval``, or the ``assignee-or-author`` attester rule). At
    the merge gate (``mergeGate.after``) and at ``human-approval`` the delivering pull
    requests' authors count too, since the code is theirs (issue 11 §2). A rule with the
    ``codeowners`` approver entry also reads who owns the changed files
    (:func:`code_owners_for`, issue 24 §1). Given the item's ``state`` and ``graph``, a
    ``preventSelfApproval`` rule also names the agent's dispatcher, and an
    ``agentAuthored`` rule whether the work is agent-authored, from the walk and the
    delivering pull requests' authors and commits, and who asked an agent bot for its pull
    request (``agents.requesters``; issue 24 §2, :func:`engine.dispatch.read_authorship`).

    Raises:
        TrackerError: the item, its pull requests, their commits, CODEOWNERS or the
            changed files could not be read (callers fail closed: the decision does not
            count yet).
    """
    owners = code_owners_for(tracker, ref, node_id, settings) if rule.codeowners else None
    found = People() if attesting else agent_people(tracker, ref, rule, settings,
                                                    state=state, graph=graph)
    dispatched, agent = found.dispatcher, found.agent_authored
    asked, signals = found.requesters, found.agent_signals
    needs_item = rule.prevent_self_approval or (attesting and rule.attester != "any")
    if not needs_item:
        return People(code_owners=owners, dispatcher=dispatched, agent_authored=agent,
                      requesters=asked, agent_signals=signals)
    info = tracker.issue_info(ref)
    pulls: tuple[tuple[str, str], ...] = ()
    merge_gate = node_id in {settings.merge_gate_after, "human-approval"}
    if rule.prevent_self_approval and not attesting and merge_gate:
        pulls = tuple((pr.author, f"{ref.owner}/{ref.repo}#{pr.number}")
                      for pr in tracker.delivering_pull_requests(ref) if pr.author)
    return People(info.author, tuple(getattr(info, "assignees", ()) or ()), pulls, owners,
                  dispatched, agent, asked, signals)


def agent_people(tracker: Any, ref: WorkItemRef, rule: ApprovalRule, settings: EngineSettings,
                 *, state: Any, graph: Graph | None, read: bool = True) -> People:
    """The agent part of :func:`people_for` (issue 24 §2): for a rule with
    ``agentAuthored`` (the opt-in: without it an executor approving was allowed before),
    why the work is agent-authored and, under ``preventSelfApproval``, who dispatched the
    agent and who asked an agent bot for its pull request
    (:func:`engine.dispatch.read_authorship`).

    Args:
        tracker: the tracker port (read only when ``read``).
        ref: the work item.
        rule: the gate's rule.
        settings: the engine settings (``agents``).
        state: the item's state (None: nothing is known, an empty :class:`People`).
        graph: the compiled graph (None: the same).
        read: False reads nothing through the tracker: only the dispatcher, which the
            walk records (:func:`engine.dispatch.dispatcher`); a chat surface's check
            that must answer within Slack's 3 s uses it.

    Returns:
        A :class:`People` with ``dispatcher``, ``requesters``, ``agent_authored`` and
        ``agent_signals`` filled (the rest empty).

    Raises:
        TrackerError: the pull requests or their commits could not be read (the gate
            waits; a chat surface says the answer cannot be checked now).
    """
    if state is None or graph is None or not rule.agent_approvals:
        return People()
    if not read:
        return People(dispatcher=agent_dispatcher(graph, state) if rule.prevent_self_approval
                      else "")
    found = read_authorship(tracker, ref, graph, state, settings.agents)
    if not rule.prevent_self_approval:
        return People(agent_authored=found.reason, agent_signals=found.signals)
    return People(dispatcher=found.executor, agent_authored=found.reason,
                  requesters=found.requesters, agent_signals=found.signals)


def agent_refusal(tracker: Any, ref: WorkItemRef, node_id: str, login: str,
                  settings: EngineSettings, *, state: Any, graph: Graph,
                  read: bool = True) -> Verdict:
    """Whether gate ``node_id``'s rule refuses ``login`` as the agent's dispatcher or a
    requester (issue 24 §2, platform-facts F4): the engine's own check
    (:func:`agent_people`, :func:`engine.approvals.self_approval`) for a chat surface to
    tell a clicker at once, before the gate is asked.

    Args:
        tracker: the tracker port.
        ref: the work item.
        node_id: the gate.
        login: the clicker's GitHub login.
        settings: the engine settings.
        state: the item's state.
        graph: the compiled graph.
        read: see :func:`agent_people` (False: the dispatcher only, no tracker read).

    Returns:
        ``Verdict(False, reason)`` when refused, else ``Verdict(True)`` (the gate's whole
        rule still decides).

    Raises:
        TrackerError: the pull requests or their commits could not be read.
    """
    rule = rule_for(graph, settings, node_id)
    if not (rule.agent_approvals and rule.prevent_self_approval):
        return Verdict(True)
    people = agent_people(tracker, ref, rule, settings, state=state, graph=graph, read=read)
    return self_approval(login, rule, people)


def covers_pull_request(node_id: str, settings: EngineSettings) -> bool:
    """True for a gate that judges a pull request: ``code-quiz``, ``human-approval``, the
    merge node (``mergeGate.after``) and the configured vouching gates (issue 24 §1)."""
    return node_id in {"code-quiz", "human-approval", settings.merge_gate_after,
                       *settings.merge_gate_vouching}


def code_owners_for(tracker: Any, ref: WorkItemRef, node_id: str,
                    settings: EngineSettings) -> Ownership:
    """Who owns the open delivering pull requests' changed files, per the repository's
    CODEOWNERS on its default branch (issue 24 §1; platform-facts F5). A gate that covers
    no pull request, or an item with no open delivering pull request yet, has no code
    owners (``problem`` says so); so has a repository without a CODEOWNERS file.

    Raises:
        TrackerError: the file or a pull request's files could not be read, or the
            tracker cannot read them (fail closed: the gate waits and says why).
    """
    if not covers_pull_request(node_id, settings):
        return Ownership(problem=f"{node_id} covers no pull request")
    pulls = [p for p in tracker.delivering_pull_requests(ref) if p.state == "open"]
    if not pulls:
        return Ownership(problem="no open pull request delivers this work item yet")
    reader = codeowners_reader(tracker)
    if reader is None:
        raise TrackerError("this tracker cannot read CODEOWNERS or a pull request's files")
    try:
        found = reader.codeowners_file(ref.owner, ref.repo)
        changed = [path for p in pulls
                   for path in reader.changed_files(WorkItemRef(ref.owner, ref.repo, p.number))]
    except TrackerError as exc:
        raise TrackerError(f"CODEOWNERS or the changed files of {ref.owner}/{ref.repo} "
                           f"could not be read: {exc}") from exc
    parsed = parse_codeowners(found[1], found[0]) if found is not None else None
    return ownership(parsed, changed)


def gate_people(ctx: HookContext, rule: ApprovalRule, *, attesting: bool = False) -> People:
    """:func:`people_for` the hook's item and node."""
    return people_for(ctx.ports.tracker, ctx.ref, ctx.node.id, rule, ctx.settings,
                      attesting=attesting, state=ctx.state, graph=ctx.graph)


def team_lookup(ctx: HookContext) -> Callable[[str, str, str], bool]:
    """Team membership through the tracker port (``team_membership``); a failure is
    logged (``graph.team_lookup_failed``) and re-raised, so the person is refused."""
    def member(org: str, team: str, login: str) -> bool:
        try:
            return bool(ctx.ports.tracker.team_membership(org, team, login))
        except Exception as exc:
            log.warning("team lookup %s/%s for %s failed on %s: %s", org, team, login,
                        ctx.ref, exc)
            ctx.log("graph.team_lookup_failed", {"node": ctx.node.id, "team": f"{org}/{team}",
                                                 "login": login, "error": str(exc)[:200]})
            raise
    return member


def authorize_person(ctx: HookContext, login: str | None, *,
                     attesting: bool = False) -> Verdict:
    """Whether ``login`` may answer this gate under its rule (see
    :func:`engine.approvals.authorize`); a tracker failure while reading whose work it
    is refuses with that reason (fail closed)."""
    rule = gate_rule(ctx)
    try:
        people = gate_people(ctx, rule, attesting=attesting)
    except TrackerError as exc:
        return Verdict(False, f"could not read who authored the work ({exc})")
    return authorize(login, rule, authorized_users=ctx.settings.authorized_users,
                     people=people, membership=team_lookup(ctx), attesting=attesting)


def trusted_skipped_ids(graph: Graph, state: ItemState) -> set[str]:
    """Nodes that will not run or did not run: recorded ``skipped`` outcomes, trusted skip
    declarations and unselected opt-in nodes.

    Mirrors the runtime's one trusted read (issue #2 §4): a declaration counts only on a
    compiled skippable, non-required node; an ``optIns`` entry only on an opt-in node.
    """
    out = {node_id for node_id, rec in state.nodes.items() if rec.outcome == "skipped"}
    for node in graph.ordered():
        if node.id in state.skips and node.skippable and not node.required:
            out.add(node.id)
        elif node.opt_in and node.id not in state.opt_ins:
            out.add(node.id)
    return out


def node_entered(state: ItemState, node_id: str) -> bool:
    """True when ``node_id`` was entered or left already (a selection cannot change it)."""
    rec = state.nodes.get(node_id)
    return rec is not None and bool(rec.entered_at or rec.outcome or rec.exited_at)


def has_marker(comments: Sequence[Comment], marker: str, settings: EngineSettings) -> bool:
    """True when a comment loopgate posted (:func:`posted_by_loopgate`) carries ``marker``."""
    return any(marker in (c.body or "") and posted_by_loopgate(c, settings) for c in comments)


def _posted_for_entry(comments: Sequence[Comment], marker: str, prefix: str, entry: str,
                      settings: EngineSettings) -> bool:
    # This entry's comment: its exact marker, or (a retry of an entry whose transaction was
    # lost after posting) the same node's marker from the same committed revision.
    for comment in comments:
        body = comment.body or ""
        if posted_by_loopgate(comment, settings) and (
                marker in body or (prefix in body and entry in body)):
            return True
    return False


def _post_once(ctx: HookContext, hook_name: str, marker: str, prefix: str,
               body: str) -> HookResult:
    # Idempotent post per node entry, also across a retried transaction (see entry_marker).
    entry = entry_marker(ctx.node.id, ctx.state.revision)
    try:
        comments = ctx.ports.tracker.list_comments(ctx.ref)
    except TrackerError as exc:
        # The read failed: post anyway (a lost assignment is worse than a repeated one).
        degrade(ctx, hook_name, f"could not scan the thread: {exc}")
        comments = []
    if _posted_for_entry(comments, marker, prefix, entry, ctx.settings):
        return HookResult.passed(f"{hook_name}: already posted")
    ctx.emit(PostComment(ctx.ref, with_self_marker(body, marker, entry)))
    return HookResult.passed(f"{hook_name}: posting")


def _entered_at(ctx: HookContext) -> str:
    rec = ctx.state.nodes.get(ctx.node.id)
    return rec.entered_at if rec is not None else ""


def _visit_number(ctx: HookContext) -> int:
    visit = ctx.state.visit(ctx.node.id)
    return visit.number if visit is not None else 1


def _code(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _alternatives(entries: Sequence[Sequence[str]]) -> list[str]:
    return [" or ".join(f"`{a}`" for a in alts) for alts in entries]


# -- set-phase-label --------------------------------------------------------------------
@hook("set-phase-label")
def set_phase_label(ctx: HookContext) -> HookResult:
    """Label the item ``loop:<phase>`` and drop the other phase labels of this graph.

    Other labels, including the start label, are never touched. A node without a phase is
    a skip. Tracker failure: ``graph.hook_degraded`` and pass (issue #2 §3).
    """
    phase = ctx.node.phase
    if not phase:
        return HookResult.skip(f"{ctx.node.id} has no phase label")
    wanted = PHASE_LABEL_PREFIX + phase
    others = {PHASE_LABEL_PREFIX + n.phase for n in ctx.graph.ordered() if n.phase} - {
        wanted,
        START_LABEL,
    }
    try:
        current = set(ctx.ports.tracker.labels(ctx.ref))
    except TrackerError as exc:
        # Unknown labels: add ours; an old phase label may stay until the next node.
        degrade(ctx, "set-phase-label", f"could not read the labels: {exc}")
        current = set()
    for label in sorted(current & others):
        ctx.emit(RemoveLabel(ctx.ref, label))
    if wanted not in current:
        ctx.emit(AddLabel(ctx.ref, wanted))
    return HookResult.passed(f"labelling {wanted}")


# -- log-entry --------------------------------------------------------------------------
@hook("log-entry")
def log_entry(ctx: HookContext) -> HookResult:
    """Append ``graph.node_entered {node, actor}`` to the item's event log."""
    ctx.log("graph.node_entered", {"node": ctx.node.id, "actor": ctx.node.actor})
    return HookResult.passed()


# -- deliver-assignment -----------------------------------------------------------------
def _gate_checks(node: Node) -> list[str]:
    # What validate-artifacts in the exit chain will check, in words.
    lines = []
    for ref in node.exit:
        if ref.name == "validate-artifacts":
            lines.extend(_validate_params_text(ref))
    return lines


def _validated_paths(node: Node) -> tuple[str, ...]:
    # Every path the node's gate checks: its own `validates` and its validate-artifacts',
    # each as its `a|b` string (the node's own were tuples of alternatives, mixed in as such).
    paths = ["|".join(alts) for alts in node.validates]
    for ref in node.exit:
        if ref.name == "validate-artifacts":
            given: str | Sequence[str] = ref.params.get("validates") or ()
            paths += [given] if isinstance(given, str) else list(given)
    return tuple(paths)


def _validate_params_text(ref: HookRef) -> list[str]:
    params = ref.params
    out = []
    validates = params.get("validates")
    if validates:
        names = [validates] if isinstance(validates, str) else list(validates)
        out.append(f"Checked at the gate: {_code(names)}")
    if params.get("sections"):
        out.append(
            "Required non-empty sections: " + ", ".join(f"`## {s}`" for s in params["sections"])
        )
    if params.get("locked"):
        out.append("Front matter must say `status: approved`")
    if params.get("checkmarks") == "complete":
        out.append("Every `- [ ]` checkbox must be ticked")
    return out


def command_line(command: str) -> str:
    """The assignment's ``Command:`` bullet: what the word means and where its procedure
    is (issue 23 §1). Every command a shipped graph names has ``templates/commands/<command>.md``
    (a test holds that); ``loopgate procedure <command>`` prints the packaged copy."""
    return (f"- Command: `{command}` — the procedure to follow at this node (what to read, "
            f"what to write, how to claim); print it with `loopgate procedure {command}` "
            f"(`templates/commands/{command}.md` in loopgate)")


#: How much of a reviewer's reply an assignment quotes (lines, characters).
QUOTE_LINES, QUOTE_CHARS = 25, 2500


def requested_changes(ctx: HookContext) -> list[tuple[str, dict[str, Any]]]:
    """``(gate, its counted changes-requested {by, at, comment, commentId, ...})`` for each
    human gate whose ``changes-requested`` edge leads to ``ctx.node`` and that sent the
    item back here since this node last passed (read from ``surface.approvals[gate]
    .changesRequested``, issue 11 §2; issue 23)."""
    rec = ctx.state.nodes.get(ctx.node.id)
    left = rec.exited_at if rec is not None else ""
    out = []
    for gate in ctx.graph.ordered():
        edge = ctx.graph.route(gate.id, "changes-requested") if gate.is_human else None
        if edge is None or edge.target != ctx.node.id:
            continue
        entry = (ctx.state.surface.get("approvals") or {}).get(gate.id) or {}
        asked = entry.get("changesRequested") if isinstance(entry, Mapping) else None
        if isinstance(asked, Mapping) and str(asked.get("at") or "") >= (left or ""):
            out.append((gate.id, dict(asked)))
    return out


def _chat_text(ctx: HookContext, gate: str, asked: Mapping[str, Any]) -> str | None:
    # A chat decision has no reply on the thread: its words are in the gate's decision
    # when that decision is this request (same person and time).
    decision = ctx.state.decisions.get(gate)
    if not isinstance(decision, Mapping):
        return None
    def key(doc: Mapping[str, Any]) -> tuple[str, str]:  # "@carol" and "carol" alike
        return str(doc.get("by") or "").lstrip("@").lower(), str(doc.get("at") or "")

    same = key(decision) == key(asked)
    return str(decision.get("text") or "") or None if same else None


def _reply_text(ctx: HookContext, gate: str, asked: Mapping[str, Any]) -> str | None:
    # The reviewer's reply as written (its loopgate markers dropped); None when unreadable.
    cid = asked.get("commentId")
    if not cid:
        return str(asked.get("body") or "") or _chat_text(ctx, gate, asked)
    try:
        comments = ctx.ports.tracker.list_comments(ctx.ref)
    except TrackerError as exc:
        degrade(ctx, "deliver-assignment", f"could not read the review reply: {exc}")
        return None
    body = next((c.body for c in comments if c.id == cid), None)
    return None if body is None else re.sub(r"<!--.*?-->", "", body, flags=re.S).strip()


def _quote(text: str) -> list[str]:
    lines = text[:QUOTE_CHARS].splitlines()
    cut = len(lines) > QUOTE_LINES or len(text) > QUOTE_CHARS
    quoted = [f"  > {line}".rstrip() for line in lines[:QUOTE_LINES]]
    return [*quoted, "  > …"] if cut else quoted


def _not_again(ctx: HookContext, gate: str) -> str:
    # validate-artifacts refuses the reviewed files this node writes if they are unchanged.
    mine = {name for alts in ctx.node.produces for name in alts} | {
        name for path in _validated_paths(ctx.node) for name in str(path).split("|")}
    again = [alts for alts in ctx.graph.node(gate).validates if set(alts) & mine]
    return (f" (the gate will not accept {', '.join(_alternatives(again))} unchanged)"
            if again else "")


def _changes_lines(ctx: HookContext) -> list[str]:
    """What the reviewer asked for, quoted, when a gate sent the item back (issue 23)."""
    lines = []
    for gate, asked in requested_changes(ctx):
        who = at_login(str(asked.get("by") or "")) if asked.get("by") else "a reviewer"
        link = f" ([reply]({asked['comment']}))" if asked.get("comment") else ""
        lines.append(f"- Changes requested by {who} at `{gate}`{link}; change what they "
                     f"ask for{_not_again(ctx, gate)}:")
        text = _reply_text(ctx, gate, asked)
        lines += ["", *_quote(text), ""] if text else []
    return lines


def assignment_text(ctx: HookContext) -> str:
    """The assignment comment body for ``ctx.node`` (without markers)."""
    node = ctx.node
    phase = f" (phase `{node.phase}`)" if node.phase else ""
    if node.is_human:
        who = gate_rule(ctx).who(ctx.settings.authorized_users)
        return (
            f"🧑‍⚖️ **`{node.id}`{phase} — human gate: do not claim.**\n\n"
            f"No session works this node. It waits for {who} to answer on this thread."
        )
    if node.actor == "code":
        return f"⚙️ **`{node.id}`{phase}** runs automatically; there is nothing to claim."
    lines = [f"🛠️ **Assignment — `{node.id}`**{phase}", ""]
    if node.description:
        lines += [node.description, ""]
    lines += _changes_lines(ctx)
    if node.produces:
        lines.append("- Produce: " + ", ".join(_alternatives(node.produces)))
    if node.validates:
        lines.append("- Checked at the gate: " + ", ".join(_alternatives(node.validates)))
    lines += [f"- {line}" for line in _gate_checks(node)]
    if node.produces or _validated_paths(node):  # the names above are relative to it
        lines.append(f"- Where: the spec directory `{ctx.ports.artifacts.spec_dir(ctx.ref)}/`")
    if node.command:
        lines.append(command_line(node.command))
    kind = record_kind(_validated_paths(node))
    if kind is not None:  # the record's exact table, as other assignments name sections
        lines += assignment_lines(kind, ctx.ports.artifacts.spec_dir(ctx.ref))
    lines.append(f"- When done, claim it: `loopgate complete {ctx.ref} --node {node.id}`")
    return "\n".join(lines)


@hook("deliver-assignment")
def deliver_assignment(ctx: HookContext) -> HookResult:
    """Post who works this node, what to produce, the command and the claim command.

    Human nodes get "human gate: do not claim" instead. Idempotent per node entry through
    the assignment marker, also when the entry is retried after its transaction was lost
    (the entry marker names the committed revision it started from). Tracker failure:
    ``graph.hook_degraded`` and pass.
    """
    marker = assignment_marker(ctx.node.id, _entered_at(ctx), _visit_number(ctx))
    return _post_once(ctx, "deliver-assignment", marker, assignment_prefix(ctx.node.id),
                      assignment_text(ctx))


# -- request-review ---------------------------------------------------------------------
def review_text(ctx: HookContext) -> str:
    """The review-request comment body for ``ctx.node`` (without markers)."""
    node = ctx.node
    rule = gate_rule(ctx)
    names = rule.approvers or ctx.settings.authorized_users
    who = ", ".join(at_login(u) for u in names) or "Reviewers"
    subject = ", ".join(_alternatives(node.validates)) if node.validates else "the work so far"
    return "\n".join(
        [
            f"👀 **Review requested — `{node.id}`**",
            "",
            f"{who}: please review {subject} and reply on this thread with one of:",
            "",
            "- `approved`",
            "- `approved with comments` — followed by your comments (recorded with the decision)",
            "- `changes requested` — followed by what to change",
            "",
            "Only replies from authorized users count.",
            *_rule_lines(rule, node.id in {ctx.settings.merge_gate_after, "human-approval"}),
        ]
    )


def _rule_lines(rule: ApprovalRule, merge_gate: bool) -> list[str]:
    # Issue 11 §2: say the gate's rule where people are asked to answer it.
    lines = []
    if rule.approvals > 1:
        lines.append(f"This gate needs {rule.approvals} approvals from different people "
                     "(a `changes requested` starts the count again).")
    if rule.prevent_self_approval:
        whose = ("The work item's author and the pull request's author" if merge_gate
                 else "The work item's author")
        lines.append(f"{whose} cannot approve their own work.")
    return lines


@hook("request-review")
def request_review(ctx: HookContext) -> HookResult:
    """Ask the authorized users to review (approve / approve with comments / request
    changes) in a comment on the item. Never gates.

    It sends no notice of its own: the graph says which event a gate announces with an
    explicit ``notify`` hook (``phase-approval-pending`` at the approval gates,
    ``pr-review-pending`` at human-approval), so each gate entry is announced once.

    At a gate that covers a pull request it also asks the approvers for reviews on GitHub,
    once per visit (issue 24 §3, :mod:`engine.hooks.review_requests`).
    """
    from engine.hooks.review_requests import ask_for_reviews  # it imports this module

    marker = review_marker(ctx.node.id, _entered_at(ctx), _visit_number(ctx))
    posted = _post_once(ctx, "request-review", marker, review_prefix(ctx.node.id),
                        review_text(ctx))
    surface = ask_for_reviews(ctx)
    return HookResult(posted.kind, posted.reason, {**posted.data, "surface": surface}) \
        if surface else posted


# -- notify -----------------------------------------------------------------------------
def notify_data(ctx: HookContext, event: str) -> dict[str, Any]:
    """The data sent with ``event``: work item, node, phase, and for a quiz node what
    ``post-quiz-attestation`` recorded in ``state.surface["quiz"][node]``."""
    data: dict[str, Any] = {
        "workItem": str(ctx.ref),
        "node": ctx.node.id,
        "phase": ctx.node.phase,
        "event": event,
    }
    quiz = (ctx.state.surface.get("quiz") or {}).get(ctx.node.id)
    if isinstance(quiz, Mapping):
        comments = [c for c in quiz.get("comments") or () if isinstance(c, Mapping)]
        data["commentUrls"] = [c.get("url", "") for c in comments]
        data["location"] = quiz.get("location", "")
        data["viewCommands"] = list(quiz.get("viewCommands") or ())
        data["digest"] = quiz.get("digest", "-")
        data["kind"] = quiz.get("kind", "")
    return data


@hook("notify", params=("event",))
def notify(ctx: HookContext) -> HookResult:
    """Send the ``event`` param (e.g. ``quiz-pending``) through the notifier.

    Never gates: a notifier failure is logged as ``graph.hook_degraded`` and passes.
    """
    event = str(ctx.params.get("event") or "")
    if not event:
        degrade(ctx, "notify", "no event param")
        return HookResult.passed("notify: no event")
    data = notify_data(ctx, event)
    links = quiz_record(ctx.node.id) if "commentUrls" in data else ""
    safe_notify(ctx, "notify", event, data, links=links)
    return HookResult.passed(f"notify: {event} queued")
