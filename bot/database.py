"""Which database loopgate uses: a SQLite file (the embedded default) or PostgreSQL (issue 15).

A ``postgresql://`` (or ``postgres://``) URL chooses PostgreSQL, from the first of ``--db``,
``$LOOPGATE_DB``, ``$LOOPGATE_DATABASE_URL`` and loopgate.yaml's ``database`` that is set.
The password never sits in loopgate.yaml: it comes from the environment variable named by
``databasePasswordEnv`` (default ``PGPASSWORD``), and logs and errors name the database as
``user@host:port/dbname`` only.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from bot.config import DB_ENV, Config, default_db_path
from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.store.base import DatabaseStore

__all__ = ["DATABASE_URL_ENV", "is_database_url", "database_url", "database_password",
           "open_store", "describe_database", "check_database"]

log = logging.getLogger(__name__)

#: The environment variable holding a PostgreSQL URL (issue 15 §1).
DATABASE_URL_ENV = "LOOPGATE_DATABASE_URL"
_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(text: str | None) -> bool:
    """True when ``text`` is a PostgreSQL URL rather than a SQLite file path."""
    return bool(text) and str(text).strip().lower().startswith(_SCHEMES)


def database_url(config: Config | None, explicit: str | None = None) -> str | None:
    """The PostgreSQL URL in use, or None when the database is a SQLite file.

    Raises:
        ConfigError: loopgate.yaml's ``database`` URL carries a password (it belongs in
            the environment variable named by ``databasePasswordEnv``).
    """
    configured = config.data.get("database") if config is not None else None
    for candidate in (explicit, os.environ.get(DB_ENV), os.environ.get(DATABASE_URL_ENV),
                      configured):
        if candidate:
            if candidate is configured and is_database_url(candidate):
                _refuse_inline_password(str(candidate))
            return candidate.strip() if is_database_url(candidate) else None
    return None


def _refuse_inline_password(url: str) -> None:
    try:
        has_password = urlsplit(url).password is not None
    except ValueError:
        raise ConfigError("database: not a valid PostgreSQL URL") from None
    if has_password:
        raise ConfigError("database: the URL carries a password; loopgate.yaml holds no "
                          "secrets — remove it and set the environment variable named by "
                          "databasePasswordEnv (default PGPASSWORD)")


def database_password(config: Config | None) -> str | None:
    """The PostgreSQL password from the environment variable ``databasePasswordEnv``
    names (default ``PGPASSWORD``), or None when unset."""
    name = (config.data.get("databasePasswordEnv") if config is not None else None) \
        or "PGPASSWORD"
    return os.environ.get(str(name)) or None


def describe_database(config: Config | None, explicit: str | None = None) -> str:
    """The database in use as people may read it: the SQLite path, or
    ``PostgreSQL user@host:port/dbname`` (never the password)."""
    url = database_url(config, explicit)
    if url is None:
        return str(default_db_path(config, explicit))
    from bridges.postgres.store import describe

    return f"PostgreSQL {describe(url)}"


def check_database(config: Config, explicit: str | None = None) -> str | None:
    """Check the database choice without connecting (``config check``, :func:`open_store`).

    Returns:
        The PostgreSQL URL in use, or None for a SQLite file.

    Raises:
        ConfigError: a password inside loopgate.yaml's URL; a URL without a ``github``
            section (the offline tracker's thread lives in SQLite only).
    """
    url = database_url(config, explicit)
    if url is not None and not config.has("github"):
        raise ConfigError("database: PostgreSQL is for the GitHub bridge's replicas; the "
                          "offline local tracker (no github section) keeps its thread in "
                          "a SQLite file — use a file path, or add the github section")
    return url


def open_store(config: Config, explicit: str | None = None) -> DatabaseStore:
    """Open the configured store: a :class:`~bridges.postgres.store.PostgresStore` for a
    URL, else a :class:`~engine.store.sqlite.SqliteStore` at :func:`default_db_path`.

    Raises:
        ConfigError: a password inside loopgate.yaml's URL; a URL without a ``github``
            section (the offline tracker's thread lives in SQLite only).
        StoreError: the database cannot be opened, reached or migrated.
    """
    url = database_url(config, explicit)
    if url is None:
        from engine.store.sqlite import SqliteStore

        return SqliteStore(default_db_path(config, explicit))
    check_database(config, explicit)
    from bridges.postgres.store import PostgresStore

    store = PostgresStore(url, password=database_password(config))
    log.info("database: PostgreSQL %s", store.where)
    return store
