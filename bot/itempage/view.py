"""The details page of a work item, rendered (issue 22 §2): the contract the route
(``bot/itempage/routes.py``, with its access check) serves.

- :func:`page_model` — everything the page shows as JSON-ready data
  (:func:`engine.itempage.item_model`), also served as the JSON at the same URL with
  ``Accept: application/json``;
- :func:`render_page` — the whole HTML document of a model (Jinja2, autoescaped, from
  ``templates/itempage/``);
- :func:`render_status_page` — the 403 / 404 / sign-in error pages, same look, nothing of
  any item;
- :data:`CONTENT_SECURITY_POLICY` — the header the route sends with either.

The page is self-contained: one inline stylesheet allowed by its hash, no script, no
image, font or request to anywhere (``default-src 'none'``). It reads at 375 px (the SVG
scales, long words wrap), follows ``prefers-color-scheme``, and is keyboard-navigable (a
skip link, visible focus, headings in order). The "pending only" view is a plain link to
``?pending=1`` whose state is announced with ``aria-current``.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from bot.itempage.svg import MARKS, WORDS, graph_svg
from engine.itempage import item_model, web_url
from engine.refs import WorkItemRef
from engine.report import build_report

if TYPE_CHECKING:
    from bot.config import Config
    from engine.graph.model import Graph
    from engine.settings import EngineSettings
    from engine.store.base import Store

__all__ = ["CONTENT_SECURITY_POLICY", "STYLE", "PageServices", "page_model", "render_page",
           "render_status_page", "web_base_of"]

#: The page's stylesheet (``templates/itempage/page.css``), inlined in ``<style>``.
STYLE = resources.files("templates").joinpath("itempage/page.css").read_text("utf-8")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


#: The ``Content-Security-Policy`` header value of every page here: nothing loads from
#: anywhere; the one inline stylesheet is allowed by its SHA-256 (CSP Level 2 hash source),
#: no script runs; forms, framing and ``<base>`` are refused.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src '{_hash(STYLE)}'; img-src 'none'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=PackageLoader("templates", "itempage"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


class PageServices(Protocol):
    """What the details page reads of the wired services (:class:`bot.services.Services`
    is one; a test may hand a namespace with these four)."""

    @property
    def graph(self) -> Graph:
        """The compiled graph."""
        ...

    @property
    def store(self) -> Store:
        """The store the item is loaded from (``load``, ``effects.rows``)."""
        ...

    @property
    def settings(self) -> EngineSettings:
        """The engine settings."""
        ...

    @property
    def config(self) -> Config | None:
        """The configuration (its ``github`` section gives the web links), or None."""
        ...


def web_base_of(services: PageServices) -> str:
    """GitHub's web address for the links to the issue and its pull requests
    (``bot.slack.home_tab.web_base``), or "" when loopgate keeps the thread itself (no ``github``
    section: the local tracker has no web page)."""
    from bot.slack.home_tab import web_base

    config = services.config
    if config is None or not config.has("github"):
        return ""
    return web_base(config)


def page_model(services: PageServices, ref: WorkItemRef) -> dict[str, Any] | None:
    """Everything the details page of ``ref`` shows, as JSON-ready data.

    Args:
        services: :class:`PageServices` (``graph``, ``store``, ``settings``, ``config``),
            e.g. :class:`bot.services.Services`.
        ref: the work item.

    Returns:
        :func:`engine.itempage.item_model`'s dictionary (a documented, versioned shape:
        ``version``, ``item``, ``status``, ``graph``, ``gate``, ``decisions``,
        ``invalidated``, ``timeline``, ``links``, ``counts`` and, when the report has one,
        ``agent``), or None when loopgate has no such item (never started).
    """
    state = services.store.load(ref)
    if state is None:
        return None
    rows = services.store.effects.rows(ref)
    report = build_report(services.graph, state, effects=rows)
    return item_model(services.graph, state, services.settings, effects=rows,
                      web_base=web_base_of(services), report=report)


def render_page(model: dict[str, Any], *, pending_only: bool = False,
                viewer: str | None = None) -> str:
    """The whole HTML document of a :func:`page_model` model.

    Args:
        model: from :func:`page_model`.
        pending_only: the "pending only" view: the done, skipped and not selected nodes,
            the past decisions and the timeline are left out (the graph is laid out
            again for the nodes that remain).
        viewer: the signed-in GitHub login shown in the footer, or None.

    Returns:
        An HTML5 document (``str``), to be sent with :data:`CONTENT_SECURITY_POLICY`.
    """
    nodes = model["graph"]["nodes"]
    if pending_only:
        nodes = [n for n in nodes if n["pending"]]
    decisions = model["decisions"]
    if pending_only:
        gate = model.get("gate") or {}
        decisions = [d for d in decisions
                     if d["current"] and d["node"] == gate.get("node")]
    pull_urls = {p["number"]: p["url"] for p in model["links"]["pulls"]}
    return _environment().get_template("page.html.j2").render(
        model=model, nodes=nodes, decisions=decisions, pending_only=pending_only,
        viewer=viewer, css=Markup(STYLE), svg=graph_svg(model["graph"], nodes),
        marks=MARKS, words=WORDS, pull_urls=pull_urls)


def render_status_page(status: int, title: str, message: str, *,
                       action: tuple[str, str] | None = None) -> str:
    """A page for a refusal or an error (403, 404, a failed sign-in): the same look as the
    details page and nothing of any item (issue 22, bad input: no leak of whether the
    repository exists).

    Args:
        status: the HTTP status the route sends (shown as text).
        title: the heading (escaped).
        message: one paragraph (escaped).
        action: an optional ``(label, href)`` link under the message ("Sign in with
            GitHub", "Try again"); an ``href`` that is not a web address or a path on this
            server (``/…``) is left out.
    """
    label, href = action or ("", "")
    if not (href.startswith("/") and not href.startswith("//")) and not web_url(href):
        label, href = "", ""
    return _environment().get_template("status.html.j2").render(
        status=int(status), title=title, message=message, viewer=None, css=Markup(STYLE),
        action_label=label, action_href=href)
