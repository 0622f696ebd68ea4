"""Anthropic content blocks, usage and tool definitions as the lab's canonical values.

Shared by every importer whose records hold Anthropic-shaped messages: the
Messages API importer beside this module, Claude Code (whose entries wrap
Anthropic messages) and OpenHands (image markers in tool results).
``block_dicts`` and ``usage_fields`` give the checked field values as plain
dicts, so a caller importing many messages can validate each whole message in
one pydantic call (nested data is validated in Rust) instead of paying one
model construction per block; ``convert_blocks`` and ``usage_from`` build the
models directly.

Images are never kept: a base64 source is reduced to its decoded size, and an
image inside a tool result becomes a text marker.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from ..core.messages import Block, ImageBlock, ImportNotes, ToolSpec, Usage

__all__ = [
    "base64_size",
    "block_dicts",
    "convert_blocks",
    "tool_result_text",
    "image_marker",
    "usage_fields",
    "usage_from",
    "COST_KEY",
    "cost_usd",
    "tools_from",
    "NUMBER_NOTE",
    "number_note",
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


# The warning that counts texts written as numbers; ``number_note`` keeps one such line per import.
NUMBER_NOTE = "text field(s) held a number, read as its text"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_note(notes: ImportNotes, n: int = 1) -> None:
    """Count ``n`` more texts that were numbers in the one warning that says so.

    Why: a tool that wrote a text as a number (``"text": 42``) lost nothing the model saw, but
    dropping such a block dropped the message with it, silently (a Cline task kept 12 of 145).
    """
    for i, line in enumerate(notes.warnings):
        head, _, rest = line.partition(" ")
        if rest == NUMBER_NOTE and head.isdigit():
            notes.warnings[i] = f"{int(head) + n} {NUMBER_NOTE}"
            return
    notes.warnings.append(f"{n} {NUMBER_NOTE}")


def _number_text(value: int | float, notes: ImportNotes) -> str:
    number_note(notes)
    return str(value)


def block_dicts(content: Any, notes: ImportNotes, where: str) -> list[dict[str, Any]]:
    """Anthropic message content as the field dicts of canonical blocks, every value already checked.

    Each dict carries its ``type``, so ``Message.model_validate`` (or the ``Block``
    union) turns it into the block ``convert_blocks`` returns. Unknown or
    malformed blocks are dropped and counted as ``block:<type>``; empty text is
    dropped silently (the API rejects it anyway). A text (or the whole content)
    written as a number is read as its text and counted (``number_note``).
    """
    # Importers call this once per message, so the common shapes (a list of block objects, the
    # most frequent kinds first) are tested with the cheapest checks.
    if type(content) is not list:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        if content is None:
            return []
        if _is_number(content):
            return [{"type": "text", "text": _number_text(content, notes)}]
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
            if _is_number(text):
                append({"type": "text", "text": _number_text(text, notes)})
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


def usage_fields(raw: Any) -> dict[str, Any] | None:
    """The ``Usage`` fields of an API usage object, or None when it is not an object."""
    if not isinstance(raw, dict):
        return None
    i, o = raw.get("input_tokens"), raw.get("output_tokens")
    r, w = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    # Claude Code's recorded cost, when an importer put it beside the API usage (``COST_KEY``).
    c = raw.get(COST_KEY)
    # Plain non-negative ints, the JSON case, skip the call: usage is read for every message.
    return {
        "input_tokens": i if type(i) is int and i >= 0 else _int(i),
        "output_tokens": o if type(o) is int and o >= 0 else _int(o),
        "cache_read_tokens": r if type(r) is int and r >= 0 else _int(r),
        "cache_write_tokens": w if type(w) is int and w >= 0 else _int(w),
        "cost_usd": None if c is None else cost_usd(c),
    }


# The key under which an importer adds the agent's recorded cost to an API usage object.
COST_KEY = "costUSD"


def cost_usd(value: Any) -> float | None:
    """A recorded cost in dollars: a finite non-negative number, else None (a bool is not a cost)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    cost = float(value)
    return cost if 0 <= cost < float("inf") else None


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
