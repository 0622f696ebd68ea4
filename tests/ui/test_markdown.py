"""lab.views.markdown: transcript text through st.markdown carries no HTML, no link and no formula."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.views.markdown import literal_markdown, safe_markdown

HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1)) ![i](http://e/x.png)"


class TestSafeMarkdown:
    def test_markdown_structure_survives(self) -> None:
        text = "## Primary request\n- **keep** the `API` decisions\n1. then test"
        assert safe_markdown(text) == text

    def test_html_is_escaped(self) -> None:
        out = safe_markdown(HOSTILE)
        assert "<" not in out and ">" not in out
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "&lt;img src=x onerror=alert(1)&gt;" in out

    def test_links_and_images_lose_their_brackets(self) -> None:
        out = safe_markdown(HOSTILE)
        assert r"\[x\](javascript:alert(1))" in out and r"!\[i\](http://e/x.png)" in out
        assert not re.search(r"(?<!\\)[\[\]]", out), "every bracket is escaped"

    @pytest.mark.parametrize(
        "text, escaped",
        [("$x$ and $y$", r"\$x\$ and \$y\$"), (":red[alert]", r":red\[alert\]"), ("~~gone~~", r"\~\~gone\~\~"),
         ("a | b", r"a \| b"), ("C:\\path", "C:\\\\path"), ("a & b", "a &amp; b")],
        ids=["math", "colour", "strike", "table", "backslash", "ampersand"],
    )
    def test_other_active_markdown_is_neutral(self, text: str, escaped: str) -> None:
        assert safe_markdown(text) == escaped

    def test_code_shows_its_text_as_written(self) -> None:
        # A code span or fence is literal already; escaping inside it would print "&amp;&amp;".
        text = "ran `git checkout main && git pull` and\n```\nif a < b && c: [x](y)\n```\nthen <b>"
        out = safe_markdown(text)
        assert "`git checkout main && git pull`" in out and "```\nif a < b && c: [x](y)\n```" in out
        assert out.endswith("then &lt;b&gt;")

    def test_an_unclosed_backtick_protects_nothing(self) -> None:
        assert safe_markdown("`<script>alert(1)</script>") == "`&lt;script&gt;alert(1)&lt;/script&gt;"


class TestLiteralMarkdown:
    def test_nothing_markdown_acts_on_is_left_unescaped(self) -> None:
        out = literal_markdown(HOSTILE + " **b** _i_ `c` # h $m$ :red[x] a|b ~~s~~ \\")
        i = 0
        while i < len(out):
            if out[i] == "\\":
                i += 2  # an escaped character
                continue
            assert out[i] not in "\\`*_{}[]()#+-.!<>|~$:", (out[i], out[max(0, i - 10) : i + 10])
            i += 1

    @settings(max_examples=200, deadline=None)
    @given(st.text())
    def test_it_shows_the_text_as_written(self, text: str) -> None:
        # CommonMark drops the backslash before any ASCII punctuation: undoing the escapes gives the text back.
        assert re.sub(r"\\(.)", r"\1", literal_markdown(text), flags=re.S) == text
