"""Aider's ``.aider.chat.history.md``, cut into sessions of user, assistant and notice items.

Aider appends to this file as it runs (``aider/io.py``):

* every start writes ``# aider chat started at 2024-05-01 10:00:00``, so one
  file holds every session ever run in the repository;
* the user's input is written as ``#### `` lines, one per input line, each
  ending in a markdown line break (two spaces);
* aider's own output (tool output, warnings, errors, questions and their
  answers, token reports) is written as ``> `` lines ending in a line break.
  A multi-line message from ``tool_output`` has the marker on its first line
  only: the lines right after it, with no blank line between, belong to it;
* the model's reply is written as is, after a blank line.

So a ``#### `` line is a user line only when it ends in the two spaces aider
writes (an assistant's markdown ``####`` heading does not), unless the file
has lost its trailing spaces everywhere, in which case every such line outside
a code fence is taken for the user. ``> `` lines inside an assistant's code
fence are the assistant's, and so are ``> `` lines right below a line of the
reply (a markdown quote): aider ends a reply with a blank line before it
writes any notice, so a notice never follows a reply's line directly. Any
line ending reads (``\n``, ``\r\n``, ``\r``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Item", "Session", "parse_chat_history", "SESSION_START"]

SESSION_START = re.compile(r"^# aider chat started at (.+?)\s*$")
_USER = "####"
_NOTICE = ">"
_BREAK = "  "

Kind = Literal["user", "assistant", "notice"]


@dataclass
class Item:
    """One run of lines of one kind; ``line`` is where it starts in the file (1-based)."""

    kind: Kind
    line: int
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass
class Session:
    started: str | None
    line: int
    items: list[Item] = field(default_factory=list)


def _is_marked(line: str, marker: str) -> bool:
    return line == marker or line.startswith(marker + " ")


def _strip_marker(line: str, marker: str) -> str:
    text = line[len(marker) :]
    text = text[1:] if text.startswith(" ") else text
    return text[: -len(_BREAK)] if text.endswith(_BREAK) else text.rstrip()


class _Splitter:
    """Walks one file's lines, keeping the state the markers depend on."""

    def __init__(self, keeps_breaks: bool) -> None:
        self.keeps_breaks = keeps_breaks
        self.sessions: list[Session] = []
        self.item: Item | None = None
        self.in_fence = False
        self.after_notice = False  # the previous line was a notice line (continuations join it)
        self.after_reply = False  # the previous line was a non-blank line of the model's reply

    def _session(self, started: str | None, no: int) -> Session:
        session = Session(started=started, line=no)
        self.sessions.append(session)
        self.item = None
        self.in_fence = False
        self.after_notice = False
        self.after_reply = False
        return session

    def _add(self, kind: Kind, no: int, text: str) -> None:
        if not self.sessions:
            self._session(None, no)
        if self.item is None or self.item.kind != kind:
            self.item = Item(kind=kind, line=no)
            self.sessions[-1].items.append(self.item)
        self.item.lines.append(text)

    def _is_user(self, line: str) -> bool:
        if not _is_marked(line, _USER):
            return False
        if self.keeps_breaks:
            return line.endswith(_BREAK) or line == _USER
        return not self.in_fence

    def feed(self, no: int, line: str) -> None:
        start = SESSION_START.match(line)
        if start and not self.in_fence:
            self._session(start.group(1), no)
            return
        if self._is_user(line):
            self.in_fence = False
            self.after_notice = False
            self.after_reply = False
            self._add("user", no, _strip_marker(line, _USER))
            return
        if _is_marked(line, _NOTICE) and not self.in_fence and not self.after_reply:
            self.after_notice = True
            self._add("notice", no, _strip_marker(line, _NOTICE))
            return
        if not line.strip():
            self.after_notice = False
            self.after_reply = False
            if self.item is not None and self.item.kind == "assistant":
                self.item.lines.append("")
            return
        if self.after_notice:
            self._add("notice", no, line[: -len(_BREAK)] if line.endswith(_BREAK) else line)
            return
        if line.lstrip().startswith("```"):
            self.in_fence = not self.in_fence
        self.after_reply = True
        self._add("assistant", no, line)


def parse_chat_history(text: str) -> list[Session]:
    """Every session of the file in order; lines before the first header form a session with no start time."""
    lines = text.splitlines()
    keeps_breaks = any(_is_marked(x, _USER) and x.endswith(_BREAK) for x in lines)
    splitter = _Splitter(keeps_breaks)
    for no, line in enumerate(lines, start=1):
        splitter.feed(no, line)
    return splitter.sessions
