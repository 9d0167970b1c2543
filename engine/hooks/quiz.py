"""The quiz gates: ``post-quiz-attestation`` and ``quiz-attested`` (explainer design C3/C4,
issue #3 §5), pure over the ports.

``post-quiz-attestation`` (entry) posts loopgate's checkbox comment, marked
``<!-- the-loop:quiz <node> digest=<hex12|-> -->`` plus the self-authored marker, on the
issue (``on: ticket``) or on every delivering pull request (``on: pull-requests``, falling
back to the issue). It records what it posted in ``state.surface["quiz"][node]``.

``quiz-attested`` (exit) passes only when the tracker's edit history says an authorized,
named person made the latest edit of that comment with the box ticked — or when an
authorized person typed the ticked attestation line in a new comment. A changed spec
digest answers ``stale``. Everything else waits (fail closed; design "Security design").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from engine.effects import PostComment, effect_marker, quiz_record
from engine.hooks.artifacts import split_alternatives
from engine.hooks.common import (
    at_login,
    authorize_person,
    degrade,
    event_comments,
    is_self_authored,
    latest,
    posted_by_loopgate,
    safe_notify,
)
from engine.hooks.markers import (
    SELF_MARKER,
    attestation_line,
    attestation_ticked,
    has_quiz_marker,
    quiz_kind,
    quiz_marker,
    with_self_marker,
)
from engine.hooks.quiz_visits import (
    earlier_comment_reason,
    earlier_ids,
    earlier_line_reason,
    earlier_posting,
    entry_is_current,
    visit_number,
    written_during,
)
from engine.hooks.registry import PASS, WAIT, HookContext, HookResult, hook
from engine.outcomes import STALE
from engine.ports import Comment, CommentEdits, TrackerError
from engine.records import Attestation
from engine.refs import WorkItemRef
from engine.settings import normalize_login

__all__ = [
    "NO_DIGEST",
    "spec_digest",
    "record_location",
    "view_commands",
    "quiz_comment_body",
    "latest_editor",
    "genuine_quiz_comment",
    "quiz_comment_problem",
    "post_quiz_attestation",
    "quiz_attested",
    "wrong_kind_typers",
    "waiting_reason",
    "posting_reason",
    "reason_once_posted",
]

#: The marker's digest when the quiz binds no spec files.
NO_DIGEST = "-"
#: A ``digest:`` entry standing for the delivering pull requests' head commits (issue 19
#: §3): the code quiz covers exactly those heads, so a push makes it ``stale``.
HEADS_ENTRY = "@pull-request-heads"

_SECTIONS = {"evidence/spec-explainer.md": "Spec explainer", "evidence/explainer.md": "Explainer"}
# Only these characters reach a shell line (design "Security design": no ticket text).
_SAFE_PATH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_URL = re.compile(r"^https?://[^\s<>()\[\]`'\"\\]+$")
_LOCATION_ROW = re.compile(r"^\s*\|\s*\**location\**\s*\|\s*(?P<value>[^|]*?)\s*\|", re.IGNORECASE)


class _RecordError(Exception):
    """The quiz record is missing, unreadable or has no usable Location."""


# -- digest -----------------------------------------------------------------------------
def spec_digest(ctx: HookContext, entries: Any) -> str:
    """First 12 hex characters of sha256 over the listed files' bytes, in order.

    Args:
        ctx: for the artifact store and the work item.
        entries: the ``digest:`` param: a list of names, ``a|b`` meaning whichever exists
            (the first that does); an absent file contributes nothing;
            :data:`HEADS_ENTRY` contributes the delivering pull requests' heads.

    Returns:
        The 12-hex digest, or ``-`` when ``entries`` is empty/None.

    Raises:
        TrackerError, OSError: the artifact store failed (callers fail closed).
        ValueError: an entry is not a name.
    """
    alternatives = split_alternatives(entries)
    if not alternatives:
        return NO_DIGEST
    digest = hashlib.sha256()
    for alts in alternatives:
        for name in alts:
            data = (pull_request_heads(ctx) if name == HEADS_ENTRY
                    else ctx.ports.artifacts.read(ctx.ref, name))
            if data is not None:
                digest.update(data)
                break
    return digest.hexdigest()[:12]


def pull_request_heads(ctx: HookContext) -> bytes:
    """``N=sha`` lines (ascending N) of the item's open delivering pull requests: what
    :data:`HEADS_ENTRY` contributes to a digest (issue 19 §3).

    Raises:
        TrackerError: the pull requests could not be read (callers fail closed).
    """
    pulls = ctx.ports.tracker.delivering_pull_requests(ctx.ref)
    lines = sorted((pr.number, pr.head_sha) for pr in pulls if pr.state == "open")
    return "".join(f"{n}={sha}\n" for n, sha in lines).encode("ascii")


def _binds_heads(entries: Any) -> bool:
    try:
        return any(HEADS_ENTRY in alts for alts in split_alternatives(entries))
    except ValueError:
        return False


# -- the record -------------------------------------------------------------------------
def _fallback_location(text: str) -> str:
    for line in text.splitlines():
        match = _LOCATION_ROW.match(line)
        if match:
            return match["value"].strip().strip("`").strip("<>")
    return ""


def record_location(text: str, record: str) -> str:
    """The ``Location`` of an explainer record (design C6), "" when it has none.

    Uses :func:`engine.evidence.parse_record` when available, else reads the
    ``| Location | … |`` row directly.

    Raises:
        _RecordError: the record's section is missing.
    """
    section = _SECTIONS.get(record, "")
    try:
        from engine.evidence import EvidenceError, parse_record
    except ImportError:
        return _fallback_location(text)
    if not section:
        return _fallback_location(text)
    try:
        return parse_record(text, section).location.strip()
    except EvidenceError as exc:
        raise _RecordError(f"{record}: {exc}") from exc


def _read_location(ctx: HookContext, record: str) -> str:
    try:
        data = ctx.ports.artifacts.read(ctx.ref, record)
    except (TrackerError, OSError) as exc:
        raise _RecordError(f"the quiz record {record} could not be read: {exc}") from exc
    if data is None:
        raise _RecordError(f"the quiz record {record} is missing")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _RecordError(f"the quiz record {record} is not UTF-8 text") from exc
    location = record_location(text, record)
    if not location:
        raise _RecordError(f"the quiz record {record} has no Location")
    return location


def _safe_segment(value: str) -> bool:
    parts = value.split("/")
    return bool(_SAFE_PATH.match(value)) and ".." not in parts and "" not in parts


def view_commands(ref: WorkItemRef, branch: str, path: str) -> list[str]:
    """The two copy-paste commands that open a committed explainer page (design C3).

    Only the owner, repository, branch and path are interpolated, and each must be made of
    ``[A-Za-z0-9._/-]`` (no ``..``, no leading ``-``), so no ticket text reaches a shell.

    Returns:
        ``[gh api …, curl …]``, or ``[]`` when the branch or path is not safe to quote.
    """
    path = path[2:] if path.startswith("./") else path
    if not (_safe_segment(path) and _safe_segment(branch)):
        return []
    out = f"/tmp/issue-{ref.number}-explainer.html"
    owner, repo = ref.owner, ref.repo
    return [
        f"gh api -H 'Accept: application/vnd.github.raw' "
        f"'repos/{owner}/{repo}/contents/{path}?ref={branch}' > {out} "
        f"&& python3 -m webbrowser {out}",
        f"curl -fsSL 'https://raw.githubusercontent.com/{owner}/{repo}/{branch}/{path}' "
        f"-o {out} && python3 -m webbrowser {out}",
    ]


_WORDING = {
    "spec": (
        "🎓 **Spec quiz** — read the spec explainer and take its quiz before code "
        "generation starts",
        "open the spec explainer",
    ),
    "code": (
        "🎓 **Code quiz** — read the explainer of the change and take its quiz before "
        "review is requested",
        "open the explainer",
    ),
}


def _where(location: str, commands: Sequence[str], link_text: str) -> str:
    if _URL.match(location):
        return f": [{link_text}]({location})"
    if commands:
        blocks = "\n\n".join(f"```sh\n{c}\n```" for c in commands)
        return (
            ". Open it with one of these commands (the first works for any repository, "
            f"the second for a public one):\n\n{blocks}"
        )
    return f": it is committed at `{location}` on the work item's branch"


def _typed_body(kind: str, location: str, link_text: str) -> list[str]:
    # Offline (issue 14 §4): no box to tick, no forge to fetch the page from.
    where = (f": [{link_text}]({location})" if _URL.match(location)
             else f": it is the file `{location}` of the local checkout (the `workspace`)")
    return [
        _WORDING[kind][0] + where,
        "",
        "There is no box to tick on this thread: reply with this line to attest",
        "",
        "```",
        attestation_line(kind, ticked=True),
        "```",
        "",
        "Only a user authorized for this repository's loopgate can attest for the work "
        "item to move on.",
    ]


def quiz_comment_body(
    kind: str, node: str, digest: str, location: str, commands: Sequence[str],
    *, editable: bool = True,
) -> str:
    """The checkbox comment of design C3, markers included.

    Args:
        kind: ``spec`` or ``code`` (:func:`~engine.hooks.markers.quiz_kind`).
        node: the quiz node id (goes into the marker).
        digest: 12 hex or ``-``.
        location: the record's Location (a URL becomes a link).
        commands: view commands for a repository path (from :func:`view_commands`).
        editable: the tracker's :attr:`~engine.ports.Tracker.comments_editable`; False
            gives the typed line to reply with and the page's path in the local checkout
            instead of a box and the commands.

    Returns:
        The comment body, ending with the quiz marker and loopgate's own marker.
    """
    title, link_text = _WORDING[kind]
    if not editable:
        return with_self_marker("\n".join(_typed_body(kind, location, link_text)),
                                quiz_marker(node, digest))
    body = "\n".join(
        [
            title + _where(location, commands, link_text),
            "",
            attestation_line(kind),
            "",
            "Ticking the box is enough — no reply needed. Only a user authorized for this "
            "repository's loopgate can tick it for the work item to move on.",
        ]
    )
    return with_self_marker(body, quiz_marker(node, digest))


# -- post-quiz-attestation --------------------------------------------------------------
def _targets(ctx: HookContext, on: str) -> list[WorkItemRef]:
    if on != "pull-requests":
        return [ctx.ref]
    try:
        prs = ctx.ports.tracker.delivering_pull_requests(ctx.ref)
    except TrackerError as exc:
        degrade(ctx, "post-quiz-attestation", f"could not list pull requests: {exc}")
        prs = []
    refs = [WorkItemRef(ctx.ref.owner, ctx.ref.repo, pr.number) for pr in prs]
    return refs or [ctx.ref]


def _existing_quiz_comment(
    ctx: HookContext, comments: Sequence[Comment], node: str, digest: str,
    skip: Sequence[int] = (), stale: Sequence[str] = (),
) -> Comment | None:
    # An earlier visit's quiz comment (``skip``, one carrying the effect marker of an
    # earlier visit's post, ``stale``, or one posted before this visit began) is never
    # reused (issue 19 §2).
    markers = [effect_marker(key) for key in stale]
    for comment in comments:
        if comment.id in skip or not written_during(ctx, node, comment):
            continue
        if any(marker in (comment.body or "") for marker in markers):
            continue
        if has_quiz_marker(comment.body, node, digest) and posted_by_loopgate(
            comment, ctx.settings
        ):
            return comment
    return None


def _post_on(
    ctx: HookContext, target: WorkItemRef, node: str, digest: str, body: str,
    skip: Sequence[int] = (), stale: Sequence[str] = (),
) -> Comment | str:
    """The quiz comment already on ``target`` (not one of ``skip`` nor one posted by a row
    of ``stale``: earlier visits'), else the key of the effect that posts it."""
    try:
        existing = _existing_quiz_comment(
            ctx, ctx.ports.tracker.list_comments(target), node, digest, skip, stale)
    except TrackerError as exc:
        degrade(ctx, "post-quiz-attestation", f"could not scan {target} for the quiz: {exc}")
        existing = None
    if existing is not None:
        return existing
    return ctx.emit(PostComment(target, body, record=quiz_record(node)))


def _branch(ctx: HookContext) -> str:
    try:
        return ctx.ports.artifacts.branch(ctx.ref)
    except (TrackerError, OSError):
        return ""  # no branch: no commands, the path is still named


def _surface_with(ctx: HookContext, key: str, node: str, value: Any) -> dict[str, Any]:
    # The runtime merges surface keys shallowly: carry the other nodes' entries along.
    current = ctx.state.surface.get(key)
    merged = dict(current) if isinstance(current, Mapping) else {}
    merged[node] = value
    return {key: merged}


@hook("post-quiz-attestation", params=("node", "record", "on", "digest"))
def post_quiz_attestation(ctx: HookContext) -> HookResult:
    """Post the quiz's checkbox comment (design C3); idempotent per node and digest.

    Returns:
        pass with ``surface.quiz[node] = {digest, kind, record, comments: [{id, url,
        target}], location, viewCommands, visit, earlier?, earlierPosting?}`` (``visit``:
        the node's visit it was posted for; ``earlier``: ids of earlier visits' quiz
        comments, never reused, issue 19 §2; ``earlierPosting``: keys of earlier visits'
        posts not recorded yet, whose comments are never reused either); block naming the
        record when it is missing or unreadable (or the digest files cannot be read).
    """
    node = str(ctx.params.get("node") or ctx.node.id)
    record = str(ctx.params.get("record") or "")
    on = str(ctx.params.get("on") or "ticket")
    kind = quiz_kind(node)
    if not record:
        return HookResult.block("post-quiz-attestation: no record param", retriable=False)
    if on not in ("ticket", "pull-requests"):
        return HookResult.block(f"post-quiz-attestation: unknown on: {on!r}", retriable=False)
    try:
        location = _read_location(ctx, record)
        digest = spec_digest(ctx, ctx.params.get("digest"))
    except _RecordError as exc:
        return HookResult.block(str(exc), retriable=True)
    except (TrackerError, OSError, ValueError) as exc:
        return HookResult.block(f"could not compute the spec digest: {exc}", retriable=True)
    editable = ctx.ports.tracker.comments_editable
    commands = ([] if _URL.match(location) or not editable
                else view_commands(ctx.ref, _branch(ctx), location))
    body = quiz_comment_body(kind, node, digest, location, commands, editable=editable)
    posted: list[dict[str, Any]] = []
    posting: list[str] = []
    earlier = earlier_ids(ctx, node, _posted(ctx, node))
    stale = earlier_posting(_posted(ctx, node), visit_number(ctx, node))
    for target in _targets(ctx, on):
        found = _post_on(ctx, target, node, digest, body, earlier, stale)
        if isinstance(found, str):
            posting.append(found)
        else:
            posted.append({"id": found.id, "url": found.url, "target": str(target)})
    entry = {
        "digest": digest,
        "kind": kind,
        "record": record,
        "comments": posted,
        "posting": posting,
        "location": location,
        "viewCommands": commands,
        "visit": visit_number(ctx, node),
        **({"earlier": earlier} if earlier else {}),
        **({"earlierPosting": stale} if stale else {}),
    }
    return HookResult.passed(
        f"quiz comment on {len(posted) + len(posting)} thread(s), digest {digest}",
        surface=_surface_with(ctx, "quiz", node, entry),
    )


# -- quiz-attested ----------------------------------------------------------------------
def _when(value: str | None) -> datetime | None:
    # ISO-8601 (``Z`` accepted); a time without zone is UTC, so all compare.
    try:
        parsed = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def latest_editor(edits: CommentEdits) -> tuple[str, str, str, str]:
    """Who made the latest edit, cross-checked (issue #3 §1: never trust the order).

    Returns:
        ``(editor, editor_type, edited_at, problem)``: ``problem`` is "" when the editor is
        known, else a sentence (never edited, no login, unparsable times, or the history
        disagrees with the comment's ``editor``/``last_edited_at``).
    """
    if not edits.edits:
        return "", "", "", "the comment was never edited"
    timed = [(_when(e.edited_at), e) for e in edits.edits]
    if any(at is None for at, _ in timed):
        return "", "", "", "an edit has no readable time"
    last = max(enumerate(timed), key=lambda item: (item[1][0], item[0]))[1][1]
    if not last.editor:
        return "", "", last.edited_at, "the latest edit names no editor"
    if not edits.editor or normalize_login(edits.editor) != normalize_login(last.editor):
        return "", "", last.edited_at, "the edit history disagrees with the comment's editor"
    newest, last_at = _when(edits.last_edited_at), _when(last.edited_at)
    if edits.last_edited_at and (newest is None or (last_at is not None and newest > last_at)):
        return "", "", last.edited_at, "the edit history misses the latest edit"
    kind = "Bot" if "Bot" in (last.editor_type, edits.editor_type) else last.editor_type
    return last.editor, kind, last.edited_at, ""


def _posted(ctx: HookContext, node: str) -> Mapping[str, Any]:
    entry = (ctx.state.surface.get("quiz") or {}).get(node)
    return entry if isinstance(entry, Mapping) else {}


def _unverified(ctx: HookContext, node: str, comment_id: Any, problem: str) -> HookResult:
    ctx.log("graph.quiz_unverified", {"node": node, "commentId": comment_id, "reason": problem})
    return HookResult.wait(f"the quiz tick on {node} could not be verified: {problem}",
                           unverified=True)


def _refused(ctx: HookContext, node: str, editor: str, body: str, why: str) -> HookResult:
    # Logged once per body hash: the poller and webhook may both deliver the same tick.
    body_hash = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    seen = list((ctx.state.surface.get("quizRefused") or {}).get(node) or ())
    data: dict[str, Any] = {}
    if body_hash not in seen:
        ctx.log("graph.quiz_refused", {"node": node, "editor": editor})
        data["surface"] = _surface_with(ctx, "quizRefused", node, [*seen, body_hash])
        _tell_refused(ctx, node, editor, f"the quiz box was last edited by {at_login(editor)}, "
                      f"{why}", body_hash)
    return HookResult.wait(
        f"the quiz box on {node} was last edited by {at_login(editor)}, {why}; an authorized "
        "user must tick it",
        **data,
    )


def _tell_refused(ctx: HookContext, node: str, who: str, why: str, key: str) -> None:
    """Say on the thread, once per refused tick or typed line, that an attestation does
    not count and why (issue 23 §2: approval gates already say "Not counted"); the marker
    names the node, the person and the tick's body hash or the typed line's comment id."""
    login = normalize_login(who) or "unknown"
    body = (f"🚫 **Not counted — `{node}`**: the attestation by @{login} does not count: "
            f"{why}. An authorized user must {_answer(ctx)}.")
    ctx.emit(PostComment(ctx.ref, with_self_marker(
        body, f"<!-- the-loop:attestation-refused {node} {login} {key} -->")))


def _refused_typed(ctx: HookContext, node: str) -> list[tuple[Comment, str]]:
    # The event's typed lines of this quiz that do not count, with the reason (a bot, or
    # someone the gate's rule refuses); loopgate's own comments quote the line and are no
    # attempt at all.
    kind, refused = quiz_kind(node), []
    for c in event_comments(ctx):
        if not attestation_ticked(c.body, kind) or is_self_authored(c, ctx.settings):
            continue
        if c.actor.is_bot:
            refused.append((c, "a bot never attests"))
            continue
        verdict = authorize_person(ctx, c.author, attesting=True)
        if not verdict.allowed:
            refused.append((c, verdict.reason))
        elif not written_during(ctx, node, c):  # issue 19 §2: an earlier visit's line
            refused.append((c, earlier_line_reason(visit_number(ctx, node))))
    return refused


def _with_typed_refusals(ctx: HookContext, node: str, result: HookResult) -> HookResult:
    """A waiting quiz names, in its wait and once on the thread per comment, each typed
    line of the event that did not count (issue 23 §2: a refused attestation from the CLI
    was silent)."""
    if result.kind != WAIT:
        return result
    refused = _refused_typed(ctx, node)
    for comment, why in refused:
        ctx.log("graph.quiz_refused", {"node": node, "editor": comment.author or "",
                                       "commentId": comment.id, "reason": why})
        _tell_refused(ctx, node, comment.author or "", why, str(comment.id))
    if not refused:
        return result
    names = ", ".join(f"{at_login(c.author or 'unknown')} ({why})" for c, why in refused)
    return replace(result, reason=f"{result.reason} (not counted: {names})")


def _attested(ctx: HookContext, node: str, attestation: Attestation) -> HookResult:
    ctx.log(
        "graph.quiz_attested",
        {"node": node, "by": attestation.attested_by, "comment": attestation.comment},
    )
    safe_notify(
        ctx,
        "quiz-attested",
        "quiz-attested",
        {
            "workItem": str(ctx.ref),
            "node": node,
            "attestedBy": attestation.attested_by,
            "comment": attestation.comment,
        },
    )
    return HookResult.passed(f"attested by {attestation.attested_by}", decision=attestation)


def genuine_quiz_comment(settings: Any, posted_ids: Any, edits: CommentEdits) -> bool:
    """True when ``edits`` is loopgate's own quiz comment (abuse case 6): its marker, its
    author (kinds and ids compared: GraphQL names an App's bot without "[bot]", and a
    ``User`` named like the App is not loopgate, issue 9 §1) and one of ``posted_ids`` (the
    ids recorded posting it; an empty set accepts any id). Pure; ``loopgate verify`` (issue
    22 §3) uses it too."""
    if SELF_MARKER not in (edits.body or ""):
        return False
    if settings.bot.known and not settings.is_loopgate(edits.author_actor):
        return False
    ids = set(posted_ids or ())
    return not ids or edits.comment_id in ids


def _check_marked(ctx: HookContext, node: str, digest: str, edits: CommentEdits) -> str:
    ids = {c.get("id") for c in _posted(ctx, node).get("comments") or () if isinstance(c, Mapping)}
    return quiz_comment_problem(ctx.settings, ids, node, digest, edits)


def quiz_comment_problem(settings: Any, posted_ids: Any, node: str, digest: str,
                         edits: CommentEdits) -> str:
    """"" when ``edits`` is ``node``'s genuine (:func:`genuine_quiz_comment`), current
    (its marker carries ``digest``), ticked quiz comment; else why not, one sentence.
    Pure; the quiz gate and ``loopgate verify`` (issue 22 §3) share it."""
    if not has_quiz_marker(edits.body, node, digest):
        return f"comment {edits.comment_id} is not the current quiz comment of {node}"
    if not genuine_quiz_comment(settings, posted_ids, edits):
        return f"comment {edits.comment_id} is not loopgate's own quiz comment"
    if not attestation_ticked(edits.body, quiz_kind(node)):
        return f"the box of comment {edits.comment_id} is not ticked"
    return ""


def _check_attestation(
    ctx: HookContext, node: str, digest: str, att: Mapping[str, Any]
) -> HookResult:
    comment_id = att.get("comment_id")
    if not isinstance(comment_id, int) or isinstance(comment_id, bool):
        return _unverified(ctx, node, comment_id, "the attestation names no comment id")
    try:
        found = ctx.ports.tracker.comment_edits([comment_id])
    except TrackerError as exc:
        return _unverified(ctx, node, comment_id, f"the edit lookup failed ({exc})")
    edits = found.get(comment_id)
    if edits is None:
        return _unverified(ctx, node, comment_id, f"comment {comment_id} was not found")
    problem = _check_marked(ctx, node, digest, edits)
    if problem:
        return HookResult.wait(problem)
    editor, editor_type, edited_at, problem = latest_editor(edits)
    if problem:
        return _unverified(ctx, node, comment_id, problem)
    if ctx.settings.is_loopgate(edits.editor_actor):
        # A token-mode loopgate is a User: its own re-render is not a person's tick.
        return _refused(ctx, node, editor, edits.body, "loopgate itself")
    if editor_type == "Bot":  # issue 9 §1: a Bot never attests, whatever the allow-list
        return _refused(ctx, node, editor, edits.body, "a bot")
    verdict = authorize_person(ctx, editor, attesting=True)
    if not verdict.allowed:  # issue 11 §2: the gate's attester rule (teams, assignee-or-author)
        why = ("who is not authorized" if " is not among the approvers" in verdict.reason
               and ";" not in verdict.reason else f"who may not attest: {verdict.reason}")
        return _refused(ctx, node, editor, edits.body, why)
    attestation = Attestation(at=ctx.now_iso(), attested_by=at_login(editor),
                              attested_at=edited_at, comment=edits.url,
                              comment_id=comment_id, via="tick")
    return _attested(ctx, node, attestation)


def _typed(ctx: HookContext, node: str) -> HookResult | None:
    kind = quiz_kind(node)
    # A Bot never attests, typed or ticked, whatever the allow-list says (issue 9 §1).
    typed = [c for c in event_comments(ctx)
             if attestation_ticked(c.body, kind) and not c.actor.is_bot
             and not is_self_authored(c, ctx.settings) and written_during(ctx, node, c)
             and authorize_person(ctx, c.author, attesting=True).allowed]
    comment = latest(typed)
    if comment is None:
        return None
    attestation = Attestation(at=ctx.now_iso(), attested_by=at_login(comment.author),
                              attested_at=comment.created_at or ctx.now_iso(),
                              comment=comment.url, comment_id=comment.id, via="typed")
    return _attested(ctx, node, attestation)


def wrong_kind_typers(ctx: HookContext, node: str) -> list[str]:
    """Who, in the event, typed the other quiz's attestation line at ``node``.

    Args:
        ctx: the hook's context (its event's comments and the settings).
        node: the quiz node waiting (its kind picks the line that counts).

    Returns:
        The sorted ``@login``s of the event's non-self-authored comments that carry the
        other kind's ticked line and not this node's (empty when there are none).
    """
    kind = quiz_kind(node)
    other = _other_kind(kind)
    return sorted({
        at_login(c.author or "unknown")
        for c in event_comments(ctx)
        if attestation_ticked(c.body, other) and not attestation_ticked(c.body, kind)
        and not is_self_authored(c, ctx.settings)
    })


def _other_kind(kind: str) -> str:
    return "code" if kind == "spec" else "spec"


def _with_ignored(ctx: HookContext, node: str, result: HookResult) -> HookResult:
    # Issue 14 §5: a typed line of the other quiz is named in the wait, never silent.
    ignored = wrong_kind_typers(ctx, node)
    if result.kind != WAIT or not ignored:
        return result
    kind = quiz_kind(node)
    other = _other_kind(kind)
    note = (f" (ignored {', '.join(ignored)}: typed the {other} quiz line, but {node} "
            f"is the {kind} quiz")
    if ctx.ports.tracker.comments_editable:  # offline, the reason already gives the line
        note += f" — reply with: {attestation_line(kind, ticked=True)}"
    note += ")"
    return replace(result, reason=result.reason + note)


def _stale(ctx: HookContext, node: str, posted: str, current: str) -> HookResult:
    what = ("the delivering pull requests got new commits" if _binds_heads(
        ctx.params.get("digest")) else "the spec changed")
    safe_notify(
        ctx,
        "quiz-attested",
        "quiz-stale",
        {"workItem": str(ctx.ref), "node": node, "posted": posted, "current": current,
         "why": what},
    )
    return HookResult.passed(
        f"{what} since the quiz was posted (digest {posted} → {current})",
        outcome=STALE,
    )


def _recorded_present(ctx: HookContext, node: str) -> bool:
    """True unless every quiz comment recorded for ``node`` is gone from its thread (someone
    deleted it). A tick event proves its comment exists, so callers ask only otherwise;
    a failed read counts as present (never post twice on a guess)."""
    for posted in _posted(ctx, node).get("comments") or ():
        try:
            target = WorkItemRef.parse(str(posted.get("target") or ctx.ref))
            if any(c.id == posted.get("id") for c in ctx.ports.tracker.list_comments(target)):
                return True
        except (TrackerError, ValueError):
            return True
    return False


def _post_late(ctx: HookContext, node: str) -> HookResult | None:
    """Retry the entry hook's post when no quiz comment was recorded, or the recorded one was
    deleted (design "Error handling": the gate must not wait on a box nobody can see after
    a tracker outage or a deletion; the next comment or ``loopgate advance`` reposts).

    Returns:
        None when a comment is recorded (or the node has no such entry hook); otherwise a
        wait, carrying the newly recorded surface when the post now succeeded.
    """
    entry = _posted(ctx, node)
    if not entry_is_current(ctx, node, entry):
        entry = {}  # an earlier visit's quiz comment: this visit posts its own (issue 19 §2)
    if entry.get("posting"):  # queued: the performer records it once it is on the thread
        return HookResult.wait(posting_reason(node, ctx.ports.tracker.comments_editable))
    if entry.get("postFailed"):
        return HookResult.wait(f"the {node} comment could not be posted "
                               f"({entry['postFailed']}); an operator can re-queue it "
                               "with `loopgate effects retry`")
    if entry.get("comments") and (
        isinstance(ctx.event.get("attestation"), Mapping) or _recorded_present(ctx, node)
    ):
        return None
    entry_hook = next((h for h in ctx.node.entry if h.name == "post-quiz-attestation"), None)
    if entry_hook is None:
        return None
    result = post_quiz_attestation(replace(ctx, params=entry_hook.params))
    surface = result.data.get("surface") or {}
    if result.kind != PASS:
        return HookResult.wait(f"the {node} comment is not posted yet ({result.reason}); "
                               "retried on the next event",
                               **({"surface": surface} if surface else {}))
    data = {"workItem": str(ctx.ref), "node": node, "event": "quiz-pending", "commentUrls": []}
    safe_notify(ctx, "quiz-attested", "quiz-pending", data, links=quiz_record(node))
    return HookResult.wait(
        f"the {node} comment is posted again; waiting for an authorized user to "
        f"{_answer(ctx)}",
        surface=surface,
    )


def _rebind(ctx: HookContext, node: str) -> HookResult:
    """A code quiz posted before it covered the pull requests' heads (digest ``-``, an item
    in flight when issue 19 §3 shipped): post it again bound to the heads, and wait. Its
    explainer still stands, so the item is not sent back for it."""
    entry_hook = next((h for h in ctx.node.entry if h.name == "post-quiz-attestation"), None)
    if entry_hook is None:
        return HookResult.wait(f"the {node} quiz does not cover the pull requests' heads")
    result = post_quiz_attestation(replace(ctx, params=entry_hook.params))
    surface = result.data.get("surface") or {}
    if result.kind != PASS:
        return HookResult.wait(f"the {node} comment is not posted yet ({result.reason}); "
                               "retried on the next event",
                               **({"surface": surface} if surface else {}))
    return HookResult.wait(f"the {node} comment is posted again, now covering the pull "
                           f"requests' heads; waiting for an authorized user to "
                           f"{_answer(ctx)}", surface=surface)


@hook("quiz-attested", params=("digest",))
def quiz_attested(ctx: HookContext) -> HookResult:
    """Gate a quiz node on an attributed tick (design C4).

    Returns:
        pass with outcome ``stale`` when the spec digest moved; pass with decision an
        :class:`~engine.records.Attestation` (stored as ``{at, attestedBy, attestedAt,
        comment, commentId, via}``) for an authorized tick
        (or typed line); otherwise wait with the reason.
    """
    node = ctx.node.id
    return _with_ignored(ctx, node, _with_typed_refusals(ctx, node, _quiz_attested(ctx, node)))


def _earlier_tick(ctx: HookContext, node: str, earlier: Sequence[int]) -> HookResult | None:
    """A wait when the event's tick is on an earlier visit's quiz comment (issue 19 §2),
    said once on the thread per comment and visit; None otherwise."""
    att = ctx.event.get("attestation")
    comment_id = att.get("comment_id") if isinstance(att, Mapping) else None
    if comment_id not in earlier:
        return None
    visit = visit_number(ctx, node)
    why = earlier_comment_reason(node, int(str(comment_id)), visit)
    key = f"visit-{visit}-comment-{comment_id}"
    seen = list((ctx.state.surface.get("quizRefused") or {}).get(node) or ())
    if key in seen:
        return HookResult.wait(why)
    ctx.log("graph.quiz_refused", {"node": node, "commentId": comment_id, "reason": why})
    try:
        edits = ctx.ports.tracker.comment_edits([int(str(comment_id))]).get(int(str(comment_id)))
    except TrackerError:
        edits = None
    who = latest_editor(edits)[0] if edits is not None else ""
    _tell_refused(ctx, node, who, why, key)
    return HookResult.wait(why, surface=_surface_with(ctx, "quizRefused", node, [*seen, key]))


def _with_note(result: HookResult, note: HookResult | None) -> HookResult:
    # ``result`` (its surface kept) whose reason also names why ``note`` did not count.
    if note is None or result.kind != WAIT:
        return result
    data = dict(result.data)
    surface = {**dict(note.data.get("surface") or {}), **dict(data.get("surface") or {})}
    if surface:
        data["surface"] = surface
    return HookResult.wait(f"{note.reason}; {result.reason}", **data)


def _digest_check(ctx: HookContext, node: str) -> HookResult | str:
    # The current digest, or what to do instead: wait (unreadable), re-post bound to the
    # heads, or answer stale (the spec or the heads moved since the recorded quiz).
    try:
        digest = spec_digest(ctx, ctx.params.get("digest"))
    except (TrackerError, OSError, ValueError) as exc:
        return HookResult.wait(f"could not read the spec files to check the quiz digest: {exc}",
                               unverified=True)
    posted = str(_posted(ctx, node).get("digest") or "")
    if posted == NO_DIGEST and digest != NO_DIGEST and _binds_heads(ctx.params.get("digest")):
        return _rebind(ctx, node)
    if digest != NO_DIGEST and posted and posted != digest:
        return _stale(ctx, node, posted, digest)
    return digest


def _quiz_attested(ctx: HookContext, node: str) -> HookResult:
    entry = _posted(ctx, node)
    earlier = _earlier_tick(ctx, node, earlier_ids(ctx, node, entry))
    if entry and not entry_is_current(ctx, node, entry):
        # Sent back as a new visit without the entry hook (a push): a moved digest still
        # sends the item to the explainer before a new quiz comment is posted here.
        moved = _digest_check(ctx, node)
        if isinstance(moved, HookResult) and moved.kind == PASS:
            return moved
    late = _post_late(ctx, node)
    if late is not None:
        return _typed(ctx, node) or _with_note(late, earlier)
    if earlier is not None:
        return _typed(ctx, node) or earlier
    checked = _digest_check(ctx, node)
    if isinstance(checked, HookResult):
        return checked
    digest = checked
    att = ctx.event.get("attestation")
    result = _check_attestation(ctx, node, digest, att) if isinstance(att, Mapping) else None
    if result is not None and result.kind == PASS:
        return result
    typed = _typed(ctx, node)
    if typed is not None:
        return typed
    if result is not None:
        return result
    return HookResult.wait(_waiting_reason(ctx, node))


def _answer(ctx: HookContext) -> str:
    return _answer_words(ctx.ports.tracker.comments_editable)


def _answer_words(editable: bool) -> str:
    # What a person does to the quiz comment: tick it, or offline reply with its line.
    return "tick it" if editable else "reply with its line"


def _waiting_reason(ctx: HookContext, node: str) -> str:
    return waiting_reason(node, ctx.ports.tracker.comments_editable)


def waiting_reason(node: str, editable: bool) -> str:
    """The wait reason of quiz node ``node`` once its comment is on the thread.

    Args:
        node: the quiz node (``spec-quiz``, ``code-quiz``).
        editable: the tracker's ``comments_editable`` (GitHub: tick the box; the local
            tracker: reply with the typed line).
    """
    kind = quiz_kind(node)
    if editable:
        return f"waiting for an authorized user to tick the {kind} quiz box on {node}"
    return (f"waiting for an authorized user to reply on {node} with the {kind} quiz line: "
            f"{attestation_line(kind, ticked=True)}")


def posting_reason(node: str, editable: bool) -> str:
    """The wait reason of quiz node ``node`` while its comment is queued to be posted."""
    return (f"the {node} comment is being posted; waiting for an authorized user to "
            f"{_answer_words(editable)} once it is there")


def reason_once_posted(reason: str, node: str, editable: bool) -> str | None:
    """The wait reason to keep once ``node``'s quiz comment was posted, when ``reason`` still
    says it is being posted (issue 23: it kept saying so after the post); None when
    ``reason`` is another one (leave it). Whatever followed the posting words (a note on
    ignored attestations) is kept."""
    posting = posting_reason(node, editable)
    if not reason.startswith(posting):
        return None
    return waiting_reason(node, editable) + reason[len(posting):]
