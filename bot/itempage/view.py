"""PLACEHOLDER of the details page's model and HTML (issue 22 §2).

This minimal module only implements the contract the routes depend on; the page-view
helper's ``bot/itempage/view.py`` (the real page: the graph as SVG, the timeline, the
pending-only switch, dark mode) REPLACES this file at merge. Contract:

* :func:`page_model` ``(services, ref) -> dict | None`` (None: loopgate has no such item),
* :func:`render_page` ``(model, *, pending_only=False, viewer=None) -> str`` (whole HTML),
* :func:`render_status_page` ``(status, title, message) -> str`` (403/404/errors; nothing
  of any item),
* :data:`CONTENT_SECURITY_POLICY`.
"""

from __future__ import annotations

from html import escape
from typing import Any

from engine.refs import WorkItemRef
from engine.report import build_report

__all__ = ["CONTENT_SECURITY_POLICY", "page_model", "render_page", "render_status_page"]

#: Self-contained pages: nothing loads from anywhere, not even from this server.
CONTENT_SECURITY_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                           "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def page_model(services: Any, ref: WorkItemRef) -> dict[str, Any] | None:
    """The ``check`` report of ``ref`` (:func:`engine.report.build_report`) under
    ``report``, with ``item`` = ``owner/repo#N``; None when the store has no such item."""
    state = services.store.load(ref)
    if state is None:
        return None
    return {"item": str(ref), "report": build_report(services.graph, state)}


def _document(title: str, body: str) -> str:
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title></head><body>{body}</body></html>")


def render_page(model: dict[str, Any], *, pending_only: bool = False,
                viewer: str | None = None) -> str:
    """The page of one item as plain HTML: its reference, status, current node and the
    nodes (only the unmet ones when ``pending_only``); ``viewer`` is named when given."""
    report = model.get("report") or {}
    unmet = {u["node"] for u in report.get("unmet") or ()}
    rows = "".join(f"<li>{escape(str(n['id']))}: {escape(str(n['status']))}</li>"
                   for n in report.get("nodes") or ()
                   if not pending_only or n["id"] in unmet)
    who = f"<p>Signed in as @{escape(viewer)}</p>" if viewer else ""
    body = (f"{who}<h1>{escape(str(model.get('item', '')))}</h1>"
            f"<p>{escape(str(report.get('status', '')))} at "
            f"{escape(str(report.get('currentNode', '')))}</p><ul>{rows}</ul>")
    return _document(str(model.get("item", "")), body)


def render_status_page(status: int, title: str, message: str) -> str:
    """A page for a refusal or an error: the status, a title and one message, nothing of
    any item."""
    return _document(f"{status} {title}",
                     f"<h1>{escape(title)}</h1><p>{escape(message)}</p>")
