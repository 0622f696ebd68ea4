"""Canonical messages as provider request bodies: Anthropic Messages and OpenAI chat.

Both exporters skip boundary messages (the lab's markers, never sent) and
keep every tool call and every tool result, so a pair present in the source is
present in the request (a result without its call is kept as text, below).
They place results where the APIs want them, but invent nothing: an
unanswered call stays unanswered (``lab.core.validate`` reports it), with one
exception asked for by name: ``close_pending=True`` answers every tool call
that no message answers (a session cut off while its tools ran, a call the
agent abandoned) with an "interrupted" error result right after the call, so
the request is one the API takes. Without it such calls get a note saying the
request will be refused.

A history whose first non-system message is from the user keeps a user
opening: when blank-dropping empties it, ``(empty message)`` stands in for
it, so the request opens as the conversation did (both APIs refuse a request
with no message; Anthropic's API no longer requires a user opening, but
gateways such as Bedrock still do, see ``lab.core.validate``).

Text that is empty or only whitespace is dropped (the Anthropic API refuses
an empty text block, and both refuse a message left with no content, which is
then dropped as well).

Anthropic: leading system messages become ``system`` (their texts joined by a
blank line; the key is left out when there is none); a system message later
in the history becomes user text prefixed ``[system] ``; consecutive messages
of one role are merged, tool results first within a user message as the API
requires; thinking blocks are kept only with a signature (the API rejects
unsigned ones); an image without a URL becomes a text placeholder; an error
result with no content says "error" (the API refuses it empty); a final
assistant text loses its trailing whitespace (the API refuses that too).

OpenAI: system messages stay ``system`` wherever they are; tool results become
``tool`` messages placed right after the assistant message that made the call;
tool calls carry their input as a JSON string; thinking is dropped; images
become ``image_url`` parts (a placeholder URL when the source had none).

Tool results are first placed where both APIs look for them, and pending calls
closed or noted: ``lab.formats.tool_results``.

``notes``, when given, collects one line per thing that was dropped or
replaced.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.messages import (
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Transcript,
    is_sent,
)
from .tool_results import (
    anthropic_tool_id,
    close_pending,
    openai_tool_id,
    pending_note,
    pending_tool_calls,
    settle_tool_results,
)

__all__ = [
    "to_anthropic",
    "to_openai",
    "image_placeholder_url",
    "is_exported",
    "EMPTY_OPENING",
]

# Stands in for an image whose bytes the lab never kept.
_PLACEHOLDER_URL = "https://placeholder.invalid/lab-image-omitted"


def image_placeholder_url(image: ImageBlock) -> str:
    return image.url or f"{_PLACEHOLDER_URL}?media_type={image.media_type}&bytes={image.size_bytes}"


# Boundary markers stay in the lab's history but never reach a provider.
is_exported = is_sent


def _blank(text: str) -> bool:
    return not text.strip()


# Stands in for a user opening that blank-dropping emptied.
EMPTY_OPENING = "(empty message)"


def _opened_by_user(messages: Sequence[Message]) -> bool:
    return next((m.role for m in messages if m.role != "system"), None) == "user"


def _close_or_note(messages: list[Message], close: bool, notes: list[str] | None) -> list[Message]:
    pending = pending_tool_calls(messages)
    if not pending:
        return messages
    _note(notes, pending_note(pending, close))
    return close_pending(messages) if close else messages


def _split_input(
    source: Transcript | Sequence[Message], tools: Sequence[ToolSpec] | None
) -> tuple[list[Message], list[ToolSpec]]:
    if isinstance(source, Transcript):
        return [m for m in source.messages if is_exported(m)], list(tools if tools is not None else source.tools)
    return [m for m in source if is_exported(m)], list(tools or [])


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def _anthropic_block(block: Block, msg: Message, notes: list[str] | None) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        if _blank(block.text):
            _note(notes, f"{msg.id}: empty or whitespace-only text block dropped")
            return None
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        if block.signature is None:
            _note(notes, f"{msg.id}: thinking block without signature dropped")
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if isinstance(block, ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
        if block.is_error:
            out["is_error"] = True
            if _blank(block.content):
                _note(notes, f"{msg.id}: empty error result for {block.tool_use_id} given the text 'error'")
                out["content"] = "error"
        return out
    if block.url:
        return {"type": "image", "source": {"type": "url", "url": block.url}}
    _note(notes, f"{msg.id}: image ({block.size_bytes} bytes) replaced by a text placeholder")
    return {"type": "text", "text": f"[image omitted: {block.media_type}, {block.size_bytes} bytes]"}


def _system_text(msg: Message) -> str:
    return "\n".join(b.text for b in msg.content if isinstance(b, TextBlock))


def _tools_anthropic(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema or {"type": "object", "properties": {}}}
        for t in tools
    ]


def to_anthropic(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = False,
) -> dict[str, Any]:
    """An Anthropic Messages request body: ``{"system"?, "messages", "tools"?}``."""
    messages, specs = _split_input(source, tools)
    messages = settle_tool_results(messages, notes=notes, tool_id=anthropic_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    system_parts: list[str] = []
    start = 0
    while start < len(messages) and messages[start].role == "system":
        text = _system_text(messages[start])
        if not _blank(text):
            system_parts.append(text)
        start += 1
    turns: list[dict[str, Any]] = []
    for msg in messages[start:]:
        role = msg.role
        if role == "system":
            role = "user"
            text = _system_text(msg)
            blocks: list[dict[str, Any]] = [] if _blank(text) else [{"type": "text", "text": f"[system] {text}"}]
        else:
            blocks = [d for d in (_anthropic_block(b, msg, notes) for b in msg.content) if d is not None]
        if not blocks:
            _note(notes, f"{msg.id}: nothing left to send, message dropped")
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if _opened_by_user(messages[start:]) and (not turns or turns[0]["role"] != "user"):
        _note(notes, f"the opening user message was empty: sent as {EMPTY_OPENING!r}")
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": EMPTY_OPENING}]})
    for turn in turns:
        if turn["role"] == "user":
            # The API wants a user message's tool results before anything else in it.
            turn["content"].sort(key=lambda d: d["type"] != "tool_result")
    if turns and turns[-1]["role"] == "assistant" and turns[-1]["content"][-1]["type"] == "text":
        last = turns[-1]["content"][-1]
        if last["text"] != last["text"].rstrip():
            _note(notes, "trailing whitespace of the final assistant text removed")
            turns[-1]["content"][-1] = {**last, "text": last["text"].rstrip()}
    body: dict[str, Any] = {}
    if system_parts:
        body["system"] = "\n\n".join(system_parts)
    body["messages"] = turns
    if specs:
        body["tools"] = _tools_anthropic(specs)
    return body


def _openai_user_content(blocks: list[Block]) -> str | list[dict[str, Any]] | None:
    texts = [b for b in blocks if isinstance(b, TextBlock) and not _blank(b.text)]
    images = [b for b in blocks if isinstance(b, ImageBlock)]
    if not images:
        return "\n\n".join(b.text for b in texts) if texts else None
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if isinstance(b, TextBlock) and not _blank(b.text):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": image_placeholder_url(b)}})
    return parts


def _note_blank_texts(msg: Message, notes: list[str] | None) -> None:
    blank = sum(1 for b in msg.content if isinstance(b, TextBlock) and _blank(b.text))
    if blank:
        _note(notes, f"{msg.id}: {blank} empty or whitespace-only text block(s) dropped")


def _tool_message(block: ToolResultBlock) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content}


def _tools_openai(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def _openai_assistant(msg: Message, notes: list[str] | None) -> dict[str, Any] | None:
    """An assistant message as its Chat Completions entry (text and tool calls); None when nothing is left."""
    text = "\n\n".join(b.text for b in msg.content if isinstance(b, TextBlock) and not _blank(b.text))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)},
        }
        for b in msg.content
        if isinstance(b, ToolUseBlock)
    ]
    _note_blank_texts(msg, notes)
    if any(isinstance(b, ThinkingBlock) for b in msg.content):
        _note(notes, f"{msg.id}: thinking dropped (chat completions has no thinking input)")
    if any(isinstance(b, ImageBlock) for b in msg.content):
        _note(notes, f"{msg.id}: image in an assistant message dropped")
    if not (text or calls):
        _note(notes, f"{msg.id}: nothing left to send, message dropped")
        return None
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = calls
    return entry


def to_openai(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = False,
) -> dict[str, Any]:
    """An OpenAI Chat Completions request body: ``{"messages", "tools"?}``."""
    messages, specs = _split_input(source, tools)
    messages = settle_tool_results(messages, notes=notes, tool_id=openai_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    out: list[dict[str, Any]] = []
    # Settled: every result is in the user message right after its call, so its tool messages follow the call.
    for msg in messages:
        if msg.role == "system":
            if _blank(_system_text(msg)):
                _note(notes, f"{msg.id}: empty system message dropped")
            else:
                out.append({"role": "system", "content": _system_text(msg)})
            continue
        if msg.role == "assistant":
            entry = _openai_assistant(msg, notes)
            if entry is not None:
                out.append(entry)
            continue
        stay = list(msg.content)
        out.extend(_tool_message(b) for b in stay if isinstance(b, ToolResultBlock))
        if any(isinstance(b, ThinkingBlock) for b in stay):
            _note(notes, f"{msg.id}: thinking dropped")
        _note_blank_texts(msg, notes)
        content = _openai_user_content([b for b in stay if not isinstance(b, ToolResultBlock)])
        if content is not None:
            out.append({"role": "user", "content": content})
        elif not any(isinstance(b, ToolResultBlock) for b in msg.content):
            _note(notes, f"{msg.id}: nothing left to send, message dropped")
    first = next((k for k, m in enumerate(out) if m["role"] != "system"), len(out))
    if _opened_by_user(messages) and (first == len(out) or out[first]["role"] != "user"):
        _note(notes, f"the opening user message was empty: sent as {EMPTY_OPENING!r}")
        out.insert(first, {"role": "user", "content": EMPTY_OPENING})
    body: dict[str, Any] = {"messages": out}
    if specs:
        body["tools"] = _tools_openai(specs)
    return body
