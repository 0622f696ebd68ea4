"""The facts a continuing agent needs, gathered from the history for the rule-based summary.

One pass over the messages collects, per tool call (``lab.core.commands``),
the files read and changed with what changed, the commands run with their
outcomes, the errors seen with the last one verbatim, the assistant's
sentences that state a decision or pending work, and the current step.

An earlier summary in the history is read back, not copied: its sections
(``**Files changed ...:**`` and the like, one ``- `` item a line) become the
oldest items of the same sections, and its ``<last-error>`` block the last
error when nothing newer failed. A summary of a summary therefore has the
same sections as the first one, each still bounded, however often it is
compacted again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator, Mapping

from ..commands import Outcome, ToolAction, result_outcome, tool_action, tool_path
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..shell_paths import same_file

__all__ = [
    "ErrorSeen",
    "Facts",
    "gather",
    "call_label",
    "decision_sentences",
    "prose_sentences",
]

COMMAND_CHARS = 160
STEP_CHARS = 500
DECISION_CHARS = 240
DECISIONS = 12
CHANGES_PER_FILE = 3

_CARRIED_TAGS = ("summary", "memory", "truncation_note")
_LABEL = re.compile(r"^\*\*(?P<label>[A-Z][^*(:]*?)(?: \((?P<note>[^)]*)\))?:\*\*(?P<rest>.*)$")
_COUNT = re.compile(r"(\d+) in all|of (\d+)")
_TOOL_COUNT = re.compile(r"(.+?) \((\d+)\)$")
_LAST_ERROR = re.compile(r"<last-error>\n(.*?)\n</last-error>", re.S)
_MORE = re.compile(r" \(\+\d+ more\)$")
_CUE = re.compile(
    r"\b(?:I'll|I will|I'm going to|I need to|we need to|we'll|need to|needs to|next|todo|decided|decide to|instead|because"
    r"|root cause|the (?:issue|problem|bug|fix) is|plan|remaining|still need|not yet|must)\b",
    re.I,
)
# Western sentences end at punctuation and a space; CJK ones at full-width punctuation, spaces or not.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


@dataclass
class ErrorSeen:
    """One failed call: what ran (``source``), the line saying what went wrong, and the result's whole text."""

    source: str
    line: str
    text: str = ""

    @property
    def item(self) -> str:
        return f"{self.source}: {self.line}" if self.source else self.line


@dataclass
class Facts:
    tools: dict[str, int] = field(default_factory=dict)
    # Paths in the order they were last named (most recent last), as MiniCode's "Files touched".
    touched: dict[str, None] = field(default_factory=dict)
    changed: dict[str, list[str]] = field(default_factory=dict)
    read: dict[str, None] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    commands_total: int = 0
    errors: list[ErrorSeen] = field(default_factory=list)
    errors_total: int = 0
    decisions: list[str] = field(default_factory=list)
    step: list[str] = field(default_factory=list)

    def only_read(self) -> list[str]:
        """Files read and not changed, most recent first: a changed file is listed with its change."""
        return [p for p in reversed(self.read) if _merge_key(self.changed, p)[0] is None]


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _command_line(script: str) -> str:
    lines = script.strip().splitlines() or [""]
    head = _one_line(lines[0], COMMAND_CHARS)
    return f"{head} [+{len(lines) - 1} lines]" if len(lines) > 1 else head


def call_label(block: ToolUseBlock, action: ToolAction) -> str:
    """A tool call as a person reads it: the command, or the tool and its file."""
    if action.command is not None:
        return f"`{_command_line(action.command)}`"
    path = tool_path(block) or (action.paths[0] if action.paths else None)
    if path:
        return f"{block.name} {path}"
    shown = json.dumps(block.input, ensure_ascii=False, sort_keys=True, default=str) if block.input else ""
    return f"{block.name} {_one_line(shown, 100)}".rstrip()


def prose_sentences(text: str) -> Iterator[str]:
    """The sentences of ``text`` outside code (fenced or indented), list, heading and quote marks stripped."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        # Code says what is, not what was decided, even when it says "use".
        if fenced or line.startswith(("    ", "\t")):
            continue
        for part in _SENTENCE_END.split(line.strip().lstrip("-*#> ").strip()):
            yield part.strip()


def decision_sentences(text: str) -> Iterable[str]:
    """The sentences of an assistant's text that state a decision, a reason or work still to do."""
    for part in prose_sentences(text):
        if len(part) >= 12 and _CUE.search(part):
            yield _one_line(part, DECISION_CHARS)


def _merge_key(paths: Mapping[str, object], path: str) -> tuple[str | None, str]:
    """The key ``path`` already has (None: new) and the key to keep: the full path when one spelling has it.

    Only a relative path of two parts or more merges: a bare ``__init__.py`` may be any of many.
    """
    if path in paths:
        return path, path
    if "/" in path.strip("/"):
        for known in paths:
            if known.startswith("/") != path.startswith("/") and same_file(known, path):
                return known, known if known.startswith("/") else path
    return None, path


def _read_sections(text: str) -> tuple[dict[str, list[str]], dict[str, str], dict[str, int]]:
    """An earlier summary's ``- `` items per section, the text after each title, and the counts titles give."""
    items: dict[str, list[str]] = {}
    rests: dict[str, str] = {}
    totals: dict[str, int] = {}
    label = ""
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m is not None:
            label = m.group("label")
            rests[label] = m.group("rest").strip()
            count = _COUNT.search(m.group("note") or "")
            if count is not None:
                totals[label] = int(count.group(1) or count.group(2))
        elif line.startswith("### "):
            # A session-memory summary keeps its decisions under a heading of its own.
            label = "Decisions and pending work" if line.startswith("### Decisions and conventions") else ""
        elif line.startswith("- ") and label:
            items.setdefault(label, []).append(line[2:])
        elif not line.strip():
            label = ""
    return items, rests, totals


class _Gatherer:
    def __init__(self) -> None:
        self.facts = Facts()
        self.carried_step: list[str] = []
        self.decisions: dict[str, str] = {}

    def touch(self, path: str) -> None:
        self.facts.touched.pop(path, None)
        self.facts.touched[path] = None

    def change(self, path: str, what: list[str]) -> None:
        changed = self.facts.changed
        old, key = _merge_key(changed, path)
        earlier = changed.pop(old, []) if old is not None else []
        changed[key] = (earlier + what)[-CHANGES_PER_FILE:]

    def read(self, path: str) -> None:
        old, key = _merge_key(self.facts.read, path)
        if old is not None:
            del self.facts.read[old]
        self.facts.read[key] = None

    def decide(self, sentence: str) -> None:
        key = sentence.lower()
        self.decisions.pop(key, None)
        self.decisions[key] = sentence

    def carry(self, text: str) -> None:
        """Take an earlier summary's sections as the oldest items of ours."""
        items, rests, totals = _read_sections(text)
        f = self.facts
        for part in rests.get("Tools used", "").split(", "):
            tm = _TOOL_COUNT.match(part)
            if tm is not None:
                f.tools[tm.group(1)] = f.tools.get(tm.group(1), 0) + int(tm.group(2))
        touched = rests.get("Files touched", "")
        for path in reversed(_MORE.sub("", touched).split(", ") if touched else []):
            f.touched.setdefault(path, None)
        # Lists printed most recent first are read back oldest first.
        for item in reversed(items.get("Files changed", [])):
            path, _, what = item.partition(" — ")
            self.change(path, [w for w in what.split("; ") if w])
        for item in reversed(items.get("Files read", [])):
            self.read(item)
        f.commands += reversed(items.get("Commands run", []))
        f.commands_total += totals.get("Commands run", 0)
        if "Errors seen" in items:
            f.errors += [ErrorSeen("", e) for e in reversed(items["Errors seen"])]
            f.errors_total += totals.get("Errors seen", 0)
        elif "Errors encountered" in items:
            # A summary written before these sections existed: its short error lines are all there is.
            f.errors += [ErrorSeen("", e) for e in items["Errors encountered"]]
            f.errors_total += totals.get("Errors encountered", 0)
        for item in items.get("Decisions and pending work", []):
            self.decide(item)
        self.carried_step = items.get("Current step", [])
        last = _LAST_ERROR.search(text)
        if last is not None and f.errors:
            f.errors[-1].text = last.group(1)

    def call(self, block: ToolUseBlock, result: ToolResultBlock | None) -> tuple[str, Outcome | None]:
        f = self.facts
        f.tools[block.name] = f.tools.get(block.name, 0) + 1
        action = tool_action(block)
        named = tool_path(block)
        for path in ((named,) if named else ()) + action.paths:
            self.touch(path)
        for path in action.reads:
            self.read(path)
        grouped: dict[str, list[str]] = {}
        for w in action.writes:
            grouped.setdefault(w.path, []).append(w.what)
        for path, what in grouped.items():
            self.change(path, what)
        outcome = result_outcome(result.content, result.is_error, action) if result is not None else None
        label = call_label(block, action)
        if action.command is not None:
            f.commands.append(f"{label} -> {outcome.label if outcome is not None else 'no result'}")
            f.commands_total += 1
        if outcome is not None and not outcome.ok and result is not None:
            f.errors.append(ErrorSeen(label, outcome.error or "failed", result.content))
            f.errors_total += 1
        return label, outcome


def gather(messages: Iterable[Message]) -> Facts:
    """Everything the summary's sections show, from ``messages`` (oldest first) and the summaries among them."""
    msgs = list(messages)
    results = {b.tool_use_id: b for m in msgs if m.role == "user" for b in m.content if isinstance(b, ToolResultBlock)}
    called: set[str] = set()
    g = _Gatherer()
    f = g.facts
    last_text: str | None = None
    last_call: str | None = None
    for m in msgs:
        if m.role == "user" and m.tag in _CARRIED_TAGS:
            g.carry("\n".join(b.text for b in m.content if isinstance(b, TextBlock)))
            continue
        if m.role == "user":
            for b in m.content:
                if isinstance(b, ToolResultBlock) and b.tool_use_id not in called and b.is_error and b.content.strip():
                    # A failed result whose call is not in this part of the history.
                    line = result_outcome(b.content, True).error or "failed"
                    f.errors.append(ErrorSeen("", line, b.content))
                    f.errors_total += 1
            continue
        if m.role != "assistant" or m.tag is not None:
            continue
        for b in m.content:
            if isinstance(b, TextBlock) and b.text.strip():
                if last_text is not None:
                    for sentence in decision_sentences(last_text):
                        g.decide(sentence)
                last_text = b.text
            elif isinstance(b, ToolUseBlock):
                called.add(b.id)
                label, outcome = g.call(b, results.get(b.id))
                last_call = f"{label} -> {outcome.label if outcome is not None else 'no result yet'}"
    # The last text is the current step, not a decision to list twice.
    f.decisions = list(g.decisions.values())[-DECISIONS:]
    if last_text is not None:
        f.step.append(f"Last assistant message: {_one_line(last_text, STEP_CHARS)}")
    if last_call is not None:
        f.step.append(f"Last tool call: {_one_line(last_call, STEP_CHARS)}")
    if not f.step:
        f.step = g.carried_step
    return f
