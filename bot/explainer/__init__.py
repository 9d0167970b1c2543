"""The explainer page: content files (schema + quiz rules), rendering and redaction.

``content`` loads and checks what an agent writes, ``render`` turns validated content into
one self-contained HTML page, ``redact`` finds secrets before a page is written.

The names below are loaded on first use (PEP 562): ``redact`` brings detect-secrets, whose
plugins cost ~70 ms to import, and every ``loopgate`` command would pay that at start.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "Content": "content", "ContentError": "content", "check_content": "content",
    "load_content": "content", "Finding": "redact", "find_secrets": "redact",
    "recover_contents": "render", "render_page": "render",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
