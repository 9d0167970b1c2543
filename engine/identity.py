"""Who did something on the tracker: one identity model for REST, webhooks and GraphQL.

GitHub names the same actor differently depending on where you look
(``../shared/platform-facts.md`` A7):

* REST objects and webhook payloads: ``user.login`` is ``loopgate[bot]`` with
  ``user.type == "Bot"`` for a GitHub App's bot, and ``user.id`` is its numeric id;
* GraphQL: the same actor is ``{__typename: "Bot", login: "loopgate", databaseId: …}``
  — no ``[bot]`` suffix (``dependabot[bot]`` is ``dependabot``).

So an :class:`Actor` is ``(login, kind, id)`` and two actors are the same when their kinds
agree and, where both ids are known, their ids agree; otherwise their *canonical names*
agree (lower case, no leading ``@``, and for a ``Bot`` no ``[bot]`` suffix). A ``User``
whose login equals an App's slug is therefore never taken for that App's bot (issue 9 §1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["USER", "BOT", "UNKNOWN", "Actor", "canonical_login", "parse_id"]

#: ``Actor.kind`` values, as GitHub spells ``type`` (REST) and ``__typename`` (GraphQL).
USER = "User"
BOT = "Bot"
#: A kind nobody told us (an offline thread, a login typed in config without a suffix).
UNKNOWN = ""

_BOT_SUFFIX = "[bot]"


def canonical_login(login: str | None, kind: str = UNKNOWN) -> str:
    """The comparable form of a login: stripped, lower case, no leading ``@``; for a bot
    (``kind == "Bot"``, or a login ending in ``[bot]``) without the ``[bot]`` suffix.

    Args:
        login: a login as REST, a webhook, GraphQL or a person wrote it (None → "").
        kind: ``User``, ``Bot`` or "" (unknown).

    Returns:
        The canonical name ("" for a missing login).
    """
    name = (login or "").strip().lstrip("@").lower()
    if name.endswith(_BOT_SUFFIX) and kind in (BOT, UNKNOWN):
        name = name[: -len(_BOT_SUFFIX)]
    return name


def _kind_of(login: str, kind: str) -> str:
    if kind:
        return kind
    return BOT if login.strip().lower().endswith(_BOT_SUFFIX) else UNKNOWN


def parse_id(value: Any) -> int | None:
    """A GitHub numeric id from JSON: an int, or a string of digits (GraphQL's ``BigInt``,
    e.g. ``fullDatabaseId``); None for anything else (a bool is no id)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


@dataclass(frozen=True)
class Actor:
    """A GitHub (or offline) actor.

    Attributes:
        login: the login as the source spelled it (``loopgate[bot]`` from REST,
            ``loopgate`` from GraphQL); "" when unknown (a deleted account).
        kind: ``User``, ``Bot``, another GraphQL ``__typename`` (``Mannequin``,
            ``Organization``), or "" when the source did not say.
        id: the numeric account id (REST ``user.id``, GraphQL ``databaseId``), or None.
    """

    login: str
    kind: str = UNKNOWN
    id: int | None = None

    @classmethod
    def from_login(cls, login: str | None, *, id: int | None = None) -> Actor:  # noqa: A002
        """An actor known by login only: ``name[bot]`` is a ``Bot``, anything else of
        unknown kind (compared by name alone)."""
        text = (login or "").strip()
        return cls(text, _kind_of(text, UNKNOWN), id)

    @classmethod
    def from_rest(cls, user: Mapping[str, Any] | None) -> Actor:
        """From a REST or webhook ``user``/``sender`` object (``login``, ``type``, ``id``);
        a missing object is the unknown actor ``Actor("")``."""
        if not isinstance(user, Mapping):
            return cls("")
        login = str(user.get("login") or "")
        return cls(login, _kind_of(login, str(user.get("type") or "")),
                   parse_id(user.get("id")))

    @classmethod
    def from_graphql(cls, actor: Mapping[str, Any] | None) -> Actor:
        """From a GraphQL ``Actor`` (``__typename``, ``login``, ``databaseId`` when asked);
        ``null`` (a deleted account, platform-facts A7) is the unknown actor."""
        if not isinstance(actor, Mapping):
            return cls("")
        return cls(str(actor.get("login") or ""), str(actor.get("__typename") or ""),
                   parse_id(actor.get("databaseId")))

    @property
    def name(self) -> str:
        """:func:`canonical_login` of this actor."""
        return canonical_login(self.login, self.kind)

    @property
    def known(self) -> bool:
        """True when the actor has a login (GitHub named somebody)."""
        return bool(self.name)

    @property
    def is_bot(self) -> bool:
        """True for a ``Bot`` (or a ``name[bot]`` login of unknown kind)."""
        return self.kind == BOT

    def same_as(self, other: Actor) -> bool:
        """True when both name the same account.

        Kinds must agree when both are known (a ``User`` named ``loopgate`` is not the
        ``Bot`` ``loopgate``); ids decide when both are known; otherwise canonical names.
        An unknown actor is nobody: it matches nothing.
        """
        if not (self.known and other.known):
            return False
        if self.kind and other.kind and self.kind != other.kind:
            return False
        if self.id is not None and other.id is not None:
            return self.id == other.id
        return self.name == other.name
