"""The page in a real headless Chromium (Debian's /usr/bin/chromium through Playwright).

Issue 5 acceptance: tabs and their keys, feedback only after a selection, "Correct" /
"Not quite", re-reveal on change, "n of N answered", no horizontal scroll at 375 px, no
network request and no console error, hostile content shown as text, dark mode by media
emulation and by data-theme, two tabs for a spec page and four after the code re-render.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import cli
from tests.explainer.conftest import CHROMIUM, EXAMPLES, NO_CHROMIUM, Watched
from tests.explainer.test_explainer_render import HOSTILE, hostile

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]

LIGHT_BG = "rgb(246, 246, 243)"
DARK_BG = "rgb(21, 23, 27)"


def _selected_tab(page: Any) -> str:
    return page.eval_on_selector('[role="tab"][aria-selected="true"]', "t => t.textContent")


def _visible_panels(page: Any) -> list[str]:
    return page.eval_on_selector_all('[role="tabpanel"]:not([hidden])', "ps => ps.map(p => p.id)")


def _background(page: Any) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def _open_quiz(watch: Watched, path: Path) -> Any:
    page = watch.open(path)
    page.click("#tab-spec-quiz")
    return page


@pytest.fixture
def both(write_page: Callable[..., Path], spec_data: dict, code_data: dict) -> Path:
    return write_page(spec_data, code_data)


def test_arrow_keys_move_between_tabs_and_wrap(watched: Callable[..., Watched], both: Path) -> None:
    page = watched().open(both)
    assert _selected_tab(page) == "Spec explainer"
    page.focus("#tab-spec-explainer")
    page.keyboard.press("ArrowRight")
    assert _selected_tab(page) == "Spec quiz"
    assert page.evaluate("document.activeElement.id") == "tab-spec-quiz"
    assert _visible_panels(page) == ["panel-spec-quiz"]
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")  # wraps from the first tab to the last
    assert _selected_tab(page) == "Code quiz"
    page.keyboard.press("ArrowRight")  # and from the last back to the first
    assert _selected_tab(page) == "Spec explainer"


def test_home_and_end_jump_to_the_first_and_last_tab(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = watched().open(both)
    page.focus("#tab-spec-explainer")
    page.keyboard.press("End")
    assert _selected_tab(page) == "Code quiz"
    assert _visible_panels(page) == ["panel-code-quiz"]
    page.keyboard.press("Home")
    assert _selected_tab(page) == "Spec explainer"
    tabindexes = page.eval_on_selector_all('[role="tab"]', "ts => ts.map(t => t.tabIndex)")
    assert tabindexes == [0, -1, -1, -1]  # roving tabindex


def test_each_tab_controls_its_panel(watched: Callable[..., Watched], both: Path) -> None:
    page = watched().open(both)
    for tab_id in ("explainer", "code-quiz", "spec-quiz", "spec-explainer"):
        page.click(f"#tab-{tab_id}")
        assert page.get_attribute(f"#tab-{tab_id}", "aria-controls") == f"panel-{tab_id}"
        assert _visible_panels(page) == [f"panel-{tab_id}"]
        assert page.get_attribute(f"#panel-{tab_id}", "aria-labelledby") == f"tab-{tab_id}"


def test_no_feedback_before_a_selection_then_correct(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = _open_quiz(watched(), both)
    assert page.locator(".feedback").count() == 0
    assert page.locator("#spec-quiz-q1 input[type=radio]").count() == 3
    page.check("#spec-quiz-q1 input[value='0']")  # the correct option of question 1
    feedback = page.locator("#spec-quiz-q1 .feedback")
    assert feedback.count() == 1
    assert feedback.inner_text().startswith("✓ Correct.")
    assert page.locator(".feedback").count() == 1


def test_a_wrong_answer_says_not_quite_and_changing_it_re_reveals(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = _open_quiz(watched(), both)
    page.check("#spec-quiz-q2 input[value='0']")  # wrong: B is correct
    first = page.locator("#spec-quiz-q2 .feedback")
    assert first.inner_text().startswith("✗ Not quite.")
    assert "loopgate writes that comment itself" in first.inner_text()
    old = page.query_selector("#spec-quiz-q2 .feedback")
    page.check("#spec-quiz-q2 input[value='1']")
    assert page.evaluate("node => node.isConnected", old) is False  # a new node, re-revealed
    assert page.locator("#spec-quiz-q2 .feedback").count() == 1
    assert page.locator("#spec-quiz-q2 .feedback").inner_text().startswith("✓ Correct.")


def test_progress_counts_answered_questions(watched: Callable[..., Watched], both: Path) -> None:
    page = _open_quiz(watched(), both)
    progress = page.locator("#spec-quiz-progress")
    assert progress.inner_text() == "0 of 3 answered"
    page.check("#spec-quiz-q1 input[value='1']")
    assert progress.inner_text() == "1 of 3 answered"
    page.check("#spec-quiz-q1 input[value='2']")  # changing an answer is not a new one
    assert progress.inner_text() == "1 of 3 answered"
    page.check("#spec-quiz-q3 input[value='2']")
    assert progress.inner_text() == "2 of 3 answered"
    page.click("#tab-code-quiz")
    assert page.locator("#code-quiz-progress").inner_text() == "0 of 5 answered"


def test_options_are_native_radios_with_one_markup_and_label_pattern(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = watched().open(both)
    shapes = page.eval_on_selector_all(
        "label.option", "ls => ls.map(l => Array.from(l.children).map(c => c.tagName + '.' + "
        "c.className + (c.type ? ':' + c.type : '')).join(' '))")
    assert len(shapes) == 3 * 3 + 4 * 4 + 3  # spec 3x3, code four 4-option + one 3-option
    assert set(shapes) == {"INPUT.:radio SPAN.letter SPAN.text"}
    labels = page.eval_on_selector_all("label.option input",
                                       "is => is.map(i => i.getAttribute('aria-label'))")
    assert all(re.fullmatch(r"Option [A-D]: \S.*", label) for label in labels)
    assert labels[0] == ("Option A: A session never works at a human node, so an agent node "
                         "writes the page first.")


def test_no_network_request_and_no_console_error_while_loading_and_answering(
    watched: Callable[..., Watched], both: Path
) -> None:
    watch = watched()
    page = _open_quiz(watch, both)
    for question, value in ((1, 0), (2, 0), (2, 1), (3, 2)):
        page.check(f"#spec-quiz-q{question} input[value='{value}']")
    page.click("#tab-code-quiz")
    page.check("#code-quiz-q1 input[value='3']")
    page.click("#tab-explainer")
    page.click("#theme-toggle")
    page.click("#tab-spec-quiz")
    page.click("#spec-quiz-q1 .source a")  # "Covered in" opens the explainer tab
    assert _selected_tab(page) == "Spec explainer"
    assert watch.requests == [both.as_uri()]
    assert watch.errors == []


def test_explainer_template_renders_text_not_markup(
    watched: Callable[..., Watched], write_page: Callable[..., Path], spec_data: dict,
    code_data: dict,
) -> None:
    """Abuse case 3 of the explainer design's Security table: `<script>`, `<img onerror>`
    and `</script>` in content render as visible text and run nothing."""
    path = write_page(hostile(spec_data), hostile(code_data))
    watch = watched()
    page = watch.open(path)
    assert page.title().startswith(HOSTILE)
    assert page.locator("h1").inner_text() == HOSTILE
    assert HOSTILE in page.locator("#spec-background").inner_text()
    page.click("#tab-spec-quiz")
    assert HOSTILE in page.locator("#spec-quiz-q1 legend").inner_text()
    page.check("#spec-quiz-q1 input[value='1']")
    assert page.locator("#spec-quiz-q1 .feedback").inner_text().startswith(
        "✗ Not quite. " + HOSTILE)
    page.click("#tab-explainer")
    assert page.locator("#code-code pre").first.inner_text() == HOSTILE
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2
    assert watch.requests == [path.as_uri()]
    assert watch.errors == []


def test_no_horizontal_scroll_at_375_px_with_a_16_px_gutter(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = watched(width=375, height=812).open(both)
    for tab_id in ("spec-explainer", "spec-quiz", "explainer", "code-quiz"):
        page.click(f"#tab-{tab_id}")
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"{tab_id}: scrollWidth {widths[0]} > {widths[1]}"
    box = page.locator('[role="tablist"]').bounding_box()
    assert (box["x"], box["x"] + box["width"]) == (16, 375 - 16)


def test_the_column_stops_at_760_px(watched: Callable[..., Watched], both: Path) -> None:
    page = watched(width=1400).open(both)
    box = page.locator("main").bounding_box()
    assert box["width"] == 760 - 2 * 16
    assert box["x"] == (1400 - 760) / 2 + 16


def test_dark_mode_follows_the_media_query(watched: Callable[..., Watched], both: Path) -> None:
    assert _background(watched(color_scheme="light").open(both)) == LIGHT_BG
    page = watched(color_scheme="dark").open(both)
    assert _background(page) == DARK_BG
    assert page.get_attribute("#theme-toggle", "aria-pressed") == "true"


def test_data_theme_overrides_the_media_query(watched: Callable[..., Watched], both: Path) -> None:
    page = watched(color_scheme="light").open(both)
    toggle = page.locator("#theme-toggle")
    assert toggle.is_visible() and toggle.inner_text() == "Dark theme"
    toggle.click()
    assert page.get_attribute("html", "data-theme") == "dark"
    assert _background(page) == DARK_BG
    assert toggle.get_attribute("aria-pressed") == "true"
    dark = watched(color_scheme="dark").open(both)
    dark.evaluate("document.documentElement.setAttribute('data-theme', 'light')")
    assert _background(dark) == LIGHT_BG


def test_feedback_colour_is_only_a_second_signal(
    watched: Callable[..., Watched], both: Path
) -> None:
    page = _open_quiz(watched(), both)
    page.check("#spec-quiz-q1 input[value='0']")
    page.check("#spec-quiz-q2 input[value='0']")
    right = page.locator("#spec-quiz-q1 .feedback .verdict").inner_text()
    wrong = page.locator("#spec-quiz-q2 .feedback .verdict").inner_text()
    assert (right, wrong) == ("✓ Correct.", "✗ Not quite.")
    colours = page.eval_on_selector_all(
        ".feedback", "fs => fs.map(f => getComputedStyle(f).backgroundColor)")
    assert colours[0] != colours[1]


def test_spec_only_page_has_two_tabs_and_the_code_rerender_adds_two(
    watched: Callable[..., Watched], tmp_path: Path
) -> None:
    out = tmp_path / "explainer" / "explainer.html"
    runner = CliRunner()
    spec = runner.invoke(cli, ["explainer", "render", str(EXAMPLES / "spec.yaml"),
                               "--out", str(out)])
    assert spec.exit_code == 0, spec.output
    page = watched().open(out)
    assert page.locator('[role="tab"]').all_inner_texts() == ["Spec explainer", "Spec quiz"]
    code = runner.invoke(cli, ["explainer", "render", str(EXAMPLES / "code.yaml"),
                               "--out", str(out)])
    assert code.exit_code == 0, code.output
    page.reload()
    assert page.locator('[role="tab"]').all_inner_texts() == [
        "Spec explainer", "Spec quiz", "Explainer", "Code quiz"]
    page.click("#tab-code-quiz")
    assert page.locator("#code-quiz-questions fieldset").count() == 5
    page.click("#tab-spec-quiz")
    assert page.locator("#spec-quiz-questions fieldset").count() == 3


def test_a_micro_page_has_no_quiz_questions(
    watched: Callable[..., Watched], write_page: Callable[..., Path], spec_data: dict
) -> None:
    spec_data["depth"] = "micro"
    spec_data["quiz"]["questions"] = []
    watch = watched()
    page = watch.open(write_page(spec_data))
    page.click("#tab-spec-quiz")
    assert "No questions at micro depth" in page.locator("#panel-spec-quiz").inner_text()
    assert page.locator("fieldset").count() == 0
    assert watch.errors == []


def test_the_csp_blocks_any_inline_script_but_the_engine(
    watched: Callable[..., Watched], both: Path
) -> None:
    html = both.read_text("utf-8")
    both.write_text(html.replace("<main>", "<main><script>window.__pwned = 4</script>", 1),
                    "utf-8")
    watch = watched()
    page = watch.open(both)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator('[role="tab"]').count() == 4
    page.click("#tab-spec-quiz")
    assert page.locator("#spec-quiz-questions fieldset").count() == 3  # the engine still ran
    assert any("Content Security Policy" in error for error in watch.errors)
