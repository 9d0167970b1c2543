"""Render the configuration reference (Markdown) from ``bot/config.schema.json``.

The README embeds this output between ``<!-- config-reference:start -->`` and
``<!-- config-reference:end -->``; ``tests/test_readme.py`` fails when the two drift.
Regenerate with ``loopgate config reference``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from bot.config import config_schema

__all__ = ["render_reference", "START", "END"]

START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"


def _type(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {spec.get('items', {}).get('type', 'any')}"
    if kind == "object" and "additionalProperties" in spec and "properties" not in spec:
        return "mapping"
    return str(kind)


def _rows(schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, spec in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        if spec.get("type") == "object" and "properties" in spec:
            yield f"| `{path}` | section | | {spec.get('description', '')} |"
            yield from _rows(spec, f"{path}.")
            continue
        each = spec.get("additionalProperties")
        if spec.get("type") == "object" and isinstance(each, dict) and "properties" in each:
            # A mapping of named entries (gates.<node>): one row per entry key.
            yield f"| `{path}` | mapping | | {spec.get('description', '')} |"
            yield from _rows(each, f"{path}.{spec.get('x-keyName', '<name>')}.")
            continue
        default = json.dumps(spec["default"]) if "default" in spec else ""
        default = f"`{default}`" if default else ""
        yield f"| `{path}` | {_type(spec)} | {default} | {spec.get('description', '')} |"


def render_reference(schema: dict[str, Any] | None = None) -> str:
    """The reference table for every key of loopgate.yaml.

    Args:
        schema: the config JSON Schema (default: the shipped one).

    Returns:
        Markdown: one table row per key, ``key | type | default | description``.
    """
    schema = schema or config_schema()
    lines = ["| key | type | default | description |", "|---|---|---|---|", *_rows(schema)]
    return "\n".join(lines) + "\n"
