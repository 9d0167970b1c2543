"""The explainer page: content files (schema + quiz rules), rendering and redaction.

``content`` loads and checks what an agent writes, ``render`` turns validated content into
one self-contained HTML page, ``redact`` finds secrets before a page is written.
"""

from __future__ import annotations

from bot.explainer.content import Content, ContentError, check_content, load_content
from bot.explainer.redact import Finding, find_secrets
from bot.explainer.render import recover_contents, render_page

__all__ = [
    "Content",
    "ContentError",
    "Finding",
    "check_content",
    "find_secrets",
    "load_content",
    "recover_contents",
    "render_page",
]
