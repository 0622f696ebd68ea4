"""lab.ui.summary: summaries as markdown that can carry no HTML, no link and no formula out of a transcript."""

from __future__ import annotations

import re

import pytest

from lab.ui.summary import PART_HELP, PART_LABELS, safe_markdown
from lab.replayer.retention import PARTS

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


def test_every_retention_part_has_a_label_and_the_two_obscure_ones_a_line() -> None:
    assert set(PART_LABELS) == set(PARTS)
    assert set(PART_HELP) == {"planted_facts", "recoverable"}
    assert all(line.count(". ") == 0 and line.endswith(".") for line in PART_HELP.values()), "one sentence each"
