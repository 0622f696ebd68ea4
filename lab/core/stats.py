"""Facts about a transcript: sizes, tool calls, and how much of it is tool output.

The CLI's ``import`` summary and the app's Session overview both draw from
``transcript_stats``, so the two always agree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Iterable, Sequence

from .messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock, Transcript, block_text, is_sent
from .tokens.base import IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter, get_counter

__all__ = ["TranscriptStats", "transcript_stats", "composition"]

# Parts of a context, in the order the app stacks them.
PARTS = ("system", "user", "assistant", "tool_output", "stubs", "summary")


@dataclass(frozen=True)
class TranscriptStats:
    messages: int
    by_role: dict[str, int]
    tool_calls: int
    tool_calls_by_tool: dict[str, int]
    tool_errors: int
    images: int
    sidechains: int
    # counter name -> total tokens of the main thread
    tokens: dict[str, int]
    # counter name -> share of those tokens that is tool output (0..1)
    tool_output_share: dict[str, float]
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "messages": self.messages,
            "by_role": self.by_role,
            "tool_calls": self.tool_calls,
            "tool_calls_by_tool": self.tool_calls_by_tool,
            "tool_errors": self.tool_errors,
            "images": self.images,
            "sidechains": self.sidechains,
            "tokens": self.tokens,
            "tool_output_share": self.tool_output_share,
            "skipped": self.skipped,
            "notes": self.notes,
        }


def composition(messages: Sequence[Message], counter: TokenCounter) -> dict[str, int]:
    """Tokens of each part of a context: system, user, assistant, tool output, stubs, summary."""
    parts = dict.fromkeys(PARTS, 0)
    for m in messages:
        if not is_sent(m):
            continue
        if m.tag in ("summary", "memory"):
            parts["summary"] += counter.count_message(m)
            continue
        parts[m.role] += MESSAGE_OVERHEAD
        for b in m.content:
            if isinstance(b, ToolResultBlock):
                key = "stubs" if b.compacted else "tool_output"
                parts[key] += counter.count_text(b.content)
            elif isinstance(b, ImageBlock):
                parts[m.role] += IMAGE_TOKENS
            else:
                parts[m.role] += counter.count_text(block_text(b))
    return parts


def transcript_stats(transcript: Transcript, counters: Iterable[str | TokenCounter] = ("minicode", "chars/3.5")) -> TranscriptStats:
    msgs = transcript.messages
    by_role: Counter[str] = Counter(m.role for m in msgs)
    tools: Counter[str] = Counter()
    errors = images = 0
    for m in msgs:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                tools[b.name] += 1
            elif isinstance(b, ToolResultBlock) and b.is_error:
                errors += 1
            elif isinstance(b, ImageBlock):
                images += 1
    tokens: dict[str, int] = {}
    share: dict[str, float] = {}
    for c in counters:
        counter = get_counter(c) if isinstance(c, str) else c
        parts = composition(msgs, counter)
        total = sum(parts.values())
        tokens[counter.name] = total
        share[counter.name] = (parts["tool_output"] + parts["stubs"]) / total if total else 0.0
    notes = list(transcript.notes.warnings) + list(transcript.notes.dropped)
    if transcript.notes.orphan_tool_results:
        notes.append(f"{len(transcript.notes.orphan_tool_results)} tool result(s) without a matching tool call")
    return TranscriptStats(
        messages=len(msgs),
        by_role=dict(by_role),
        tool_calls=sum(tools.values()),
        tool_calls_by_tool=dict(tools.most_common()),
        tool_errors=errors,
        images=images,
        sidechains=len(transcript.sidechains),
        tokens=tokens,
        tool_output_share=share,
        skipped=dict(transcript.notes.skipped),
        notes=notes,
    )
