"""LangChain and LangGraph message histories, saved with LangChain's own serialisers.

Accepted documents, each message in any of three spellings:

* ``messages_to_dict``: ``{"type": "human"|"ai"|"tool"|"system"|"AIMessageChunk"..., "data": {...}}``;
* ``dumpd`` / ``dumps``: ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``;
* a message's plain ``model_dump()`` (what the LangGraph server returns):
  ``{"type": "ai", "content": ..., "additional_kwargs": ..., ...}``;

as a JSON list, under ``messages`` (LangGraph state), ``values.messages``
(a LangGraph thread state) or ``channel_values.messages`` (a checkpoint), a
single message, or JSONL with one message per line (other lines are skipped
and counted as ``record:<type>``).

Mapping: human -> user; ai -> assistant, with ``reasoning`` / ``thinking``
content blocks (and ``additional_kwargs.reasoning_content``) as thinking, text
and image parts in order, then tool_use blocks from ``tool_calls`` (else the
OpenAI-shaped ``additional_kwargs.tool_calls``, else ``tool_use`` /
``tool_call`` content blocks; ``invalid_tool_calls`` are kept with their raw
arguments and a warning); tool -> tool_result (``status: "error"`` ->
is_error), consecutive ones in one user message; function -> tool_result
answering the newest pending call of that name; system -> system; ``chat``
messages by their ``role``. ``usage_metadata`` becomes the assistant message's
usage: LangChain counts cached tokens inside ``input_tokens``, the canonical
``Usage`` keeps them apart. Other message types (``remove`` and the like) are
skipped and counted as ``type:<name>``.

Detection only scores high when LangChain's own markers are there: 95 for
``lc``/``constructor``/``kwargs`` objects and ``type``+``data`` pairs, 90 for
plain dumps of message types carrying ``additional_kwargs`` or
``response_metadata`` (no other format writes those).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, image_from_url, need_dict, openai_usage, parse_arguments, text_block, opt_str
from ..jsonio import iter_log_lines, read_json
from ..message_lines import is_message_lines, record_kind
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "NAME", "read", "read_lines", "from_document", "from_messages", "message_fields", "sniff"]

NAME = "langchain"

# messages_to_dict's type names (and the class names chunks are saved under) -> canonical kind.
_KINDS = {
    "human": "human",
    "ai": "ai",
    "tool": "tool",
    "system": "system",
    "function": "function",
    "chat": "chat",
    "developer": "system",
}
_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system", "FunctionMessage": "function", "ChatMessage": "chat"}
_KINDS.update(_CLASSES)
_KINDS.update({f"{cls}Chunk": kind for cls, kind in _CLASSES.items()})
_FLAT_MARKERS = ("additional_kwargs", "response_metadata")
_CHAT_ROLES = {"user": "human", "human": "human", "assistant": "ai", "ai": "ai", "system": "system", "developer": "system"}


# -- the three spellings of one message -------------------------------------------------


def message_fields(entry: Any) -> tuple[str, dict[str, Any], str] | None:
    """``(type name, fields, JSON path suffix of the fields)`` of a LangChain message, else None.

    The type name is the source's (``ai``, ``AIMessageChunk``, ``remove``...); unknown ones
    are the caller's to skip.
    """
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    if entry.get("lc") == 1 and kind == "constructor":
        ids, kwargs = entry.get("id"), entry.get("kwargs")
        if isinstance(ids, list) and ids and isinstance(ids[-1], str) and isinstance(kwargs, dict):
            return ids[-1], kwargs, ".kwargs"
        return None
    if not isinstance(kind, str) or not kind:
        return None
    if isinstance(entry.get("data"), dict) and "content" not in entry:
        return kind, entry["data"], ".data"
    if "content" in entry and "role" not in entry:
        return kind, entry, ""
    return None


def _kind_of(name: str, fields: dict[str, Any]) -> str | None:
    kind = _KINDS.get(name)
    if kind == "chat":
        role = fields.get("role")
        return _CHAT_ROLES.get(role) if isinstance(role, str) else None
    return kind


# -- content: a string or a list of content blocks ---------------------------------------
# Any of the shapes LangChain writes: its own standard blocks, and the providers' blocks it passes through.


def _image(part: dict[str, Any]) -> Block:
    ref = part.get("image_url")
    if ref is not None:
        return image_from_url(ref.get("url") if isinstance(ref, dict) else ref)
    source = part.get("source")
    if isinstance(source, dict):  # Anthropic-shaped image block passed through
        if isinstance(source.get("data"), str):
            return image_from_url(f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}")
        return image_from_url(source.get("url"))
    if isinstance(part.get("base64"), str):  # LangChain's standard image block
        return image_from_url(f"data:{part.get('mime_type') or 'image/png'};base64,{part['base64']}")
    return image_from_url(part.get("url"))


def _reasoning(part: dict[str, Any]) -> str:
    text = part.get("reasoning")
    if isinstance(text, str):
        return text
    # OpenAI Responses reasoning as LangChain keeps it: a list of summary parts.
    summary = part.get("summary")
    if isinstance(summary, list):
        return "\n".join(s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str))
    return ""


def _content_blocks(content: Any, notes: ImportNotes, loc: Loc, calls: list[tuple[dict[str, Any], Loc]]) -> list[Block]:
    """Blocks of a ``content`` string or list; tool-call parts are collected into ``calls``."""
    if content is None:
        return []
    if isinstance(content, str):
        return text_block(content)
    if not isinstance(content, list):
        raise loc.error(f"content is a {type(content).__name__}", expected="a string or a list of content blocks")
    blocks: list[Block] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            blocks += text_block(part)
            continue
        part = need_dict(part, loc.at(i), "content block")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks += text_block(part.get("text"))
        elif kind in ("image_url", "image"):
            blocks.append(_image(part))
        elif kind == "thinking" and isinstance(part.get("thinking"), str) and part["thinking"]:
            sig = part.get("signature")
            blocks.append(ThinkingBlock(thinking=part["thinking"], signature=sig if isinstance(sig, str) else None))
        elif kind == "reasoning" and (text := _reasoning(part)):
            blocks.append(ThinkingBlock(thinking=text))
        elif kind in ("tool_use", "tool_call"):
            calls.append((part, loc.at(i)))
        else:
            notes.skip(f"content block:{kind}")
    return blocks


def _result_text(content: Any, notes: ImportNotes, loc: Loc) -> str:
    if content is not None and not isinstance(content, (str, list)):
        return json.dumps(content, ensure_ascii=False)
    parts = [b.text if isinstance(b, TextBlock) else "[image]" for b in _content_blocks(content, notes, loc, [])]
    return "\n".join(parts)


# -- tool calls and usage ---------------------------------------------------------------


def _call(b: HistoryBuilder, tc: Any, loc: Loc, key: str) -> Block:
    """A LangChain ToolCall ``{name, args, id}``, an OpenAI ``{function: {...}}`` or a ``tool_use`` part."""
    tc = need_dict(tc, loc, "tool call")
    fn = tc.get("function")
    if isinstance(fn, dict):
        name, raw, arg_loc = fn.get("name"), fn.get("arguments"), loc.at("function").at("arguments")
    else:
        raw_key = "input" if tc.get("type") == "tool_use" else "args"
        name, raw, arg_loc = tc.get("name"), tc.get(raw_key), loc.at(raw_key)
    if not isinstance(name, str) or not name:
        raise loc.error("tool call without a name", expected="a string 'name'")
    return b.use(opt_str(tc.get("id")), name, parse_arguments(raw, b.notes, arg_loc), key=key)


def _list(value: Any, loc: Loc, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise loc.error(f"{what} is a {type(value).__name__}", expected="a list")
    return value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(fields: dict[str, Any]) -> Usage | None:
    raw = fields.get("usage_metadata")
    if isinstance(raw, dict):
        details = raw.get("input_token_details")
        details = details if isinstance(details, dict) else {}
        total_in, out = _int(raw.get("input_tokens")), _int(raw.get("output_tokens"))
        read, write = _int(details.get("cache_read")), _int(details.get("cache_creation"))
        if total_in or out or read or write:
            return Usage(input_tokens=max(0, total_in - read - write), output_tokens=out, cache_read_tokens=read, cache_write_tokens=write)
    meta = fields.get("response_metadata")
    return openai_usage(meta.get("token_usage")) if isinstance(meta, dict) else None


# -- one message ------------------------------------------------------------------------


def _assistant(b: HistoryBuilder, fields: dict[str, Any], loc: Loc, key: str) -> None:
    notes = b.notes
    raw_extra = fields.get("additional_kwargs")
    extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
    blocks: list[Block] = []
    reasoning = extra.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(ThinkingBlock(thinking=reasoning))
    parts: list[tuple[dict[str, Any], Loc]] = []
    blocks += _content_blocks(fields.get("content"), notes, loc.at("content"), parts)
    # Providers repeat a call in content and in tool_calls: the parsed list wins, the others fill in.
    calls = [(tc, loc.at("tool_calls").at(i)) for i, tc in enumerate(_list(fields.get("tool_calls"), loc.at("tool_calls"), "tool_calls"))]
    if not calls:
        legacy = _list(extra.get("tool_calls"), loc.at("additional_kwargs").at("tool_calls"), "tool_calls")
        calls = [(tc, loc.at("additional_kwargs").at("tool_calls").at(i)) for i, tc in enumerate(legacy)]
    if not calls:
        calls = parts
    invalid = _list(fields.get("invalid_tool_calls"), loc.at("invalid_tool_calls"), "invalid_tool_calls")
    if invalid:
        notes.warnings.append(f"{loc.where}: {len(invalid)} invalid tool call(s) kept with their raw arguments")
        calls = calls + [(tc, loc.at("invalid_tool_calls").at(i)) for i, tc in enumerate(invalid)]
    for i, (tc, at) in enumerate(calls):
        blocks.append(_call(b, tc, at, f"{key}.{i}"))
    b.add("assistant", blocks, key=key, usage=_usage(fields))


def _tool(b: HistoryBuilder, fields: dict[str, Any], loc: Loc, key: str) -> None:
    text = _result_text(fields.get("content"), b.notes, loc.at("content"))
    is_error = fields.get("status") == "error"
    call_id = opt_str(fields.get("tool_call_id"))
    if call_id is not None:
        b.result(call_id, text, key=key, is_error=is_error)
        return
    pending = b.pending()
    if len(pending) != 1:
        raise loc.error("tool message without tool_call_id", expected="a 'tool_call_id' naming an earlier tool call")
    b.notes.warnings.append(f"{loc.where}: tool message without tool_call_id paired with the only pending call")
    b.result(pending[0][0], text, key=key, is_error=is_error, canonical=True)


def _function(b: HistoryBuilder, fields: dict[str, Any], loc: Loc, key: str) -> None:
    # FunctionMessage has no call id: answer the newest pending call of its name.
    text = _result_text(fields.get("content"), b.notes, loc.at("content"))
    name = fields.get("name")
    match = [cid for cid, n in b.pending() if n == name] or [cid for cid, _ in b.pending()]
    b.result(match[-1] if match else f"call_{key}", text, key=key, canonical=True)


def _message(b: HistoryBuilder, entry: Any, loc: Loc, index: int) -> None:
    hit = message_fields(entry)
    if hit is None:
        raise loc.error("not a LangChain message", expected="{'type', 'data'}, {'lc': 1, 'type': 'constructor', 'id', 'kwargs'} or {'type', 'content'}")
    name, fields, suffix = hit
    loc = Loc(loc.file, loc.path + suffix, loc.line)
    kind = _kind_of(name, fields)
    msg_id = opt_str(fields.get("id"))
    key = msg_id if msg_id is not None else f"m{index}"
    if kind == "ai":
        _assistant(b, fields, loc, key)
    elif kind == "tool":
        _tool(b, fields, loc, key)
    elif kind == "function":
        _function(b, fields, loc, key)
    elif kind in ("human", "system"):
        blocks = _content_blocks(fields.get("content"), b.notes, loc.at("content"), [])
        b.add("user" if kind == "human" else "system", blocks, key=key)
    else:
        b.notes.skip(f"type:{name}")


def _model(entries: Iterable[Any]) -> str | None:
    for entry in entries:
        hit = message_fields(entry)
        meta = hit[1].get("response_metadata") if hit else None
        if isinstance(meta, dict):
            for k in ("model_name", "model"):
                if isinstance(meta.get(k), str) and meta[k]:
                    return str(meta[k])
    return None


# -- documents and lines ----------------------------------------------------------------


def from_messages(entries: list[Any], *, file: str | None = None, path: str = "$") -> Transcript:
    """Convert a list of LangChain messages found at JSON ``path`` in ``file``."""
    notes = ImportNotes(records_read=len(entries))
    b = HistoryBuilder(notes)
    base = Loc(file, path)
    for i, entry in enumerate(entries):
        _message(b, entry, base.at(i), i)
    meta = TranscriptMeta(source_format=NAME, source_path=file, model=_model(entries))
    return Transcript(meta=meta, messages=b.finish(), notes=notes)


def _messages_in(doc: Any) -> tuple[list[Any], str] | None:
    if isinstance(doc, list):
        return doc, "$"
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("messages"), list):
        return doc["messages"], "$.messages"
    for outer in ("values", "channel_values"):
        inner = doc.get(outer)
        if isinstance(inner, dict) and isinstance(inner.get("messages"), list):
            return inner["messages"], f"$.{outer}.messages"
    return None


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """Import a parsed document: a list of messages, LangGraph state, or one message."""
    found = _messages_in(doc)
    if found is not None:
        return from_messages(found[0], file=file, path=found[1])
    if message_fields(doc) is not None:
        return from_messages([doc], file=file)
    raise TranscriptError(
        "no LangChain messages found",
        file=file,
        where="$",
        expected="a list of LangChain messages, or an object with 'messages' (LangGraph state)",
    )


def read_lines(path: Path) -> Transcript:
    """Import JSONL with one LangChain message per line; other lines are skipped and counted."""
    file = str(path)
    notes = ImportNotes()
    b = HistoryBuilder(notes)
    kept: list[Any] = []
    for line_no, record in iter_log_lines(path, notes):
        if message_fields(record) is None:
            notes.skip(f"record:{record_kind(record)}")
            continue
        _message(b, record, Loc(file, "$", line=line_no), len(kept))
        kept.append(record)
    if not kept:
        raise TranscriptError("no LangChain messages found", file=file, expected="JSON lines holding LangChain messages")
    meta = TranscriptMeta(source_format=NAME, source_path=file, model=_model(kept))
    return Transcript(meta=meta, messages=b.finish(), notes=notes)


def read(path: Path) -> Transcript:
    if is_message_lines(path):
        return read_lines(path)
    return from_document(read_json(path), file=str(path))


# -- detection --------------------------------------------------------------------------


def _score_entry(entry: Any) -> int:
    hit = message_fields(entry)
    if hit is None:
        return 0
    name, fields, suffix = hit
    # Every serialiser writes ``content``: a "type" + "data" pair without it is someone else's event.
    if "content" not in fields:
        return 0
    if suffix:
        return 95 if name in _KINDS or name.endswith(("Message", "MessageChunk")) else 0
    return 90 if name in _KINDS and any(k in fields for k in _FLAT_MARKERS) else 0


def _score_list(entries: list[Any]) -> int:
    # Every message must look like LangChain's (a few foreign types such as "remove" aside).
    scores = [_score_entry(e) for e in entries[:50]]
    if not scores or not any(scores) or sum(1 for s in scores if s == 0) * 4 > len(scores):
        return 0
    return max(scores)


_HEAD_CONSTRUCTOR = re.compile(r'"lc"\s*:\s*1\s*,\s*"type"\s*:\s*"constructor"\s*,\s*"id"\s*:\s*\[[^\]]*Message')
_HEAD_TYPE_DATA = re.compile(r'"type"\s*:\s*"(?:human|ai|tool|system|\w+MessageChunk)"\s*,\s*"data"\s*:\s*\{')


def sniff(probe: FileHead) -> int:
    if probe.shape == "jsonl":
        return _score_list(probe.records or [])
    doc = probe.document
    if doc is not None:
        found = _messages_in(doc)
        if found is not None:
            return _score_list(found[0])
        return _score_entry(doc)
    head = probe.head
    if _HEAD_CONSTRUCTOR.search(head) or _HEAD_TYPE_DATA.search(head):
        return 95
    return 0


FORMAT = Format(
    name=NAME,
    description="LangChain / LangGraph messages (messages_to_dict, dumpd/dumps, LangGraph state, one message per JSONL line)",
    sniff=sniff,
    read=read,
    more_specific_than=REQUEST_BODIES,
)
