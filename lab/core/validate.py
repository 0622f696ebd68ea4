"""Would a provider accept this history? Strict checks on canonical messages.

Compaction must never turn a valid history into one the provider rejects with
a 400, so these rules are what the stages are tested against. They read the
canonical model, the way the exporters in ``lab.formats.export`` translate it:

Anthropic (``anthropic_problems``)
  - leading system messages become ``system``; the first other message is ``user``;
  - no message is empty, and no text block is empty or only whitespace;
  - ``tool_use`` only in assistant messages, ``tool_result`` only in user messages;
  - every ``tool_use`` is answered by a ``tool_result`` in the very next message;
  - every ``tool_result`` answers a ``tool_use`` of the message right before it;
  - tool ids are unique.

OpenAI chat (``openai_problems``)
  - system messages may appear anywhere; the first other message is ``user``;
  - no message is empty; an assistant message needs text or a tool call;
  - every tool call is answered (tool messages) before the next user text or
    assistant message (the exporter moves tool messages right after the call);
  - no tool message without an earlier, still open, tool call;
  - tool ids are unique.

Boundary messages are the lab's own markers, never sent, and are ignored.
A real transcript can break these rules itself (an interrupted tool call):
that is the source's fact, reported here, not repaired.
"""

from __future__ import annotations

from typing import Sequence

from .messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["anthropic_problems", "openai_problems", "is_valid_anthropic", "is_valid_openai"]


def _sendable(messages: Sequence[Message]) -> list[tuple[int, Message]]:
    return [(i, m) for i, m in enumerate(messages) if m.boundary is None and m.tag != "boundary"]


def _label(i: int, m: Message) -> str:
    return f"message {i} ({m.role}, id {m.id})"


def _uses(m: Message) -> list[str]:
    return [b.id for b in m.content if isinstance(b, ToolUseBlock)]


def _results(m: Message) -> list[str]:
    return [b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock)]


def _common_problems(sent: list[tuple[int, Message]]) -> list[str]:
    problems: list[str] = []
    convo = [(i, m) for i, m in sent if m.role != "system"]
    if not convo:
        problems.append("no user or assistant message to send")
    elif convo[0][1].role != "user":
        i, m = convo[0]
        problems.append(f"{_label(i, m)}: the first non-system message must be from the user")
    seen_uses: set[str] = set()
    seen_results: set[str] = set()
    for i, m in sent:
        if not m.content:
            problems.append(f"{_label(i, m)}: empty content")
        for b in m.content:
            if isinstance(b, TextBlock) and not b.text.strip():
                problems.append(f"{_label(i, m)}: empty text block")
            elif isinstance(b, ToolUseBlock):
                if m.role != "assistant":
                    problems.append(f"{_label(i, m)}: tool_use {b.id} outside an assistant message")
                if b.id in seen_uses:
                    problems.append(f"{_label(i, m)}: duplicate tool_use id {b.id}")
                seen_uses.add(b.id)
            elif isinstance(b, ToolResultBlock):
                if m.role != "user":
                    problems.append(f"{_label(i, m)}: tool_result {b.tool_use_id} outside a user message")
                if b.tool_use_id in seen_results:
                    problems.append(f"{_label(i, m)}: duplicate tool_result for {b.tool_use_id}")
                seen_results.add(b.tool_use_id)
    return problems


def anthropic_problems(messages: Sequence[Message]) -> list[str]:
    """Every reason the Anthropic Messages API would reject this history (empty when none)."""
    sent = _sendable(messages)
    problems = _common_problems(sent)
    for k, (i, m) in enumerate(sent):
        uses = _uses(m)
        if uses:
            nxt = sent[k + 1] if k + 1 < len(sent) else None
            answered = set(_results(nxt[1])) if nxt is not None and nxt[1].role == "user" else set()
            for tool_id in uses:
                if tool_id not in answered:
                    problems.append(f"{_label(i, m)}: tool_use {tool_id} is not answered by a tool_result in the next message")
        results = _results(m)
        if results:
            prev = sent[k - 1][1] if k > 0 else None
            asked = set(_uses(prev)) if prev is not None and prev.role == "assistant" else set()
            for tool_id in results:
                if tool_id not in asked:
                    problems.append(f"{_label(i, m)}: tool_result {tool_id} does not answer a tool_use in the previous message")
    return problems


def openai_problems(messages: Sequence[Message]) -> list[str]:
    """Every reason the OpenAI Chat Completions API would reject this history (empty when none)."""
    sent = _sendable(messages)
    problems = _common_problems(sent)
    # Tool calls of the latest assistant message still waiting for their tool messages.
    open_calls: dict[str, int] = {}
    caller: tuple[int, Message] | None = None

    def close_turn() -> None:
        if caller is not None:
            for tool_id in open_calls:
                problems.append(f"{_label(*caller)}: tool call {tool_id} is not answered before the next message")
        open_calls.clear()

    for i, m in sent:
        if m.role == "system":
            continue
        if m.role == "assistant":
            close_turn()
            if not any(isinstance(b, TextBlock) and b.text.strip() for b in m.content) and not _uses(m):
                problems.append(f"{_label(i, m)}: assistant message with neither text nor tool calls")
            open_calls = {tool_id: i for tool_id in _uses(m)}
            caller = (i, m)
            continue
        for tool_id in _results(m):
            if tool_id in open_calls:
                del open_calls[tool_id]
            else:
                problems.append(f"{_label(i, m)}: tool result {tool_id} has no preceding open tool call")
        if any(not isinstance(b, ToolResultBlock) for b in m.content):
            # User text ends the turn: the exporter puts it after the tool messages.
            close_turn()
            caller = None
    close_turn()
    return problems


def is_valid_anthropic(messages: Sequence[Message]) -> bool:
    return not anthropic_problems(messages)


def is_valid_openai(messages: Sequence[Message]) -> bool:
    return not openai_problems(messages)
