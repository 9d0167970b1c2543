"""``loopgate explainer render|check|redact`` and ``loopgate briefing`` (issue 5).

Exit codes follow :mod:`bot.cli`: 0 success; 1 a refusal (a quiz rule, a secret, an
unreadable record); 2 usage (click's own errors, a missing file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bot.cli.context import fail, parse_item
from bot.cli.help import HelpGroup
from bot.explainer.content import Content, ContentError, ContentParseError, load_content
from bot.explainer.page_render import merge_contents, recover_contents, render_page, tab_labels
from engine.errors import LoopgateError
from engine.evidence import RECORDS, EvidenceError, parse_record
from engine.ports import TrackerError
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # detect-secrets is imported by the commands that scan, not at start
    from bot.explainer.redact import Finding

__all__ = ["register", "briefing_text"]

_EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)

#: Spec artifacts the briefing lists, in reading order (file name -> label).
_BRIEFING_ROWS: tuple[tuple[str, str], ...] = (
    ("requirements.md", "Requirements"),
    ("bugfix.md", "Bug report"),
    ("design.md", "Design"),
    ("testing-plan.md", "Testing plan"),
)


def _refuse(lines: Iterable[str], summary: str) -> None:
    for line in lines:
        click.echo(line)
    fail(summary, 1)


def _load(paths: Sequence[Path]) -> list[Content]:
    contents: list[Content] = []
    problems: list[str] = []
    unparsable: list[str] = []
    for path in paths:
        try:
            contents.append(load_content(path))
        except ContentParseError as exc:  # one line: file:line:column (issue 23 §3)
            unparsable.append(exc.located())
        except ContentError as exc:
            problems.extend(f"{exc.source}: {p}" for p in exc.problems)
    for line in unparsable:
        click.echo(f"loopgate: {line}", err=True)
    if problems:
        _refuse(problems, f"{len(problems)} rule violation(s); nothing written")
    if unparsable:
        raise SystemExit(1)
    return contents


def _existing(out: Path) -> list[Content]:
    if not out.exists():
        return []
    try:
        return recover_contents(out.read_text("utf-8"), str(out))
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {out}: {exc}", 1)
    except ContentError as exc:
        _refuse((f"{exc.source}: {p}" for p in exc.problems), f"cannot re-render {out}")
    return []


def _secret_lines(label: str, findings: list[Finding]) -> list[str]:
    return [f"{label}:{f.line}: {f.kind}" for f in findings]


def _new_file_mode(out: Path) -> int:
    """The mode ``out`` gets: an existing page keeps its own; a new one gets what ``open``
    would give it (0666 less the umask), not mkstemp's 0600 (issue 23, "Smaller")."""
    try:
        return out.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)  # read the umask: setting it is the only portable way
        os.umask(mask)
        return 0o666 & ~mask


def _write_atomically(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@click.group("explainer", cls=HelpGroup)
def explainer() -> None:
    """Render, check and redact explainer pages (the agent's explain command).

    \b
    Example:
      loopgate explainer render spec.yaml --out docs/specs/issue-7/explainer/explainer.html
    """


@explainer.command("render")
@click.argument("contents", nargs=-1, required=True, type=_EXISTING_FILE)
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The page to write, e.g. docs/specs/issue-7/explainer/explainer.html.")
def render_cmd(contents: tuple[Path, ...], out: Path) -> None:
    """Render CONTENT files (YAML/JSON) into one self-contained page at --out.

    Re-rendering an existing page keeps the content it was made from: give only the code
    content and the spec tabs stay. The redaction pass runs first; a secret in a content
    file or in the page refuses the write (exit 1) naming line and kind.

    \b
    Example:
      loopgate explainer render spec.yaml --out docs/specs/issue-7/explainer/explainer.html
    """
    from bot.explainer.redact import find_secrets

    given = _load(contents)
    merged = merge_contents(given, _existing(out))
    try:
        html = render_page(merged)
    except ContentError as exc:
        _refuse((f"{exc.source}: {p}" for p in exc.problems), "nothing written")
    secrets = [line for c in given
               for line in _secret_lines(c.source, find_secrets(Path(c.source)))]
    secrets += [f"{line} (rendered page, not written)"
                for line in _secret_lines(str(out), find_secrets(html))]
    if secrets:
        _refuse(secrets, f"secrets found; refusing to write {out}")
    try:
        _write_atomically(out, html)
    except OSError as exc:  # a folder that cannot be made, a read-only disk: one line
        fail(f"cannot write {out}: {exc.strerror or exc}", 1)
    click.echo(f"wrote {out} (tabs: {', '.join(tab_labels(merged))})")


@explainer.command("check")
@click.argument("contents", nargs=-1, required=True, type=_EXISTING_FILE)
def check_cmd(contents: tuple[Path, ...]) -> None:
    """Check CONTENT files against the schema and the quiz rules (exit 1 on a violation).

    \b
    Example:
      loopgate explainer check spec.yaml code.yaml
    """
    _load(contents)
    click.echo("ok")


@explainer.command("redact")
@click.argument("paths", nargs=-1, required=True, type=_EXISTING_FILE)
def redact_cmd(paths: tuple[Path, ...]) -> None:
    """Find secrets in PATHS; print PATH:LINE: KIND for each and exit 1, else exit 0.

    \b
    Example:
      loopgate explainer redact docs/specs/issue-7/explainer/explainer.html
    """
    from bot.explainer.redact import find_secrets

    lines = []
    for path in paths:
        try:
            lines += _secret_lines(str(path), find_secrets(path))
        except OSError as exc:
            fail(f"cannot read {path}: {exc}", 2)
    if lines:
        _refuse(lines, f"{len(lines)} secret(s) found")
    click.echo(f"clean: {', '.join(str(p) for p in paths)}")


def _explainer_location(artifacts: Any, ref: WorkItemRef) -> str | None:
    """The code explainer's Location, None when evidence/explainer.md does not exist."""
    record, section = RECORDS["code-explainer"]
    data = artifacts.read(ref, record)
    if data is None:
        return None
    try:
        location = parse_record(data.decode("utf-8"), section).location
    except (EvidenceError, UnicodeDecodeError) as exc:
        location = ""
        click.echo(f"loopgate: warning: {record}: {exc}", err=True)
    return location or f"{artifacts.spec_dir(ref)}/{record}"


def _rows(names: Iterable[str], spec_dir: str) -> list[dict[str, str]]:
    names = set(names)
    rows = [{"label": label, "path": f"{spec_dir}/{name}"}
            for name, label in _BRIEFING_ROWS if name in names]
    skip = RECORDS["code-explainer"][0]
    rows += [{"label": "Evidence", "path": f"{spec_dir}/{name}"} for name in sorted(names)
             if name.startswith("evidence/") and name.endswith(".md") and name != skip]
    return rows


def briefing_text(artifacts: Any, ref: WorkItemRef) -> str:
    """``templates/pr-briefing.md`` rendered for ``ref``.

    Args:
        artifacts: the :class:`engine.ports.ArtifactStore` to read the spec directory from.
        ref: the work item.

    Returns:
        Markdown whose first row is "Start here: the explainer (<Location>)" exactly
        when ``evidence/explainer.md`` exists.

    Raises:
        TrackerError: the artifact store could not be read.
    """
    from jinja2 import Environment, StrictUndefined

    # Markdown, not HTML: no autoescaping (every value comes from loopgate itself).
    env = Environment(autoescape=False, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    source = resources.files("templates").joinpath("pr-briefing.md").read_text("utf-8")
    spec_dir = artifacts.spec_dir(ref)
    return env.from_string(source).render(
        item=str(ref),
        spec_dir=spec_dir,
        explainer_location=_explainer_location(artifacts, ref),
        rows=_rows(artifacts.list(ref), spec_dir),
    )


@click.command("briefing")
@click.argument("item")
@click.pass_context
def briefing_cmd(ctx: click.Context, item: str) -> None:
    """Print the reviewer briefing template for ITEM (owner/repo#N); exit 1 when ITEM is
    not started.

    \b
    Example:
      loopgate briefing acme/widgets#7
    """
    ref = parse_item(item)
    services = ctx.obj.services
    state = services.store.load(ref)
    if state is None or not state.current_node:  # as every item verb: 1, one line
        fail(f"refused: {ref} is not started (not-started)", 1)
    artifacts = services.ports.artifacts
    try:
        text = briefing_text(artifacts, ref)
    except (TrackerError, OSError, LoopgateError) as exc:
        fail(f"cannot read the spec directory of {ref}: {exc}", 1)
    click.echo(text, nl=False)


def register(group: click.Group) -> None:
    """Add ``explainer render|check|redact`` and ``briefing`` to ``group``."""
    group.add_command(explainer)
    group.add_command(briefing_cmd)
