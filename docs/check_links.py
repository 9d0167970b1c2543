"""Check that a Markdown file's relative links resolve (issue 23 §4: the README's links).

Usage (from the repository root)::

    .venv/bin/python docs/check_links.py README.md [MORE.md ...]

Every inline link and image ``[text](target)`` whose target is not a URL (``http:``,
``https:``, ``mailto:``) must name a file or folder that exists, relative to the Markdown
file; a ``#fragment`` must name a heading of the target Markdown file (or of the file
itself), slugged the way GitHub slugs headings (lower case, punctuation dropped, spaces to
hyphens). Links inside fenced code blocks and code spans are not links. Prints one line per
broken link (``FILE:LINE: TARGET: why``) and exits 1 when there is one. The pages under
``docs/`` are checked by ``mkdocs build --strict`` instead.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`[^`]*`")
_EXTERNAL = ("http://", "https://", "mailto:")


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line without code spans) for each line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, _CODE_SPAN.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text.

    ``"Set up (fresh machine)"`` -> ``set-up-fresh-machine``.
    """
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading of a Markdown file (fenced code skipped)."""
    found = set()
    for _, line in _prose_lines(path.read_text("utf-8")):
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            found.add(slug(match.group(1)))
    return found


def _problem(source: Path, target: str) -> str | None:
    path_part, _, fragment = target.partition("#")
    path = (source.parent / path_part) if path_part else source
    if not path.exists():
        return "no such file"
    if fragment and path.suffix == ".md" and slug(fragment) not in anchors(path):
        return f"{path.name} has no heading #{fragment}"
    return None


def broken_links(source: Path) -> list[str]:
    """One ``FILE:LINE: TARGET: why`` line per relative link of ``source`` that does not resolve."""
    problems = []
    for number, line in _prose_lines(source.read_text("utf-8")):
        for match in _LINK.finditer(line):
            target = match.group(1)
            if target.startswith(_EXTERNAL):
                continue
            why = _problem(source, target)
            if why:
                problems.append(f"{source}:{number}: {target}: {why}")
    return problems


def main(argv: list[str]) -> int:
    """Check each file named in ``argv``; returns 1 when a link is broken, else 0."""
    if not argv:
        print("usage: check_links.py FILE.md...", file=sys.stderr)
        return 2
    problems = [p for name in argv for p in broken_links(Path(name))]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
