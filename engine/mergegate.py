"""The ``loopgate`` merge gate (issue 11 §1): what the required check on a delivering pull
request says about one work item, and about all the items one pull request delivers.

States (GitHub's commit-status words; the bridge maps them onto a check run's
``status``/``conclusion``): ``pending`` while the item is before the merge node,
``success`` once it passed (``mergeGate.after``, default ``human-approval``; ``complete``
= only at the end), ``failure`` when the item escalated. A pull request delivering
several items is ``success`` only when every one passed, ``failure`` when any escalated.

Pure: the runtime records an item's :class:`GateCheck` in ``surface.mergeGate`` on every
transition and emits a :class:`~engine.effects.PublishGate`; the performer reads the
verdicts of every item a pull request delivers from the store when it publishes, so the
newest state is what lands on the newest head commit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine import checksummary
from engine.graph.model import Graph
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, PASS, SKIPPED
from engine.settings import EngineSettings
from engine.state import ItemState, ItemStatus

__all__ = ["CHECK_NAME", "PENDING", "SUCCESS", "FAILURE", "GateCheck", "item_check",
           "combine", "SURFACE_KEY", "MAX_DESCRIPTION", "COVERAGE_KEY", "vouching_nodes",
           "gates_to_cover", "record_coverage", "why_uncovered", "note_sent_back", "uncovered",
           "bind_to_head", "self_approved", "group_check", "queue_pulls", "on_head",
           "invalidated_by", "INVALIDATED_KEEP"]

#: The check run name / commit status context branch protection names.
CHECK_NAME = "loopgate"
PENDING = "pending"
SUCCESS = "success"
FAILURE = "failure"
#: Where an item's verdict lives in its state.
SURFACE_KEY = "mergeGate"
#: A commit status description longer than this is cut (GitHub shows one short line).
MAX_DESCRIPTION = 140
_PASSED = (PASS, SKIPPED, APPROVED, APPROVED_WITH_COMMENTS)


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MAX_DESCRIPTION else one[: MAX_DESCRIPTION - 1] + "…"


@dataclass(frozen=True)
class GateCheck:
    """The check's content.

    Attributes:
        state: :data:`PENDING`, :data:`SUCCESS` or :data:`FAILURE`.
        description: one line (≤ :data:`MAX_DESCRIPTION` characters).
        summary: Markdown for a check run's output (where the item stands, its node
            table, links); a commit status has no room for it.
        details_url: a link for the check ("" for none): the quiz comment, else the item.
        head_sha: see below.
        page_url: the item's details page (``server.publicUrl``; "" when unset): the check
            run's ``details_url`` and the commit status's ``target_url`` when set.
    """

    state: str
    description: str
    summary: str = ""
    details_url: str = ""
    #: The head commit this verdict was bound to (:func:`bind_to_head`; "" = unbound):
    #: the tracker never writes a ``success`` bound to one head on another.
    head_sha: str = ""
    page_url: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored document ``{state, description, summary, detailsUrl, pageUrl?}``
        (``pageUrl`` only when set: a document written before issue 22 reads the same)."""
        doc = {"state": self.state, "description": self.description, "summary": self.summary,
               "detailsUrl": self.details_url}
        if self.page_url:
            doc["pageUrl"] = self.page_url
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GateCheck:
        """Read :meth:`to_json` back (a document without ``pageUrl`` too)."""
        return cls(str(doc.get("state") or PENDING), str(doc.get("description") or ""),
                   str(doc.get("summary") or ""), str(doc.get("detailsUrl") or ""),
                   page_url=str(doc.get("pageUrl") or ""))


def _passed(graph: Graph, state: ItemState, after: str) -> bool:
    # A forced move never satisfies a gate (README "force"): success needs the merge node's
    # own pass, or a walk (not a force) onto the end when the merge node is the end.
    if after == "complete" or (graph.has_node(after) and graph.node(after).terminal):
        return _walked_to_end(state, after)
    if not graph.has_node(after):
        return False
    record = state.nodes.get(after)
    if record is None or record.outcome not in _PASSED or not record.exited_at:
        return False
    if _forced_over(graph, state, after, record.exited_at):
        return False
    if state.status == ItemStatus.COMPLETE:
        return True
    # Sent back before the merge node (changes requested): not passed any more.
    current = state.current_node
    return graph.has_node(current) and graph.position(current) > graph.position(after)


def _walked_to_end(state: ItemState, after: str) -> bool:
    end = state.current_node
    if state.status != ItemStatus.COMPLETE or (after != "complete" and end != after):
        return False
    record = state.nodes.get(end)
    entered = record.entered_at if record is not None else ""
    return not any(m.to_node == end and m.at >= entered for m in state.forced)


def _forced_over(graph: Graph, state: ItemState, after: str, passed_at: str) -> bool:
    """True when a forced move since ``after`` passed went from it (or before it) to past it:
    the pass on record is stale, the gate did not let the item through that time."""
    mark = graph.position(after)
    for move in state.forced:
        source, target = move.from_node, move.to_node
        if not (graph.has_node(source) and graph.has_node(target)):
            continue
        crossed = graph.position(source) <= mark < graph.position(target)
        if crossed and move.at >= passed_at:
            return True
    return False


def _first_quiz_url(state: ItemState) -> str:
    for _, entry in sorted((state.surface.get("quiz") or {}).items()):
        if not isinstance(entry, Mapping):
            continue
        for comment in entry.get("comments") or ():
            url = str(comment.get("url") or "") if isinstance(comment, Mapping) else ""
            if url:
                return url
    return ""


def item_check(graph: Graph, state: ItemState, after: str,
               settings: EngineSettings | None = None) -> GateCheck:
    """The check for one work item.

    Args:
        graph: the compiled graph.
        state: the item's state.
        after: ``mergeGate.after`` (a node id, or ``complete``).
        settings: the engine settings (approval rules and ``authorizedUsers`` for "who may
            still approve", ``publicUrl`` for the details page; default: none of them).

    Returns:
        ``failure`` when escalated, ``success`` when ``after`` passed by its own gate
        (a forced move never counts: neither a force onto the end nor one past ``after``),
        else ``pending`` saying where the item waits (``description``: also the check
        run's ``output.title``); with its Markdown summary (:mod:`engine.checksummary`,
        issue 22 §1).
    """
    settings = settings or EngineSettings()
    node = state.current_node or "-"
    if state.status == ItemStatus.ESCALATED:
        reason = state.parked.reason
        state_word, text = FAILURE, f"escalated at {state.parked.node or node}: {reason}"
    elif _passed(graph, state, after):
        state_word = SUCCESS
        text = ("work item complete" if state.status == ItemStatus.COMPLETE
                else f"{after} passed")
    elif state.status == ItemStatus.COMPLETE:  # only a force gets here: it never passes
        state_word, text = PENDING, f"forced to {node}; {after} never passed its gate"
    else:
        reason = state.parked.reason or "in progress"
        where = f"at {node} (the merge gate)" if node == after else f"at {node}, before {after}"
        state_word, text = PENDING, f"{where}: {reason}"
        why = str((state.surface.get(COVERAGE_KEY) or {}).get("sentBack") or "")
        text = f"{why}; now {text}" if why else text
    description = _line(f"{state.ref}: {text}")
    invalidated = (state.surface.get(COVERAGE_KEY) or {}).get("invalidated") or ()
    summary = checksummary.item_summary(graph, state, text, settings, invalidated)
    return GateCheck(state_word, description, summary, _first_quiz_url(state),
                     page_url=checksummary.details_page(settings.public_url, state.ref))


def combine(checks: Sequence[tuple[str, GateCheck | None]]) -> GateCheck:
    """The check of a pull request delivering several items.

    Args:
        checks: ``(item ref text, its check or None when not started)``.

    Returns:
        ``failure`` when any item escalated; ``success`` only when every item passed;
        else ``pending`` naming the items still waiting.
    """
    if len(checks) == 1 and checks[0][1] is not None:
        return checks[0][1]
    known = [(ref, c if c is not None else GateCheck(PENDING, f"{ref}: not started"))
             for ref, c in checks]
    failed = [c for _, c in known if c.state == FAILURE]
    waiting = [ref for ref, c in known if c.state == PENDING]
    # Issue 22 §1: each item's section, one after the other, cut to GitHub's limit.
    page = next((c.page_url for _, c in known if c.page_url), "")
    summary = checksummary.join_sections([c.summary or checksummary.md(c.description)
                                          for _, c in known], page)
    url = next((c.details_url for _, c in known if c.details_url), "")
    if failed:
        return GateCheck(FAILURE, _line(failed[0].description), summary, url, page_url=page)
    if waiting:
        return GateCheck(PENDING, _line(f"{len(known) - len(waiting)} of {len(known)} work "
                                        f"items passed; waiting: {', '.join(waiting)}"),
                         summary, url, page_url=page)
    heads = {c.head_sha for _, c in known}
    return GateCheck(SUCCESS, _line(f"all {len(known)} work items passed"), summary, url,
                     heads.pop() if len(heads) == 1 else "", page_url=page)


# -- issue 19 §3: the check is bound to the commits the vouching gates covered ---------------
#: Where the heads each vouching gate covered live in an item's state:
#: ``surface.mergeCoverage = {gates: [node…], nodes: {node: {at, heads: {"N": sha},
#: authors: {"N": login}, error?}}}``.
COVERAGE_KEY = "mergeCoverage"
#: The first vouching node by default (issue 19 §3: "from code-quiz to the merge node").
DEFAULT_VOUCHING_FROM = "code-quiz"
_OWN_PASS = (PASS, APPROVED, APPROVED_WITH_COMMENTS)  # a skip vouches for nothing


def vouching_nodes(graph: Graph, after: str, configured: Sequence[str] = ()) -> tuple[str, ...]:
    """The gates whose pass vouches for a pull request's head (issue 19 §3).

    Args:
        graph: the compiled graph.
        after: ``mergeGate.after``.
        configured: ``mergeGate.vouching`` (node ids; empty = the default).

    Returns:
        ``configured`` as given, else every human gate in walk order from ``code-quiz``
        (or the first gate before ``after`` when the graph has none) to ``after``
        (for ``complete`` / a terminal ``after``: to the last human gate).
    """
    if configured:
        return tuple(configured)
    order = [n.id for n in graph.ordered()]
    last = order.index(after) if after in order and not graph.node(after).terminal else None
    span = order[: last + 1] if last is not None else order
    start = span.index(DEFAULT_VOUCHING_FROM) if DEFAULT_VOUCHING_FROM in span else 0
    gates = tuple(n for n in span[start:] if graph.node(n).actor == "human"
                  and not graph.node(n).terminal)
    return gates[-1:] if DEFAULT_VOUCHING_FROM not in span else gates


def gates_to_cover(state: ItemState, vouching: Sequence[str],
                   before: Mapping[str, str]) -> list[str]:
    """Vouching nodes that passed by their own gate (never a skip or a force) in this
    operation: the runtime reads the delivering pull requests' heads for these now
    (issue 19 §3). A pass recorded before coverage existed is never covered afterwards
    (fail closed: such an item's next push sends it back).

    Args:
        state: the decided state.
        vouching: :func:`vouching_nodes`.
        before: ``{node: exited_at}`` of the state the operation started from.
    """
    due = []
    for node in _passed_gates(state, vouching):
        if state.nodes[node].exited_at != before.get(node, ""):
            due.append(node)
    return due


def note_seen(state: ItemState, node: str, heads: Mapping[int, tuple[str, str]] | None) -> None:
    """Record in ``state`` (mutated) the delivering pull requests' heads as ``node`` (a
    vouching gate) was entered: what its reviewers were shown. None (unreadable) records
    that nothing was seen, so the pass covers nothing (fail closed). Issue 19 §3, a
    fresh-eyes trial: a head pushed while the reviewer read must not be covered."""
    coverage = dict(state.surface.get(COVERAGE_KEY) or {})
    seen = dict(coverage.get("seen") or {})
    seen[node] = {str(n): sha for n, (sha, _) in (heads or {}).items()}
    coverage["seen"] = seen
    state.surface[COVERAGE_KEY] = coverage


def seen_heads(state: ItemState, node: str,
               heads: Mapping[int, tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """``heads`` (read at ``node``'s pass) narrowed to the pull requests whose head is the
    one seen when the gate was entered (:func:`note_seen`); all of ``heads`` for a gate
    entered before entries were noted (the state of an earlier version)."""
    seen = (state.surface.get(COVERAGE_KEY) or {}).get("seen") or {}
    if node not in seen:
        return dict(heads)
    return {n: v for n, v in heads.items() if seen[node].get(str(n)) == v[0]}


def record_coverage(state: ItemState, vouching: Sequence[str], node: str,
                    heads: Mapping[int, tuple[str, str]] | None, error: str = "",
                    no_self_approval: str = "") -> None:
    """Record in ``state`` (mutated) what ``node``'s pass covered.

    Args:
        state: the item's working state.
        vouching: :func:`vouching_nodes`.
        node: a vouching node that just passed.
        heads: ``{pull number: (head sha, author login)}`` of the open delivering pull
            requests read at the pass; None when they could not be read (``error`` says
            why: such a pass covers nothing, so the check stays pending — fail closed).
        error: why the heads could not be read.
        no_self_approval: the merge gate when its rule has ``preventSelfApproval`` (the
            publisher, which has no graph, reads it from here).
    """
    coverage = dict(state.surface.get(COVERAGE_KEY) or {})
    nodes = dict(coverage.get("nodes") or {})
    record = state.nodes.get(node)
    entry: dict[str, Any] = {"at": record.exited_at if record is not None else "",
                             "heads": {str(n): sha for n, (sha, _) in (heads or {}).items()},
                             "authors": {str(n): a for n, (_, a) in (heads or {}).items() if a}}
    if heads is None:
        entry["error"] = error or "the delivering pull requests could not be read"
    nodes[node] = entry
    coverage.pop("sentBack", None)  # the gate that was sent back to covered the heads again
    coverage.update(gates=list(vouching), nodes=nodes, noSelfApproval=no_self_approval)
    state.surface[COVERAGE_KEY] = coverage


def _passed_gates(state: ItemState, vouching: Sequence[str]) -> list[str]:
    # A gate forced over keeps no outcome, so it never counts; one entered by force and then
    # passed by its own decision does.
    return [n for n in vouching if (r := state.nodes.get(n)) is not None
            and r.outcome in _OWN_PASS and r.exited_at]


def uncovered(state: ItemState, vouching: Sequence[str], pull: int,
              head: str) -> tuple[str, str] | None:
    """The first vouching gate that did not cover ``pull`` at ``head``.

    Returns:
        None when every gate that passed by its own hand covered it (and at least one did);
        else ``(node, what it covered: a sha, "" for nothing)``; ``("", "")`` when no
        vouching gate passed at all.
    """
    nodes = (state.surface.get(COVERAGE_KEY) or {}).get("nodes") or {}
    gates = _passed_gates(state, vouching)
    if not gates:
        return ("", "")
    for node in gates:
        entry = nodes.get(node)
        covered = str(((entry or {}).get("heads") or {}).get(str(pull)) or "")
        if not isinstance(entry, Mapping) or not head or covered != head:
            return (node, covered)
    return None


def _short(sha: str) -> str:
    return sha[:7]


def why_uncovered(pull: int, head: str, node: str, covered: str) -> str:
    """One line saying why ``pull`` at ``head`` is not covered (for the check's
    description and the ``graph.head_moved`` event), e.g. "head def4567 was pushed after
    human-approval covered abc1234"."""
    if not node:
        return f"no vouching gate covered #{pull} (head {_short(head)})"
    if covered:
        return f"head {_short(head)} was pushed after {node} covered {_short(covered)}"
    return (f"#{pull} started delivering after {node} passed; its head {_short(head)} "
            f"is not covered")


def self_approved(state: ItemState, node: str, authors_now: Sequence[str]) -> str:
    """Who approved ``node`` (the merge gate) and is also an author of a delivering pull
    request, as recorded at the decision or now (issue 19 §3: ``preventSelfApproval``
    uses the pull request authors as of the decision *and* as of the current head).

    Returns:
        The login ("" when nobody is both).
    """
    nodes = (state.surface.get(COVERAGE_KEY) or {}).get("nodes") or {}
    recorded = ((nodes.get(node) or {}).get("authors") or {}).values()
    authors = {a.lower().lstrip("@") for a in (*recorded, *authors_now) if a}
    return _first_both(_approvers(state, node), authors)


def _approvers(state: ItemState, node: str) -> set[str]:
    # The current visit's approvers only: an earlier visit's decision was superseded.
    record = state.nodes.get(node)
    entered = record.entered_at if record is not None else ""
    entry = (state.surface.get("approvals") or {}).get(node) or {}
    if isinstance(entry, Mapping) and entry.get("enteredAt") == entered:
        # The gate's own tally of this visit (classify-feedback) is the record.
        return {str(a.get("by") or "").lower().lstrip("@")
                for a in entry.get("approvals") or () if isinstance(a, Mapping)}
    approvers: set[str] = set()
    decision = state.decisions.get(node) or {}
    if isinstance(decision, Mapping) and decision.get("by") and \
            str(decision.get("at") or "") >= entered:
        approvers.add(str(decision["by"]).lower().lstrip("@"))
    return approvers


def _first_both(approvers: set[str], authors: set[str]) -> str:
    both = sorted((approvers & authors) - {""})
    return both[0] if both else ""


def bind_to_head(state: ItemState, check: GateCheck, pull: int, head: str, *,
                 authors_now: Sequence[str] = (), self_approval_node: str = "") -> GateCheck:
    """``check`` (the item's stored verdict) as it holds for pull request ``pull`` at
    ``head`` (issue 19 §3).

    Args:
        state: the item's state (its ``surface.mergeCoverage``).
        check: the item's :func:`item_check`.
        pull: the pull request number.
        head: its head sha as read now.
        authors_now: the pull request's author(s) now.
        self_approval_node: the merge gate when its rule has ``preventSelfApproval``
            (default: as the runtime recorded it in the coverage).

    Returns:
        ``check`` unless it is ``success``; then ``pending`` when a vouching gate did not
        cover ``head`` (saying which and what it covered), ``failure`` when an approver of
        the merge gate authored the pull request; else ``check`` with ``head_sha`` set.
    """
    if check.state != SUCCESS:
        return check
    coverage = state.surface.get(COVERAGE_KEY) or {}
    missing = uncovered(state, coverage.get("gates") or (), pull, head)
    if missing is not None:
        text = why_uncovered(pull, head, *missing)
        lines = checksummary.invalidated_lines(invalidated_by(state, pull, head))
        return GateCheck(PENDING, _line(f"{state.ref}: {text}"),
                         _rehead(state, check, text, lines), check.details_url,
                         page_url=check.page_url)
    self_approval_node = self_approval_node or str(coverage.get("noSelfApproval") or "")
    if self_approval_node:
        login = self_approved(state, self_approval_node, authors_now)
        if login:
            text = (f"@{login} approved {self_approval_node} and authored #{pull}, which "
                    "delivers it (preventSelfApproval)")
            return GateCheck(FAILURE, _line(f"{state.ref}: {text}"),
                             _rehead(state, check, text), check.details_url,
                             page_url=check.page_url)
    return replace(check, head_sha=head)


def _rehead(state: ItemState, check: GateCheck, text: str, extra: Sequence[str] = ()) -> str:
    headline = f"**{checksummary.md(state.ref)}** — {checksummary.md(text)}"
    return checksummary.rehead(check.summary, headline, extra) if check.summary else headline


#: How many invalidated approvals ``surface.mergeCoverage.invalidated`` keeps (newest).
INVALIDATED_KEEP = 20


def invalidated_by(state: ItemState, pull: int, head: str) -> list[dict[str, Any]]:
    """The passes of vouching gates that covered ``pull`` at another commit than ``head``
    (a push superseded them; issue 22 §1 "invalidated approvals").

    Returns:
        ``[{node, visit, outcome, by: [login…], at, pull, covered, pushed}]`` in vouching
        order; [] when ``head`` is unknown or every pass covered it.
    """
    coverage = state.surface.get(COVERAGE_KEY) or {}
    nodes = coverage.get("nodes") or {}
    out: list[dict[str, Any]] = []
    for node in _passed_gates(state, coverage.get("gates") or ()):
        covered = str(((nodes.get(node) or {}).get("heads") or {}).get(str(pull)) or "")
        if not head or not covered or covered == head:
            continue
        visit = state.visit(node)
        record = state.nodes[node]
        out.append({"node": node, "visit": visit.number if visit is not None else 0,
                    "outcome": record.outcome, "by": sorted(_approvers(state, node)),
                    "at": record.exited_at, "pull": pull, "covered": covered,
                    "pushed": head})
    return out


def note_sent_back(state: ItemState, text: str, *, pull: int = 0, head: str = "") -> None:
    """Remember in ``state`` (mutated) why a push sent the item back, until the gate it
    went back to covers the heads again: the pending check says it (issue 19 §3). With
    ``pull`` and its new ``head``, also remember every pass that push invalidated
    (:func:`invalidated_by`) in ``mergeCoverage.invalidated``, newest last, at most
    :data:`INVALIDATED_KEEP` (issue 22 §1: the check's summary lists them). Call it
    before the item is sent back (the passes are still the current visits)."""
    coverage = dict(state.surface.get(COVERAGE_KEY) or {})
    coverage["sentBack"] = text
    if pull and head:
        seen = [dict(e) for e in coverage.get("invalidated") or () if isinstance(e, Mapping)]
        for entry in invalidated_by(state, pull, head):
            if not any(all(e.get(k) == entry[k] for k in ("node", "visit", "pull", "pushed"))
                       for e in seen):
                seen.append(entry)
        coverage["invalidated"] = seen[-INVALIDATED_KEEP:]
    state.surface[COVERAGE_KEY] = coverage


# -- issue 19 §4: the merge queue -----------------------------------------------------------
_QUEUE_REF = re.compile(r"^(?:refs/heads/)?gh-readonly-queue/.+/pr-(?P<n>[1-9][0-9]*)-[0-9a-f]+$")
_MERGE_TITLE = re.compile(r"^Merge pull request #(?P<n>[1-9][0-9]*) ")
_SQUASH_TITLE = re.compile(r"\(#(?P<n>[1-9][0-9]*)\)$")


def queue_pulls(head_ref: str, messages: Sequence[str] = ()) -> list[int]:
    """The pull requests a merge group holds (issue 19 §4; platform-facts F1).

    Args:
        head_ref: ``merge_group.head_ref``: ``refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>``
            names the pull request the group was built for.
        messages: the commit messages of the group's commits (``base_sha..head_sha``): a
            merge-method commit's title is "Merge pull request #N from …", a squash's
            ends in "(#N)"; both add N.

    Returns:
        Pull request numbers, the head_ref's first, no duplicates ([] when the ref is
        not a merge queue ref).
    """
    match = _QUEUE_REF.match(head_ref.strip())
    found = [int(match["n"])] if match else []
    for message in messages:
        title = (message or "").splitlines()[0].strip() if message else ""
        hit = _MERGE_TITLE.match(title) or _SQUASH_TITLE.search(title)
        if hit and int(hit["n"]) not in found:
            found.append(int(hit["n"]))
    return found


def group_check(per_pull: Sequence[tuple[int, GateCheck]]) -> GateCheck:
    """The check of a merge group from the check of each pull request in it, each
    already bound to that pull request's head (:func:`bind_to_head`).

    A merge queue waits for a conclusion, so there is no ``pending`` here: ``success``
    only when every pull request's check is ``success`` (and there is at least one);
    otherwise ``failure`` naming the first that is not and why. Never a blanket success
    (issue 19 §4; policy-bot#800 in platform-facts F1).
    """
    if not per_pull:
        return GateCheck(FAILURE, "the merge group names no pull request loopgate knows")
    summary = "\n\n---\n\n".join(f"**#{n}** — {c.description}" for n, c in per_pull)
    bad = [(n, c) for n, c in per_pull if c.state != SUCCESS]
    if bad:
        number, check = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return GateCheck(FAILURE, _line(f"#{number} is not covered{more}: {check.description}"),
                         summary, check.details_url)
    numbers = ", ".join(f"#{n}" for n, _ in per_pull)
    return GateCheck(SUCCESS, _line(f"every pull request in the group is covered: {numbers}"),
                     summary)


def on_head(check: GateCheck, sha: str) -> GateCheck:
    """``check`` as it may be written on commit ``sha``: a ``success`` bound to another
    head (:attr:`GateCheck.head_sha`) becomes ``pending`` saying so (the head moved after
    the verdict was made; issue 19 §3)."""
    if check.state != SUCCESS or not check.head_sha or check.head_sha == sha:
        return check
    text = (f"head {_short(sha)} is newer than {_short(check.head_sha)}, the head the "
            "gates covered")
    summary = checksummary.rehead(check.summary, checksummary.md(text)) if check.summary \
        else text
    return GateCheck(PENDING, _line(text), summary, check.details_url, check.head_sha,
                     page_url=check.page_url)
