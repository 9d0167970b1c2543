"""loopgate.yaml: loading, validation against ``bot/config.schema.json``, defaults.

The file is validated as a whole by one JSON Schema; every error is reported at once,
each naming the key's path and line, an unknown key with its closest known spelling
(``github.pollInterval`` → ``pollIntervalSeconds``; :mod:`bot.config_errors`). Secrets
are never in this file: it names the environment variables that hold them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from bot.config_errors import Problem, describe, positions, render, yaml_error
from engine.approvals import ApprovalRule
from engine.dispatch import AgentConfig
from engine.errors import ConfigError
from engine.graph.fastcheck import Check, compile_check
from engine.settings import EngineSettings

__all__ = ["Config", "load_config", "config_schema", "default_db_path", "database_choice",
           "CONFIG_ENV", "LOCAL_DB"]

CONFIG_ENV = "LOOPGATE_CONFIG"
DB_ENV = "LOOPGATE_DB"
# The database beside loopgate.yaml, so each folder has its own items (git-ignore it).
LOCAL_DB = Path(".loopgate") / "loopgate.db"


@lru_cache(maxsize=1)
def config_schema() -> dict[str, Any]:
    """The JSON Schema of loopgate.yaml (package data)."""
    text = resources.files("bot").joinpath("config.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _fast_check() -> Check | None:
    # The compiled yes/no check of the schema (engine.graph.fastcheck, as graph files
    # have): a valid file is accepted without importing jsonschema, which was a tenth of a
    # CLI command's start-up (issue 21 §3); jsonschema words every refusal.
    return compile_check(config_schema())


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, sub in schema.get("properties", {}).items():
        if sub.get("type") == "object" and "properties" in sub:
            out[key] = _defaults(sub)
        elif "default" in sub and not str(sub["default"]).startswith("$"):
            out[key] = sub["default"]
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key != "identities":
            merged[key] = _merge(base[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class Config:
    """The validated configuration, defaults filled in.

    Attributes:
        data: the merged mapping (schema defaults overlaid by the file).
        path: the file it came from, or None for pure defaults.
        present: the top-level sections the file itself set (``github``, ``slack`` ...).
    """

    data: dict[str, Any]
    path: Path | None = None
    present: frozenset[str] = field(default_factory=frozenset)

    def section(self, name: str) -> dict[str, Any]:
        """A section (``github``, ``server``, ``slack``) with defaults."""
        return dict(self.data.get(name) or {})

    def has(self, name: str) -> bool:
        """True when the file itself configures section ``name``."""
        return name in self.present

    @property
    def workspace(self) -> Path | None:
        """The local checkout, resolved relative to the config file, or None."""
        ws = self.data.get("workspace")
        if not ws:
            return None
        base = self.path.parent if self.path else Path.cwd()
        return (base / os.path.expanduser(str(ws))).resolve()

    def engine_settings(self) -> EngineSettings:
        """The engine's view of this configuration."""
        return EngineSettings(
            authorized_users=tuple(self.data.get("authorizedUsers") or ()),
            execute_keyword=self.data["executeKeyword"],
            start_keyword=self.data["startKeyword"],
            loop=self.data["loop"],
            spec_dir=self.data["specDir"],
            gate_rules=self.gate_rules(),
            merge_gate=bool(self.section("mergeGate").get("enabled", True)) and self.has("github"),
            merge_gate_after=str(self.section("mergeGate").get("after") or "human-approval"),
            merge_gate_vouching=tuple(str(n) for n in
                                      self.section("mergeGate").get("vouching") or ()),
            public_url=str(self.section("server").get("publicUrl") or "").rstrip("/"),
            review_requests=bool(self.section("reviewRequests").get("enabled", True)),
            review_unavailable=tuple(str(n) for n in
                                     self.section("reviewRequests").get("unavailable") or ()),
            review_cap=int(self.section("reviewRequests").get("max") or 15),
            agents=self.agent_config(),
        )

    def unwatched(self, owner: str, repo: str) -> str:
        """Why a work item of ``owner/repo`` cannot be started here ("" when it can): with
        a ``github`` section, only the watched repositories' webhooks and polls ever
        advance an item (compared case-insensitively, as GitHub names are)."""
        if not self.has("github"):
            return ""
        repos = [str(r) for r in self.section("github").get("repos") or ()]
        if f"{owner}/{repo}".lower() in {r.lower() for r in repos}:
            return ""
        return (f"{owner}/{repo} is not a watched repository (github.repos: "
                f"{', '.join(repos) or 'none'}): nothing would ever advance its work items")

    def agent_config(self) -> AgentConfig:
        """``agents`` as an :class:`~engine.dispatch.AgentConfig` (issue 24 §2).

        Raises:
            ConfigError: a value that does not read; the message names its key path
                (``agents.requesters.<bot>``).
        """
        return AgentConfig.from_json(self.data.get("agents"), "agents")

    def gate_rules(self) -> dict[str, ApprovalRule]:
        """``gates`` as node id -> :class:`~engine.approvals.ApprovalRule` (issue 11 §2).

        Raises:
            ConfigError: a rule that does not read; the message names ``gates.<node>.<key>``.
        """
        rules = self.data.get("gates") or {}
        return {str(node): ApprovalRule.from_json(doc, f"gates.{node}")
                for node, doc in rules.items()}


def validate_mapping(raw: Any, source: str = "loopgate.yaml",
                     lines: Mapping[tuple[str, ...], int] | None = None) -> Config:
    """Validate ``raw`` (parsed YAML) and fill defaults.

    Args:
        raw: the parsed file (None = empty).
        source: the file's name, for messages.
        lines: key path → line in the file (:func:`bot.config_errors.positions`), so each
            error says ``file:line``.

    Raises:
        ConfigError: listing every error (issue 14 §7), each with its key path, line and,
            for an unknown key, the closest known one.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys")
    problems = _schema_problems(raw)
    problems += _app_bot_login_problems(raw.get("github") or {})
    if problems:
        raise ConfigError(render(problems, source, lines or {}))
    return Config(_merge(_defaults(config_schema()), raw), None, frozenset(raw))


def _schema_problems(raw: dict[str, Any]) -> list[Problem]:
    """What the schema refuses in ``raw``, worded (:func:`bot.config_errors.describe`);
    [] when the compiled check accepts it, which it does only for what jsonschema
    accepts (``tests/test_config_fastcheck.py``)."""
    fast = _fast_check()
    if fast is not None and fast(raw):
        return []
    import jsonschema

    validator = jsonschema.Draft202012Validator(config_schema())
    return [p for e in validator.iter_errors(raw) for p in describe(e)]


def _app_bot_login_problems(github: Any) -> list[Problem]:
    # A GitHub App posts as the Bot "<slug>[bot]" (GraphQL calls it "<slug>"); a bare
    # "<slug>" would name a User of that login too, whose look-alike comments must never
    # count as loopgate's (issue 9 §1).
    if not isinstance(github, dict):
        return []
    login = str(github.get("botLogin") or "")
    if github.get("app") and login and not login.lower().endswith("[bot]"):
        return [Problem(("github", "botLogin"),
                        f"a GitHub App posts as its bot {login}[bot], not as {login!r} (a user "
                        f"of that name is someone else); write {login}[bot] or leave "
                        "botLogin unset (it is learned from the App)")]
    return []


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping: PyYAML keeps the last
    silently, so a setting would be lost without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, str) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {seen[key]})",
                    key_node.start_mark)
            if isinstance(key, str):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load loopgate.yaml.

    Args:
        path: an explicit file; else ``$LOOPGATE_CONFIG``; else ``./loopgate.yaml`` when
            present; else the defaults.

    Returns:
        The validated :class:`Config`.

    Raises:
        ConfigError: the file is missing (when named explicitly), not YAML, or invalid.
    """
    chosen = path or os.environ.get(CONFIG_ENV)
    if not chosen and Path("loopgate.yaml").is_file():
        chosen = "loopgate.yaml"
    if not chosen:
        return validate_mapping({}, "defaults")
    file = Path(chosen)
    try:
        text = file.read_text("utf-8")
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 -- a SafeLoader
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except IsADirectoryError:  # `--config /tmp`: one line, not a traceback (issue 23 §3)
        raise ConfigError(f"{file} is a directory: give the path of a loopgate.yaml "
                          "file") from None
    except OSError as exc:  # unreadable (permissions, a FIFO gone): name the file and why
        raise ConfigError(f"cannot read the config file {file}: "
                          f"{exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(exc, str(file))) from None
    cfg = validate_mapping(raw, str(file), positions(text))
    return Config(cfg.data, file.resolve(), cfg.present)


DATABASE_URL_ENV = "LOOPGATE_DATABASE_URL"
_URL_SCHEMES = ("postgresql://", "postgres://")


def _is_url(text: str | None) -> bool:
    # Same rule as bot.database.is_database_url (that module imports this one).
    return bool(text) and str(text).strip().lower().startswith(_URL_SCHEMES)


def _chosen(config: Config | None, explicit: str | None) -> tuple[str | None, str]:
    """The first set of ``--db``, ``$LOOPGATE_DB``, ``$LOOPGATE_DATABASE_URL``, the
    config's ``database`` (bot/database.py's order), with the rule that chose it."""
    configured = config.data.get("database") if config is not None else None
    for value, why in ((explicit, "--db"), (os.environ.get(DB_ENV), f"${DB_ENV}"),
                       (os.environ.get(DATABASE_URL_ENV), f"${DATABASE_URL_ENV}"),
                       (configured, "the config's `database`")):
        if value:
            return str(value), why
    return None, ""


def database_choice(config: Config | None = None,
                    explicit: str | None = None) -> tuple[str, str]:
    """The database a command uses and why (``loopgate config show``, issue 14 §2).

    Args:
        config: the loaded configuration.
        explicit: ``--db``, when given.

    Returns:
        ``(where, reason)``: ``where`` is the SQLite path, or ``PostgreSQL
        user@host:port/dbname`` (never the password); the reason names the rule that chose
        it (``--db``, ``LOOPGATE_DB``, ``LOOPGATE_DATABASE_URL``, the config's ``database``,
        beside the config file, the XDG state folder).

    Raises:
        ConfigError: loopgate.yaml's ``database`` URL carries a password.
    """
    from bot.database import describe_database  # bot.database imports this module

    where = describe_database(config, explicit)
    chosen, why = _chosen(config, explicit)
    if chosen:
        return where, why
    if config is not None and config.path is not None:
        return where, f"beside {config.path.name} ({LOCAL_DB})"
    return where, "no loopgate.yaml found: the XDG state folder"


def default_db_path(config: Config | None = None, explicit: str | None = None) -> Path:
    """Where the SQLite state database lives (issue 14 §2).

    Args:
        config: the loaded configuration; its ``database`` key, else its file's folder.
        explicit: ``--db``, when given.

    Returns:
        The first of: ``explicit``, ``$LOOPGATE_DB``, the config's ``database`` (a
        relative path is relative to the config file's folder, like ``workspace``),
        ``.loopgate/loopgate.db`` beside the config file (when one was found or given),
        ``$XDG_STATE_HOME/loopgate/loopgate.db``, ``~/.local/state/loopgate/loopgate.db``.

    Raises:
        ConfigError: the database chosen is a PostgreSQL URL (``$LOOPGATE_DATABASE_URL``
            or a ``postgresql://`` value): it has no file path. The message never
            carries the URL (it may hold a password).
    """
    chosen, why = _chosen(config, explicit)
    if _is_url(chosen):
        raise ConfigError("the database in use is PostgreSQL, not a SQLite file")
    if chosen:
        path = Path(os.path.expanduser(chosen))
        if why == "the config's `database`" and config is not None and config.path is not None:
            # Like `workspace:`: relative to the config file, not to where the command ran.
            return (config.path.parent / path).resolve()
        return path
    if config is not None and config.path is not None:
        return config.path.parent / LOCAL_DB
    state_home = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(state_home) / "loopgate" / "loopgate.db"
