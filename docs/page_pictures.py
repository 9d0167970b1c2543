"""The pictures of a work item's details page (issue 22 §2), made from the real renderer.

Usage (from the repository root)::

    .venv/bin/python docs/page_pictures.py            # write the HTML source and the PNGs
    .venv/bin/python docs/page_pictures.py --check    # exit 1 when the committed HTML drifted

A sample item (``acme/widgets#7`` on the shipped graph, ``requirements-approval`` asking
two approvals) is walked through the real runtime over the in-memory tracker: phase
selection by @alice without brainstorming, the requirements claimed, changes requested by
@bob, the requirements changed and claimed again, one approval by @alice. Its page
(``bot.itempage.view.render_page``) is written to ``docs/pictures/item-page.html`` and
screenshotted by Debian's headless Chromium (``/usr/bin/chromium``, through Playwright) in
light and dark colour schemes and at a phone's 375 px: ``item-page-light.png``,
``item-page-dark.png``, ``item-page-375.png``. The sample's clock is fixed, so the HTML is
the same on every run: ``tests/bot/itempage/test_view_pictures.py`` fails when the
committed source differs from what the renderer gives now.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "pictures"
NAME = "item-page"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
#: (file suffix, viewport width, colour scheme); each shot is the first HEIGHT px.
SHOTS = (("light", 900, "light"), ("dark", 900, "dark"), ("375", 375, "light"))
HEIGHT = 1150


class _Clock:
    """The sample's clock: 37 s further on every read, from 2026-03-01 09:00 UTC."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=37)
        return self.at

    def iso(self) -> str:
        return self.at.strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def _fixed_store_clock(clock: _Clock) -> Iterator[None]:
    # The in-memory outbox stamps its rows with the wall clock; the sample's own clock
    # keeps the timeline (and so the committed HTML) the same on every run.
    with mock.patch("engine.store.memory.utc_now_iso", clock.iso):
        yield


def sample_model() -> dict[str, Any]:
    """The page model of the sample item (see the module docstring)."""
    from engine.approvals import ApprovalRule
    from engine.graph.compiler import shipped_graph
    from engine.itempage import item_model
    from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
    from engine.ports import Ports
    from engine.refs import WorkItemRef
    from engine.runtime import Runtime
    from engine.settings import EngineSettings
    from engine.store.memory import MemoryStore

    ref = WorkItemRef("acme", "widgets", 7)
    clock = _Clock()
    with _fixed_store_clock(clock):
        tracker, artifacts = MemoryTracker(), MemoryArtifactStore()
        tracker.set_issue(ref, "Export widgets as CSV", author="carol")
        settings = EngineSettings(
            authorized_users=("alice", "bob", "carol"),
            public_url="https://loopgate.example.com",
            gate_rules={"requirements-approval": ApprovalRule(approvals=2)})
        runtime = Runtime(shipped_graph(), MemoryStore(),
                          Ports(tracker, artifacts, clock=clock), settings)

        def reply(who: str, body: str) -> None:
            runtime.advance(ref, {"comments": [tracker.add_comment_as(ref, who, body)]})

        requirements = "---\nstatus: approved\n---\n# R\n\n## Requirements\n\n- export CSV\n"
        runtime.start(ref)
        reply("alice", "the-loop execute\n- [ ] brainstorming")
        artifacts.write(ref, "requirements.md", requirements)
        runtime.complete(ref, "requirements-definition", "agent")
        reply("bob", "changes requested: name the CSV columns")
        artifacts.write(ref, "requirements.md", requirements + "- columns: id, name, price\n")
        runtime.complete(ref, "requirements-definition", "agent")
        reply("alice", "approved")
        state = runtime.store.load(ref)
        assert state is not None and state.current_node == "requirements-approval"
        return item_model(runtime.graph, state, settings,
                          effects=runtime.store.effects.rows(ref), web_base="https://github.com")


def source() -> str:
    """The HTML of the sample item's page, as the route would serve it."""
    from bot.itempage.view import render_page

    return render_page(sample_model(), viewer="alice")


def drifted(out: Path = OUT) -> bool:
    """True when ``out/item-page.html`` is missing or differs from :func:`source`."""
    path = out / f"{NAME}.html"
    return not path.exists() or path.read_text("utf-8") != source()


def write_source(out: Path = OUT) -> Path:
    """Write the HTML source under ``out``; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{NAME}.html"
    path.write_text(source(), "utf-8")
    return path


def screenshot(path: Path, browser: Any = None) -> list[Path]:
    """Screenshot ``path`` once per :data:`SHOTS` entry, PNGs beside it.

    Args:
        path: the HTML source.
        browser: an open Playwright Chromium (a test session's); None starts one.

    Raises:
        playwright's Error: Chromium missing or failing to start.
    """
    if browser is not None:
        return [_shoot(browser, path, *shot) for shot in SHOTS]
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            return [_shoot(browser, path, *shot) for shot in SHOTS]
        finally:
            browser.close()


def _shoot(browser: Any, path: Path, suffix: str, width: int, scheme: str) -> Path:
    context = browser.new_context(viewport={"width": width, "height": HEIGHT},
                                  device_scale_factor=1, color_scheme=scheme)
    try:
        page = context.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                   else r.abort())
        page.goto(path.as_uri())
        png = path.with_name(f"{NAME}-{suffix}.png")
        page.screenshot(path=str(png))
        return png
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    """Write the source and PNGs, or with ``--check`` report drift; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare the committed HTML source with the renderer")
    args = parser.parse_args(argv)
    if args.check:
        if drifted():
            print(f"docs/pictures/{NAME}.html differs from the renderer: "
                  "run .venv/bin/python docs/page_pictures.py", file=sys.stderr)
            return 1
        return 0
    for png in screenshot(write_source()):
        print(f"wrote {png.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
