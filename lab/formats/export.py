"""Canonical messages as provider request bodies: Anthropic Messages, OpenAI chat and OpenAI Responses.

The exporters skip boundary messages (the lab's markers, never sent) and
keep every tool call and every tool result, so a pair present in the source is
present in the request (a result without its call is kept as text, below).
They place results where the APIs want them, and every request they write is
one the API takes (issue 27): ``close_pending=True``, the default, answers
every tool call that no message answers (a session cut off while its tools
ran, an aborted turn, a call the agent abandoned) with an "interrupted" error
result right after the call, as agents answer an aborted call. Only
``close_pending=False``, asked for by name, leaves such calls unanswered, with
a note saying the request will be refused.

A history whose first non-system message is from the user keeps a user
opening: when blank-dropping empties it, ``(empty message)`` stands in for
it, so the request opens as the conversation did (both APIs refuse a request
with no message). A history that opens with the assistant gets the task in
front, a copy of its first user text, or a placeholder turn when it has none
(``lab.core.repair.opening_turn``, with its note): Anthropic's API no longer
requires a user opening, but gateways such as Bedrock still do (see
``lab.core.validate``).

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

Responses (``to_responses``): leading system messages become ``instructions``
(unless ``instructions=False``, for a caller that keeps the request's own),
later ones ``developer`` message items; user text and images become a ``user``
message of ``input_text`` / ``input_image`` parts, tool results
``function_call_output`` items right after their call (the API has no error
flag: an error result is sent as its text); assistant text becomes
``output_text`` parts of an ``assistant`` message item, each tool call a
``function_call`` item (arguments as a JSON string), in the order the blocks
came. Thinking is dropped with a note: a Responses ``reasoning`` input item
needs the item id (and, without server-side storage, the encrypted content)
the API issued, which the canonical model does not hold. ``reuse`` lets a
caller that holds the agent's own items for a message send those instead
(``lab.serve``, which keeps items the lab does not model byte for byte).

Tool results are first placed where both APIs look for them, and pending calls
closed or noted: ``lab.formats.tool_results``.

``notes``, when given, collects one line per thing that was dropped or
replaced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..core.messages import Block, ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Transcript, is_sent
from ..core.repair import opening_turn
from .tool_results import anthropic_tool_id, close_pending, openai_tool_id, pending_note, pending_tool_calls, settle_tool_results

__all__ = [
    "to_anthropic",
    "to_openai",
    "to_responses",
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


def _task_in_front(messages: Sequence[Message], notes: list[str] | None) -> list[str]:
    """The texts of the user turn put in front of a request that opens with the assistant (``lab.core.repair``).

    Read from the messages as given: a result whose call is missing is text once settled, never the task.
    """
    found = opening_turn(messages)
    if found is None:  # the first turn left is the assistant's only because the user's were dropped blank
        return [EMPTY_OPENING]
    front, note = found
    _note(notes, note)
    return [b.text for b in front.content if isinstance(b, TextBlock)]


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


def _leading_system(messages: Sequence[Message]) -> tuple[list[str], int]:
    """The texts of the system messages the history opens with (blank ones left out), and where the rest begins:
    both APIs take them out of the message list (Anthropic's ``system``, Responses' ``instructions``)."""
    parts: list[str] = []
    start = 0
    while start < len(messages) and messages[start].role == "system":
        text = _system_text(messages[start])
        if not _blank(text):
            parts.append(text)
        start += 1
    return parts, start


def to_anthropic(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = True,
) -> dict[str, Any]:
    """An Anthropic Messages request body: ``{"system"?, "messages", "tools"?}``."""
    given, specs = _split_input(source, tools)
    messages = settle_tool_results(given, notes=notes, tool_id=anthropic_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    system_parts, start = _leading_system(messages)
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
    elif turns and turns[0]["role"] != "user":
        task = _task_in_front(given, notes)
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": text} for text in task]})
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
    close_pending: bool = True,
) -> dict[str, Any]:
    """An OpenAI Chat Completions request body: ``{"messages", "tools"?}``."""
    given, specs = _split_input(source, tools)
    messages = settle_tool_results(given, notes=notes, tool_id=openai_tool_id)
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
    elif first < len(out) and out[first]["role"] != "user":
        out.insert(first, {"role": "user", "content": "\n\n".join(_task_in_front(given, notes))})
    body: dict[str, Any] = {"messages": out}
    if specs:
        body["tools"] = _tools_openai(specs)
    return body


# -- OpenAI Responses ------------------------------------------------------------


def _responses_tool_id(tool_id: str) -> str:
    """A call id the Responses API takes: the source's own (Codex's are ``call_...``), never empty."""
    return tool_id or "call_lab"


def _input_message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": parts}


def _tools_responses(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema or {"type": "object", "properties": {}}}
        for t in tools
    ]


def _responses_user(msg: Message, notes: list[str] | None) -> list[dict[str, Any]]:
    """A user message as items: its tool outputs first (they answer the call just before), then its text and images."""
    items: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": b.tool_use_id, "output": b.content} for b in msg.content if isinstance(b, ToolResultBlock)
    ]
    parts: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextBlock) and not _blank(b.text):
            parts.append({"type": "input_text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append({"type": "input_image", "image_url": image_placeholder_url(b), "detail": "auto"})
    if any(isinstance(b, ThinkingBlock) for b in msg.content):
        _note(notes, f"{msg.id}: thinking dropped")
    _note_blank_texts(msg, notes)
    if parts:
        items.append(_input_message("user", parts))
    elif not items:
        _note(notes, f"{msg.id}: nothing left to send, message dropped")
    return items


def _responses_assistant(msg: Message, notes: list[str] | None) -> list[dict[str, Any]]:
    """An assistant message as items in block order: runs of text as one ``assistant`` message, each call a ``function_call``."""
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextBlock) and not _blank(b.text):
            parts.append({"type": "output_text", "text": b.text})
        elif isinstance(b, ToolUseBlock):
            if parts:
                items.append(_input_message("assistant", parts))
                parts = []
            items.append({"type": "function_call", "call_id": b.id, "name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)})
    if parts:
        items.append(_input_message("assistant", parts))
    _note_blank_texts(msg, notes)
    if any(isinstance(b, ThinkingBlock) for b in msg.content):
        _note(notes, f"{msg.id}: thinking dropped (a Responses reasoning item needs the id and encrypted content the API issued)")
    if any(isinstance(b, ImageBlock) for b in msg.content):
        _note(notes, f"{msg.id}: image in an assistant message dropped")
    if not items:
        _note(notes, f"{msg.id}: nothing left to send, message dropped")
    return items


def _is_system_item(item: dict[str, Any]) -> bool:
    return item.get("role") in ("system", "developer")


def to_responses(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = True,
    instructions: bool = True,
    reuse: Callable[[Message], list[dict[str, Any]] | None] | None = None,
) -> dict[str, Any]:
    """An OpenAI Responses request body: ``{"instructions"?, "input", "tools"?}``.

    ``reuse(message)``, when given, is asked first for each message (as settled): items it returns are sent
    in place of the message's export (they must carry the message's own call ids), None exports it.
    """
    given, specs = _split_input(source, tools)
    messages = settle_tool_results(given, notes=notes, tool_id=_responses_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    system_parts, start = _leading_system(messages) if instructions else ([], 0)
    items: list[dict[str, Any]] = []
    for msg in messages[start:]:
        kept = reuse(msg) if reuse is not None else None
        if kept is not None:
            items.extend(kept)
        elif msg.role == "system":
            text = _system_text(msg)
            if _blank(text):
                _note(notes, f"{msg.id}: empty system message dropped")
            else:
                items.append(_input_message("developer", [{"type": "input_text", "text": text}]))
        elif msg.role == "assistant":
            items.extend(_responses_assistant(msg, notes))
        else:
            items.extend(_responses_user(msg, notes))
    first = next((k for k, item in enumerate(items) if not _is_system_item(item)), len(items))
    opens_with_user = first < len(items) and items[first].get("role") == "user"
    if _opened_by_user(messages[start:]) and not opens_with_user:
        _note(notes, f"the opening user message was empty: sent as {EMPTY_OPENING!r}")
        items.insert(first, _input_message("user", [{"type": "input_text", "text": EMPTY_OPENING}]))
    elif first < len(items) and not opens_with_user:
        task = _task_in_front(given, notes)
        items.insert(first, _input_message("user", [{"type": "input_text", "text": text} for text in task]))
    body: dict[str, Any] = {}
    if system_parts:
        body["instructions"] = "\n\n".join(system_parts)
    body["input"] = items
    if specs:
        body["tools"] = _tools_responses(specs)
    return body
