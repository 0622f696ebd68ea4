"""The summarizer interface: turn the part of history being compacted into text."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..messages import Message, ToolSpec, Usage

if TYPE_CHECKING:  # pragma: no cover
    from ..tokens.base import TokenCounter

__all__ = ["SummaryRequest", "SummaryResult", "Summarizer"]


@dataclass(frozen=True)
class SummaryRequest:
    # The messages to be replaced by the summary (everything before the kept tail).
    messages: Sequence[Message]
    counter: TokenCounter
    # "auto", "manual" or "emergency": only auto failures count toward the breaker.
    trigger: str = "auto"
    # Custom instructions of the manual path, as in "/compact keep API decisions".
    instructions: str | None = None
    tools: Sequence[ToolSpec] = ()
    # Token budget for the summary text.
    max_tokens: int = 20_000
    # User-supplied project memory, for the session-memory strategy.
    memory: str | None = None
    # Seconds since the epoch for headers such as "compacted at HH:MM:SS" (the replay's clock, never wall time).
    now: float | None = None
    # Size of the whole history before compaction (the part summarised is only ``messages``).
    tokens_before: int | None = None
    messages_before: int | None = None


@dataclass(frozen=True)
class SummaryResult:
    text: str
    # "session_memory", "full" (rule-based) or "llm"
    strategy: str
    # The recovery attachment appended after the summary (files, tools, lossy notice).
    attachment: str = ""
    # Tokens the summary call itself used, when an LLM wrote it.
    usage: Usage | None = None
    model: str | None = None
    extra: dict = field(default_factory=dict)


@runtime_checkable
class Summarizer(Protocol):
    name: str

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Return a summary, or raise ``SummaryError`` (``PromptTooLongError`` for PTL)."""
        ...
