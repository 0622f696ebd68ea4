"""Transcript text shown through Streamlit's markdown, so that it can never become HTML, a link or a formula.

- ``safe_markdown(text)``: text that is markdown on purpose (a summary):
  headings, lists and emphasis render; HTML, links, images and math do not.
- ``literal_markdown(text)``: text to show exactly as written (a file name, a
  tool id, a warning that quotes them): every character markdown acts on is
  escaped.
"""

from __future__ import annotations

import html
import re

__all__ = ["safe_markdown", "literal_markdown"]

# Markdown that could make a link, an image, HTML, math or a coloured span out of transcript text.
_MARKDOWN_ACTIVE = re.compile(r"([\\\[\]$~|])")


# A fenced block (``` to ```) or an inline code span on one line.
_CODE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$|`[^`\n]+`", re.S | re.M)


def safe_markdown(text: str) -> str:
    """``text`` for ``st.markdown``: headings, lists and emphasis render; HTML, links, images and math do not.

    HTML is escaped (``<script>`` shows as text), and brackets, ``$``, ``~`` and ``|`` are backslash-escaped,
    so ``[x](javascript:...)`` stays text, ``:red[...]`` is no colour and ``$x$`` no formula.
    """
    # Code spans and fences show their text literally already: escaping there would print "&amp;" for "&".
    out: list[str] = []
    last = 0
    for code in _CODE.finditer(text):
        out.append(_MARKDOWN_ACTIVE.sub(r"\\\1", html.escape(text[last : code.start()], quote=False)))
        out.append(code.group(0))
        last = code.end()
    out.append(_MARKDOWN_ACTIVE.sub(r"\\\1", html.escape(text[last:], quote=False)))
    return "".join(out)


# Every character st.markdown gives a meaning to.
_LITERAL = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~$:])")


def literal_markdown(text: str) -> str:
    """``text`` for ``st.markdown`` / ``st.warning`` / ``st.caption``, shown exactly as written."""
    return _LITERAL.sub(r"\\\1", text)
