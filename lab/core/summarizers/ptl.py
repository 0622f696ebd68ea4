"""MewCode's PTL retry: when the summary request itself is too long, drop the oldest history and retry.

History is cut into groups by user turn: a user's own message (text, not a
tool result) opens a group, which then holds the assistant replies and tool
round trips that followed. A group boundary is never placed inside a tool
pair, so dropping whole groups keeps every remaining tool_use with its
tool_result. The schedule: drop the single oldest group up to three times,
then 20% of the remaining groups (at least one) per try; when nothing is
left, fail with ``PromptTooLongExhaustedError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from itertools import pairwise

from ...errors import ConfigError, PromptTooLongError, SummaryError
from ..messages import Message, TextBlock, ToolResultBlock, tool_pairs
from .base import Summarizer, SummaryRequest, SummaryResult

__all__ = [
    "PTL_EXHAUSTED_MESSAGE",
    "PromptTooLongExhaustedError",
    "PTLRetrySummarizer",
    "group_by_user_turn",
    "drop_schedule",
]

PTL_EXHAUSTED_MESSAGE = "prompt too long even after dropping all history groups"


class PromptTooLongExhaustedError(SummaryError):
    """The sentinel: every history group was dropped and the request still did not fit."""

    def __init__(self, message: str = PTL_EXHAUSTED_MESSAGE, *, retries: int = 0, groups: int = 0) -> None:
        self.retries = retries
        self.groups = groups
        super().__init__(message)


def _opens_turn(message: Message) -> bool:
    if message.role != "user" or message.tag is not None:
        return False
    has_text = any(isinstance(b, TextBlock) and b.text.strip() for b in message.content)
    return has_text and not any(isinstance(b, ToolResultBlock) for b in message.content)


def group_by_user_turn(messages: Sequence[Message]) -> list[list[Message]]:
    """Split history into user turns; anything before the first turn is a group of its own."""
    n = len(messages)
    if n == 0:
        return []
    starts = [i for i, m in enumerate(messages) if i > 0 and _opens_turn(m)]
    # A start inside a tool pair (call before it, result at or after it) would split the pair.
    spans = [(u, r) for u, r in tool_pairs(list(messages)).values() if u is not None and r is not None]
    starts = [s for s in starts if not any(min(u, r) < s <= max(u, r) for u, r in spans)]
    bounds = [0, *starts, n]
    return [list(messages[a:b]) for a, b in pairwise(bounds) if a < b]


def drop_schedule(groups: int, oldest_first: int = 3, fraction: float = 0.2) -> list[int]:
    """How many groups each retry drops, until none are left: [1, 1, 1, 20% ...]."""
    out: list[int] = []
    left = groups
    while left > 0:
        k = 1 if len(out) < oldest_first else max(1, int(left * fraction))
        k = min(k, left)
        out.append(k)
        left -= k
    return out


class PTLRetrySummarizer:
    """Wraps a summarizer; on ``PromptTooLongError`` retries with the oldest user turns dropped.

    Retries and drops are recorded in ``SummaryResult.extra`` (``ptl_retries``,
    ``ptl_dropped_groups``, ``ptl_dropped_messages``, ``ptl_groups``), so a
    report can show how much history the summary never saw.
    """

    def __init__(self, inner: Summarizer, *, oldest_first: int = 3, fraction: float = 0.2, max_attempts: int = 100) -> None:
        if oldest_first < 0:
            raise ConfigError(f"oldest_first must be >= 0, got {oldest_first}")
        if not 0.0 < fraction <= 1.0:
            raise ConfigError(f"fraction must be in (0, 1], got {fraction}")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1, got {max_attempts}")
        self.inner = inner
        self.name = inner.name
        self.oldest_first = oldest_first
        self.fraction = fraction
        self.max_attempts = max_attempts

    def __repr__(self) -> str:
        return f"PTLRetrySummarizer({self.inner!r})"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        groups = group_by_user_turn(request.messages)
        total_groups = len(groups)
        dropped_groups = 0
        dropped_messages = 0
        retries = 0
        current = request
        # Bounded twice: every retry drops at least one group, and max_attempts caps the calls.
        for _attempt in range(self.max_attempts):
            try:
                result = self.inner.summarize(current)
            except PromptTooLongError:
                k = 1 if retries < self.oldest_first else max(1, int(len(groups) * self.fraction))
                k = min(k, len(groups))
                dropped_groups += k
                dropped_messages += sum(len(g) for g in groups[:k])
                groups = groups[k:]
                retries += 1
                if not groups:
                    raise PromptTooLongExhaustedError(retries=retries, groups=total_groups) from None
                kept = [m for g in groups for m in g]
                current = dataclasses.replace(request, messages=kept)
                continue
            extra = {
                **result.extra,
                "ptl_retries": retries,
                "ptl_dropped_groups": dropped_groups,
                "ptl_dropped_messages": dropped_messages,
                "ptl_groups": total_groups,
            }
            return dataclasses.replace(result, extra=extra)
        raise PromptTooLongExhaustedError(
            f"prompt still too long after {self.max_attempts} attempts ({dropped_groups} of {total_groups} history groups dropped)",
            retries=retries,
            groups=total_groups,
        )
