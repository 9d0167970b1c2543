"""The engine's error root and its subclasses.

Every error the engine raises on bad input derives from :class:`LoopgateError`; its
message quotes the offender (a node id, an edge, a config path) so a person can fix it.
"""

from __future__ import annotations

__all__ = [
    "LoopgateError",
    "GraphConfigError",
    "ConfigError",
    "WorkItemRefError",
    "ClaimRefused",
    "StoreError",
    "StartupError",
    "UnreadableItemError",
]


class LoopgateError(Exception):
    """Root of every error loopgate raises on purpose."""


class GraphConfigError(LoopgateError):
    """A process graph failed to load or compile; the message names the node, edge or set."""


class ConfigError(LoopgateError):
    """loopgate.yaml is invalid; the message names the offending key's path."""


class StartupError(LoopgateError):
    """A service refused loopgate's credentials or could not be reached at start-up; the
    message is one line naming the cause and the setting (never a secret).

    Attributes:
        exit_code: 2 when refused (a configuration error: deploy/loopgate.service does not
            restart it, ``RestartPreventExitStatus=2``), 1 when unreachable (transient:
            ``Restart=on-failure`` tries again).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class WorkItemRefError(LoopgateError, ValueError):
    """A work item reference is not of the form ``owner/repo#N``."""


class ClaimRefused(LoopgateError):
    """A ``complete`` claim (or another runtime verb) was refused.

    Attributes:
        code: a kebab-case reason code: ``not-started``, ``already-past``, ``not-current``,
            ``unknown-node``, ``finished``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class StoreError(LoopgateError):
    """The state store could not complete a write (for example, still locked after retries)."""


class UnreadableItemError(LoopgateError):
    """A stored work item cannot be read back: its key is not a work item reference as
    loopgate writes it (``acme/widgets#013``, or ``ACME/widgets#5``: a key that parses but
    is not canonical, :meth:`engine.refs.WorkItemRef.parse_stored`), or a column or child
    row (visits, decisions, skips, ...) holds text that is not JSON or JSON of the wrong
    shape. The message names the key and the part, never the stored value.

    Attributes:
        key: the item's stored key, as stored (``items.item``; e.g. ``acme/widgets#013``),
            or its ``repr`` (cut at 120 characters) where it is not printable text of at
            most 120 characters: a newline, a terminal escape, a BLOB, NULL.
        detail: what is wrong, without the key: ``"<part>: <why>"``, e.g. ``"visits row of
            node 'design': not JSON (unexpected character: line 1 column 1 (char 0))"``.
        exit_code: the command line's exit status for it, 3 (0-2 are taken: done, a
            refusal or ``--fail-on``, a usage or configuration error; 1 is also Python's
            for a traceback, which this must not be mistaken for).
    """

    exit_code = 3

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key}: unreadable: {detail}")
        self.key = key
        self.detail = detail
