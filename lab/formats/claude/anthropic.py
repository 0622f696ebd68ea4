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
  Consecutive lines of one role with no message ids (or the same id) are one
  message, their tool results first and in the order of the calls
  (``message_lines.merge_turns``): a sanitised Claude Code export writes one
  content block per ``{timestamp, role, content}`` record, and kept apart its
  tool calls were answered by another assistant message.

A log repeats the conversation: each request carries the whole history so
far. The importer keeps the request with the most messages (the later one on a
tie) as the conversation, and appends its response's assistant message when
the same record holds one or a bare response follows it directly. Every other
record is counted in ``notes.skipped`` (``earlier_request``, ``response``).

A message only OpenAI Chat writes (role ``tool``/``function``/``developer``,
``tool_calls``, ``tool_call_id``) is a ``TranscriptError``: skipped, it would
take every tool pair of a Chat file with it, unseen.

Blocks, usage and tool definitions are converted in ``anthropic_blocks``,
which other importers share; its public names are importable from here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Message, TextBlock, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..anthropic_blocks import base64_size, block_dicts, convert_blocks, image_marker, tool_result_text, tools_from, usage_fields, usage_from
from ..history_builder import parse_timestamp
from ..xml_tool_calls import xml_tool_calls
from ..jsonio import iter_jsonl_lines, read_file_head, read_json
from ..message_lines import collect_messages, line_scores, message_of
from ..registry import Format, FileHead

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


def _system_messages(system: Any, notes: ImportNotes) -> list[Message]:
    blocks = [b for b in convert_blocks(system, notes, "$.system") if isinstance(b, TextBlock)]
    return [Message(role="system", content=tuple(blocks), id="system-0")] if blocks else []


# Roles and keys only OpenAI Chat (and MiniCode's tool_result role) write.
_CHAT_ROLES = frozenset({"tool", "function", "developer", "tool_result"})


def _chat_only(raw: dict[str, Any]) -> bool:
    calls = raw.get("tool_calls")
    return (isinstance(calls, list) and bool(calls)) or isinstance(raw.get("tool_call_id"), str) or isinstance(raw.get("function_call"), dict)


def _message(raw: Any, index: int, notes: ImportNotes, file: str | None, where: str, timestamp: Any = None) -> Message | None:
    if not isinstance(raw, dict):
        raise TranscriptError(f"message is {type(raw).__name__}, not an object", file=file, where=where, expected="{role, content}")
    role = raw.get("role")
    # A list or object as the role would not even hash for the set lookup; it is no role.
    if (isinstance(role, str) and role in _CHAT_ROLES) or _chat_only(raw):
        # Skipping them would drop every tool pair of an OpenAI Chat file without a word.
        raise TranscriptError(
            f"an OpenAI Chat message (role {role!r}, tool_calls or tool_call_id), not an Anthropic one",
            file=file,
            where=where,
            expected="Anthropic Messages {role: user|assistant, content}",
        )
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
        # Saved histories (Roo Code's "ts", home-made "timestamp") carry a time per message; API bodies do not.
        stamp = parse_timestamp(raw.get("ts", raw.get("timestamp"))) if isinstance(raw, dict) else None
        msg = _message(raw, i, notes, file, f"{where}.messages[{i}]", stamp)
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


def _from_log(records: Iterable[tuple[str, Any]], file: str, notes: ImportNotes | None = None) -> Transcript:
    notes = notes if notes is not None else ImportNotes()
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


def _jsonl_records(path: Path, notes: ImportNotes) -> Iterator[tuple[str, Any]]:
    for line_no, value in iter_jsonl_lines(path, notes=notes):
        yield f"line {line_no}", value


def read_lines(path: Path) -> Transcript:
    """Import a JSONL file of Messages-API messages, one per line (bare or wrapped one level)."""
    file = str(path)
    notes = ImportNotes()
    # Consecutive lines of one role without ids are one message (a sanitised Claude Code export
    # writes one content block per record): ``message_lines.merge_turns``.
    messages, model = collect_messages(
        path, notes, lambda line, i: _message(line.message, i, notes, file, line.where, line.timestamp), merge=True
    )
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
    probe = read_file_head(path)
    if _message_lines(probe.records):
        return read_lines(path)
    if probe.shape == "jsonl":
        # A request log still being written may end in a record cut off mid-write: imported up to it, with a warning.
        notes = ImportNotes()
        return _from_log(_jsonl_records(path, notes), file, notes)
    doc = read_json(path)
    if _is_message_list(doc):
        # A saved conversation as a bare list of messages (Cline's and Roo Code's api_conversation_history.json).
        t = request_to_transcript({"messages": doc}, file=file, notes=ImportNotes(records_read=len(doc)))
        return t.model_copy(update={"messages": xml_tool_calls(t.messages)})
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


def _is_message_list(doc: Any) -> bool:
    """A top-level list of messages (each ``{role, content}``), as opposed to a log of requests."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(m, dict) and m.get("role") in ("user", "assistant") and "content" in m and "messages" not in m for m in doc[:50])
    )


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


def sniff(probe: FileHead) -> int:
    if _message_lines(probe.records):
        lines = line_scores(probe.records)["anthropic"]
        if lines:
            return lines
    if _is_message_list(probe.document):
        score = _request_score({"messages": probe.document})
        # Anthropic blocks make it ours; plain text turns are left to openai_chat, which reads them the same.
        return score if score >= 85 else 0
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


FORMAT = Format(
    name="anthropic",
    description="Anthropic Messages API request bodies, a JSON/JSONL log of requests and responses, or one message per JSONL line",
    sniff=sniff,
    read=read,
    rivals="request_bodies",
)
