"""Shared machinery for the OpenAI-family, OpenHands and MiniCode importers.

``HistoryBuilder`` turns a walk over some source into canonical messages and
keeps the bookkeeping every importer needs: deterministic unique message ids,
tool_use ids (source ids when present, derived ones otherwise), consecutive
tool results folded into one user message, orphan results and unanswered
calls recorded in ``ImportNotes``. The small helpers below parse what the
OpenAI family spells the same way everywhere (JSON-string arguments, usage
blocks, timestamps, image parts).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from ..core.messages import Block, Boundary, ImageBlock, ImportNotes, Message, MessageTag, Role, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Usage
from ..errors import TranscriptError
from .jsonio import iter_log_lines, leading_char, read_json

__all__ = [
    "HistoryBuilder",
    "Loc",
    "parse_arguments",
    "openai_usage",
    "parse_timestamp",
    "image_from_url",
    "tool_specs",
    "need_dict",
    "text_block",
    "parts_text",
    "text_parts",
    "document_or_log",
    "UNNAMED_TOOL",
    "opt_str",
    "as_dict",
    "positive_int",
    "token_count",
    "path_from_uri",
]

# What a tool call whose record lost its name is kept as: still a call, so its result keeps its pair and the
# rest of the session imports; the reader says where, in a warning.
UNNAMED_TOOL = "unnamed_tool"


def opt_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None: a record field that may be missing, null or mistyped."""
    return value if isinstance(value, str) and value else None


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one, so a reader can chain ``.get`` through optional objects."""
    return value if isinstance(value, dict) else {}


def text_parts(content: Any) -> list[str]:
    """A raw message content's text parts: a string as its one part, or the ``text`` of each part (other parts give nothing)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def parts_text(content: Any) -> str:
    """A raw message content's text: its ``text_parts`` joined."""
    return "\n".join(text_parts(content))


class Loc:
    """Where an importer is in its source, for ``TranscriptError``.

    ``line`` is set for JSONL sources; ``path`` is a JSON path inside the
    document or record (``$.messages[3].tool_calls[0]``).
    """

    __slots__ = ("file", "line", "path")

    def __init__(self, file: str | None, path: str = "$", line: int | None = None) -> None:
        self.file = file
        self.path = path
        self.line = line

    def at(self, suffix: str | int) -> Loc:
        step = f"[{suffix}]" if isinstance(suffix, int) else f".{suffix}"
        return Loc(self.file, self.path + step, self.line)

    @property
    def where(self) -> str:
        return f"line {self.line}, {self.path}" if self.line is not None else self.path

    def error(self, message: str, expected: str | None = None) -> TranscriptError:
        return TranscriptError(message, file=self.file, where=self.where, expected=expected)


def need_dict(value: Any, loc: Loc, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise loc.error(f"{what} is a {type(value).__name__}", expected="a JSON object")
    return value


class HistoryBuilder:
    """Accumulates canonical messages in source order."""

    def __init__(self, notes: ImportNotes, *, id_prefix: str = "") -> None:
        self.notes = notes
        self.id_prefix = id_prefix
        self.messages: list[Message] = []
        self._ids: set[str] = set()
        self._tool_ids: set[str] = set()
        # source call id -> canonical tool_use id of its latest use
        self._use_map: dict[str, str] = {}
        # canonical id -> tool name, in call order, while unanswered
        self._open: dict[str, str] = {}
        # True while the last message is a run of tool results more results may join
        self._results_open = False

    # -- ids ----------------------------------------------------------------
    def unique_id(self, key: str) -> str:
        base = f"{self.id_prefix}{key}"
        mid, n = base, 1
        while mid in self._ids:
            n += 1
            mid = f"{base}#{n}"
        self._ids.add(mid)
        return mid

    # -- messages -----------------------------------------------------------
    def add(
        self,
        role: Role,
        blocks: Sequence[Block],
        *,
        key: str,
        timestamp: datetime | None = None,
        usage: Usage | None = None,
        tag: MessageTag | None = None,
        boundary: Boundary | None = None,
        merge: bool = False,
    ) -> Message:
        """Append a message, or extend the previous one when ``merge`` allows it.

        Merging joins items one provider turn was split into (Responses items,
        OpenHands actions of one model response); it never crosses a tool
        result, a tagged message or a boundary.
        """
        last = self.messages[-1] if self.messages else None
        if (
            merge
            and last is not None
            and last.role == role
            and last.tag is None
            and last.boundary is None
            and not self._results_open
        ):
            update: dict[str, Any] = {"content": last.content + tuple(blocks)}
            if usage is not None and last.usage is None:
                update["usage"] = usage
            merged = last.model_copy(update=update)
            self.messages[-1] = merged
            return merged
        msg = Message(
            role=role,
            content=tuple(blocks),
            id=self.unique_id(key),
            timestamp=timestamp,
            usage=usage,
            tag=tag,
            boundary=boundary,
        )
        self.messages.append(msg)
        self._results_open = False
        return msg

    def user_turn(self, blocks: Sequence[Block], *, key: str, timestamp: datetime | None = None, tag: MessageTag | None = None) -> Message:
        """The user's words as a user turn: joined to the tool results just before them, since the APIs
        want one user turn there; a new message otherwise, or when tagged. Later results start a new turn."""
        if self._results_open and self.messages and tag is None:
            last = self.messages[-1]
            joined = self.messages[-1] = last.model_copy(update={"content": last.content + tuple(blocks)})
            self._results_open = False
            return joined
        msg = self.add("user", blocks, key=key, timestamp=timestamp, tag=tag)
        self._results_open = False
        return msg

    def set_last_usage(self, usage: Usage, role: Role = "assistant") -> bool:
        """Attach usage reported after the fact to the newest message of ``role`` that has none."""
        for i in range(len(self.messages) - 1, -1, -1):
            m = self.messages[i]
            if m.role == role:
                if m.usage is None:
                    self.messages[i] = m.model_copy(update={"usage": usage})
                    return True
                return False
        return False

    # -- tool calls ---------------------------------------------------------
    def use(self, source_id: str | None, name: str, input: dict[str, Any], *, key: str) -> ToolUseBlock:
        """A tool_use block with a unique id; the caller puts it in an assistant message."""
        base = source_id if source_id else f"call_{self.id_prefix}{key}"
        tid, n = base, 1
        while tid in self._tool_ids:
            n += 1
            tid = f"{base}#{n}"
        if tid != base:
            self.notes.warnings.append(f"tool call id {base!r} used more than once; renamed to {tid!r}")
        self._tool_ids.add(tid)
        self._use_map[base] = tid
        self._open[tid] = name
        return ToolUseBlock(id=tid, name=name, input=input)

    def pending(self) -> list[tuple[str, str]]:
        """Unanswered calls as (canonical id, tool name), oldest first."""
        return list(self._open.items())

    def result(
        self,
        source_call_id: str,
        content: str,
        *,
        key: str,
        is_error: bool = False,
        timestamp: datetime | None = None,
        compacted: Any = None,
        spill_path: str | None = None,
        original_chars: int | None = None,
        canonical: bool = False,
    ) -> ToolResultBlock:
        """Record a tool result; consecutive results share one user message.

        ``canonical`` says ``source_call_id`` is already a canonical id (from
        ``pending()``), not an id as the source spelled it.
        """
        tid = source_call_id if canonical else self._use_map.get(source_call_id, source_call_id)
        if tid in self._open:
            del self._open[tid]
        elif tid not in self._tool_ids:
            self.notes.orphan_tool_results.append(tid)
        block = ToolResultBlock(
            tool_use_id=tid,
            content=content,
            is_error=is_error,
            compacted=compacted,
            spill_path=spill_path,
            original_chars=original_chars,
        )
        if self._results_open and self.messages:
            last = self.messages[-1]
            self.messages[-1] = last.model_copy(update={"content": last.content + (block,)})
        else:
            self.add("user", (block,), key=key, timestamp=timestamp)
            self._results_open = True
        return block

    @property
    def open_results_id(self) -> str | None:
        """Id of the user message further tool results would join, if any."""
        return self.messages[-1].id if self._results_open and self.messages else None

    def close_results(self) -> None:
        """The next tool result starts a new user message (a new turn began)."""
        self._results_open = False

    # -- recorded compactions -----------------------------------------------
    def unmarked(self) -> int:
        """How many messages so far are not compaction markers: what a compaction recorded now replaces."""
        return sum(1 for m in self.messages if m.boundary is None)

    def boundary(self, boundary: Boundary, marker: str | None, *, key: str, timestamp: datetime | None = None) -> Message:
        """The original agent's own compaction: a system message tagged ``boundary`` (id ``{key}.boundary``),
        holding the ``marker`` text when there is one.

        Every importer writes it the same way, so a replay finds it the same way: honoured, it drops what came
        before; undone, the marker itself is dropped (``lab.replayer.recorded``). A tool result after it starts a
        new user message (``add`` closes the results before it).
        """
        blocks = [TextBlock(text=marker)] if marker else []
        return self.add("system", blocks, key=f"{key}.boundary", timestamp=timestamp, tag="boundary", boundary=boundary)

    def compaction(self, boundary: Boundary, marker: str | None, summary: str, *, key: str, timestamp: datetime | None = None) -> Message:
        """A compaction with the summary the agent went on from: the ``boundary`` marker, then the summary as a
        user turn tagged ``summary`` (id ``{key}.summary``), which an undoing replay drops with it. Returns the marker."""
        marker_message = self.boundary(boundary, marker, key=key, timestamp=timestamp)
        self.add("user", [TextBlock(text=summary)], key=f"{key}.summary", timestamp=timestamp, tag="summary")
        return marker_message

    def finish(self) -> list[Message]:
        self.notes.unanswered_tool_uses.extend(self._open)
        self._open.clear()
        return self.messages


# -- value helpers -------------------------------------------------------------


def parse_arguments(raw: Any, notes: ImportNotes, loc: Loc) -> dict[str, Any]:
    """A tool call's arguments as a dict; unparseable text is kept under ``_raw``."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            notes.warnings.append(f"{loc.where}: arguments are not valid JSON; kept the raw text under '_raw'")
            return {"_raw": raw}
        if isinstance(value, dict):
            return value
        notes.warnings.append(f"{loc.where}: arguments are JSON but not an object; kept the raw text under '_raw'")
        return {"_raw": raw}
    notes.warnings.append(f"{loc.where}: arguments are a {type(raw).__name__}; kept as text under '_raw'")
    return {"_raw": json.dumps(raw, ensure_ascii=False)}


def positive_int(value: Any) -> int:
    """A recorded count that is a positive JSON integer, else 0 (missing, null, negative, a bool or a float)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def token_count(value: Any) -> int:
    """A recorded count written by JavaScript, where every number is a float: a positive number below 2**53
    (the doubles that hold integers exactly) as an int, else 0."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 2**53 else 0


def path_from_uri(value: Any) -> str | None:
    """A folder an editor recorded as a path: a ``file://`` URI decoded (``file:///c%3A/x`` is the Windows
    path ``c:/x``), a plain path as it is, another scheme (a remote workspace) none."""
    text = opt_str(value)
    if text is None:
        return None
    if text.startswith("file://"):
        path = unquote(urlsplit(text).path)
        return (path[1:] if re.match(r"^/[A-Za-z]:", path) else path) or None
    return None if "://" in text else text


def openai_usage(raw: Any) -> Usage | None:
    """Usage from any OpenAI-family block (Chat, Responses, Codex token_count).

    OpenAI counts cached prompt tokens inside the prompt total; the canonical
    ``Usage`` keeps them apart (as Anthropic does), so they are subtracted.
    """
    if not isinstance(raw, dict):
        return None
    prompt = positive_int(raw.get("prompt_tokens")) or positive_int(raw.get("input_tokens"))
    output = positive_int(raw.get("completion_tokens")) or positive_int(raw.get("output_tokens"))
    cached = 0
    for details in (raw.get("prompt_tokens_details"), raw.get("input_tokens_details")):
        if isinstance(details, dict):
            cached = cached or positive_int(details.get("cached_tokens"))
    cached = cached or positive_int(raw.get("cached_input_tokens")) or positive_int(raw.get("prompt_cache_hit_tokens"))
    if not (prompt or output or cached):
        return None
    return Usage(input_tokens=max(0, prompt - cached), output_tokens=output, cache_read_tokens=min(cached, prompt) if prompt else cached)


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 text or epoch seconds (or milliseconds); anything else is None.

    A timestamp without a zone (OpenHands writes them) is taken as UTC, so
    time-based stages replay the same on every machine.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        text = value[:-1] + "+00:00" if value.endswith("Z") else value
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            return None
        return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)
    return None


_DATA_URL = re.compile(r"^data:(?P<type>[\w.+-]+/[\w.+-]+)?(;[^,]*)?,(?P<data>.*)$", re.S)


def image_from_url(url: Any) -> ImageBlock:
    """An image placeholder: a data URL keeps its type and decoded size, nothing else."""
    if not isinstance(url, str):
        return ImageBlock(source="unknown")
    m = _DATA_URL.match(url[:200]) if url.startswith("data:") else None
    if m:
        comma = url.index(",")
        payload = len(url) - comma - 1
        return ImageBlock(media_type=m.group("type") or "image/png", size_bytes=payload * 3 // 4, source="base64")
    return ImageBlock(source="url", url=url, media_type="image/unknown")


def tool_specs(raw: Any) -> list[ToolSpec]:
    """Tool definitions in Chat (``{type, function: {...}}``) or flat Responses shape."""
    specs: list[ToolSpec] = []
    if not isinstance(raw, list):
        return specs
    for t in raw:
        if not isinstance(t, dict):
            continue
        fn = t.get("function")
        if not isinstance(fn, dict):
            fn = t
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        desc = fn.get("description")
        schema = fn.get("parameters") or fn.get("input_schema") or {}
        specs.append(
            ToolSpec(
                name=name,
                description=desc if isinstance(desc, str) else "",
                input_schema=schema if isinstance(schema, dict) else {},
            )
        )
    return specs


def text_block(text: Any) -> list[Block]:
    return [TextBlock(text=text)] if isinstance(text, str) and text else []



def document_or_log(
    path: Path, notes: ImportNotes, expected: str, is_document: Callable[[Any], bool]
) -> tuple[Any, None] | tuple[None, Iterator[tuple[Any, Loc]]]:
    """A file that is one JSON document or a JSONL log of records: ``(document, None)`` or ``(None, records)``,
    each record with where it is (its line counted in ``notes.records_read``).

    It is one document when it starts with ``[``, when its first line is no whole record (pretty-printed
    JSON), or when ``is_document`` says the first record is a whole document written on one line. An empty
    file raises ``TranscriptError`` naming ``expected``.
    """
    file = str(path)
    if leading_char(path) == "[":
        return read_json(path), None
    lines = iter_log_lines(path, notes)
    try:
        line_no, first = next(lines)
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        return read_json(path), None
    except StopIteration:
        raise TranscriptError("empty file", file=file, expected=expected) from None
    if is_document(first):
        return read_json(path), None

    def records() -> Iterator[tuple[Any, Loc]]:
        yield first, Loc(file, "$", line_no)
        for n, rec in lines:
            yield rec, Loc(file, "$", n)

    return None, records()
