"""Placeholder conversion: the shared statements use SQLite's ``?`` and ``:name``; psycopg
wants ``%s`` and ``%(name)s``."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["to_pg"]

# ``:name`` not preceded by another ``:`` (a ``::type`` cast) or a word character.
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=512)
def to_pg(sql: str) -> str:
    """``sql`` with ``?`` -> ``%s`` and ``:name`` -> ``%(name)s`` (a literal ``%`` doubled).

    The shared statements carry no ``?`` or ``:`` inside string literals, which this relies
    on (they hold only fixed status words).
    """
    text = sql.replace("%", "%%").replace("?", "%s")
    return _NAMED.sub(r"%(\1)s", text)
