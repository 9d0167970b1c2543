"""``loopgate verify ITEM`` and ``loopgate verify --sha SHA``: re-derive every gate's
verdict from GitHub alone and compare it with loopgate's record and the published check
(issue 22 §3; :mod:`engine.verify` over :class:`bridges.github.audit.AuditSource`).

Exit codes: 0 every gate and check agrees; 1 any difference; 2 GitHub could not be read
(unreachable, a 5xx, a rate limit — one line, never a false "agrees"), or bad input (an
unknown or unstarted item, a malformed sha, a configuration without GitHub); 3 the stored
item cannot be read (``UnreadableItemError``, as every verb).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

import click

from bot.cli.context import CliContext, fail, parse_item
from engine.errors import LoopgateError, UnreadableItemError
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from engine.verify import Verification, verify_item

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services
    from bridges.github.tracker import GitHubTracker

__all__ = ["register", "verify_one", "verify_sha"]

_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


def _github(services: Services) -> GitHubTracker:
    tracker = services.ports.tracker
    if not hasattr(tracker, "graphql") or not hasattr(tracker, "client"):
        fail("verify reads GitHub's records: this configuration has no `github` section "
             "(the local thread has no one else's records to check against)")
    return cast("GitHubTracker", tracker)


def verify_one(services: Services, ref: WorkItemRef, pulls: Sequence[int] | None = None
               ) -> Verification | None:
    """Verify one work item against GitHub (:func:`engine.verify.verify_item`).

    Args:
        services: the wired :class:`bot.services.Services` (a GitHub tracker).
        ref: the work item.
        pulls: compare the check only on these pull requests (None: every open one).

    Returns:
        The verification; None when the item was never started.

    Raises:
        TrackerError: GitHub could not be read.
    """
    from bridges.github.audit import AuditSource

    state = services.store.load(ref)
    if state is None:
        return None
    tracker = services.ports.tracker
    source = AuditSource(tracker, services.settings)
    found = verify_item(services.graph, services.settings, state, source,
                        load=services.store.load,
                        items=lambda n: tracker.items_for_pull_request(ref.owner, ref.repo, n),
                        pulls=pulls)
    return _with_owed(services, ref, found)


def _with_owed(services: Services, ref: WorkItemRef, found: Verification) -> Verification:
    """Note an owed check publish (a ``PublishGate`` still in the outbox): a check that
    differs may only be waiting for it (the next verify tells)."""
    from dataclasses import replace

    from engine.effects import PENDING, RUNNING, PublishGate

    if not found.checks or all(c.agrees for c in found.checks):
        return found
    owed = [r for r in services.store.effects.rows(ref, statuses=(PENDING, RUNNING))
            if isinstance(r.effect, PublishGate)]
    if not owed:
        return found
    note = (f"loopgate still owes GitHub {len(owed)} check publish(es) for this item (the "
            "outbox): a check that differs may be waiting for it")
    return replace(found, notes=(*found.notes, note))


def verify_sha(services: Services, sha: str) -> list[Verification]:
    """Verify every started item whose delivering pull request's head is ``sha`` (the
    check compared on that pull request only); when ``sha`` is a merge group's commit
    loopgate answered (issue 19 §4), every item of every pull request in the group and
    the group's check.

    Raises:
        TrackerError: GitHub could not be read.
    """
    from bridges.github.audit import pulls_with_head_sha

    tracker = _github(services)
    out: list[Verification] = []
    for pull in pulls_with_head_sha(tracker, list(tracker.repos), sha):
        for number in tracker.items_for_pull_request(pull.owner, pull.repo, pull.number):
            found = verify_one(services, WorkItemRef(pull.owner, pull.repo, number),
                               pulls=[pull.number])
            if found is not None:
                out.append(found)
    if not out:
        for group in _merge_groups(services, sha):
            out.extend(_verify_group(services, group))
    return out


def _merge_groups(services: Services, sha: str) -> list[Any]:
    """The merge groups (``PublishMergeGroup`` effects) loopgate answered on ``sha``."""
    from engine.effects import PublishMergeGroup

    seen: dict[str, Any] = {}
    for row in services.store.effects.rows():
        effect = row.effect
        if isinstance(effect, PublishMergeGroup) and effect.head_sha.lower().startswith(sha):
            seen.setdefault(effect.head_sha, effect)
    return list(seen.values())


def _verify_group(services: Services, group: Any) -> list[Verification]:
    """Each item of each pull request in ``group``, then the group commit's check: the
    performer's own rule (:func:`engine.queuegroup.read_group` names the pull requests —
    ref, commit titles and the queue's own list — and :func:`engine.queuegroup.group_verdict`
    accounts for every commit) over the re-derived checks."""
    from bridges.github.audit import AuditSource
    from engine.mergegate import FAILURE, GateCheck
    from engine.ports import merge_queue
    from engine.queuegroup import group_verdict, read_group
    from engine.verify import group_finding, pull_check

    tracker = _github(services)
    queue = merge_queue(tracker)
    if queue is None:
        raise LoopgateError("this tracker has no merge queue: a merge group cannot be verified")
    owner, repo = group.target.owner, group.target.repo
    read = read_group(queue, owner, repo, head_ref=group.head_ref, base_sha=group.base_sha,
                      head_sha=group.head_sha, fallback=group.target.number)
    out: list[Verification] = []
    per_pull: dict[int, tuple[GateCheck, str]] = {}
    for number in read.numbers:
        refs = [WorkItemRef(owner, repo, n)
                for n in tracker.items_for_pull_request(owner, repo, number)]
        found = [(services.store.load(ref), verify_one(services, ref, pulls=[number]))
                 for ref in refs]
        out.extend(v for _, v in found if v is not None)
        pull = next((p for ref in refs[:1] for p in tracker.delivering_pull_requests(ref)
                     if p.number == number and p.state == "open"), None)
        per_pull[number] = ((GateCheck(FAILURE, f"#{number} delivers no open work item"), "")
                            if pull is None else
                            (pull_check(found, [str(r) for r in refs], pull), pull.head_sha))
    expected = group_verdict(queue, owner, repo, read.commits, per_pull)
    published = AuditSource(tracker, services.settings).published_check(owner, repo,
                                                                        group.head_sha)
    finding = group_finding(group.head_sha, expected, published)
    out.append(Verification(f"{owner}/{repo} merge group", checks=(finding,)))
    return out


def _one_line() -> AbstractContextManager[None]:
    """The bridge's warnings (a rate limit closing its guard, urllib3's retries) are said
    once by the command's own line: ``verify`` exits 2 with one line (issue 22 "Bad
    input")."""
    from bridges.github.tracker import quieted

    return quieted("urllib3.connectionpool", "bridges.github")


def _emit(found: list[Verification], fmt: str, sha: str = "") -> None:
    if fmt == "json":
        doc: dict[str, Any] = {"verdict": "agrees" if all(v.agrees for v in found)
                               else "differs", "items": [v.to_json() for v in found]}
        if sha:
            doc["sha"] = sha
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    for verification in found:
        click.echo("\n".join(verification.lines()))


@click.command("verify")
@click.argument("item", metavar="[ITEM]", required=False)
@click.option("--sha", metavar="SHA", help="Instead of ITEM: verify the items whose "
              "delivering pull request's head (or merge group commit) is this commit, and "
              "the check published on it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.pass_obj
def verify_command(obj: CliContext, item: str | None, sha: str | None, fmt: str) -> None:
    """Re-derive ITEM's gate verdicts from GitHub alone (the thread, the edit histories of
    the quiz and decision comments, the delivering pull requests' heads) with the gates'
    own rules, and compare them with loopgate's record and the published `loopgate`
    check. One line per gate and per check: agrees, or differs and what differs.
    Exit 0 all agree, 1 any difference, 2 GitHub unreachable or rate-limited.

    \b
    Example:
      loopgate verify acme/widgets#7
      loopgate verify --sha 3f2a9c1 --format json
    """
    if bool(item) == bool(sha):
        fail("give either ITEM or --sha SHA")
    if sha and not _SHA.match(sha):
        fail(f"--sha: {sha!r} is not a commit sha (7 to 40 hex digits)")
    services = obj.services
    _github(services)
    try:
        with _one_line():
            found = _run(services, item, sha)
    except TrackerError as exc:
        fail(f"GitHub could not be read, nothing verified: {exc}")
    except UnreadableItemError as exc:  # not bad input: the stored item (exit 3)
        fail(str(exc), exc.exit_code)
    except LoopgateError as exc:
        fail(str(exc))
    _emit(found, fmt, sha or "")
    raise SystemExit(0 if all(v.agrees for v in found) else 1)


def _run(services: Services, item: str | None, sha: str | None) -> list[Verification]:
    """The verifications ITEM or ``--sha`` asks for (exit 2 when there is none).

    Raises:
        TrackerError: GitHub could not be read.
    """
    if item:
        ref = parse_item(item)
        one = verify_one(services, ref)
        if one is None:
            fail(f"{ref} is not started: nothing to verify")
        return [one] if one is not None else []
    found = verify_sha(services, str(sha).lower())
    if not found:
        fail(f"no started work item is delivered by an open pull request (or a merge group "
             f"loopgate answered) whose head is {sha}")
    return found


def register(group: click.Group) -> None:
    """Add ``verify`` to ``group``."""
    group.add_command(verify_command)
