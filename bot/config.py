"""loopgate.yaml: loading, validation against ``bot/config.schema.json``, defaults.

The file is validated as a whole by one JSON Schema; an unknown key is an error that
names the key's path (``slack.chanel``). Secrets are never in this file: it names the
environment variables that hold them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from engine.approvals import ApprovalRule
from engine.errors import ConfigError
from engine.settings import EngineSettings

__all__ = ["Config", "load_config", "config_schema", "default_db_path", "CONFIG_ENV", "LOCAL_DB"]

CONFIG_ENV = "LOOPGATE_CONFIG"
DB_ENV = "LOOPGATE_DB"
# The database beside loopgate.yaml, so each folder has its own items (git-ignore it).
LOCAL_DB = Path(".loopgate") / "loopgate.db"


@lru_cache(maxsize=1)
def config_schema() -> dict[str, Any]:
    """The JSON Schema of loopgate.yaml (package data)."""
    text = resources.files("bot").joinpath("config.schema.json").read_text("utf-8")
    return json.loads(text)


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


def _error_message(error: jsonschema.ValidationError, source: str) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        keys = ", ".join(f"{path}.{k}" if path else k for k in extra)
        return f"{source}: unknown key {keys}"
    return f"{source}: {path or '(top level)'}: {error.message}"


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
        return (base / os.path.expanduser(ws)).resolve()

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
        )

    def gate_rules(self) -> dict[str, ApprovalRule]:
        """``gates`` as node id -> :class:`~engine.approvals.ApprovalRule` (issue 11 §2).

        Raises:
            ConfigError: a rule that does not read; the message names ``gates.<node>.<key>``.
        """
        rules = self.data.get("gates") or {}
        return {str(node): ApprovalRule.from_json(doc, f"gates.{node}")
                for node, doc in rules.items()}


def validate_mapping(raw: Any, source: str = "loopgate.yaml") -> Config:
    """Validate ``raw`` (parsed YAML) and fill defaults.

    Raises:
        ConfigError: naming the offending key's path.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    validator = jsonschema.Draft202012Validator(config_schema())
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(_error_message(errors[0], source))
    _check_app_bot_login(raw.get("github") or {}, source)
    return Config(_merge(_defaults(config_schema()), raw), None, frozenset(raw))


def _check_app_bot_login(github: dict[str, Any], source: str) -> None:
    # A GitHub App posts as the Bot "<slug>[bot]" (GraphQL calls it "<slug>"); a bare
    # "<slug>" would name a User of that login too, whose look-alike comments must never
    # count as loopgate's (issue 9 §1).
    login = str(github.get("botLogin") or "")
    if github.get("app") and login and not login.lower().endswith("[bot]"):
        raise ConfigError(
            f"{source}: github.botLogin: a GitHub App posts as its bot {login}[bot], not as "
            f"{login!r} (a user of that name is someone else); write {login}[bot] or leave "
            "botLogin unset (it is learned from the App)")


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
        raw = yaml.safe_load(file.read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    cfg = validate_mapping(raw, str(file))
    return Config(cfg.data, file.resolve(), cfg.present)


def default_db_path(config: Config | None = None, explicit: str | None = None) -> Path:
    """Where the state database lives (issue 14 §2).

    Args:
        config: the loaded configuration; its ``database`` key, else its file's folder.
        explicit: ``--db``, when given.

    Returns:
        The first of: ``explicit``, ``$LOOPGATE_DB``, the config's ``database``,
        ``.loopgate/loopgate.db`` beside the config file (when one was found or given),
        ``$XDG_STATE_HOME/loopgate/loopgate.db``, ``~/.local/state/loopgate/loopgate.db``.
    """
    chosen = explicit or os.environ.get(DB_ENV) or (config.data.get("database") if config else None)
    if chosen:
        return Path(os.path.expanduser(chosen))
    if config is not None and config.path is not None:
        return config.path.parent / LOCAL_DB
    state_home = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(state_home) / "loopgate" / "loopgate.db"
