"""Work item references: ``owner/repo#N``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import WorkItemRefError

__all__ = ["WorkItemRef"]

# GitHub owner and repository names: letters, digits, '-', '_' and '.' (no slash, no '#').
_REF = re.compile(
    r"^(?P<owner>[A-Za-z0-9][A-Za-z0-9._-]*)/(?P<repo>[A-Za-z0-9._-]+)#(?P<number>[1-9][0-9]*)$"
)

# An issue or pull request on github.com (the pull request's number is the item's when the
# item is that pull request's issue; the same rule as the Slack command's parser).
_ISSUE_URL = re.compile(
    r"^https?://(?:www\.)?github\.com/(?P<owner>[A-Za-z0-9][A-Za-z0-9._-]*)/"
    r"(?P<repo>[A-Za-z0-9._-]+)/(?:issues|pull)/(?P<number>[1-9][0-9]*)/?(?:[#?].*)?$")


@dataclass(frozen=True, order=True)
class WorkItemRef:
    """A GitHub issue walked through a graph.

    Attributes:
        owner: the repository owner (user or organisation login), lower-cased.
        repo: the repository name, lower-cased.
        number: the issue number (>= 1).
    """

    owner: str
    repo: str
    number: int

    def __post_init__(self) -> None:
        # GitHub names are case-insensitive: one issue must be one work item, however the
        # config, a webhook payload or a person spells its repository.
        object.__setattr__(self, "owner", self.owner.lower())
        object.__setattr__(self, "repo", self.repo.lower())

    @classmethod
    def parse(cls, text: str) -> WorkItemRef:
        """Parse ``owner/repo#N``.

        Args:
            text: the reference as a person types it.

        Returns:
            The parsed reference.

        Raises:
            WorkItemRefError: when ``text`` is not of that form; the message quotes it.
        """
        match = _REF.match(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise WorkItemRefError(f"not a work item reference: {text!r} (expected owner/repo#N)")
        return cls(match["owner"], match["repo"], int(match["number"]))

    @classmethod
    def parse_stored(cls, text: str, owner: object, repo: object, number: object
                     ) -> WorkItemRef:
        """:meth:`parse` of a stored key ``text`` whose row also holds the ref's parts
        (the ``items`` table: ``item, owner, repo, number``): the same ref, built from the
        parts when ``text`` is of the form and is exactly what they spell, a third of the
        time (``check --all`` reads every item, issue 21 §3); parsed otherwise.

        A stored key must be canonical, ``str()`` of the ref it parses to, as every key
        loopgate writes is (the ref lower-cases owner and repository): a key spelt
        otherwise (``ACME/widgets#5``, or with a space around it) is refused, as a key that
        does not parse (``acme/widgets#013``) is. Read as its ref, it showed as another item's
        key, the item ``load`` never finds under that key. The check costs nothing on the
        first path (the comparison is that path's own); only a key the parts do not spell
        is compared again.

        Raises:
            WorkItemRefError: as :meth:`parse`; or ``text`` is not canonical (the message
                quotes it, ``repr``, and the key it would read as).
        """
        if (type(owner) is str and type(repo) is str and type(number) is int
                and _REF.match(text) is not None):
            ref = cls(owner, repo, number)
            if str(ref) == text:
                return ref
        ref = cls.parse(text)
        if str(ref) != text:
            raise WorkItemRefError(f"not in canonical form: {text!r} would read as "
                                   f"{str(ref)!r} (loopgate writes keys lower-cased, "
                                   "without spaces)")
        return ref

    @classmethod
    def parse_any(cls, text: str) -> WorkItemRef:
        """Parse ``owner/repo#N`` or the URL of an issue or pull request on github.com
        (``https://github.com/owner/repo/issues/N``, a trailing ``#…``/``?…`` ignored): what
        ``/loop check`` takes (issue 12 §6), for the command line too (issue 23).

        Raises:
            WorkItemRefError: neither form; the message quotes the text.
        """
        plain = text.strip() if isinstance(text, str) else text
        match = _ISSUE_URL.match(plain) if isinstance(plain, str) else None
        if match is not None:
            return cls(match["owner"], match["repo"], int(match["number"]))
        try:
            return cls.parse(plain)
        except WorkItemRefError:
            raise WorkItemRefError(f"not a work item reference: {plain!r} (expected "
                                   "owner/repo#N or an issue URL)") from None

    @property
    def repo_full_name(self) -> str:
        """``owner/repo``."""
        return f"{self.owner}/{self.repo}"

    def __str__(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"
