"""Code fences as code blocks on the transcript page (triage.rendering), with the verdict's
highlights cut to fit, and everything still escaped when rendered."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from triage.rendering import blocks_with_highlights, split_fences
from triage.views import highlight_segments


def _kinds(text):
    return [(b.kind, text[b.start:b.end]) for b in split_fences(text)]


def _joined(blocks) -> str:
    return "".join(p["text"] for b in blocks for p in b["pieces"])


def test_fences_split_the_text_into_text_and_code_blocks_covering_it_exactly():
    text = "Here:\n```python\nprint('hi')\n```\nand\n~~~\nraw\n~~~\n"
    assert _kinds(text) == [
        ("text", "Here:\n"), ("code", "```python\nprint('hi')\n```\n"),
        ("text", "and\n"), ("code", "~~~\nraw\n~~~\n"),
    ]
    first = split_fences(text)[1]
    assert first.language == "python" and first.closed
    assert text[first.body_start:first.body_end] == "print('hi')\n"
    assert split_fences(text)[3].language == ""


@pytest.mark.parametrize("text, expected", [
    ("", [("text", "")]),
    ("no fences at all", [("text", "no fences at all")]),
    ("```\ncode", [("code", "```\ncode")]),                       # no trailing newline either
    ("a ``` b\n", [("text", "a ``` b\n")]),                        # not at the start of a line
    ("``\nx\n``\n", [("text", "``\nx\n``\n")]),                    # two backticks are no fence
    ("```a`b\nx\n", [("text", "```a`b\nx\n")]),                    # a backtick in the info string
    ("1. step\n   ```bash\n   ls\n   ```\n", [("text", "1. step\n"), ("code", "   ```bash\n   ls\n   ```\n")]),
    ("```\r\nx\r\n```\r\nafter", [("code", "```\r\nx\r\n```\r\n"), ("text", "after")]),
], ids=["empty", "plain", "bare-unclosed", "inline", "two-ticks", "tick-in-info", "in-a-list", "crlf"])
def test_edge_cases(text, expected):
    assert _kinds(text) == expected


def test_an_unclosed_fence_runs_to_the_end():
    text = "Sure:\n```html\n" + "<div>\n" * 5
    blocks = split_fences(text)
    assert [b.kind for b in blocks] == ["text", "code"]
    assert blocks[1].end == len(text) and not blocks[1].closed and blocks[1].language == "html"


def test_the_closing_fence_matches_the_opening_one():
    # A shorter run or the other character closes nothing; a longer run of the same one does.
    text = "````md\n```\n~~~~\n`````\nafter\n"
    assert _kinds(text) == [("code", "````md\n```\n~~~~\n`````\n"), ("text", "after\n")]
    assert _kinds("```\nx\n``` not a close\n```\n") == [("code", "```\nx\n``` not a close\n```\n")]


@pytest.mark.parametrize("info, language", [
    ("python", "python"), ("Python title=x.py", "python"), ("{.rust}", "rust"), ("c++", "c++"),
    ('js" onclick="alert(1)', "js"), ("", ""), ("x" * 100, "x" * 30),
])
def test_the_language_label_is_the_first_word_made_safe_for_a_class_name(info, language):
    assert split_fences(f"```{info}\nx\n```")[0].language == language


def test_highlights_show_inside_and_across_code_blocks():
    text = "loop loop\n```\nloop loop\n```\nloop"
    start, end = text.index("loop loop\n```") + 5, len(text)  # from the first line into the code, to the end
    segments = highlight_segments(text, [{"start": start, "end": end, "kind": "loop", "label": "×4"}])
    blocks = blocks_with_highlights(text, segments)
    assert _joined(blocks) == text
    assert [b["kind"] for b in blocks] == ["text", "code", "text"]
    marked = [(b["kind"], p["text"], p["fence"]) for b in blocks for p in b["pieces"] if p["kind"] == "loop"]
    assert marked == [
        ("text", "loop\n", False),
        ("code", "```\n", True), ("code", "loop loop\n", False), ("code", "```\n", True),
        ("text", "loop", False),
    ]
    assert all(p.get("label") == "×4" for b in blocks for p in b["pieces"] if p["kind"])


def test_a_highlight_inside_the_code_only():
    text = "intro\n```py\nx = 1\nx = 1\n```\n"
    start = text.index("x = 1\nx")
    blocks = blocks_with_highlights(text, highlight_segments(text, [{"start": start + 6, "end": start + 11,
                                                                     "kind": "loop"}]))
    code = blocks[1]["pieces"]
    assert [(p["text"], p["kind"]) for p in code] == [("```py\n", ""), ("x = 1\n", ""), ("x = 1", "loop"),
                                                      ("\n", ""), ("```\n", "")]


def test_segments_must_cover_the_text():
    with pytest.raises(ValueError):
        blocks_with_highlights("abc", [{"text": "ab", "kind": ""}])


def test_html_inside_a_fence_stays_escaped():
    text = 'Try:\n```html\n<script>alert(1)</script><img src=x onerror="x()">\n```\n<b>bold?</b>'
    html = render_to_string("triage/_blocks.html", {"blocks": blocks_with_highlights(text)})
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;x()&quot;&gt;" in html
    assert '<pre><code class="language-html">' in html and '<div class="lang">html</div>' in html
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html


def test_an_unclosed_fence_is_labelled():
    html = render_to_string("triage/_blocks.html", {"blocks": blocks_with_highlights("```\n" + "</div>" * 3)})
    assert "unclosed fence" in html and '<pre><code>' in html and "&lt;/div&gt;" * 3 in html
