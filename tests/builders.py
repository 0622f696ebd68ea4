"""Tiny builders for messages, shared by every test module."""

from __future__ import annotations

import itertools
from datetime import datetime, UTC
from typing import Any

from lab.core.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
)

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}{next(_ids)}"


def ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def system(text: str = "You are a coding agent.") -> Message:
    return Message(role="system", content=(TextBlock(text=text),), id=_id("s"))


def user(text: str, *, at: float | None = None) -> Message:
    return Message(role="user", content=(TextBlock(text=text),), id=_id("u"), timestamp=ts(at) if at is not None else None)


def assistant(text: str = "ok", *, at: float | None = None, thinking: str | None = None) -> Message:
    blocks: list[Any] = []
    if thinking:
        blocks.append(ThinkingBlock(thinking=thinking))
    blocks.append(TextBlock(text=text))
    return Message(role="assistant", content=tuple(blocks), id=_id("a"), timestamp=ts(at) if at is not None else None)


def tool_call(name: str, tool_id: str | None = None, *, text: str | None = None, at: float | None = None, **inputs: Any) -> Message:
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks.append(ToolUseBlock(id=tool_id or _id("toolu_"), name=name, input=inputs))
    return Message(role="assistant", content=tuple(blocks), id=_id("a"), timestamp=ts(at) if at is not None else None)


def tool_result(tool_id: str, content: str, *, is_error: bool = False, at: float | None = None) -> Message:
    return Message(
        role="user",
        content=(ToolResultBlock(tool_use_id=tool_id, content=content, is_error=is_error),),
        id=_id("r"),
        timestamp=ts(at) if at is not None else None,
    )


def call_and_result(name: str, content: str, *, tool_id: str | None = None, is_error: bool = False, at: float | None = None, **inputs: Any) -> list[Message]:
    """An assistant tool call and the user message that answers it."""
    call = tool_call(name, tool_id, at=at, **inputs)
    use = call.content[-1]
    assert isinstance(use, ToolUseBlock)
    return [call, tool_result(use.id, content, is_error=is_error, at=at)]


def session(n_reads: int = 6, size: int = 5000) -> list[Message]:
    """A small realistic session: a request, several big reads, a final answer."""
    msgs = [system(), user("Please fix the failing test in app/models.py")]
    for i in range(n_reads):
        msgs += call_and_result("Read", f"line {i}\n" * (size // 7), file_path=f"app/file{i}.py")
    msgs.append(assistant("Done: the test passes now."))
    return msgs


def message_shapes(t: Transcript) -> list[tuple[str, list[str]]]:
    """Each message as (role, its blocks' kinds): ``use:ID`` and ``result:ID`` for tool blocks, else the block type."""
    out = []
    for m in t.messages:
        kinds = []
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                kinds.append(f"use:{b.id}")
            elif isinstance(b, ToolResultBlock):
                kinds.append(f"result:{b.tool_use_id}")
            else:
                kinds.append(b.type)
        out.append((m.role, kinds))
    return out
