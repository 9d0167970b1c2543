"""CODEOWNERS: parsing, matching and who owns a pull request's changed files (issue 24 §1).

Pure: the file's text and the changed paths are read through the tracker by the caller
(``Tracker.codeowners_file`` / ``Tracker.changed_files``). GitHub's rules, as
platform-facts.md F5 gives them (GitHub Docs, *About code owners*):

* the file is looked up in ``.github/CODEOWNERS``, then ``CODEOWNERS``, then
  ``docs/CODEOWNERS``; the first found is used (:data:`LOOKUP`);
* one rule a line: a pattern, then owners; ``#`` starts a comment line, and an owner
  token starting with ``#`` starts a trailing comment; ``\\#`` escapes a pattern starting
  with ``#``; ``\\ `` is a space inside a pattern;
* patterns follow gitignore's rules except that ``!`` negation and ``[ ]`` ranges are not
  supported: ``*`` (not ``/``), ``?``, ``**`` across directories, a leading ``/`` anchors to
  the root, a ``/`` inside anchors too, a trailing ``/`` means a directory (everything under
  it), and a pattern that does not end in a wildcard also owns everything under a
  directory of that name (``apps`` = ``apps/**``), while ``docs/*`` owns only the files
  directly in ``docs/``;
* **the last matching pattern wins**; a pattern with no owners leaves its files unowned;
* owners are ``@user``, ``@org/team`` or an e-mail address. loopgate has no way to tell
  which account an address belongs to, so e-mail owners are ignored (said in
  :attr:`CodeOwners.notes`);
* a line GitHub would reject is skipped — the rest of the file still applies — and named
  with its line number in :attr:`CodeOwners.errors` (``config check``-like output).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["LOOKUP", "LineError", "Rule", "CodeOwners", "Ownership", "parse",
           "pattern_regex", "ownership", "owns", "uncovered", "render_errors"]

#: Where GitHub looks, in order; the first file found is used (F5).
LOOKUP = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")

_USER = re.compile(r"^@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_TEAM = re.compile(r"^@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9_.-]+$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class LineError:
    """A line GitHub would reject (skipped): ``line`` number (1-based), the ``text``, and
    ``reason`` (one line)."""

    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text}"


@dataclass(frozen=True)
class Rule:
    """One valid CODEOWNERS line.

    Attributes:
        line: its line number (1-based).
        pattern: the pattern as written (escapes undone).
        owners: ``@user`` / ``@org/team`` owners, lower-cased, in order (e-mails dropped).
        emails: the e-mail owners (ignored; kept to say so).
        regex: the compiled matcher of a repository-relative path (no leading ``/``).
    """

    line: int
    pattern: str
    owners: tuple[str, ...]
    emails: tuple[str, ...]
    regex: re.Pattern[str]


@dataclass(frozen=True)
class CodeOwners:
    """A parsed CODEOWNERS file: its ``path`` (where it was found), the valid ``rules`` in
    file order, and the skipped lines (``errors``)."""

    path: str = ""
    rules: tuple[Rule, ...] = ()
    errors: tuple[LineError, ...] = ()

    def owners_of(self, path: str) -> tuple[str, ...]:
        """The owners of repository path ``path`` (``@user`` / ``@org/team``): the last
        matching rule's; ``()`` when no rule matches or the last match names no owner."""
        name = path.strip().lstrip("/")
        for rule in reversed(self.rules):
            if rule.regex.match(name):
                return rule.owners
        return ()

    @property
    def notes(self) -> tuple[str, ...]:
        """One line per rule whose e-mail owners were ignored."""
        return tuple(f"line {r.line}: e-mail owners ignored (no login known): "
                     + ", ".join(r.emails) for r in self.rules if r.emails)


def _split(line: str) -> list[str]:
    """Whitespace-separated tokens; ``\\ `` keeps a space, ``\\#`` a hash."""
    tokens: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] in " #\t":
            current.append(line[i + 1])
            i += 2
            continue
        if ch.isspace():
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if current:
        tokens.append("".join(current))
    return tokens


def _pattern_problem(raw: str) -> str:
    if raw.startswith("!"):
        return "negation (!) is not supported in CODEOWNERS"
    if "[" in raw or "]" in raw:
        return "character ranges ([ ]) are not supported in CODEOWNERS"
    if "***" in raw:
        return "*** is not a valid pattern"
    return ""


def _owner_problem(owner: str) -> str:
    if _USER.match(owner) or _TEAM.match(owner) or _EMAIL.match(owner):
        return ""
    return f"{owner!r} is neither @user, @org/team nor an e-mail address"


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The matcher of a CODEOWNERS ``pattern`` against a repository-relative path (the
    rules in the module docstring).

    Raises:
        ValueError: the pattern is empty.
    """
    if not pattern or pattern == "/":
        raise ValueError("empty pattern")
    directory = pattern.endswith("/")
    body = pattern.strip("/") if pattern != "/" else ""
    anchored = pattern.startswith("/") or "/" in body
    parts = body.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.append(_segment(part) + ("" if last else "/"))
    core = "".join(out)
    prefix = "^" if anchored else "^(?:.*/)?"
    if body.endswith("**"):
        suffix = "$"
    elif directory:
        suffix = "/.*$"
    elif body.endswith("*"):
        suffix = "$"  # docs/* owns the files in docs/, not deeper (F5's example)
    else:
        suffix = "(?:/.*)?$"
    return re.compile(prefix + core + suffix)


def _segment(part: str) -> str:
    text = []
    for ch in part:
        if ch == "*":
            text.append("[^/]*")
        elif ch == "?":
            text.append("[^/]")
        else:
            text.append(re.escape(ch))
    return "".join(text)


def _rule(number: int, raw: str) -> Rule | LineError | None:
    stripped = raw.strip()
    if not stripped or stripped.startswith("#"):
        return None
    tokens = _split(stripped)
    pattern, owners = tokens[0], []
    for token in tokens[1:]:
        if token.startswith("#"):
            break  # a trailing comment
        owners.append(token)
    problem = _pattern_problem(pattern) or next(
        (p for p in map(_owner_problem, owners) if p), "")
    if problem:
        return LineError(number, stripped, problem)
    try:
        regex = pattern_regex(pattern)
    except ValueError as exc:
        return LineError(number, stripped, str(exc))
    logins = tuple(o.lower() for o in owners if o.startswith("@"))
    emails = tuple(o for o in owners if not o.startswith("@"))
    return Rule(number, pattern, tuple(dict.fromkeys(logins)), emails, regex)


def parse(text: str, path: str = "CODEOWNERS") -> CodeOwners:
    """Parse a CODEOWNERS file.

    Args:
        text: the file's text.
        path: where it was found (for messages).

    Returns:
        :class:`CodeOwners`; never raises (a bad line is skipped and listed in ``errors``).
    """
    rules: list[Rule] = []
    errors: list[LineError] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        found = _rule(number, raw)
        if isinstance(found, Rule):
            rules.append(found)
        elif isinstance(found, LineError):
            errors.append(found)
    return CodeOwners(path, tuple(rules), tuple(errors))


def render_errors(owners: CodeOwners) -> list[str]:
    """``<path>:<line>: <reason>: <text>`` per skipped line (``config check``'s shape)."""
    return [f"{owners.path}:{e.line}: {e.reason}: {e.text}" for e in owners.errors]


@dataclass(frozen=True)
class Ownership:
    """Who owns a work item's change: each changed file and its owners.

    Attributes:
        source: the CODEOWNERS path used ("" when none was found).
        files: ``(path, owners)`` of every changed file of the delivering pull requests,
            sorted by path (``owners`` empty: unowned).
        problem: why nobody can be a code owner here ("" when ``files`` is the answer):
            no delivering pull request, no CODEOWNERS file, a gate that covers no pull
            request.
        errors: the CODEOWNERS lines skipped (for the wait and ``check``).
    """

    source: str = ""
    files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    problem: str = ""
    errors: tuple[str, ...] = field(default=())

    @property
    def owners(self) -> tuple[str, ...]:
        """Every owner of any changed file, in first-seen order."""
        return tuple(dict.fromkeys(o for _, owners in self.files for o in owners))

    def describe(self) -> str:
        """For people: ``the code owners of the changed files (@a, @acme/web)``; the
        CODEOWNERS lines skipped as GitHub skips them are named after the owners (``;
        skipped as GitHub skips it: .github/CODEOWNERS:5: reason: text``), at most two and
        how many more, so a refusal or a wait shows why someone expected is no owner."""
        if self.problem:
            return f"the code owners of the changed files ({self.problem})"
        owners = ", ".join(self.owners) if self.owners else "none own them"
        return f"the code owners of the changed files ({owners}{self.skipped_note()})"

    def skipped_note(self) -> str:
        """``; skipped as GitHub skips it: <path>:<line>: …`` ("" when no line was)."""
        if not self.errors:
            return ""
        more = len(self.errors) - 2
        verb = "them" if len(self.errors) > 1 else "it"
        return (f"; skipped as GitHub skips {verb}: " + "; ".join(self.errors[:2])
                + (f" and {more} more" if more > 0 else ""))


def ownership(owners: CodeOwners | None, changed: Iterable[str]) -> Ownership:
    """The :class:`Ownership` of ``changed`` paths under ``owners`` (None: no file found)."""
    paths = sorted(set(changed))
    if owners is None:
        return Ownership(problem="no CODEOWNERS file in " + ", ".join(LOOKUP),
                         files=tuple((p, ()) for p in paths))
    return Ownership(owners.path, tuple((p, owners.owners_of(p)) for p in paths),
                     errors=tuple(render_errors(owners)))


#: ``(org, team_slug, login) -> bool``, raising when the lookup failed (as
#: :data:`engine.approvals.Membership`).
Membership = Callable[[str, str, str], bool]


def owns(login: str, owners: Sequence[str], membership: Membership | None
         ) -> tuple[bool, str, list[str]]:
    """Whether ``login`` is one of ``owners`` (directly or through a team).

    Returns:
        ``(owns, team, failed)``: ``team`` is the ``org/team`` that made them an owner
        ("" for a login); ``failed`` names teams whose lookup raised (fail closed: not an
        owner through them).
    """
    name = login.lower().lstrip("@")
    failed: list[str] = []
    for owner in owners:
        bare = owner.lstrip("@")
        if "/" not in bare:
            if bare == name:
                return True, "", failed
            continue
        org, _, team = bare.partition("/")
        if membership is None:
            failed.append(f"{bare} (no team lookup available)")
            continue
        try:
            if membership(org, team, name):
                return True, bare, failed
        except Exception as exc:  # noqa: BLE001 -- any failed lookup: not an owner
            failed.append(f"{bare} ({str(exc).strip()[:160] or type(exc).__name__})")
    return False, "", failed


def uncovered(files: Mapping[str, Sequence[str]] | Ownership, approvers: Iterable[str],
              membership: Membership | None) -> tuple[str, ...]:
    """The owned changed files none of whose owners is among ``approvers``
    (``codeowners: all-files``); unowned files need no one (as on GitHub).

    Args:
        files: path -> owners, or an :class:`Ownership`.
        approvers: the logins whose approvals were counted.
        membership: team lookups (a failure: not covered through that team).
    """
    items = files.files if isinstance(files, Ownership) else tuple(files.items())
    people = list(dict.fromkeys(a.lower() for a in approvers))
    out = []
    for path, owners in items:
        if owners and not any(owns(p, owners, membership)[0] for p in people):
            out.append(path)
    return tuple(out)
