"""The pictures of docs/pictures/, made from loopgate's real renderers (issue 23 §4).

Usage (from the repository root)::

    .venv/bin/python docs/pictures.py            # write the HTML sources and the PNGs
    .venv/bin/python docs/pictures.py --check    # exit 1 when a committed HTML source drifted

Four pictures, each an HTML source (``docs/pictures/NAME.html``, committed) and a PNG
screenshot of it taken by Debian's headless Chromium (``/usr/bin/chromium``, through
Playwright):

- ``card``: the phase-selection card (``bot.slack.blocks.card.phase_selection_card``);
- ``approval``: an approval gate's thread message (``loopgate slack preview approval``);
- ``home``: the App Home tab (``loopgate slack preview home``);
- ``checklist``: the GitHub phase-selection checklist comment
  (``engine.hooks.phase_selection.render_checklist``).

The Slack pictures are an approximation of Slack's layout drawn from the Block Kit JSON
the bot sends (header, section, context, actions with buttons and checkboxes, divider);
the checklist is its Markdown drawn the way GitHub draws a task list. Only the drawing is
approximate: every word and every row comes from the renderer, so a changed renderer
changes the HTML, and ``tests/test_docs_pictures.py`` fails until this command is run again.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "pictures"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
WIDTH = 640

Block = Mapping[str, Any]


# --- the renderers' output ------------------------------------------------------------


def card_blocks() -> list[dict[str, Any]]:
    """The phase-selection card's blocks for a sample item on the shipped graph.

    Returns:
        Block Kit blocks as dicts (``Block.to_dict()``), as posted to Slack.
    """
    from bot.slack.blocks.card import phase_selection_card
    from engine.graph.compiler import shipped_graph
    from engine.ports import IssueInfo
    from engine.refs import WorkItemRef

    info = IssueInfo(WorkItemRef("acme", "widgets", 7), "Export widgets as CSV",
                     "https://github.com/acme/widgets/issues/7", "carol")
    return [block.to_dict() for block in phase_selection_card(shipped_graph(), info)]


def preview_blocks(kind: str) -> list[dict[str, Any]]:
    """The blocks ``loopgate slack preview KIND`` prints (``approval`` or ``home``).

    Raises:
        KeyError: an unknown kind.
    """
    from bot.cli.slack_cmd import preview_json

    blocks: list[dict[str, Any]] = json.loads(preview_json(kind))["blocks"]
    return blocks


def checklist_markdown() -> str:
    """The checklist comment loopgate posts on a new work item's issue (shipped graph)."""
    from engine.graph.compiler import shipped_graph
    from engine.hooks.phase_selection import render_checklist
    from engine.settings import EngineSettings

    return render_checklist(shipped_graph(), EngineSettings(authorized_users=("alice",)))


# --- Slack mrkdwn and Block Kit, drawn ------------------------------------------------

_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")
_STYLES = ((re.compile(r"`([^`]+)`"), "code"),
           (re.compile(r"(?<!\w)\*([^*\n]+)\*(?!\w)"), "b"),
           (re.compile(r"(?<!\w)_([^_\n]+)_(?!\w)"), "i"),
           (re.compile(r"(?<!\w)~([^~\n]+)~(?!\w)"), "s"))


def _styled(text: str) -> str:
    # Slack's mrkdwn escapes exactly &, < and > (api.slack.com "Formatting text"): undo
    # those three, then escape for HTML.
    plain = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    out = html.escape(plain, quote=False)
    for pattern, tag in _STYLES:
        out = pattern.sub(lambda m, t=tag: f"<{t}>{m.group(1)}</{t}>", out)
    return out


def _link(target: str, label: str | None) -> str:
    if target.startswith("@"):
        return f'<span class="mention">@{html.escape(target[1:])}</span>'
    return f'<a href="#">{_styled(label or target)}</a>'


def mrkdwn(text: str) -> str:
    """Slack ``mrkdwn`` as HTML: links, mentions, ``*bold*``, ``_italic_``, code, breaks.

    Args:
        text: the text of a ``mrkdwn`` object, as Slack receives it.

    Returns:
        HTML with every character of ``text`` escaped (nothing in it is markup).
    """
    links: list[str] = []

    def hold(match: re.Match[str]) -> str:  # a link is drawn whole; styles may wrap it
        links.append(_link(match.group(1), match.group(2)))
        return f"\x00{len(links) - 1}\x00"

    out = _styled(_LINK.sub(hold, text))
    out = re.sub("\x00(\\d+)\x00", lambda m: links[int(m.group(1))], out)
    return out.replace("\n", "<br>")


def _text(obj: Mapping[str, Any] | None) -> str:
    if not obj:
        return ""
    if obj.get("type") == "mrkdwn":
        return mrkdwn(str(obj["text"]))
    return html.escape(str(obj["text"]), quote=False)


def _button(element: Mapping[str, Any]) -> str:
    style = element.get("style", "")
    return f'<span class="button {style}">{_text(element["text"])}</span>'


def _checkboxes(element: Mapping[str, Any]) -> str:
    ticked = {option["value"] for option in element.get("initial_options", [])}
    rows = []
    for option in element["options"]:
        box = "☑" if option["value"] in ticked else "☐"
        state = "on" if option["value"] in ticked else "off"
        rows.append(f'<div class="option {state}"><span class="box">{box}</span>'
                    f'<span>{_text(option["text"])}</span></div>')
    return '<div class="checkboxes">' + "".join(rows) + "</div>"


def _element(element: Mapping[str, Any]) -> str:
    kind = element.get("type")
    if kind == "button":
        return _button(element)
    if kind == "checkboxes":
        return _checkboxes(element)
    if kind in ("mrkdwn", "plain_text"):
        return f"<span>{_text(element)}</span>"
    return f'<span class="unknown">[{html.escape(str(kind))}]</span>'


def _section(block: Block) -> str:
    inner = f"<div>{_text(block.get('text'))}</div>"
    fields = block.get("fields") or []
    if fields:
        cells = "".join(f"<div>{_text(f)}</div>" for f in fields)
        inner += f'<div class="fields">{cells}</div>'
    if block.get("accessory"):
        inner += _element(block["accessory"])
    return f'<div class="section">{inner}</div>'


def _elements(css: str, block: Block) -> str:
    return f'<div class="{css}">' + "".join(_element(e) for e in block["elements"]) + "</div>"


_DRAW: dict[str, Callable[[Block], str]] = {
    "header": lambda b: f'<div class="header">{_text(b["text"])}</div>',
    "section": _section,
    "context": lambda b: _elements("context", b),
    "actions": lambda b: _elements("actions", b),
    "divider": lambda b: "<hr>",
}


def block_html(block: Block) -> str:
    """One Block Kit block drawn as HTML (an unknown type is drawn as its name)."""
    draw = _DRAW.get(str(block.get("type")))
    if draw is None:
        return f'<div class="unknown">[{html.escape(str(block.get("type")))}]</div>'
    return draw(block)


_SLACK_CSS = """
body{margin:0;background:#fff;font:15px/1.46668 "Liberation Sans","DejaVu Sans",sans-serif;
color:#1d1c1d;width:WIDTHpx}
.message{display:flex;gap:8px;padding:12px 16px}
.avatar{width:36px;height:36px;border-radius:6px;background:#4a154b;color:#fff;
font-weight:bold;display:flex;align-items:center;justify-content:center;flex:none}
.body{flex:1;min-width:0}.name{font-weight:900}.app{font-size:10px;background:#ddd;
color:#555;padding:1px 3px;border-radius:2px;margin-left:4px;vertical-align:2px}
.time{color:#616061;font-size:12px;margin-left:6px}
.header{font-size:18px;font-weight:900;margin:8px 0 4px}
.section{margin:4px 0}.context{color:#616061;font-size:13px;margin:4px 0;display:flex;gap:8px}
.actions{margin:8px 0;display:flex;flex-wrap:wrap;gap:8px}
.button{border:1px solid #bbb;border-radius:4px;padding:3px 12px;font-weight:bold;
font-size:14px;background:#fff}
.button.primary{background:#007a5a;border-color:#007a5a;color:#fff}
.button.danger{background:#fff;border-color:#e01e5a;color:#e01e5a}
.checkboxes{display:flex;flex-direction:column;gap:2px}
.option{display:flex;gap:6px}.box{color:#1264a3;font-size:17px;line-height:1.2}
.option.off .box{color:#888}
code{font:12px "DejaVu Sans Mono",monospace;color:#e01e5a;background:#f6f6f6;
border:1px solid #ddd;border-radius:3px;padding:0 3px}
a,.mention{color:#1264a3;text-decoration:none}.mention{background:#e8f5fa;border-radius:3px}
hr{border:0;border-top:1px solid #ddd;margin:10px 0}.fields{display:grid;
grid-template-columns:1fr 1fr;gap:4px}
.tab{border-bottom:1px solid #ddd;padding:10px 16px;font-weight:bold}
""".replace("WIDTH", str(WIDTH))


def slack_html(title: str, blocks: Iterable[Block], *, home: bool = False) -> str:
    """A self-contained page drawing ``blocks`` as a loopgate message (or the Home tab).

    Args:
        title: the page title (not drawn).
        blocks: Block Kit blocks as dicts.
        home: draw an App Home tab instead of a message in a channel.

    Returns:
        HTML with inline CSS and no script; it loads nothing.
    """
    drawn = "\n".join(block_html(b) for b in blocks)
    if home:
        frame = ('<div class="tab">Home</div>'
                 f'<div class="message"><div class="body">{drawn}</div></div>')
    else:
        frame = ('<div class="message"><div class="avatar">lg</div><div class="body">'
                 '<div><span class="name">loopgate</span><span class="app">APP</span>'
                 f'<span class="time">12:00</span></div>\n{drawn}</div></div>')
    return _page(title, _SLACK_CSS, frame)


def _page(title: str, css: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>\n<style>{css}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


# --- GitHub Markdown (the checklist), drawn -------------------------------------------

_INLINE = ((re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
           (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"))


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return out


def _list_item(line: str) -> str:
    task = re.match(r"- \[([ xX])\] (.*)", line)
    if task:
        checked = " checked" if task.group(1) != " " else ""
        return (f'<li class="task"><input type="checkbox"{checked}> '
                f"{_inline(task.group(2))}</li>")
    return f"<li>{_inline(line[2:])}</li>"


def _markdown_line(line: str, in_list: bool) -> tuple[str, bool]:
    """One line of the checklist's Markdown as HTML, and whether a list is open after it."""
    out = ""
    if line.startswith("- "):
        return ("" if in_list else "<ul>") + _list_item(line), True
    if in_list:
        out = "</ul>"
    heading = re.match(r"(#{1,6}) (.*)", line)
    if heading:
        level = len(heading.group(1))
        return out + f"<h{level}>{_inline(heading.group(2))}</h{level}>", False
    if not line.strip() or line.startswith("<!--"):
        return out, False  # GitHub shows neither blank lines nor HTML comments
    return out + f"<p>{_inline(line)}</p>", False


def markdown_html(text: str) -> str:
    """The subset of GitHub Markdown the checklist uses (headings, paragraphs, task lists,
    bullets, ``**bold**``, code), as HTML; HTML comments (the markers) are not shown."""
    parts: list[str] = []
    in_list = False
    for line in text.splitlines():
        drawn, in_list = _markdown_line(line, in_list)
        parts.append(drawn)
    if in_list:
        parts.append("</ul>")
    return "\n".join(p for p in parts if p)


_GITHUB_CSS = """
body{margin:0;background:#fff;width:WIDTHpx;padding:12px;box-sizing:border-box;
font:14px/1.5 "Liberation Sans","DejaVu Sans",sans-serif;color:#1f2328}
.comment{border:1px solid #d1d9e0;border-radius:6px}
.head{background:#f6f8fa;border-bottom:1px solid #d1d9e0;padding:8px 16px;color:#59636e;
border-radius:6px 6px 0 0}.head b{color:#1f2328}
.markdown{padding:8px 16px}h3{font-size:18px;margin:8px 0}h4{font-size:15px;margin:12px 0 6px}
p{margin:6px 0}ul{margin:6px 0;padding-left:24px}li.task{list-style:none;margin-left:-20px}
code{font:12px "DejaVu Sans Mono",monospace;background:#eff1f3;border-radius:4px;padding:1px 4px}
input{margin:0 4px 0 0;vertical-align:-1px}
""".replace("WIDTH", str(WIDTH))


def github_html(title: str, markdown: str) -> str:
    """A self-contained page drawing ``markdown`` as a comment by loopgate on an issue."""
    body = ('<div class="comment"><div class="head"><b>loopgate</b> commented</div>'
            f'<div class="markdown">\n{markdown_html(markdown)}\n</div></div>')
    return _page(title, _GITHUB_CSS, body)


# --- the four pictures ----------------------------------------------------------------


def sources() -> dict[str, str]:
    """Each picture's name -> its HTML source, rendered now from the real builders."""
    return {
        "card": slack_html("The phase-selection card", card_blocks()),
        "approval": slack_html("An approval gate's message", preview_blocks("approval")),
        "home": slack_html("App Home", preview_blocks("home"), home=True),
        "checklist": github_html("The phase-selection checklist", checklist_markdown()),
    }


def drifted(out: Path = OUT) -> list[str]:
    """The names whose committed ``out/NAME.html`` differs from :func:`sources` (or is missing)."""
    stale = []
    for name, text in sources().items():
        path = out / f"{name}.html"
        if not path.exists() or path.read_text("utf-8") != text:
            stale.append(name)
    return stale


def write_sources(out: Path = OUT) -> list[Path]:
    """Write every HTML source under ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in sources().items():
        path = out / f"{name}.html"
        path.write_text(text, "utf-8")
        written.append(path)
    return written


def screenshot(paths: Iterable[Path], browser: Any = None) -> list[Path]:
    """Screenshot each HTML file with headless Chromium to a PNG beside it (full page).

    Args:
        paths: the HTML sources.
        browser: an open Playwright Chromium to use (a test session's: Playwright's sync
            API cannot start twice in one thread); None starts and closes one.

    Raises:
        playwright's Error: Chromium missing or failing to start.
    """
    if browser is not None:
        return [_shoot(browser, path) for path in paths]
    from playwright.sync_api import sync_playwright

    pngs = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for path in paths:
                pngs.append(_shoot(browser, path))
        finally:
            browser.close()
    return pngs


def _shoot(browser: Any, path: Path) -> Path:
    context = browser.new_context(viewport={"width": WIDTH, "height": 200},
                                  device_scale_factor=1)
    try:
        page = context.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                   else r.abort())
        page.goto(path.as_uri())
        png = path.with_suffix(".png")
        page.screenshot(path=str(png), full_page=True)
        return png
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    """Write the sources and PNGs, or with ``--check`` report drift; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare the committed HTML sources with the renderers")
    args = parser.parse_args(argv)
    if args.check:
        stale = drifted()
        for name in stale:
            print(f"docs/pictures/{name}.html differs from the renderer: "
                  "run .venv/bin/python docs/pictures.py", file=sys.stderr)
        return 1 if stale else 0
    for png in screenshot(write_sources()):
        print(f"wrote {png.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
