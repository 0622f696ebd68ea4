"""Pydantic AI message histories: ``result.all_messages_json()``, ``ModelMessagesTypeAdapter.dump_json(...)``.

A history is a list of ``ModelRequest`` (``kind: "request"``) and
``ModelResponse`` (``kind: "response"``) objects, each holding ``parts`` told
apart by ``part_kind``; shapes follow ``pydantic_ai.messages``.

Accepted sources: that JSON list; an object holding it under ``messages``
(``all_messages``, ``history`` too), as apps store a run; and JSONL with one
message per line.

Mapping:

* request parts: ``system-prompt`` -> a system message (a request's
  ``instructions`` too, once per distinct text, as the model is sent them);
  ``user-prompt`` -> user text (a list's strings, and a marker per image,
  audio, document or video item); ``tool-return`` -> the result of its
  ``tool_call_id`` (non-text content as JSON); ``retry-prompt`` -> what
  Pydantic AI sends back: an error result for its tool call, or user text when
  it names no tool (a failed output validation).
* response parts: ``text`` -> assistant text; ``thinking`` -> thinking (its
  signature kept); ``tool-call`` -> tool_use (``args`` as an object or JSON
  text). Built-in tool parts (``builtin-tool-call`` / ``-return``, run by the
  provider) and files are counted as ``part:<kind>``.
* a response's ``usage`` is that request's tokens: ``input_tokens`` holds the
  cached ones too in Pydantic AI, so the uncached input is what is left after
  ``cache_read_tokens`` and ``cache_write_tokens``; older histories'
  ``request_tokens`` / ``response_tokens`` are read the same way.
  ``model_name`` names the model.
* unknown part and message kinds are skipped and counted.

Detection: 97 for a list (or ``messages`` holder, or JSONL) whose first
message has a request/response ``kind`` and ``parts`` with a ``part_kind``,
above Gemini's 95 for any list of objects with ``parts``; 96 for a head too
large to parse that shows those ``part_kind`` names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, document_or_log, need_dict, opt_str, parse_arguments, parse_timestamp, text_block, token_count
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "NAME", "from_messages", "from_document", "read", "sniff"]

NAME = "pydantic_ai"
_KINDS = ("request", "response")
_HOLDERS = ("messages", "all_messages", "history")
# The media a user prompt may hold, by the ``kind`` Pydantic AI gives each.
_MEDIA = {"image-url": "image", "binary": "file", "audio-url": "audio", "document-url": "document", "video-url": "video"}


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("kind") in _KINDS
        and isinstance(value.get("parts"), list)
        and all(isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in value["parts"][:5])
    )


def _text(content: Any) -> str:
    """A tool return's content as the model reads it: text as it is, anything else as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _prompt(content: Any, notes: ImportNotes) -> list[Block]:
    if isinstance(content, str):
        return list[Block](text_block(content))
    blocks: list[Block] = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, str):
            blocks += text_block(item)
        elif isinstance(item, dict):
            media = _MEDIA.get(str(item.get("kind")), "attachment")
            where = opt_str(item.get("url")) or opt_str(item.get("identifier")) or opt_str(item.get("media_type")) or ""
            blocks.append(TextBlock(text=f"[{media}{': ' + where if where else ''}]"))
            notes.skip(f"user-prompt:{media}")
    return blocks


class _History:
    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.meta = TranscriptMeta(source_format=NAME, title="Pydantic AI message history")
        self.instructions: set[str] = set()

    def message(self, msg: Any, loc: Loc, key: str) -> None:
        msg = need_dict(msg, loc, "message")
        kind = msg.get("kind")
        parts = msg.get("parts")
        if kind not in _KINDS or not isinstance(parts, list):
            self.notes.skip(f"message:{kind if isinstance(kind, str) else type(msg).__name__}")
            return
        stamp = parse_timestamp(msg.get("timestamp"))
        if kind == "request":
            self.request(msg, parts, loc, key, stamp)
        else:
            self.response(msg, parts, loc, key, stamp)

    def request(self, msg: dict[str, Any], parts: list[Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        instructions = opt_str(msg.get("instructions"))
        pending = instructions if instructions and instructions not in self.instructions else None
        for i, part in enumerate(parts):
            part = need_dict(part, loc.at("parts").at(i), "part")
            pk = part.get("part_kind")
            pkey = f"{key}.{i}"
            when = parse_timestamp(part.get("timestamp")) or stamp
            if pending and pk != "system-prompt":
                # After the system prompts, before what the request says: where the model reads them.
                self.add_instructions(pending, key, stamp)
                pending = None
            if pk == "system-prompt":
                self.b.add("system", text_block(part.get("content")), key=pkey, timestamp=when)
            elif pk == "user-prompt":
                blocks = _prompt(part.get("content"), self.notes)
                if blocks:
                    self.b.user_turn(blocks, key=pkey, timestamp=when)
            elif pk == "tool-return":
                call_id = opt_str(part.get("tool_call_id"))
                if call_id is None:
                    raise loc.at("parts").at(i).error("tool-return without a tool_call_id", expected="a string 'tool_call_id'")
                self.b.result(call_id, _text(part.get("content")), key=pkey, timestamp=when)
            elif pk == "retry-prompt":
                self.retry(part, pkey, when)
            else:
                self.notes.skip(f"part:{pk}")
        if pending:
            self.add_instructions(pending, key, stamp)

    def add_instructions(self, text: str, key: str, stamp: datetime | None) -> None:
        self.instructions.add(text)
        self.b.add("system", [TextBlock(text=text)], key=f"{key}.instructions", timestamp=stamp)

    def retry(self, part: dict[str, Any], key: str, when: datetime | None) -> None:
        content = part.get("content")
        text = content if isinstance(content, str) else _text(content)
        call_id = opt_str(part.get("tool_call_id"))
        if opt_str(part.get("tool_name")) and call_id:
            # Pydantic AI answers the failed call with the error and a request to fix it.
            self.b.result(call_id, f"{text}\n\nFix the errors and try again.", key=key, is_error=True, timestamp=when)
        else:
            self.b.user_turn([TextBlock(text=f"{text}\n\nFix the errors and try again.")], key=key, timestamp=when)

    def response(self, msg: dict[str, Any], parts: list[Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        blocks: list[Block] = []
        for i, part in enumerate(parts):
            part = need_dict(part, loc.at("parts").at(i), "part")
            pk = part.get("part_kind")
            if pk == "text":
                blocks += text_block(part.get("content"))
            elif pk == "thinking":
                thought = opt_str(part.get("content"))
                if thought:
                    blocks.append(ThinkingBlock(thinking=thought, signature=opt_str(part.get("signature"))))
                else:
                    self.notes.skip("part:thinking:empty")
            elif pk == "tool-call":
                name = opt_str(part.get("tool_name"))
                if name is None:
                    raise loc.at("parts").at(i).error("tool-call without a tool_name", expected="a string 'tool_name'")
                inputs = parse_arguments(part.get("args"), self.notes, loc.at("parts").at(i).at("args"))
                blocks.append(self.b.use(opt_str(part.get("tool_call_id")), name, inputs, key=f"{key}.{i}"))
            else:
                self.notes.skip(f"part:{pk}")
        model = opt_str(msg.get("model_name"))
        if model:
            self.meta.model = model
        if blocks:
            self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=_usage(msg.get("usage")))
        else:
            self.notes.skip("response:empty")


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    cache_read, cache_write = token_count(value.get("cache_read_tokens")), token_count(value.get("cache_write_tokens"))
    total_in = token_count(value.get("input_tokens")) or token_count(value.get("request_tokens"))
    out = token_count(value.get("output_tokens")) or token_count(value.get("response_tokens"))
    usage = Usage(input_tokens=max(total_in - cache_read - cache_write, 0), output_tokens=out, cache_read_tokens=cache_read, cache_write_tokens=cache_write)
    return usage if usage.total else None


def _convert(messages: Iterable[tuple[Any, Loc]], notes: ImportNotes, file: str | None) -> Transcript:
    h = _History(notes)
    n = 0
    for n, (msg, loc) in enumerate(messages, 1):
        h.message(msg, loc, f"m{n - 1}")
    if not n:
        raise TranscriptError("no Pydantic AI messages found", file=file, expected="a list of ModelRequest / ModelResponse objects")
    h.meta.source_path = file
    return Transcript(meta=h.meta, messages=h.b.finish(), notes=notes)


def from_messages(messages: list[Any], *, file: str | None = None, path: str = "$") -> Transcript:
    """Convert a list of ``ModelMessage`` dicts found at JSON ``path``."""
    notes = ImportNotes(records_read=len(messages))
    base = Loc(file, path)
    return _convert(((m, base.at(i)) for i, m in enumerate(messages)), notes, file)


def _holder(doc: Any) -> str | None:
    if isinstance(doc, dict):
        return next((k for k in _HOLDERS if isinstance(doc.get(k), list)), None)
    return None


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A list of messages, or an object holding one under ``messages`` (``all_messages``, ``history``)."""
    if isinstance(doc, list):
        return from_messages(doc, file=file)
    key = _holder(doc)
    if key is not None:
        return from_messages(doc[key], file=file, path=f"$.{key}")
    if _is_message(doc):
        return from_messages([doc], file=file)
    raise TranscriptError("not a Pydantic AI message history", file=file, where="$", expected="a list of ModelRequest / ModelResponse objects")


def read(path: Path) -> Transcript:
    file = str(path)
    notes = ImportNotes()
    doc, records = document_or_log(path, notes, "Pydantic AI messages", lambda first: _holder(first) is not None)
    if records is None:
        return from_document(doc, file=file)
    return _convert(records, notes, file)


_HEAD = re.compile(r'"part_kind"\s*:\s*"(?:system-prompt|user-prompt|tool-return|tool-call|retry-prompt)"')


def _score(value: Any) -> int:
    if isinstance(value, list):
        return 97 if value and _is_message(value[0]) else 0
    key = _holder(value)
    if key is not None:
        return 97 if value[key] and _is_message(value[key][0]) else 0
    return 97 if _is_message(value) else 0


def sniff(probe: FileHead) -> int:
    value = probe.first_value()
    if value is not None:
        return _score(value)
    return 96 if _HEAD.search(probe.head) else 0


FORMAT = Format(
    name=NAME,
    description="Pydantic AI message histories (all_messages_json, ModelMessagesTypeAdapter; a list, {messages: [...]}, or JSONL)",
    sniff=sniff,
    read=read,
    # More specific: its lists of objects with parts also fit Gemini contents.
    more_specific_than=(*REQUEST_BODIES, "gemini"),
)
