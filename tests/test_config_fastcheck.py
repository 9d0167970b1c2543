"""loopgate.yaml's compiled schema check (issue 21 §3): it accepts only what jsonschema
accepts, so a valid file is read without importing jsonschema, and every refusal is still
jsonschema's, worded as before."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.config import _defaults, config_schema, validate_mapping
from engine.errors import ConfigError
from engine.graph.fastcheck import compile_check
from tests.schema_mutations import mutate

ROOT = Path(__file__).resolve().parents[1]

#: Values a mutation puts in place of another (wrong types, empty, out of range).
ODD_VALUES: tuple[Any, ...] = ("", "not a repo", "x", 0, -1, 1.5, True, None, [], {}, ["a"],
                               {"x": 1}, 70000, "acme/widgets", 2.0)


def _full() -> dict[str, Any]:
    """Every section with its defaults, plus the keys a real deployment sets."""
    doc = _defaults(config_schema())
    doc["github"]["repos"] = ["acme/widgets", "acme/gadgets"]
    doc["github"]["app"] = {"appId": 12345, "privateKeyEnv": "GITHUB_APP_KEY"}
    doc["github"]["botLogin"] = "loopgate[bot]"
    doc["server"]["signIn"]["clientId"] = "Iv1.abc"
    doc["authorizedUsers"] = ["alice", "bob"]
    doc["gates"] = {"human-approval": {"approvals": 2, "approvers": ["alice", "bob"]}}
    doc["slack"]["channels"] = {"acme/*": "C0123"}
    return doc


def _mutate(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return mutate(doc, rng, ODD_VALUES, "Extra")


def test_the_config_schema_compiles_to_a_fast_check() -> None:
    assert compile_check(config_schema()) is not None


def test_the_fast_check_agrees_with_jsonschema_on_mutated_configs() -> None:
    fast = compile_check(config_schema())
    assert fast is not None
    slow = jsonschema.Draft202012Validator(config_schema())
    base = _full()
    assert slow.is_valid(base) and fast(base)
    assert fast({}) and slow.is_valid({})
    rng = random.Random(21)
    refused = 0
    for _ in range(400):
        doc = _mutate(base, rng)
        assert fast(doc) == slow.is_valid(doc), doc
        refused += not slow.is_valid(doc)
    assert refused > 100  # the mutations do reach refusals


@pytest.mark.parametrize(("schema", "good", "bad"), [
    ({"type": "integer", "maximum": 65535}, [0, 65535, 65535.0], [65536, 1e9]),
    ({"type": "number", "exclusiveMinimum": 0}, [0.5, 1], [0, -1, 0.0]),
    ({"type": "integer", "default": 3, "x-keyName": "port"}, [3, 4], ["3", True]),
])
def test_the_added_keywords_agree_with_jsonschema(schema: dict[str, Any], good: list[Any],
                                                  bad: list[Any]) -> None:
    fast = compile_check(schema)
    slow = jsonschema.Draft202012Validator(schema)
    assert fast is not None
    for value in good:
        assert fast(value) and slow.is_valid(value), value
    for value in bad:
        assert not fast(value) and not slow.is_valid(value), value


def test_a_refusal_is_still_worded_by_jsonschema() -> None:
    with pytest.raises(ConfigError) as err:
        validate_mapping({"server": {"port": "eighty"}, "slack": {"chanel": "C1"}})
    assert "server.port" in str(err.value) and "unknown key slack.chanel" in str(err.value)


def test_check_all_without_a_config_never_imports_jsonschema(tmp_path: Path) -> None:
    # The CLI's start-up before the first item (issue 21 §3): jsonschema is for refusals.
    code = ("import sys; from bot.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('jsonschema' in sys.modules)")
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", str(tmp_path / "l.db"), "check", "--all",
         "--format", "json"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert done.stdout.splitlines()[-1] == "False", done.stdout + done.stderr
