"""Anthropic Messages API request bodies, and logs of requests and responses.

Accepted inputs:

- one request body ``{model, system, messages, tools, ...}`` (``system`` a
  string or a list of text blocks);
- ``{"request": body, "response": message}``;
- a log, as JSONL or as one JSON array, whose records are request bodies,
  ``{request, response}`` pairs or bare responses (``{"type": "message",
  "role": "assistant", ...}``);
- JSONL with one message per line, bare or wrapped one level (see
  ``message_lines``), when no request body is among its first records.

A log repeats the conversation: each request carries the whole history so
far. The importer keeps the request with the most messages (the later one on a
tie) as the conversation, and appends its response's assistant message when
the same record holds one or a bare response follows it directly. Every other
record is counted in ``notes.skipped`` (``earlier_request``, ``response``).

The block converters here are shared with the Claude Code importer, whose
entries wrap Anthropic messages. ``block_dicts`` and ``usage_fields`` give the
checked field values as plain dicts, so a caller importing many messages can
validate each whole message in one pydantic call (nested data is validated in
Rust) instead of paying one model construction per block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import TypeAdapter

from ..core.messages import (
    Block,
    ImageBlock,
    ImportNotes,
    Message,
    TextBlock,
    ToolSpec,
    Transcript,
    TranscriptMeta,
    Usage,
)
from ..errors import TranscriptError
from .jsonio import iter_jsonl_lines, make_probe, read_json
from .message_lines import collect_messages, line_scores, message_of
from .registry import Format, Probe, register

__all__ = [
    "FORMAT",
    "base64_size",
    "block_dicts",
    "convert_blocks",
    "tool_result_text",
    "image_marker",
    "usage_fields",
    "usage_from",
    "tools_from",
    "request_to_transcript",
    "read",
    "read_lines",
    "sniff",
]


def base64_size(data: str) -> int:
    """Decoded size of base64 text, computed without decoding (the pixels are never kept)."""
    n = sum(1 for ch in data if not ch.isspace())
    padding = len(data.rstrip()) - len(data.rstrip().rstrip("="))
    return max(0, n * 3 // 4 - padding)


_BLOCK: TypeAdapter[Block] = TypeAdapter(Block)


def _image_dict(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict):
        return {"type": "image", "source": "unknown"}
    media = source.get("media_type") if isinstance(source.get("media_type"), str) else "image/png"
    kind = source.get("type")
    if kind == "base64":
        data = source.get("data")
        return {"type": "image", "media_type": media, "size_bytes": base64_size(data) if isinstance(data, str) else 0, "source": "base64"}
    if kind == "url":
        url = source.get("url")
        return {"type": "image", "media_type": media, "source": "url", "url": url if isinstance(url, str) else None}
    if kind == "file":
        return {"type": "image", "media_type": media, "source": "file"}
    return {"type": "image", "media_type": media, "source": "unknown"}


def _image(block: dict[str, Any]) -> ImageBlock:
    return ImageBlock.model_validate(_image_dict(block))


def image_marker(image: ImageBlock) -> str:
    """How an image inside a tool result is written into its (text-only) content."""
    if image.url:
        return f"[image: {image.media_type}, {image.url}]"
    return f"[image: {image.media_type}, {image.size_bytes} bytes]"


def tool_result_text(content: Any) -> str:
    """A tool result's content as text: text parts joined, images as size markers."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False, sort_keys=True)
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "image":
            parts.append(image_marker(_image(part)))
        elif isinstance(part, str):
            parts.append(part)
        else:
            # Block kinds the model does not know (tool_reference, search results...) stay readable.
            parts.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


def _tool_input(value: Any, notes: ImportNotes, where: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if value in (None, ""):
        return {}
    notes.warnings.append(f"{where}: tool_use input was {type(value).__name__}, kept under 'value'")
    return {"value": value}


def block_dicts(content: Any, notes: ImportNotes, where: str) -> list[dict[str, Any]]:
    """Anthropic message content as the field dicts of canonical blocks, every value already checked.

    Each dict carries its ``type``, so ``Message.model_validate`` (or the ``Block``
    union) turns it into the block ``convert_blocks`` returns. Unknown or
    malformed blocks are dropped and counted as ``block:<type>``; empty text is
    dropped silently (the API rejects it anyway).
    """
    # Importers call this once per message, so the common shapes (a list of block objects, the
    # most frequent kinds first) are tested with the cheapest checks.
    if type(content) is not list:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        if content is None:
            return []
        if not isinstance(content, list):
            notes.skip("block:invalid")
            return []
    blocks: list[dict[str, Any]] = []
    append = blocks.append
    for raw in content:
        if type(raw) is dict:
            kind = raw.get("type")
        elif isinstance(raw, str):
            if raw:
                append({"type": "text", "text": raw})
            continue
        else:
            kind = raw.get("type") if isinstance(raw, dict) else None
        # Each kind is tested once, then its fields; a kind whose fields are wrong falls through to the skip.
        if kind == "tool_result":
            tool_use_id = raw.get("tool_use_id")
            if isinstance(tool_use_id, str):
                body = raw.get("content")
                append(
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": body if isinstance(body, str) else tool_result_text(body),
                        "is_error": raw.get("is_error") is True,
                    }
                )
                continue
        elif kind == "tool_use":
            tool_id = raw.get("id")
            name = raw.get("name")
            if isinstance(tool_id, str) and isinstance(name, str):
                tool_input = raw.get("input")
                if type(tool_input) is not dict:
                    tool_input = _tool_input(tool_input, notes, where)
                append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
                continue
        elif kind == "text":
            text = raw.get("text")
            if isinstance(text, str):
                if text:
                    append({"type": "text", "text": text})
                continue
        elif kind == "thinking":
            thinking = raw.get("thinking")
            if isinstance(thinking, str):
                sig = raw.get("signature")
                append({"type": "thinking", "thinking": thinking, "signature": sig if isinstance(sig, str) else None})
                continue
        elif kind == "image":
            append(_image_dict(raw))
            continue
        notes.skip(f"block:{kind if isinstance(kind, str) else 'invalid'}")
    return blocks


def convert_blocks(content: Any, notes: ImportNotes, where: str) -> list[Block]:
    """Anthropic message content (a string or a list of blocks) as canonical blocks.

    Unknown or malformed blocks are dropped and counted as ``block:<type>``;
    empty text is dropped silently (the API rejects it anyway).
    """
    validate = _BLOCK.validate_python
    return [validate(d) for d in block_dicts(content, notes, where)]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_fields(raw: Any) -> dict[str, int] | None:
    """The ``Usage`` fields of an API usage object, or None when it is not an object."""
    if not isinstance(raw, dict):
        return None
    i, o = raw.get("input_tokens"), raw.get("output_tokens")
    r, w = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    # Plain non-negative ints, the JSON case, skip the call: usage is read for every message.
    return {
        "input_tokens": i if type(i) is int and i >= 0 else _int(i),
        "output_tokens": o if type(o) is int and o >= 0 else _int(o),
        "cache_read_tokens": r if type(r) is int and r >= 0 else _int(r),
        "cache_write_tokens": w if type(w) is int and w >= 0 else _int(w),
    }


def usage_from(raw: Any) -> Usage | None:
    fields = usage_fields(raw)
    return None if fields is None else Usage(**fields)


def tools_from(raw: Any, notes: ImportNotes) -> list[ToolSpec]:
    if not isinstance(raw, list):
        return []
    specs: list[ToolSpec] = []
    for tool in raw:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            notes.skip("tool:invalid")
            continue
        desc = tool.get("description")
        schema = tool.get("input_schema")
        specs.append(
            ToolSpec(
                name=tool["name"],
                description=desc if isinstance(desc, str) else "",
                input_schema=schema if isinstance(schema, dict) else {},
            )
        )
    return specs


def _system_messages(system: Any, notes: ImportNotes) -> list[Message]:
    blocks = [b for b in convert_blocks(system, notes, "$.system") if isinstance(b, TextBlock)]
    return [Message(role="system", content=tuple(blocks), id="system-0")] if blocks else []


def _message(raw: Any, index: int, notes: ImportNotes, file: str | None, where: str, timestamp: Any = None) -> Message | None:
    if not isinstance(raw, dict):
        raise TranscriptError(f"message is {type(raw).__name__}, not an object", file=file, where=where, expected="{role, content}")
    role = raw.get("role")
    if role not in ("user", "assistant", "system"):
        notes.skip(f"role:{role if isinstance(role, str) else 'missing'}")
        return None
    blocks = block_dicts(raw.get("content"), notes, where)
    if not blocks:
        notes.skip("empty_message")
        return None
    mid = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else f"m{index}"
    # One validation for the message and all its blocks.
    fields = {"role": role, "content": blocks, "id": mid, "usage": usage_fields(raw.get("usage")), "timestamp": timestamp}
    return Message.model_validate(fields)


def request_to_transcript(
    body: dict[str, Any],
    *,
    response: dict[str, Any] | None = None,
    file: str | None = None,
    where: str = "$",
    notes: ImportNotes | None = None,
) -> Transcript:
    """One request body (plus an optional response) as a transcript."""
    notes = notes or ImportNotes()
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise TranscriptError("no 'messages' list", file=file, where=where, expected="an Anthropic Messages request body")
    messages = _system_messages(body.get("system"), notes)
    seen: set[str] = {m.id for m in messages}
    for i, raw in enumerate(raw_messages):
        msg = _message(raw, i, notes, file, f"{where}.messages[{i}]")
        if msg is not None:
            if msg.id in seen:
                msg = msg.model_copy(update={"id": f"{msg.id}#{i}"})
            seen.add(msg.id)
            messages.append(msg)
    if response is not None:
        reply = _message({**response, "role": "assistant"}, len(raw_messages), notes, file, f"{where}.response")
        if reply is not None:
            if reply.id in seen:
                reply = reply.model_copy(update={"id": f"{reply.id}#response"})
            messages.append(reply)
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if model is None and response is not None and isinstance(response.get("model"), str):
        model = response["model"]
    meta = TranscriptMeta(source_format="anthropic", model=model, source_path=file)
    return Transcript(meta=meta, messages=messages, tools=tools_from(body.get("tools"), notes), notes=notes)


def _is_response(rec: Any) -> bool:
    return isinstance(rec, dict) and rec.get("type") == "message" and rec.get("role") == "assistant"


def _split(rec: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A log record as (request body, response), either possibly None."""
    if not isinstance(rec, dict):
        return None, None
    if isinstance(rec.get("request"), dict):
        resp = rec.get("response")
        return rec["request"], resp if _is_response(resp) else None
    if isinstance(rec.get("messages"), list):
        return rec, None
    if _is_response(rec):
        return None, rec
    return None, None


def _from_log(records: Iterable[tuple[str, Any]], file: str) -> Transcript:
    notes = ImportNotes()
    best: list[Any] | None = None  # [body, response, where, message count]
    last: list[Any] | None = None
    requests = responses = 0
    for where, rec in records:
        notes.records_read += 1
        body, resp = _split(rec)
        responses += resp is not None
        if body is not None:
            requests += 1
            n = len(body["messages"]) if isinstance(body.get("messages"), list) else -1
            last = [body, resp, where, n]
            if best is None or n >= best[3]:
                best = last
        elif resp is not None and last is not None and last[1] is None:
            last[1] = resp
        elif resp is None:
            notes.skip("unknown_record")
    if best is None:
        raise TranscriptError("no request body in the log", file=file, expected="records with a 'messages' list")
    if requests > 1:
        notes.skip("earlier_request", requests - 1)
    unused = responses - (best[1] is not None)
    if unused:
        notes.skip("response", unused)
    return request_to_transcript(best[0], response=best[1], file=file, where=best[2], notes=notes)


def _jsonl_records(path: Path) -> Iterator[tuple[str, Any]]:
    for line_no, value in iter_jsonl_lines(path):
        yield f"line {line_no}", value


def read_lines(path: Path) -> Transcript:
    """Import a JSONL file of Messages-API messages, one per line (bare or wrapped one level)."""
    file = str(path)
    notes = ImportNotes()
    messages, model = collect_messages(path, notes, lambda line, i: _message(line.message, i, notes, file, line.where, line.timestamp))
    meta = TranscriptMeta(source_format="anthropic", model=model, source_path=file)
    return Transcript(meta=meta, messages=messages, notes=notes)


def _message_lines(records: list[Any] | None) -> bool:
    """Records of a message log, not of a request log: messages and no request body among them."""
    if not records or any(_split(rec)[0] is not None for rec in records):
        return False
    return any(message_of(rec) is not None for rec in records)


def read(path: Path) -> Transcript:
    path = Path(path)
    file = str(path)
    probe = make_probe(path)
    if _message_lines(probe.records):
        return read_lines(path)
    if probe.shape == "jsonl":
        return _from_log(_jsonl_records(path), file)
    doc = read_json(path)
    if isinstance(doc, list):
        return _from_log(((f"$[{i}]", rec) for i, rec in enumerate(doc)), file)
    if not isinstance(doc, dict):
        raise TranscriptError("top level is not an object", file=file, where="$", expected="an Anthropic Messages request body")
    body, resp = _split(doc)
    if body is None:
        raise TranscriptError("no 'messages' list", file=file, where="$", expected="an Anthropic Messages request body")
    notes = ImportNotes(records_read=1)
    return request_to_transcript(body, response=resp, file=file, notes=notes)


_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def _request_score(body: Any) -> int:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0
    score = 40
    if "system" in body:
        score = 80
    for m in body["messages"][:200]:
        if not isinstance(m, dict):
            return 0
        # Shapes only the OpenAI APIs use.
        if m.get("role") in ("system", "tool", "developer") or "tool_calls" in m or "function_call" in m:
            return 0
        content = m.get("content")
        if isinstance(content, list):
            for b in content:
                kind = b.get("type") if isinstance(b, dict) else None
                if not isinstance(kind, str):
                    continue
                if kind in _ANTHROPIC_BLOCKS or isinstance(b.get("source"), dict):
                    score = max(score, 85)
                if kind in ("image_url", "input_text", "output_text"):
                    return 0
    return score


def sniff(probe: Probe) -> int:
    if _message_lines(probe.records):
        lines = line_scores(probe.records)["anthropic"]
        if lines:
            return lines
    candidates: list[Any] = []
    if isinstance(probe.document, list):
        candidates = probe.document[:20]
    elif probe.document is not None:
        candidates = [probe.document]
    elif probe.records:
        candidates = probe.records
    scores = []
    for rec in candidates:
        body, resp = _split(rec)
        if body is not None:
            scores.append(_request_score(body))
        elif resp is not None:
            scores.append(50)
    if scores:
        return max(scores) if min(scores) > 0 else 0
    if probe.shape == "json" and probe.document is None:
        head = probe.head
        if re.search(r'"messages"\s*:', head) and not re.search(r'"tool_calls"|"role"\s*:\s*"(system|tool)"', head):
            return 60 if re.search(r'"tool_use"|"tool_result"|"system"\s*:', head) else 30
    return 0


FORMAT = register(
    Format(
        name="anthropic",
        description="Anthropic Messages API request bodies, a JSON/JSONL log of requests and responses, or one message per JSONL line",
        sniff=sniff,
        read=read,
    )
)
