"""The MiniCode design's own message dicts: reader and writer.

The shape read (a JSON list, or ``{"messages": [...]}``), one dict per message::

    {"role": "system",    "content": "You are ..."}
    {"role": "user",      "content": "Fix the failing test"}
    {"role": "assistant", "content": "Reading it.",
                          "tool_calls": [{"id": "t1", "name": "read_file", "input": {"file_path": "a.py"}}]}
    {"role": "tool_result", "tool_use_id": "t1", "content": "...", "is_error": false,
                            "tool_name": "read_file", "_persisted_path": ".mini-code-tool-results/..."}
    {"role": "system", "content": "[Context compacted at 14:32:15 - Full Compact] ...",
                       "_compact_boundary": true}

* ``content`` is a string, or a list of ``{"type": "text", "text"}`` blocks
  (assistants may also put ``{"type": "tool_use", "id", "name", "input"}``
  blocks there, and ``{"type": "image", ...}`` placeholders are kept).
* Another agent's record is refused, not read as a plain chat: a document
  with mini-swe-agent's ``trajectory_format`` or ``instance_id``, or a message
  with ``extra``, ``function_call`` or ``provider_specific_fields``.
* Aliases MiniCode itself writes are accepted: ``toolName``, ``isError``,
  ``toolUseId``; ``tool_call_id`` too.
* ``_persisted_path`` marks a spilled result (its size is read from the
  ``[Tool result persisted to disk - N chars]`` header); ``_microcompacted``
  or the microcompact placeholder text marks a cleared one; the
  ``[Read deduplicated: ...]`` stub marks a dedup.
* A system message with ``_compact_boundary: true`` is a boundary: it imports
  as a boundary marker (``Boundary`` from the optional ``_boundary`` dict,
  else ``trigger="import"`` and a strategy guessed from the header) followed
  by a ``tag="summary"`` user message holding its text.
* Optional lab extensions, written by ``to_minicode`` so a round trip keeps
  everything: ``id``, ``timestamp`` (epoch seconds or ISO text), ``usage``,
  ``_thinking``, ``_tag``, ``_boundary``, ``_summary_id`` (the summary's own
  id), ``_marker_only`` (the text is the marker's, no summary follows),
  ``_compacted``, ``_original_chars``.

Consecutive ``tool_result`` dicts become one user message. A ``tool_result``
without an id answers the only pending call, else it is an error.

Detection (``sniff``): 95 for a ``tool_result`` role or ``_compact_boundary``,
90 for ``_persisted_path``, 85 for flat ``{id, name, input}`` tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast, get_args

from pydantic import ValidationError

from ...core.messages import (
    Block,
    Boundary,
    ImageBlock,
    ImportNotes,
    Message,
    MessageTag,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    TranscriptMeta,
    Usage,
)
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, need_dict, parse_timestamp, text_block
from ..jsonio import read_json
from ..registry import FileHead, Format

__all__ = ["FORMAT", "read", "from_minicode", "to_minicode", "sniff"]

NAME = "minicode"

_PERSISTED = re.compile(r"^\[Tool result persisted to disk\s*[-\u2014\u2013]+\s*(\d+) chars\]")
_CLEARED = "[Old tool result content cleared"
_DEDUP = "[Read deduplicated:"
_TAGS = set(get_args(MessageTag))
# Keys MiniCode never writes that other agents' histories carry: mini-swe-agent's trajectory record and its
# per-message ``extra``, litellm's message fields. A file with them is refused, not read as a plain chat.
_FOREIGN_TOP = frozenset({"trajectory_format", "instance_id"})
_FOREIGN_MESSAGE = frozenset({"extra", "function_call", "provider_specific_fields"})
_COMPACTED = {"spill", "dedup", "cleared", "masked", "truncated"}


def _strategy(text: str) -> str:
    if "Session Memory" in text:
        return "session_memory"
    if "Full Compact" in text:
        return "full"
    if "aggressively truncated" in text:
        return "reactive"
    return "unknown"


def _blocks(content: Any, b: HistoryBuilder, loc: Loc, key: str, allow_tools: bool) -> list[Block]:
    if content is None:
        return []
    if isinstance(content, str):
        return text_block(content)
    if not isinstance(content, list):
        raise loc.error(f"content is a {type(content).__name__}", expected="a string or a list of blocks")
    out: list[Block] = []
    for i, block in enumerate(content):
        block = need_dict(block, loc.at(i), "content block")
        kind = block.get("type")
        if kind == "text":
            out += text_block(block.get("text"))
        elif kind == "image":
            size, source, url = block.get("size_bytes"), block.get("source"), block.get("url")
            out.append(
                ImageBlock(
                    media_type=str(block.get("media_type") or "image/png"),
                    size_bytes=size if isinstance(size, int) and not isinstance(size, bool) else 0,
                    source=source if source in ("base64", "url", "file") else "unknown",
                    url=url if isinstance(url, str) else None,
                )
            )
        elif kind == "tool_use" and allow_tools:
            out.append(_use(block, b, loc.at(i), f"{key}.{i}"))
        elif kind == "thinking" and allow_tools:
            out += [ThinkingBlock(thinking=block["thinking"])] if isinstance(block.get("thinking"), str) else []
        elif kind == "tool_result":
            # MiniCode answers tools with role "tool_result" messages; a block is Anthropic's (or the
            # lab's) shape, and skipping it would drop the tool pair unseen.
            raise loc.at(i).error("a tool_result block is Anthropic Messages content, not MiniCode", expected='a {"role": "tool_result"} message')
        else:
            b.notes.skip(f"block:{kind}")
    return out


def _use(call: Any, b: HistoryBuilder, loc: Loc, key: str) -> ToolUseBlock:
    call = need_dict(call, loc, "tool call")
    name, inputs, cid = call.get("name"), call.get("input", {}), call.get("id")
    if not isinstance(name, str) or not name:
        raise loc.error("tool call without a name", expected="a string 'name'")
    if not isinstance(inputs, dict):
        raise loc.at("input").error(f"tool input is a {type(inputs).__name__}", expected="a JSON object")
    return b.use(cid if isinstance(cid, str) and cid else None, name, inputs, key=key)


def _usage(raw: Any, loc: Loc) -> Usage | None:
    if raw is None:
        return None
    try:
        return Usage.model_validate(raw)
    except ValidationError as exc:
        raise loc.error(f"bad usage: {exc.errors()[0]['msg']}", expected="input_tokens/output_tokens/... integers") from None


def _result(b: HistoryBuilder, m: dict[str, Any], loc: Loc, key: str, stamp: Any) -> None:
    cid = m.get("tool_use_id") or m.get("toolUseId") or m.get("tool_call_id")
    content = m.get("content", "")
    if isinstance(content, list):
        content = "\n".join(t.text for t in _blocks(content, b, loc.at("content"), key, False) if isinstance(t, TextBlock))
    if not isinstance(content, str):
        raise loc.at("content").error(f"content is a {type(content).__name__}", expected="a string")
    is_error = bool(m.get("is_error", m.get("isError", False)))
    path = m.get("_persisted_path")
    compacted = m.get("_compacted") if isinstance(m.get("_compacted"), str) and m["_compacted"] in _COMPACTED else None
    original = m.get("_original_chars") if isinstance(m.get("_original_chars"), int) else None
    if compacted is None:
        if isinstance(path, str) and path:
            compacted = "spill"
        elif m.get("_microcompacted") or content.startswith(_CLEARED):
            compacted = "cleared"
        elif content.startswith(_DEDUP):
            compacted = "dedup"
    if compacted == "spill" and original is None:
        hit = _PERSISTED.match(content)
        original = int(hit.group(1)) if hit else None
    open_id = b.open_results_id
    if open_id is not None and isinstance(m.get("id"), str) and not m["id"].startswith(open_id + "#"):
        # An explicit new id: the exporter wrote separate user messages, keep them apart.
        b.close_results()
    kwargs = dict(key=key, is_error=is_error, timestamp=stamp, compacted=compacted, spill_path=path if isinstance(path, str) else None, original_chars=original)
    if isinstance(cid, str) and cid:
        b.result(cid, content, **kwargs)
        return
    pending = b.pending()
    if len(pending) != 1:
        raise loc.error("tool_result without tool_use_id", expected="a 'tool_use_id' naming an earlier tool call")
    b.notes.warnings.append(f"{loc.where}: tool_result without tool_use_id paired with the only pending call")
    b.result(pending[0][0], content, canonical=True, **kwargs)


def _message(b: HistoryBuilder, m: Any, loc: Loc, index: int) -> None:
    m = need_dict(m, loc, "message")
    foreign = sorted(k for k in m if k in _FOREIGN_MESSAGE)
    if foreign:
        raise loc.error(f"a message with {', '.join(foreign)} is another agent's record, not MiniCode's", expected="MiniCode message keys")
    role = m.get("role")
    if not isinstance(role, str):
        raise loc.error("message without a role", expected="a string 'role'")
    key = m["id"] if isinstance(m.get("id"), str) and m["id"] else f"m{index}"
    stamp = parse_timestamp(m.get("timestamp"))
    tag = m.get("_tag") if isinstance(m.get("_tag"), str) and m["_tag"] in _TAGS else None
    usage = _usage(m.get("usage"), loc.at("usage"))
    if role == "tool_result":
        _result(b, m, loc, key, stamp)
        return
    if role == "system" and m.get("_compact_boundary"):
        blocks = _blocks(m.get("content"), b, loc.at("content"), key, False)
        text = "\n".join(t.text for t in blocks if isinstance(t, TextBlock))
        raw = m.get("_boundary")
        try:
            boundary = Boundary.model_validate(raw) if isinstance(raw, dict) else Boundary(trigger="import", strategy=_strategy(text))
        except ValidationError as exc:
            raise loc.at("_boundary").error(f"bad boundary: {exc.errors()[0]['msg']}", expected="CompactBoundary fields") from None
        if m.get("_marker_only"):
            b.add("system", blocks, key=key, timestamp=stamp, tag="boundary", boundary=boundary)
            return
        b.add("system", [], key=key, timestamp=stamp, tag="boundary", boundary=boundary)
        if blocks:
            sid = m.get("_summary_id") if isinstance(m.get("_summary_id"), str) else f"{key}.summary"
            # A user turn, as every summary in the lab: a system message here would leave the
            # history starting with the assistant, which both providers reject.
            b.add("user", blocks, key=sid, timestamp=stamp, tag="summary", usage=usage)
        return
    if role in ("system", "user"):
        # The test above is what narrows it; mypy cannot narrow a str by membership.
        b.add(cast(Role, role), _blocks(m.get("content"), b, loc.at("content"), key, False), key=key, timestamp=stamp, tag=tag, usage=usage)
        return
    if role == "assistant":
        blocks = []
        if isinstance(m.get("_thinking"), str) and m["_thinking"]:
            blocks.append(ThinkingBlock(thinking=m["_thinking"]))
        blocks += _blocks(m.get("content"), b, loc.at("content"), key, True)
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise loc.at("tool_calls").error("tool_calls is not a list", expected="a list of {id, name, input}")
        for i, call in enumerate(calls or []):
            blocks.append(_use(call, b, loc.at("tool_calls").at(i), f"{key}.{i}"))
        b.add("assistant", blocks, key=key, timestamp=stamp, tag=tag, usage=usage)
        return
    b.notes.skip(f"role:{role}")


def from_minicode(data: Any, *, file: str | None = None) -> Transcript:
    """Import MiniCode dicts: a list, or ``{"messages": [...]}``."""
    path = "$"
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        foreign = sorted(k for k in data if k in _FOREIGN_TOP)
        if foreign:
            # Another agent's trajectory (mini-swe-agent's), whose plain text turns would otherwise read as a MiniCode chat.
            raise TranscriptError(f"a document with {', '.join(foreign)} is another agent's trajectory, not a MiniCode history",
                                  file=file, where="$", expected="a list of message dicts or {'messages': [...]}")
        data, path = data["messages"], "$.messages"
    if not isinstance(data, list):
        raise TranscriptError("no MiniCode messages found", file=file, where="$", expected="a list of message dicts or {'messages': [...]}")
    notes = ImportNotes()
    b = HistoryBuilder(notes)
    base = Loc(file, path)
    for i, m in enumerate(data):
        _message(b, m, base.at(i), i)
    notes.records_read = len(data)
    return Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file), messages=b.finish(), notes=notes)


def read(path: Path) -> Transcript:
    return from_minicode(read_json(path), file=str(path))


# -- export ----------------------------------------------------------------------


def _text_content(blocks: Sequence[Block]) -> str | list[dict[str, Any]]:
    kept = [x for x in blocks if isinstance(x, (TextBlock, ImageBlock))]
    if len(kept) == 1 and isinstance(kept[0], TextBlock):
        return kept[0].text
    if not kept:
        return ""
    return [
        {"type": "text", "text": x.text} if isinstance(x, TextBlock) else x.model_dump(exclude_none=True)
        for x in kept
    ]


def _common(m: Message, mid: str) -> dict[str, Any]:
    d: dict[str, Any] = {"id": mid}
    if m.timestamp is not None:
        d["timestamp"] = m.timestamp.timestamp()
    return d


def _result_dict(r: ToolResultBlock, names: dict[str, str], m: Message, mid: str) -> dict[str, Any]:
    d: dict[str, Any] = {"role": "tool_result", "tool_use_id": r.tool_use_id, "content": r.content, "is_error": r.is_error}
    if r.tool_use_id in names:
        d["tool_name"] = names[r.tool_use_id]
    if r.spill_path:
        d["_persisted_path"] = r.spill_path
    if r.compacted == "cleared":
        d["_microcompacted"] = True
    if r.compacted:
        d["_compacted"] = r.compacted
    if r.original_chars is not None:
        d["_original_chars"] = r.original_chars
    return {**d, **_common(m, mid)}


def _boundary_dict(m: Message, nxt: Message | None) -> tuple[dict[str, Any], bool]:
    """A boundary marker as MiniCode's ``_compact_boundary`` message; True when it took in ``nxt``, its summary."""
    d: dict[str, Any] = {"role": "system", "content": _text_content(m.content), "_compact_boundary": True}
    if m.boundary is not None:
        d["_boundary"] = m.boundary.model_dump(mode="json", exclude_defaults=True)
    took_summary = False
    if nxt is not None and nxt.tag == "summary" and not m.content:
        d["content"], d["_summary_id"] = _text_content(nxt.content), nxt.id
        if nxt.usage is not None:
            d["usage"] = nxt.usage.model_dump()
        took_summary = True
    elif m.content:
        d["_marker_only"] = True
    return {**d, **_common(m, m.id)}, took_summary


def _user_dicts(m: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    """A user message as MiniCode dicts: its text runs as user messages, each tool result on its own, in order."""
    out: list[dict[str, Any]] = []
    run: list[Block] = []
    for x in [*m.content, None]:
        if isinstance(x, ToolResultBlock) or x is None:
            if run:
                out.append({"role": "user", "content": _text_content(run), **_common(m, m.id if not out else f"{m.id}#{len(out) + 1}")})
                run = []
            if x is not None:
                out.append(_result_dict(x, names, m, m.id if not out else f"{m.id}#{len(out) + 1}"))
        else:
            run.append(x)
    if not out:
        out.append({"role": "user", "content": "", **_common(m, m.id)})
    if m.tag or m.usage:
        out[0].update({k: v for k, v in (("_tag", m.tag), ("usage", m.usage.model_dump() if m.usage else None)) if v})
    return out


def _message_dict(m: Message) -> dict[str, Any]:
    """A system or assistant message as one MiniCode dict (thinking and tool calls as MiniCode spells them)."""
    d: dict[str, Any] = {"role": m.role, "content": _text_content(m.content)}
    if m.role == "assistant":
        thinking = [x.thinking for x in m.content if isinstance(x, ThinkingBlock)]
        if thinking:
            d["_thinking"] = "\n\n".join(thinking)
        calls = [{"id": x.id, "name": x.name, "input": x.input} for x in m.content if isinstance(x, ToolUseBlock)]
        if calls:
            d["tool_calls"] = calls
    if m.tag:
        d["_tag"] = m.tag
    if m.usage is not None:
        d["usage"] = m.usage.model_dump()
    return {**d, **_common(m, m.id)}


def to_minicode(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical messages as MiniCode dicts (the shape ``from_minicode`` reads).

    Tool results leave their user message as one ``tool_result`` dict each;
    a boundary marker followed by its summary becomes one
    ``_compact_boundary`` system message, as MiniCode writes it.
    """
    names = {x.id: x.name for m in messages for x in m.content if isinstance(x, ToolUseBlock)}
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "system" and (m.boundary is not None or m.tag == "boundary"):
            d, took_summary = _boundary_dict(m, messages[i + 1] if i + 1 < len(messages) else None)
            out.append(d)
            i += 2 if took_summary else 1
        elif m.role == "user":
            out += _user_dicts(m, names)
            i += 1
        else:
            out.append(_message_dict(m))
            i += 1
    return out


# -- detection -------------------------------------------------------------------

_HEAD_STRONG = re.compile(r'"role"\s*:\s*"tool_result"|"_compact_boundary"\s*:\s*true')
_HEAD_SPILL = re.compile(r'"_persisted_path"\s*:')


def _score(messages: Any) -> int:
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
        return 0
    best = 0
    for m in messages:
        if m.get("role") == "tool_result" or m.get("_compact_boundary"):
            return 95
        if "_persisted_path" in m:
            best = max(best, 90)
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], dict) and "name" in calls[0] and "function" not in calls[0]:
            best = max(best, 85)
    return best


def sniff(probe: FileHead) -> int:
    if probe.shape == "jsonl":
        return 0
    doc = probe.document
    if doc is not None:
        return _score(doc.get("messages") if isinstance(doc, dict) else doc)
    if _HEAD_STRONG.search(probe.head):
        return 90
    return 80 if _HEAD_SPILL.search(probe.head) else 0


FORMAT = Format(name=NAME, description="MiniCode message dicts (the MiniCode design's own history)", sniff=sniff, read=read)
