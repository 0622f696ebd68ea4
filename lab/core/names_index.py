"""The names a long tool output holds beyond its preview, listed in its spill stub.

A spill stub shows the head of an output and points to the file that holds
the rest. What an agent names next is often further down: the fifth path a
grep printed, the function defined two hundred lines into a file, the test
id in the middle of a pytest run. A stub that also lists those names tells
the agent what the file holds, so it can ask for the right part of it, and
keeps the name itself in the prompt at the price of a line.

A name is a token (a run of word characters joined by ``. / - ~ @ +``) of at
least four characters that looks like code rather than prose: it holds a
``/`` or an ``_``, a lower-to-upper case change (``camelCase``, ``HTTPServer``)
or a dot that is not part of a number (``models.py``, ``os.path``). Names
are listed once each, in the order the output first shows them, leaving out
those the preview already shows; one that would overrun the budget is
skipped, so later short names can still fill it. JSON-escaped text (an MCP
result's ``\\n``) is read with its escapes as separators, so ``\\nsrc/app.py``
gives ``src/app.py``.

The index only holds names, not the lines around them: it is a table of
contents for the spilled file, not a substitute for reading it.
"""

from __future__ import annotations

import re

__all__ = ["INDEX_HEADER", "TOKEN", "names_beyond", "index_line"]

INDEX_HEADER = "[names in the full output]"

# What a name is, here and in needed-later recall (``lab.replayer.mentions`` reads its tokens with this
# rule): one definition, so the index lists names exactly as recall will look for them.
TOKEN = re.compile(r"[\w~](?:[\w.~@+/-]*[\w~])?")
# JSON escapes left in text that was encoded twice (MCP results, logged tool output): separators, not letters.
_ESCAPE = re.compile(r"\\(?:[nrt\"\\/]|u[0-9a-fA-F]{4})")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_MIN_CHARS = 4
_SEPARATOR = ", "


def _is_name(token: str) -> bool:
    if "/" in token or "_" in token or _CASE_CHANGE.search(token):
        return True
    return "." in token and not token.replace(".", "").isdigit()


def names_beyond(content: str, preview: str, budget: int) -> list[str]:
    """The names ``content`` holds that ``preview`` does not, first seen first, joined within ``budget`` characters."""
    if budget <= 0:
        return []
    shown = set(TOKEN.findall(_ESCAPE.sub(" ", preview)))
    out: list[str] = []
    seen: set[str] = set()
    used = 0
    for match in TOKEN.finditer(_ESCAPE.sub(" ", content)):
        token = match.group()
        if len(token) < _MIN_CHARS or token in seen:
            continue
        seen.add(token)
        if token in shown or not _is_name(token):
            continue
        cost = len(token) + (len(_SEPARATOR) if out else 0)
        if used + cost > budget:
            continue
        out.append(token)
        used += cost
    return out


def index_line(content: str, preview: str, budget: int) -> str:
    """The stub's index line (``INDEX_HEADER`` and the names), or "" when there is nothing to list."""
    names = names_beyond(content, preview, budget)
    return f"{INDEX_HEADER} {_SEPARATOR.join(names)}" if names else ""
