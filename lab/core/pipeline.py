"""The stage registry and the fold that chains stages.

Each stage is a small callable class configured by its own sub-model of
``CompactionConfig``; ``STAGES`` maps the config field name to the class, in
pipeline order. ``fold`` threads the messages through the enabled stages and
collects their events. A stage with a ``decide`` method is a gate (the
watermark): when it says no, the stages after it do not run.

The fold also tracks how many leading messages came through every stage as
the same objects. In an incremental run it lowers ``ctx.settled`` as soon as a
stage rewrites part of the settled prefix (microcompact, a summary), so the
stages after it re-examine what changed: each stage's note passes run through
the one incremental driver (``lab.core.incremental.remember``), which rolls
that stage's memo back to ``ctx.settled`` and notes only the messages after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from .config import CompactionConfig
from .events import Event, Stage, StageContext
from .incremental import common_prefix
from .messages import Boundary, Message
from .stages.active import ActiveContextStage
from .stages.dedup import DedupStage
from .stages.microcompact import MicrocompactStage
from .stages.spill import SpillStage
from .stages.summary import SummaryStage
from .stages.watermark import WatermarkDecision, WatermarkStage

__all__ = ["STAGES", "CHEAP_STAGES", "GATED_STAGES", "FoldResult", "Gate", "build_stages", "fold"]

# Pipeline order. Recovery is not here: it only runs after a prompt-too-long error.
STAGES: dict[str, Callable[[Any], Stage]] = {
    "active": ActiveContextStage,
    "spill": SpillStage,
    "dedup": DedupStage,
    "microcompact": MicrocompactStage,
    "watermark": WatermarkStage,
    "summary": SummaryStage,
}
# Free, deterministic stages (MewCode's L1 plus MiniCode's 1-4): always run first.
CHEAP_STAGES = ("active", "spill", "dedup", "microcompact")
# The decision and the expensive rewrite behind it.
GATED_STAGES = ("watermark", "summary")


class Gate(Protocol):
    name: str

    def decide(self, messages: Sequence[Message], ctx: StageContext) -> WatermarkDecision: ...


class FoldResult(NamedTuple):
    messages: list[Message]
    events: tuple[Event, ...]
    boundary: Boundary | None
    # How many leading messages of the result are the input's own objects.
    unchanged: int = 0
    # The gate's answer, when a gate was consulted.
    decision: WatermarkDecision | None = None


def build_stages(config: CompactionConfig, names: Sequence[str] = tuple(STAGES)) -> list[Stage]:
    """Instances of the named stages, configured from ``config``, in the order given."""
    return [STAGES[name](getattr(config, name)) for name in names]


def _enabled(stage: object) -> bool:
    config = getattr(stage, "config", None)
    return bool(getattr(config, "enabled", True))


def fold(stages: Sequence[Stage], messages: Sequence[Message], ctx: StageContext) -> FoldResult:
    """Run ``stages`` in order on ``messages``; return the final messages, all events and the last boundary.

    Disabled stages are skipped. A gate is always consulted (a disabled
    watermark means "no auto-compaction", not "compact unconditionally").
    """
    # An incremental run's list belongs to the Compactor: no copy needed.
    owned = ctx.memos is not None and isinstance(messages, list)
    # The repeated isinstance is for mypy: owned already implies a list.
    current = messages if owned and isinstance(messages, list) else list(messages)
    unchanged = len(current)
    events: list[Event] = []
    boundary: Boundary | None = None
    decision: WatermarkDecision | None = None
    for stage in stages:
        decide = getattr(stage, "decide", None)
        if decide is not None:
            decision = decide(current, ctx)
            if decision.event is not None:
                events.append(decision.event)
            if not decision.compact:
                break
            continue
        if not _enabled(stage):
            continue
        result = stage(current, ctx)
        kept = result.unchanged if result.unchanged is not None else common_prefix(current, result.messages)
        unchanged = min(unchanged, kept)
        if kept < ctx.settled:
            ctx.settled = kept
        current = result.messages if owned and isinstance(result.messages, list) else list(result.messages)
        events.extend(result.events)
        if result.boundary is not None:
            boundary = result.boundary
    return FoldResult(current, tuple(events), boundary, unchanged, decision)
