"""``validate-artifacts``: the exit gate of an agent node (issue #2 §3).

What is checked, through ``ctx.ports.artifacts`` (paths relative to the item's spec dir):

* every artifact the node ``produces`` and ``validates``, plus the hook's ``validates``
  param (a string or a list); ``a|b`` means exactly one of the two exists — none is a
  missing file, both is a block;
* on the *subject* artifacts (the hook's ``validates`` if given, else the node's
  ``validates``, else its ``produces``): ``locked: true`` → YAML front matter
  ``status: approved``; ``sections: [...]`` → each ``## <section>`` heading present with a
  non-empty body; ``checkmarks: complete`` → no ``- [ ]`` left (and at least one box);
* planned absence: an artifact whose author node (the node whose ``produces`` lists it)
  was skipped or will be skipped is not required;
* the explainer records (``evidence/spec-explainer.md``, ``evidence/explainer.md``) also go
  through ``engine.evidence.validate_record`` when that module is present;
* after ``changes requested`` (issue 23): a pass records the digest of each subject in
  ``surface.acceptedFiles[node]``; when a human gate that reviews those files has since
  sent the item back here, the same bytes are not accepted again (block, retriable).

Every failure names the file. A read failure waits (fail closed, retried on the next claim).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import yaml

from engine.graph.model import Graph
from engine.hooks.common import requested_changes, trusted_skipped_ids
from engine.hooks.registry import HookContext, HookResult, hook
from engine.ports import TrackerError

__all__ = [
    "EVIDENCE_SECTIONS",
    "split_alternatives",
    "front_matter",
    "section_body",
    "unticked_boxes",
    "check_text",
    "validate_artifacts",
]

#: Explainer records (explainer design C6) and the section each must hold.
EVIDENCE_SECTIONS = {
    "evidence/spec-explainer.md": "Spec explainer",
    "evidence/explainer.md": "Explainer",
}

_HEADING2 = re.compile(r"^##[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")
_HEADING_1_OR_2 = re.compile(r"^#{1,2}[ \t]")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_UNTICKED = re.compile(r"^[ \t]*[-*+][ \t]+\[ \]", re.MULTILINE)
_TICKED = re.compile(r"^[ \t]*[-*+][ \t]+\[[xX]\]", re.MULTILINE)


class _ReadFailed(Exception):
    """An artifact could not be read (the store failed, not "absent")."""


def split_alternatives(value: Any) -> list[tuple[str, ...]]:
    """A ``validates`` param (``"a|b"`` or a list of such) as tuples of alternatives.

    Raises:
        ValueError: an entry is not a non-empty string.
    """
    items = [value] if isinstance(value, str) else list(value or ())
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"validate-artifacts: not an artifact name: {item!r}")
        out.append(tuple(part.strip() for part in item.split("|") if part.strip()))
    return out


def front_matter(text: str) -> dict[str, Any] | None:
    """The YAML front matter mapping at the top of ``text``, or None when there is none
    (or it is not a mapping / not valid YAML)."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for end, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            try:
                data = yaml.safe_load("\n".join(lines[1:end]))
            except yaml.YAMLError:
                return None
            return data if isinstance(data, dict) else None
    return None


def section_body(text: str, section: str) -> str | None:
    """The body under ``## <section>`` (to the next level-1/2 heading), or None when the
    heading is absent. Headings compare case-insensitively."""
    lines = text.splitlines()
    wanted = section.strip().lower()
    for start, line in enumerate(lines):
        match = _HEADING2.match(line)
        if match and match["title"].strip().lower() == wanted:
            body = []
            for rest in lines[start + 1 :]:
                if _HEADING_1_OR_2.match(rest):
                    break
                body.append(rest)
            return "\n".join(body)
    return None


def unticked_boxes(text: str) -> int:
    """How many ``- [ ]`` checkboxes ``text`` holds."""
    return len(_UNTICKED.findall(text))


def _check_locked(name: str, text: str) -> list[str]:
    meta = front_matter(text)
    if meta is None:
        return [f"{name} has no YAML front matter to check for status: approved"]
    status = str(meta.get("status", "")).strip().lower()
    if status != "approved":
        return [
            f"{name} is not locked: front matter status is {meta.get('status')!r}, not 'approved'"
        ]
    return []


def _check_sections(name: str, text: str, sections: Iterable[str]) -> list[str]:
    problems = []
    for section in sections:
        body = section_body(text, str(section))
        if body is None:
            problems.append(f"{name} has no '## {section}' section")
        elif not _HTML_COMMENT.sub("", body).strip():
            problems.append(f"{name}: section '## {section}' is empty")
    return problems


def _check_checkmarks(name: str, text: str) -> list[str]:
    open_boxes = unticked_boxes(text)
    if open_boxes:
        return [f"{name} has {open_boxes} unticked checkbox(es)"]
    if not _TICKED.search(text):
        return [f"{name} has no checkboxes to check"]
    return []


def check_text(name: str, text: str, params: Any) -> list[str]:
    """Content checks (``locked``, ``sections``, ``checkmarks``) on one artifact.

    Args:
        name: the artifact's name, used in every problem.
        text: its content.
        params: the hook's ``with:`` mapping.

    Returns:
        Problems, each a sentence naming ``name``; empty when all checks pass.
    """
    if not text.strip():
        return [f"{name} is empty: nothing to check"]
    problems = []
    if params.get("locked"):
        problems += _check_locked(name, text)
    if params.get("sections"):
        problems += _check_sections(name, text, params["sections"])
    if params.get("checkmarks") == "complete":
        problems += _check_checkmarks(name, text)
    return problems


def _authors(graph: Graph) -> dict[str, set[str]]:
    # artifact name -> ids of the nodes whose `produces` lists it.
    out: dict[str, set[str]] = {}
    for node in graph.ordered():
        for alts in node.produces:
            for name in alts:
                out.setdefault(name, set()).add(node.id)
    return out


def _entries(ctx: HookContext) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    # (every entry to check for existence, the subject entries for content checks)
    param = split_alternatives(ctx.params.get("validates"))
    node = ctx.node
    subjects = param or list(node.validates) or list(node.produces)
    everything: list[tuple[str, ...]] = []
    for alts in [*node.produces, *node.validates, *param]:
        if alts not in everything:
            everything.append(alts)
    return everything, subjects


def _read(ctx: HookContext, name: str) -> bytes | None:
    try:
        return ctx.ports.artifacts.read(ctx.ref, name)
    except (TrackerError, OSError) as exc:
        raise _ReadFailed(f"could not read {name}: {exc}") from exc


def _path_exists(ctx: HookContext) -> Callable[[str], bool]:
    def exists(path: str) -> bool:
        try:
            return bool(ctx.ports.artifacts.repo_path_exists(ctx.ref, path))
        except (TrackerError, OSError):
            return False  # fail closed: an unverifiable path is a problem in the record

    return exists


def _evidence_problems(ctx: HookContext, name: str, text: str) -> list[str]:
    section = EVIDENCE_SECTIONS.get(name)
    if section is None:
        return []
    try:
        from engine.evidence import validate_record  # lazy: written by the explainer room
    except ImportError:
        return []
    return [f"{name}: {p}" for p in validate_record(text, section, _path_exists(ctx))]


def _check_entry(ctx: HookContext, alts: Sequence[str], subject: bool) -> list[str]:
    found = [(name, data) for name in alts if (data := _read(ctx, name)) is not None]
    if not found:
        return [f"missing {' or '.join(alts)}"]
    if len(found) > 1:
        names = " and ".join(name for name, _ in found)
        return [f"both {names} exist; exactly one of them must"]
    if not subject:
        return []
    name, data = found[0]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{name} is not UTF-8 text"]
    return check_text(name, text, ctx.params) + _evidence_problems(ctx, name, text)


#: Where a pass records its subjects' digests: ``surface[ACCEPTED][node] = {name: hex}``.
ACCEPTED = "acceptedFiles"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _subject_names(subjects: Sequence[tuple[str, ...]]) -> list[str]:
    return [name for alts in subjects for name in alts]


def _accepted_now(ctx: HookContext, subjects: Sequence[tuple[str, ...]]) -> dict[str, Any]:
    # The surface update of a pass: this node's subjects as they are accepted (absent: None).
    files = {name: (None if (data := _read(ctx, name)) is None else _digest(data))
             for name in _subject_names(subjects)}
    accepted = dict(ctx.state.surface.get(ACCEPTED) or {})
    accepted[ctx.node.id] = {**(accepted.get(ctx.node.id) or {}), **files}
    return {ACCEPTED: accepted}


def _unchanged(ctx: HookContext, subjects: Sequence[tuple[str, ...]]) -> str | None:
    """The refusal when a gate requested changes to files this node writes and they are
    still the bytes accepted before; None otherwise (no request, nothing recorded, or a
    file changed)."""
    before = (ctx.state.surface.get(ACCEPTED) or {}).get(ctx.node.id) or {}
    for gate, asked in requested_changes(ctx):
        reviewed = {name for alts in ctx.graph.node(gate).validates for name in alts}
        names = [n for n in _subject_names(subjects) if n in reviewed and before.get(n)]
        if not names:
            continue
        now = {n: (None if (data := _read(ctx, n)) is None else _digest(data)) for n in names}
        if all(now[n] == before[n] for n in names):
            by = f"@{str(asked.get('by') or 'a reviewer').lstrip('@')}"
            return (f"{' and '.join(names)} unchanged since {by} requested changes at "
                    f"{gate}: change what they asked for, then claim again")
    return None


def _has_content_checks(params: Any) -> bool:
    return bool(params.get("locked") or params.get("sections") or params.get("checkmarks"))


@hook("validate-artifacts", params=("validates", "sections", "locked", "checkmarks"))
def validate_artifacts(ctx: HookContext) -> HookResult:
    """Gate an agent node on its artifacts (see the module docstring for the rules).

    Returns:
        pass when every required artifact exists and its checks hold; block naming every
        problem (retriable: the agent fixes the files and claims again); wait when the
        artifact store failed to answer.
    """
    try:
        everything, subjects = _entries(ctx)
    except ValueError as exc:
        return HookResult.block(str(exc), retriable=False)
    if _has_content_checks(ctx.params) and not subjects:
        return HookResult.block(
            f"validate-artifacts on {ctx.node.id} has checks but no artifact to read",
            retriable=False,
        )
    authors = _authors(ctx.graph)
    skipped = trusted_skipped_ids(ctx.graph, ctx.state) - {ctx.node.id}
    problems: list[str] = []
    excused: list[str] = []
    try:
        for alts in everything:
            if any(authors.get(name, set()) & skipped for name in alts):
                excused.append("|".join(alts))
                continue
            problems += _check_entry(ctx, alts, alts in subjects)
        unchanged = None if problems else _unchanged(ctx, subjects)
        accepted = {} if problems or unchanged else _accepted_now(ctx, subjects)
    except _ReadFailed as exc:
        return HookResult.wait(f"{exc}; will check again", unverified=True)
    if problems or unchanged:
        return HookResult.block("; ".join(problems) or str(unchanged), retriable=True)
    note = f" (not required, author skipped: {', '.join(excused)})" if excused else ""
    return HookResult.passed(f"artifacts valid{note}", surface=accepted)
