"""What stages return and share: events, results, and the per-session state.

A stage is pure with respect to messages: it never edits the list or the
messages it is given. Decisions that must persist across requests (the spill
ledger, the dedup index, the breaker count, the usage anchor) live in
``CompactorState``, which the ``Compactor`` owns and hands to each stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .messages import Boundary, Message, ToolSpec, Usage

if TYPE_CHECKING:  # pragma: no cover
    from .config import CompactionConfig
    from .store import SpillStore
    from .summarizers.base import Summarizer
    from .tokens.base import TokenCounter

__all__ = ["Trigger", "Event", "StageResult", "CompactorState", "StageContext", "Stage"]

Trigger = Literal["auto", "manual", "emergency", "reactive", "dispatch"]


@dataclass(frozen=True)
class Event:
    """One thing a stage did (or tried and failed to do), for reports and charts."""

    stage: str
    trigger: str
    tokens_before: int
    tokens_after: int
    ids: tuple[str, ...] = ()
    strategy: str | None = None
    success: bool = True
    detail: str = ""
    summary_text: str | None = None
    attachment: str | None = None

    @property
    def tokens_freed(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def effective(self) -> bool:
        return self.success and self.tokens_freed > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "trigger": self.trigger,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_freed": self.tokens_freed,
            "ids": list(self.ids),
            "strategy": self.strategy,
            "success": self.success,
            "detail": self.detail,
            "summary_text": self.summary_text,
            "attachment": self.attachment,
        }


@dataclass(frozen=True)
class StageResult:
    messages: list[Message]
    events: tuple[Event, ...] = ()
    boundary: Boundary | None = None
    # How many leading messages are the input's own objects, untouched; None when the stage does not say.
    unchanged: int | None = None


@dataclass
class CompactorState:
    """Cross-request memory of one session's compaction decisions."""

    session_id: str = "session"
    # tool_use_id -> the exact stub text sent, or None for "kept" (MewCode's frozen ledger).
    spill_ledger: dict[str, str | None] = field(default_factory=dict)
    # tool_use_id -> where a spilled result was stored, so a frozen stub keeps its spill_path.
    spill_paths: dict[str, str] = field(default_factory=dict)
    # tool_use ids of reads dedup already looked at and kept, so they are never deduped later.
    dedup_seen: set[str] = field(default_factory=set)
    # path -> (content hash, id of the message holding that content)
    dedup_index: dict[str, tuple[str, str]] = field(default_factory=dict)
    # tool_use_id -> exact dedup stub, frozen once decided
    dedup_ledger: dict[str, str] = field(default_factory=dict)
    microcompact_last_run: float | None = None
    last_request_time: float | None = None
    breaker_failures: int = 0
    # When the last auto failure happened (the clock the breaker's cooldown is measured on).
    breaker_failed_at: float | None = None
    # Provider-reported usage and the number of messages it covered.
    anchor: Usage | None = None
    anchor_messages: int = 0
    # Consecutive recovery attempts for the current request; a normal request resets it.
    recovery_attempts: int = 0
    # The first user request, verbatim, so recovery can re-insert it after truncation.
    first_request: str | None = None
    # The Compactor's incremental bookkeeping: a Track per trigger path (its last output, token
    # prefix sums, the stages' memos). Pure speed-up: dropping it only costs one run from scratch.
    tracks: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def fork(self) -> CompactorState:
        """An independent copy of the decisions, to go on from (a replay resumed at a checkpoint).

        Every container is copied, so neither copy's later requests reach the other's; the
        incremental bookkeeping is left out (``tracks``), which only costs the copy's first
        request a run from scratch, with the same result.
        """
        copied: dict[str, Any] = {
            name: value.copy() if isinstance(value, (dict, set, list)) else value
            for name, value in self.__dict__.items()
            if name != "tracks"
        }
        return CompactorState(**copied)


@dataclass
class StageContext:
    config: CompactionConfig
    counter: TokenCounter
    store: SpillStore
    summarizer: Summarizer
    state: CompactorState
    # Seconds since the epoch, from message timestamps or a simulated clock.
    now: float = 0.0
    trigger: Trigger = "auto"
    instructions: str | None = None
    force: bool = False
    # The session's tool list (Transcript.tools), for the summary's recovery attachment.
    tools: tuple[ToolSpec, ...] = ()
    # Incremental runs (set by the Compactor; see lab.core.incremental): messages[:settled] are
    # the very objects the stages processed last time and left alone, so the driver
    # (lab.core.incremental.remember) notes only the rest; totals[i] is counter.count_messages(messages[:i]) for i <= settled.
    settled: int = 0
    totals: Sequence[int] = ()
    # The stages' memos for this trigger path (stage name -> Memo); None: keep nothing.
    memos: dict[str, Any] | None = None

    def tokens(self, messages: Sequence[Message], start: int = 0) -> int:
        """``counter.count_messages(messages[start:])``, without recounting the settled prefix."""
        k = self.settled
        if 0 < k < len(self.totals) and start <= k <= len(messages):
            return self.totals[k] - self.totals[start] + self.counter.count_messages(messages[k:])
        return self.counter.count_messages(messages[start:] if start else messages)


class Stage(Protocol):
    name: str

    def __call__(self, messages: Sequence[Message], ctx: StageContext) -> StageResult: ...
