"""Render validated explainer content into one self-contained HTML page (issue 5 §1).

The page is ``templates/explainer/page.html.j2`` rendered by Jinja2 with autoescaping on
for everything; the quiz engine inside the page reads its data from a
``<script type="application/json" id="loopgate-data">`` block (written with ``|tojson``,
which escapes ``<``, ``>``, ``&`` and ``'`` so ``</script>`` in content cannot end the
block) and writes every string with ``textContent``.

Re-rendering. The data block holds every content the page was rendered from, normalised.
``loopgate explainer render code.yaml --out page.html`` on an existing page therefore
recovers the spec content from the page itself (:func:`recover_contents`), re-validates
it, and writes the same file with all four tabs; passing both content files works too
and a content given on the command line replaces the embedded one of the same variant.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from bot.explainer.content import SECTION_TITLES, Content, ContentError, content_from_mapping

__all__ = ["DATA_FORMAT", "TABS", "render_page", "recover_contents", "merge_contents",
           "tab_labels"]

#: Marks the JSON block as loopgate's, so a re-render never trusts another page.
DATA_FORMAT = "loopgate-explainer/1"

#: variant -> ((tab id, label, kind), ...), in page order.
TABS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "spec": (("spec-explainer", "Spec explainer", "explainer"), ("spec-quiz", "Spec quiz", "quiz")),
    "code": (("explainer", "Explainer", "explainer"), ("code-quiz", "Code quiz", "quiz")),
}
_ORDER = ("spec", "code")
_DATA_BLOCK = re.compile(
    r'<script type="application/json" id="loopgate-data">(?P<json>.*?)</script>', re.DOTALL
)


def inline(text: str) -> Markup:
    """Escape ``text`` and turn paired backticks into ``<code>`` (the page's only markup).

    An odd number of backticks leaves the text literal, the same rule the page's script
    applies to quiz strings.
    """
    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return escape(text)
    out = [escape(p) if i % 2 == 0 else Markup("<code>%s</code>") % p
           for i, p in enumerate(parts) if p]
    return Markup("").join(out)


def csp_hash(script: str) -> str:
    """The CSP source expression (``sha256-<base64>``) of an inline script's exact text."""
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("templates", "explainer"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["inline"] = inline
    env.filters["csp_hash"] = csp_hash
    return env


def _ordered(contents: Sequence[Content]) -> list[Content]:
    if not contents:
        raise ContentError("page", ["nothing to render: give at least one content file"])
    by_variant: dict[str, Content] = {}
    for content in contents:
        if content.variant in by_variant:
            raise ContentError(content.source, [f"two {content.variant} contents for one page "
                                                f"(also {by_variant[content.variant].source})"])
        by_variant[content.variant] = content
    items = {c.work_item for c in contents}
    if len(items) > 1:
        raise ContentError("page", [f"contents name different work items: "
                                    f"{', '.join(sorted(items))}"])
    return [by_variant[v] for v in _ORDER if v in by_variant]


def tab_labels(contents: Sequence[Content]) -> list[str]:
    """The tab labels a page for ``contents`` has, in order."""
    return [label for c in _ordered(contents) for _, label, _ in TABS[c.variant]]


def render_page(contents: list[Content]) -> str:
    """Render the page for one work item.

    Args:
        contents: validated contents, at most one per variant (spec, code). Spec alone
            gives the tabs "Spec explainer" and "Spec quiz"; spec + code gives four;
            code alone gives "Explainer" and "Code quiz".

    Returns:
        The HTML text (UTF-8, self-contained: no remote fonts, scripts or images).

    Raises:
        ContentError: no content, two of one variant, or different work items.
    """
    ordered = _ordered(contents)
    panels = [
        {"id": tab_id, "label": label, "kind": kind, "content": c.data, "variant": c.variant}
        for c in ordered for tab_id, label, kind in TABS[c.variant]
    ]
    data = {"format": DATA_FORMAT, "contents": [c.data for c in ordered]}
    head = ordered[0]
    return _environment().get_template("page.html.j2").render(
        work_item=head.work_item,
        title=head.title,
        summary=head.data.get("summary", ""),
        contents=[c.data for c in ordered],
        panels=panels,
        section_titles=SECTION_TITLES,
        data=data,
    )


def recover_contents(html: str, source: str = "page") -> list[Content]:
    """The contents embedded in a page this module rendered, validated again.

    Args:
        html: the page's text.
        source: the page's path, for messages.

    Returns:
        The contents in page order.

    Raises:
        ContentError: the page is not a loopgate explainer page, or its embedded content
            no longer passes the rules (the page was edited by hand).
    """
    match = _DATA_BLOCK.search(html)
    try:
        data: Any = json.loads(match["json"]) if match else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or data.get("format") != DATA_FORMAT:
        raise ContentError(source, ["not a loopgate explainer page (no loopgate-data block); "
                                    "refusing to overwrite it"])
    raw = data.get("contents")
    if not isinstance(raw, list):
        raise ContentError(source, ["the loopgate-data block has no contents list"])
    return [content_from_mapping(item, f"{source} (embedded content {i + 1})")
            for i, item in enumerate(raw)]


def merge_contents(given: Iterable[Content], existing: Iterable[Content]) -> list[Content]:
    """``given`` plus those ``existing`` contents whose variant is not given.

    Args:
        given: contents named on the command line (they win).
        existing: contents recovered from the page being re-rendered.

    Returns:
        The contents to render, in page order.
    """
    given = list(given)
    variants = {c.variant for c in given}
    merged = given + [c for c in existing if c.variant not in variants]
    return sorted(merged, key=lambda c: _ORDER.index(c.variant))
