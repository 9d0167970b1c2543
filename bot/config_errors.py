"""Readable loopgate.yaml errors (issue 14 §7): every error at once, each with its key
path, ``file:line``, and for an unknown key the nearest known one ("did you mean").

:func:`positions` maps key paths to the lines of the YAML text (PyYAML's composed node
tree keeps each node's start mark); :func:`describe` turns one
``jsonschema.ValidationError`` into :class:`Problem` lines a person can act on: an unknown
key names its closest spelling (``difflib``), a pattern names what is expected instead of
printing the regular expression, a wrong type names the expected type.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # imported by bot.config only when a file is refused (issue 21 §3)
    import jsonschema

__all__ = ["Problem", "positions", "describe", "render", "yaml_error", "did_you_mean"]

Path = tuple[str, ...]

#: What a pattern of the schema means, in words (the schema's regular expressions).
PATTERN_WORDS = {
    "^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$":
        "is not a repository: write it as owner/repo, e.g. acme/widgets",
}

_TYPE_WORDS = {"integer": "a whole number", "number": "a number", "string": "text",
               "boolean": "true or false", "array": "a list", "object": "a mapping of keys",
               "null": "nothing"}


@dataclass(frozen=True)
class Problem:
    """One configuration error.

    Attributes:
        path: the key path (``("github", "pollInterval")``; list items by index).
        message: what is wrong, in words.
    """

    path: Path
    message: str

    @property
    def dotted(self) -> str:
        """``github.repos.0`` (or ``(top level)``)."""
        return ".".join(self.path) or "(top level)"


def positions(text: str) -> dict[Path, int]:
    """Key path → 1-based line in ``text`` (the key's line for mapping entries).

    Returns:
        An empty mapping when the text is not YAML (the parse error is reported instead).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    found: dict[Path, int] = {}

    def walk(node: yaml.Node, path: Path) -> None:
        found.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                found[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, str(index)))

    if root is not None:
        walk(root, ())
    return found


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` — did you mean `<closest>`?`` for the nearest of ``known`` to ``key`` (difflib,
    ratio ≥ 0.6, else a case-insensitive match), or ``""`` when none is near. One rule for
    config keys, node and gate names (issue 14 §7, issue 23 §3)."""
    known = list(known)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = [lowered[key.lower()]] if key.lower() in lowered else []
    return f" — did you mean `{close[0]}`?" if close else ""


def _expected_type(expected: Any) -> str:
    kinds = expected if isinstance(expected, list) else [expected]
    return " or ".join(_TYPE_WORDS.get(str(k), str(k)) for k in kinds)


def describe(error: jsonschema.ValidationError) -> list[Problem]:
    """The problems one schema error stands for (one per unknown key).

    Args:
        error: from ``Draft202012Validator.iter_errors``.
    """
    path = tuple(str(p) for p in error.absolute_path)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        known = list(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        return [Problem((*path, str(k)), "unknown key" + did_you_mean(str(k), known))
                for k in extra]
    value = error.instance
    if error.validator == "pattern":
        words = PATTERN_WORDS.get(str(error.validator_value),
                                  "does not have the expected form (see `loopgate config "
                                  "reference`)")
        return [Problem(path, f"{value!r} {words}")]
    if error.validator == "type":
        return [Problem(path, f"expected {_expected_type(error.validator_value)}, "
                              f"got {value!r}")]
    if error.validator == "enum":
        allowed = ", ".join(repr(v) for v in error.validator_value)
        return [Problem(path, f"{value!r} is not one of {allowed}")]
    return [Problem(path, error.message)]


def _line(path: Path, lines: Mapping[Path, int]) -> int | None:
    for end in range(len(path), -1, -1):  # the nearest enclosing key that has a line
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def render(problems: Sequence[Problem], source: str, lines: Mapping[Path, int]) -> str:
    """One line per problem: ``<source>:<line>: <path>: <message>`` (an unknown key reads
    ``unknown key <path>``); more than one get a heading counting them."""
    out = []
    for problem in sorted(problems, key=lambda p: (_line(p.path, lines) or 0, p.path)):
        line = _line(problem.path, lines)
        where = f"{source}:{line}" if line else source
        if problem.message.startswith("unknown key"):
            text = f"unknown key {problem.dotted}{problem.message[len('unknown key'):]}"
        else:
            text = f"{problem.dotted}: {problem.message}"
        out.append(f"{where}: {text}")
    if len(out) == 1:
        return out[0]
    return f"{source}: {len(out)} errors\n" + "\n".join(f"  {line}" for line in out)


def yaml_error(exc: yaml.YAMLError, source: str) -> str:
    """``<file>:<line>:<column>: not valid YAML: <problem>`` (PyYAML's own text names the
    stream ``<unicode string>``; the file and line are what a person needs)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    detail = f"{problem} ({context})" if context else str(problem)
    return f"{where}: not valid YAML: {detail}"
