"""Aider's ``.aider.llm.history``: a plain-text log of every request and reply.

Aider (``--llm-history-file``) appends a header line per event, then its body:

* ``TO LLM 2024-05-01T10:00:05``: the messages sent, each introduced by a
  ``-------`` line, every line of its text prefixed with the role in capitals
  (``SYSTEM You are...``, ``USER fix the bug``, ``ASSISTANT Ok.``); an empty
  line is the bare role;
* ``LLM RESPONSE 2024-05-01T10:00:09``: the reply, each line prefixed
  ``ASSISTANT``.

Content lists (images) are written one ``ROLE key: value`` line per item, so a
multi-line value continues on lines without a prefix; those lines are kept as
part of the message they follow. This module only parses; ``aider`` builds
the transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["Section", "parse_llm_history", "HEADER"]

HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*)\s*$")
_SEPARATOR = "-------"
_ROLES = {"SYSTEM": "system", "USER": "user", "ASSISTANT": "assistant", "TOOL": "tool", "FUNCTION": "tool"}


@dataclass
class Section:
    """One logged event: a request (``kind == "TO LLM"``) or a reply, with its (role, text) messages."""

    kind: str
    timestamp: datetime | None
    line: int
    messages: list[tuple[str, str]] = field(default_factory=list)


def _stamp(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _split_role(line: str) -> tuple[str, str] | None:
    head, _, rest = line.partition(" ")
    role = _ROLES.get(head)
    return (role, rest) if role is not None else None


class _Message:
    __slots__ = ("role", "lines")

    def __init__(self) -> None:
        self.role: str | None = None
        self.lines: list[str] = []


def _close(section: Section, current: _Message) -> None:
    if current.role is not None:
        section.messages.append((current.role, "\n".join(current.lines)))


def parse_llm_history(text: str) -> list[Section]:
    """Every section of the log in file order (text before the first header is ignored)."""
    sections: list[Section] = []
    section: Section | None = None
    current = _Message()
    for no, line in enumerate(text.splitlines(), start=1):
        header = HEADER.match(line)
        if header:
            if section is not None:
                _close(section, current)
            section = Section(kind=header.group(1), timestamp=_stamp(header.group(2)), line=no)
            sections.append(section)
            current = _Message()
            continue
        if section is None:
            continue
        if line == _SEPARATOR:
            _close(section, current)
            current = _Message()
            continue
        split = _split_role(line)
        if split is not None and (current.role is None or split[0] == current.role):
            # A reply has no separator lines: its first ASSISTANT line opens it.
            current.role = split[0]
            current.lines.append(split[1])
        elif current.role is not None:
            current.lines.append(line)
    if section is not None:
        _close(section, current)
    return sections
