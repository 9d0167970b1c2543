"""Rendering without a browser: tabs, escaping, CSP, self-containment, re-rendering."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bot.explainer.content import ContentError, content_from_mapping
from bot.explainer.page_render import (
    DATA_FORMAT,
    csp_hash,
    inline,
    merge_contents,
    recover_contents,
    render_page,
    tab_labels,
)

HOSTILE = ("<script>window.__pwned = 1</script> <img src=x onerror=\"window.__pwned = 2\"> "
           "</script><script>window.__pwned = 3</script>")


def _content(data: dict[str, Any], source: str = "test") -> Any:
    return content_from_mapping(data, source)


def _tabs(html: str) -> list[str]:
    return re.findall(r'<button type="button" role="tab"[^>]*>([^<]*)</button>', html)


def hostile(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with markup in every kind of string the page shows."""
    data["title"] = HOSTILE
    data["summary"] = HOSTILE
    data["sections"]["background"]["paragraphs"].append(HOSTILE)
    data["sections"]["risks"]["items"].append(HOSTILE)
    question = data["quiz"]["questions"][0]
    question["prompt"] = HOSTILE
    for option in question["options"]:
        option["feedback"] = HOSTILE + " " + option["feedback"]
    question["options"][1]["text"] = HOSTILE
    if "code" in data["sections"]:
        data["sections"]["code"]["excerpts"][0]["code"] = HOSTILE
    return data


def test_a_spec_page_has_the_two_spec_tabs(spec_data: dict[str, Any]) -> None:
    html = render_page([_content(spec_data)])
    assert _tabs(html) == ["Spec explainer", "Spec quiz"]


def test_spec_and_code_give_four_tabs_in_order(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(code_data), _content(spec_data)])
    assert _tabs(html) == ["Spec explainer", "Spec quiz", "Explainer", "Code quiz"]
    assert tab_labels([_content(code_data)]) == ["Explainer", "Code quiz"]


def test_only_the_first_tab_is_selected_and_visible(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(spec_data), _content(code_data)])
    tablist = html.split('<div role="tablist"', 1)[1].split("</div>", 1)[0]
    assert tablist.count('aria-selected="true"') == 1
    assert tablist.count('tabindex="0"') == 1  # roving tabindex: one tab stop
    assert re.search(r'id="panel-spec-explainer"[^>]*tabindex="0">', html)
    for panel in ("spec-quiz", "explainer", "code-quiz"):
        assert re.search(rf'id="panel-{panel}"[^>]* hidden>', html)


def test_the_header_states_the_depth(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(spec_data), _content(code_data)])
    assert "Spec depth: <strong>standard</strong>" in html
    assert "Code depth: <strong>deep</strong>" in html


def test_markup_in_content_is_escaped_and_never_raw(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(hostile(spec_data)), _content(hostile(code_data))])
    assert html.count("<script") == 2  # the JSON data block and the engine, nothing else
    assert "<img" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "onerror=&#34;window.__pwned = 2&#34;" in html


def test_the_data_block_cannot_be_closed_by_content(spec_data: dict) -> None:
    html = render_page([_content(hostile(spec_data))])
    block = html.split('<script type="application/json" id="loopgate-data">', 1)[1]
    body, rest = block.split("</script>", 1)
    assert "<" not in body and ">" not in body
    data = json.loads(body)
    assert data["format"] == DATA_FORMAT
    assert data["contents"][0]["quiz"]["questions"][0]["prompt"] == HOSTILE
    assert rest.lstrip().startswith("<script>")


def test_the_page_is_self_contained(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(spec_data), _content(code_data)])
    assert not re.search(r"\s(src|href)=\"(https?:)?//", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "@font-face" not in html
    assert "--font: system-ui, -apple-system" in html


def test_the_csp_allows_only_the_engine_script_by_hash(spec_data: dict) -> None:
    html = render_page([_content(spec_data)])
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)[1]
    engine = html.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    assert csp == (f"default-src 'none'; style-src 'unsafe-inline'; script-src "
                   f"'{csp_hash(engine)}'; base-uri 'none'; form-action 'none'")


def test_the_engine_writes_text_never_html(spec_data: dict) -> None:
    engine = render_page([_content(spec_data)]).rsplit("<script>", 1)[1]
    assert "innerHTML" not in engine and "outerHTML" not in engine
    assert "insertAdjacentHTML" not in engine and "document.write" not in engine
    assert "textContent" in engine


def test_a_micro_page_says_there_are_no_questions(spec_data: dict) -> None:
    spec_data["depth"] = "micro"
    spec_data["quiz"]["questions"] = []
    html = render_page([_content(spec_data)])
    assert "No questions at micro depth" in html
    assert "answered" not in html.split("<script", 1)[0]


def test_a_page_shows_a_progress_line_per_quiz(spec_data: dict, code_data: dict) -> None:
    html = render_page([_content(spec_data), _content(code_data)])
    for quiz, total in (("spec-quiz", 3), ("code-quiz", 5)):
        assert (f'<p class="progress" id="{quiz}-progress" aria-live="polite">'
                f'0 of {total} answered</p>') in html


def test_excerpts_keep_their_order_and_location(code_data: dict) -> None:
    html = render_page([_content(code_data)])
    locations = re.findall(r'<code class="loc">([^<]+)</code>', html)
    assert locations == ["engine/evidence.py:221-224", "engine/ports.py:110",
                         "engine/settings.py:19"]


def test_inline_turns_paired_backticks_into_code_and_escapes() -> None:
    assert str(inline("a `<b>` c")) == "a <code>&lt;b&gt;</code> c"
    assert str(inline("odd ` tick <i>")) == "odd ` tick &lt;i&gt;"


def test_recover_contents_round_trips(spec_data: dict, code_data: dict) -> None:
    spec, code = _content(spec_data), _content(code_data)
    recovered = recover_contents(render_page([spec, code]), "page.html")
    assert [c.data for c in recovered] == [spec.data, code.data]


def test_recover_refuses_a_page_that_is_not_loopgates() -> None:
    with pytest.raises(ContentError, match="not a loopgate explainer page"):
        recover_contents("<html><body>hello</body></html>", "other.html")


def test_recover_revalidates_hand_edited_content(spec_data: dict) -> None:
    html = render_page([_content(spec_data)])
    edited = html.replace('"depth": "standard"', '"depth": "deep"')
    with pytest.raises(ContentError) as caught:
        recover_contents(edited, "page.html")
    assert caught.value.source == "page.html (embedded content 1)"


def test_merge_prefers_the_given_content_of_a_variant(spec_data: dict, code_data: dict) -> None:
    old_spec, code = _content(spec_data, "old"), _content(code_data)
    spec_data["title"] = "A new title"
    new_spec = _content(spec_data, "new")
    merged = merge_contents([code, new_spec], [old_spec])
    assert [c.source for c in merged] == ["new", "test"]


def test_two_contents_of_one_variant_are_refused(spec_data: dict) -> None:
    with pytest.raises(ContentError, match="two spec contents"):
        render_page([_content(spec_data, "a"), _content(spec_data, "b")])


def test_contents_of_different_work_items_are_refused(spec_data: dict, code_data: dict) -> None:
    code_data["workItem"] = "acme/widgets#43"
    with pytest.raises(ContentError, match="different work items"):
        render_page([_content(spec_data), _content(code_data)])


def test_nothing_to_render_is_refused() -> None:
    with pytest.raises(ContentError, match="nothing to render"):
        render_page([])
