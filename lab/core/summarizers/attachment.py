"""MewCode's recovery attachment: what an agent needs right after its history was summarised.

MewCode appends three things after the summary: the files read most recently
(newest first, up to 5, each cut to 5000 tokens, without the read tool's
line-number prefixes), the current tool list with descriptions and JSON
schemas, and a notice that the summary is lossy so exact text must be
re-read before editing.

MewCode reads those files fresh from disk. The lab replays a recorded
transcript and has no disk of that session, so a file's content is taken
from the latest successful read result in the messages; the attachment says
when the file was edited after that read.

MewCode's sizes assume a large window: 5 files x 5000 tokens plus the tool
list can be larger than a 16k window on its own. ``max_tokens`` caps the
whole attachment; what gives way, in order: full tool descriptions and
schemas (the request's own tool definitions carry them anyway), then files,
oldest first, the newest one left being cut to what remains. The text is
never cut blindly, so every fence and heading stays closed.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from collections.abc import Sequence

from ..messages import Message, ToolResultBlock, ToolSpec, ToolUseBlock
from ..tokens.base import TokenCounter
from .rules import cut_to_tokens, tool_path

__all__ = ["build_attachment", "strip_line_numbers", "ReadFile", "recent_reads", "LOSSY_NOTICE", "MIN_FILE_TOKENS"]

LOSSY_NOTICE = (
    "Notice: the summary above is lossy. The file excerpts below are as last read in this conversation and may be "
    "stale or cut. Before editing any file, re-read its exact current text with the file tool; never guess text "
    "that is not shown."
)

_READ_NAMES = frozenset({"read", "read_file", "readfile", "view", "view_file", "open_file", "notebookread", "fs_read", "read_text_file", "cat"})
_EDITOR_NAMES = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "edit_file_tool"})
_SHELL_NAMES = frozenset({"bash", "shell", "execute_bash", "run_shell_command", "terminal", "exec_command", "local_shell"})
_WRITE_NAMES = frozenset({"write", "edit", "multiedit", "write_file", "edit_file", "create_file", "notebookedit", "apply_patch", "replace"})

# The prefixes read tools put before each line: "     1\t", "     1→", "   12|", "  7:".
_PREFIXES = (re.compile(r"^ *(\d+)\t"), re.compile(r"^ *(\d+)→"), re.compile(r"^ *(\d+)\|"), re.compile(r"^ *(\d+):"))
_CAT_HEADER = re.compile(r"^Here's the result of running `cat -n` on .*:\s*$")
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\s*", re.S)
# A prefix pattern is only taken as line numbering when nearly every line has it.
_NUMBERED_SHARE = 0.8


def _base_name(name: str) -> str:
    # MCP tools are namespaced ("mcp__filesystem__read_file"); the last part says what they do.
    return name.rsplit("__", 1)[-1].lower()


def _cat_path(command: object) -> str | None:
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 2 and words[0] == "cat" and not words[1].startswith("-"):
        return words[1]
    return None


def _read_path(block: ToolUseBlock) -> str | None:
    """The path a tool call reads whole or in part, or None when it is not a read."""
    name = _base_name(block.name)
    if name in _READ_NAMES:
        return tool_path(block)
    if name in _EDITOR_NAMES and block.input.get("command") == "view":
        return tool_path(block)
    if name in _SHELL_NAMES:
        return _cat_path(block.input.get("command") or block.input.get("cmd"))
    return None


def _write_path(block: ToolUseBlock) -> str | None:
    name = _base_name(block.name)
    if name in _WRITE_NAMES or (name in _EDITOR_NAMES and block.input.get("command") not in (None, "view")):
        return tool_path(block)
    return None


def strip_line_numbers(text: str) -> str:
    """Remove the read tool's line-number prefixes and wrapping, keeping each line's own text.

    A pattern is stripped only when at least 80% of the non-empty lines carry
    it, so a file whose lines merely start with digits is left alone.
    """
    text = _REMINDER.sub("\n", text).rstrip("\n")
    lines = text.split("\n")
    if lines and _CAT_HEADER.match(lines[0]):
        lines = lines[1:]
    filled = [ln for ln in lines if ln.strip()]
    if not filled:
        return "\n".join(lines)
    for pattern in _PREFIXES:
        hits = sum(1 for ln in filled if pattern.match(ln))
        if hits >= _NUMBERED_SHARE * len(filled):
            return "\n".join(pattern.sub("", ln, count=1) for ln in lines)
    return "\n".join(lines)


@dataclass(frozen=True)
class ReadFile:
    path: str
    content: str
    message_id: str
    partial: bool
    edited_after: bool


def recent_reads(messages: Sequence[Message], max_files: int) -> list[ReadFile]:
    """The latest successful, uncompacted read of each path, newest first, up to ``max_files``."""
    calls: dict[str, tuple[str, bool]] = {}
    writes: dict[str, int] = {}
    found: dict[str, tuple[int, ReadFile]] = {}
    for i, m in enumerate(messages):
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                path = _read_path(b)
                if path:
                    partial = any(k in b.input for k in ("offset", "limit", "view_range", "start_line", "end_line"))
                    calls[b.id] = (path, partial)
                written = _write_path(b)
                if written:
                    writes[written] = i
            elif isinstance(b, ToolResultBlock) and b.tool_use_id in calls:
                # A spilled, deduplicated or cleared result no longer holds the file.
                if b.is_error or b.compacted is not None or not b.content.strip():
                    continue
                path, partial = calls[b.tool_use_id]
                found[path] = (i, ReadFile(path, b.content, m.id, partial, False))
    ordered = sorted(found.values(), key=lambda x: -x[0])[:max_files]
    # Line numbers are stripped from the files kept only: a long session reads many files many times over.
    return [
        ReadFile(f.path, strip_line_numbers(f.content), f.message_id, f.partial, writes.get(f.path, -1) > i)
        for i, f in ordered
    ]


def _fence(content: str) -> str:
    ticks = "```"
    while ticks in content:
        ticks += "`"
    return ticks


def _tool_lines(tools: Sequence[ToolSpec], messages: Sequence[Message], full: bool = True) -> list[str]:
    if tools:
        if not full:
            return [_TOOLS_SHORT] + [f"- {t.name}" for t in tools]
        out: list[str] = []
        for t in tools:
            schema = json.dumps(t.input_schema, ensure_ascii=False, sort_keys=True)
            out += [f"- {t.name}: {t.description.strip() or '(no description)'}", f"  input schema: {schema}"]
        return out
    names = sorted({b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)})
    if not names:
        return ["(no tools recorded)"]
    return ["(the transcript does not record tool descriptions or schemas; tools seen in use:)"] + [f"- {n}" for n in names]


# Below this a file excerpt is mostly its own heading; better to leave the file out (the config's own floor).
MIN_FILE_TOKENS = 100
_TOOLS_SHORT = "(descriptions and schemas left out to fit the attachment budget; the request's own tool definitions carry them)"
_TOOLS_NONE = "(tool list left out to fit the attachment budget)"
_HEAD = ["## Recovery attachment", "", LOSSY_NOTICE, "", "### Recently read files (newest first)"]


def _file_section(f: ReadFile, content: str, cut_note: str | None) -> list[str]:
    notes = [f"as last read in message {f.message_id}", "line numbers stripped"]
    if f.partial:
        notes.append("partial read")
    if f.edited_after:
        notes.append("EDITED after this read: re-read before use")
    if cut_note:
        notes.append(cut_note)
    fence = _fence(content)
    return ["", f"#### {f.path}", f"({'; '.join(notes)})", fence, content, fence]


def _assemble(sections: Sequence[list[str]], n_reads: int, tool_lines: list[str], budget: int | None) -> str:
    parts = list(_HEAD)
    if not n_reads:
        parts.append("(no file reads to restore)")
    for section in sections:
        parts += section
    left_out = n_reads - len(sections)
    if left_out:
        parts += ["", f"({left_out} older file(s) left out to fit the attachment budget of {budget} tokens)"]
    parts += ["", "### Tools available", *tool_lines]
    return "\n".join(parts)


def _fit(reads: list[ReadFile], cut: list[str], tools: Sequence[ToolSpec], messages: Sequence[Message], counter: TokenCounter, file_tokens: int, budget: int) -> str:
    """The attachment within ``budget`` tokens, or "" when not even the notice fits.

    Token counts are not additive (a counter rounds, a tokenizer merges across
    joins), so every candidate is measured whole rather than summed from parts.
    """
    for tool_lines in (_tool_lines(tools, messages, full=False), [_TOOLS_NONE]):
        # The skeleton with every file left out must fit, or there is nothing to build on.
        if counter.count_text(_assemble([], len(reads), tool_lines, budget)) <= budget:
            break
    else:
        return ""
    kept: list[list[str]] = []
    for f, content in zip(reads, cut, strict=True):
        note = f"cut to {file_tokens} tokens" if content != f.content else None
        section = _file_section(f, content, note)
        over = counter.count_text(_assemble([*kept, section], len(reads), tool_lines, budget)) - budget
        # A few rounds absorb the counter's rounding and the cut's snap to a line end;
        # each round measures what the excerpt holds now, so it always shrinks.
        for _ in range(6):
            if over <= 0:
                break
            limit = counter.count_text(content) - over
            if limit < MIN_FILE_TOKENS:
                break
            content = cut_to_tokens(content, limit, counter)
            section = _file_section(f, content, f"cut to {limit} tokens to fit the attachment budget")
            over = counter.count_text(_assemble([*kept, section], len(reads), tool_lines, budget)) - budget
        if over > 0:
            break  # this file and every older one are left out
        kept.append(section)
    text = _assemble(kept, len(reads), tool_lines, budget)
    # The "left out" line changes with the count; drop files until the whole fits (the bare skeleton did).
    while kept and counter.count_text(text) > budget:
        kept.pop()
        text = _assemble(kept, len(reads), tool_lines, budget)
    return text


def build_attachment(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    counter: TokenCounter,
    max_files: int = 5,
    file_tokens: int = 5000,
    max_tokens: int | None = None,
) -> str:
    """The recovery attachment text: recent files, tools, and the lossy-summary notice.

    ``max_tokens`` caps the whole text (None: MewCode's sizes, uncapped). Over
    the cap, the tool list shrinks to names, then files are left out oldest
    first and the newest remaining one is cut; "" when not even the notice fits.
    """
    reads = recent_reads(messages, max(0, max_files))
    cut = [cut_to_tokens(f.content, max(0, file_tokens), counter) for f in reads]
    sections = [_file_section(f, c, f"cut to {file_tokens} tokens" if c != f.content else None) for f, c in zip(reads, cut, strict=True)]
    text = _assemble(sections, len(reads), _tool_lines(tools, messages), max_tokens)
    if max_tokens is None or counter.count_text(text) <= max_tokens:
        return text
    return _fit(reads, cut, tools, messages, counter, file_tokens, max(0, max_tokens))
