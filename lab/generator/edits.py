"""Planted content dependencies: turns that need the exact text of earlier output, known in advance.

Content recall (``lab.replayer.content``) asks whether the context still held
the lines an edit replaces and the spans a response copies. The corpus is thin
on that signal, so the generator plants it: with ``content_dependencies`` set,
that many tool turns are replaced by one of

    edit of a read line   an ``Edit`` whose ``old_string`` is one or two lines
                          of a file the session has shown (a read, a write, an
                          edit's snippet)
    quote                 a response that quotes, in backticks, one line of at
                          least 40 characters of an earlier tool output, then
                          reads a new file
    edit of its own file  an ``Edit`` of a line of a file the session wrote
                          itself with ``Write`` (the write, planted the first
                          time, needs nothing)

Each planted item is what the scorer should find, normalised the scorer's way:
``Planted(request, kind, text)``, where ``request`` is the index of the
assistant message that needs it. The planted text is chosen so that it is
found whole and nothing else is: a quoted line sits between backticks and
shares no indexed window with other output shown before it (the scorer grows a
copy from the first output showing its window), an edit's new text puts a
numbered comment after the old lines, no line is replaced twice, and a written
file's lines carry a number of their own. On a session with ordinary edits and tool
errors switched off (``edit_weight=0``, ``error_rate=0``), the planted items
are every item the scorer finds; with them on, ordinary edits add their own.

``session.generate_planted(config)`` returns the transcript and its planted items.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from collections.abc import Iterable

from ..core.messages import Message, ToolResultBlock
from .tools import ToolCall, Workspace, numbered
from .vocab import NOUNS, VERBS, TextKit

__all__ = ["Planted", "Plan", "ContentPlanter", "planted_turns", "KINDS", "MIN_QUOTE"]

KINDS = ("edit_read", "quote", "edit_own")
# The scorer's thresholds (``lab.replayer.content``): a quote is a span, an anchor line is counted from this long.
MIN_QUOTE = 40
_MIN_LINE = 8
# Tool-output lines kept as quote candidates (the most recent ones).
_KEEP_LINES = 400


def _windows(line: str) -> list[str]:
    """The ``MIN_QUOTE``-character windows of a normalised line that start a word, as the scorer indexes them."""
    starts = [0] + [i + 1 for i, c in enumerate(line) if c == " "]
    return [line[j : j + MIN_QUOTE] for j in starts if j + MIN_QUOTE <= len(line)]


def _comment(line: str) -> bool:
    return line.lstrip().startswith(("#", "//"))


def _normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Planted:
    """One planted content dependency: the assistant message (its index in the transcript) that needs ``text``."""

    message: int
    kind: str
    text: str


@dataclass(frozen=True)
class Plan:
    """One planted turn: its kind ("write" needs nothing), the texts before its call, the call, what it needs."""

    kind: str
    text: tuple[str, ...]
    call: ToolCall
    needs: tuple[str, ...]


def planted_turns(requests: int, count: int, rng: random.Random, avoid: Iterable[int]) -> list[int]:
    """Which turns (0 .. requests-2) plant a dependency: ``count`` of those not in ``avoid``, spread out, never turn 0."""
    free = [k for k in range(1, requests - 1) if k not in set(avoid)]
    if count >= len(free):
        return free
    return sorted(rng.sample(free, count))


class ContentPlanter:
    """Plants the dependencies of one session; the session builder asks it for a turn and shows it every message."""

    def __init__(self, ws: Workspace, kit: TextKit, rng: random.Random) -> None:
        self.ws, self.kit, self.rng = ws, kit, rng
        self.planted: list[Planted] = []
        self._quotable: list[str] = []
        self._shown: Counter[str] = Counter()
        # Normalised lines planted edits replaced: a second edit of the same text would copy the first one's new text.
        self._replaced: set[str] = set()
        self._own: list[str] = []
        self._serial = 0
        self._turn = 0

    # -- what the session has shown ----------------------------------------------------
    def observe(self, message: Message) -> None:
        """Remember the quotable lines of a tool output (long enough, with a space, no backtick), and how often each
        window the scorer indexes (``MIN_QUOTE`` characters from a word start) has been shown."""
        for b in message.content:
            if isinstance(b, ToolResultBlock):
                for line in b.content.splitlines():
                    n = _normalise(line)
                    if len(n) < MIN_QUOTE:
                        continue
                    self._shown.update(_windows(n))
                    if not b.is_error and " " in n and "`" not in n:
                        self._quotable.append(n)
        del self._quotable[:-_KEEP_LINES]

    def _unique(self, line: str) -> bool:
        """Whether every window of ``line`` was shown once: the scorer grows a copy from the first output showing its
        window, so a line sharing a window with an earlier one (a path on two grep lines) would be found cut short."""
        return all(self._shown[w] == 1 for w in _windows(line))

    # -- turns -------------------------------------------------------------------------
    def plan(self) -> Plan:
        """The next planted turn: its text blocks, its one tool call, and the items it needs (recorded by ``record``)."""
        kind = KINDS[self._turn % len(KINDS)]
        self._turn += 1
        quotable = [x for x in self._quotable if self._unique(x)] if kind == "quote" else []
        if kind == "quote" and not quotable:
            kind = "edit_read"
        if kind == "edit_read" and not self._readable():
            kind = "edit_own"
        own = [p for p in self._own if self._editable(p)]
        if kind == "edit_own" and not own:
            return Plan("write", (), self._write(), ())
        if kind == "quote":
            line = self.rng.choice(quotable)
            return Plan(kind, (f"The earlier output says `{line}`, so that is the case to handle.",), self.ws.read(None), (line,))
        path = self.rng.choice(own if kind == "edit_own" else self._readable())
        call, needs = self._edit(path)
        return Plan(kind, (), call, tuple(needs))

    def record(self, message: int, plan: Plan) -> None:
        """The plan went out as the assistant message at index ``message``."""
        self.planted += [Planted(message, plan.kind, n) for n in plan.needs]

    def _readable(self) -> list[str]:
        """Files the session has shown, not its own (their edits are the other kind), with a line long enough to edit."""
        return [p for p in self.ws.known()[-40:] if p not in self._own and self._editable(p)]

    def _editable(self, path: str) -> list[int]:
        """The lines of ``path`` a planted edit may start at: long enough, not a comment, nor a line a comment follows
        (an earlier planted edit's: the new text would repeat that pair, a copy of its own)."""
        lines = self.ws.files.get(path) or []
        return [i for i, x in enumerate(lines) if len(n := _normalise(x)) >= _MIN_LINE and n not in self._replaced and not _comment(x)
                and not (i + 1 < len(lines) and _comment(lines[i + 1]))]

    def _line(self, k: int) -> str:
        """A line of a written file: numbered, so it matches nothing the session showed before."""
        r = self.rng
        verb, noun = r.choice(VERBS), r.choice(NOUNS)
        return r.choice((
            f"    {noun}_{k} = {verb}_{noun}(payload_{k}, limit={r.randrange(2, 900)})",
            f"    if {noun}_{k} is None:",
            f"        raise ValueError(\"{noun} {k} is missing\")",
            f"    return {verb}_{noun}_{k}({noun}_{k})",
        ))

    def _write(self) -> ToolCall:
        path = self.ws.new_path(".py")
        self._serial += 1
        head = f"def {self.rng.choice(VERBS)}_{self.rng.choice(NOUNS)}_{self._serial}(payload_{self._serial}):"
        lines = [head] + [self._line(self._serial * 100 + i) for i in range(self.rng.randrange(8, 30))]
        self.ws.remember(path, lines)
        self._own.append(path)
        return "Write", {"file_path": path, "content": "\n".join(lines)}, f"File created successfully at: {path}", False

    def _edit(self, path: str) -> tuple[ToolCall, list[str]]:
        """An Edit of one or two consecutive lines of ``path``; the comment goes after them, never glued to their start."""
        lines = self.ws.files[path]
        starts = self._editable(path)
        i = self.rng.choice(starts)
        # Two lines when the next one may start an edit too.
        width = 2 if i + 1 in starts and self.rng.random() < 0.4 else 1
        old = lines[i : i + width]
        indent = old[0][: len(old[0]) - len(old[0].lstrip())]
        mark = "#" if path.endswith((".py", ".yaml", ".md")) else "//"
        self._serial += 1
        # Numbered, and short: a comment drawn from the shared vocabulary would repeat a span of earlier output.
        comment = f"{indent}{mark} change {self._serial}: {self.rng.choice(VERBS)} {self.rng.choice(NOUNS)}"
        changed = lines[:i] + old + [comment] + lines[i + width :]
        self.ws.remember(path, changed)
        lo = max(0, i - 3)
        out = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
               + numbered(changed[lo : i + width + 4], lo + 1))
        old_text = "\n".join(old)
        call: ToolCall = ("Edit", {"file_path": path, "old_string": old_text, "new_string": old_text + "\n" + comment}, out, False)
        # Each line once: an edit's anchors are a set.
        needs = list(dict.fromkeys(n for x in old if len(n := _normalise(x)) >= _MIN_LINE))
        self._replaced.update(needs)
        return call, needs

