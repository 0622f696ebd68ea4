"""The stage registry, and the Compactor's side of the stage contract: views, requests, changes, state.

Each stage is a small class configured by its own sub-model of
``CompactionConfig``; ``STAGES`` maps the config field name to the class, in
pipeline order. A stage only decides (``lab.core.stages.contract``); this
module does everything else:

- ``view_for`` shows a stage the history and what the session knows, with a
  ``note`` hook that keeps the stage's memo per trigger path (rolled back to
  the settled prefix, noted over the rest only);
- ``decide`` runs a stage's decision and serves what it asks for on the way
  (a store write, a summary, another stage forced to run);
- ``apply`` turns the changes into the new history, and how much of the old
  one it kept unchanged;
- ``run_stage`` is one stage on its own: view, decision, changes, and its next
  state merged into the session's;
- ``fold`` chains the enabled stages. A gate (the watermark) is always
  consulted and, when it says no, the stages after it do not run.

The fold also tracks how many leading messages came through every stage as
the same objects. In an incremental run it lowers ``ctx.settled`` as soon as a
stage rewrites part of the settled prefix (microcompact, a summary), so the
stages after it note again what changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .config import CompactionConfig
from .events import Event, StageContext, StageResult
from .incremental import Memo, Note, common_prefix, remember
from .messages import Boundary, Message, ToolResultBlock, ToolUseBlock
from .stages.active import ActiveContextStage
from .stages.contract import ClearInput, Decision, Stage, Drop, Force, Rewrite, Stub, Summarize, View, Write, merge_state
from .stages.dedup import DedupStage
from .stages.microcompact import MicrocompactStage
from .stages.recovery import RecoveryStage
from .stages.spill import SpillStage
from .stages.summary import SummaryStage
from .stages.watermark import WatermarkDecision, WatermarkStage
from .summarizers.rules import RuleSummarizer

__all__ = ["STAGES", "CHEAP_STAGES", "GATED_STAGES", "FoldResult", "build_stages", "view_for", "decide", "apply", "run_stage", "fold"]

# Pipeline order. Recovery is not here: it only runs after a prompt-too-long error.
STAGES: dict[str, Callable[[Any], Stage]] = {
    "active": ActiveContextStage,
    "spill": SpillStage,
    "dedup": DedupStage,
    "microcompact": MicrocompactStage,
    "watermark": WatermarkStage,
    "summary": SummaryStage,
}
# Stages the Compactor builds on demand (``Force``), beside the pipeline's own.
_ON_DEMAND: dict[str, Callable[[Any], Stage]] = {**STAGES, "recovery": RecoveryStage}
# Free, deterministic stages (MewCode's L1 plus MiniCode's 1-4): always run first.
CHEAP_STAGES = ("active", "spill", "dedup", "microcompact")
# The decision and the expensive rewrite behind it.
GATED_STAGES = ("watermark", "summary")


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
    return [_ON_DEMAND[name](getattr(config, name)) for name in names]


def _state(stage: Stage, ctx: StageContext) -> Any:
    """The stage's kept state, or a fresh one (not kept: only a decision's state is)."""
    state = ctx.state.stages.get(stage.name)
    if state is None:
        make = getattr(stage, "State", None)
        state = make() if make is not None else None
    return state


class _Noter:
    """The ``View.note`` hook of one stage in one call: the stage's memo for this trigger path, kept in ``ctx.memos``."""

    __slots__ = ("stage", "messages", "ctx", "memo")

    def __init__(self, stage: Stage, messages: Sequence[Message], ctx: StageContext) -> None:
        self.stage, self.messages, self.ctx = stage, messages, ctx
        self.memo: Memo | None = None

    def __call__(self, *passes: Note) -> Memo:
        # The memo is keyed by the stage instance: it is only reused by the stage (and config) that built it.
        self.memo = remember(self.ctx.memos, self.stage.name, self.stage, self.messages, self.ctx.settled, passes)
        return self.memo


def view_for(messages: Sequence[Message], ctx: StageContext, noter: Callable[..., Memo] | None = None) -> View:
    """What a stage may see of ``messages`` and the session, in the request ``ctx``."""
    state = ctx.state
    # Positional, in the order of View's fields: a keyword call costs three times as much, on every stage of every request.
    return View(
        messages,
        ctx.counter,
        ctx.now,
        ctx.trigger,
        ctx.config.window,
        ctx.force,
        ctx.instructions,
        ctx.tools,
        getattr(ctx.summarizer, "name", "rules"),
        state.last_request_time,
        state.anchor,
        state.anchor_messages,
        state.first_request,
        state.claims,
        noter,
        ctx.settled,
        ctx.totals,
    )


def _serve(request: Any, ctx: StageContext) -> Any:
    """Carry out what a stage asked for; its errors go back into the stage."""
    if isinstance(request, Write):
        return ctx.store.write(ctx.state.session_id, request.tool_use_id, request.content, request.header)
    if isinstance(request, Summarize):
        summarizer = ctx.summarizer
        if request.seed and isinstance(summarizer, RuleSummarizer):
            return summarizer.summarize_seed(request.request)
        return summarizer.summarize(request.request)
    if isinstance(request, Force):
        config = getattr(ctx.config, request.stage)
        if not config.enabled:
            return None
        if request.session_memory is not None and request.session_memory != config.session_memory:
            config = config.model_copy(update={"session_memory": request.session_memory})
        forced = dataclasses.replace(ctx, trigger=request.trigger, force=True, settled=0, totals=(), memos=None)
        done = run_stage(_ON_DEMAND[request.stage](config), list(request.messages), forced)
        return done.messages, done.events, done.boundary
    raise TypeError(f"a stage asked for {type(request).__name__}, which the Compactor does not serve")


def decide(stage: Stage, view: View, ctx: StageContext) -> Decision:
    """``stage``'s decision on ``view``; a generator stage's requests are served on the way."""
    out = stage.decide(view, stage.config, _state(stage, ctx))
    if isinstance(out, Decision):
        return out
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = out.throw(error) if error is not None else out.send(reply)
        except StopIteration as done:
            return done.value
        reply, error = None, None
        try:
            reply = _serve(request, ctx)
        except Exception as e:  # handed to the stage, which handles it or lets it through
            error = e


def _stubbed(block: ToolResultBlock, change: Stub) -> ToolResultBlock:
    update: dict[str, Any] = {
        "content": change.content,
        "compacted": change.compacted,
        "original_chars": block.original_chars if block.original_chars is not None else len(block.content),
    }
    if change.compacted == "spill":
        update["spill_path"] = change.spill_path
    return block.model_copy(update=update)


def apply(messages: list[Message], changes: Sequence[Any]) -> tuple[list[Message], Boundary | None, int, Sequence[str]]:
    """The history after ``changes``: (messages, boundary left, leading messages unchanged, tool ids claimed).

    ``messages`` is returned as is when nothing changes; otherwise it is copied, never edited.
    """
    if not changes:
        return messages, None, len(messages), ()
    out = messages
    boundary: Boundary | None = None
    unchanged = len(messages)
    claimed: list[str] = []
    blocks: dict[int, list] = {}
    for change in changes:
        if isinstance(change, (Stub, ClearInput)):
            i = change.index
            row = blocks.get(i)
            if row is None:
                row = blocks[i] = list(out[i].content)
            b = row[change.block]
            if isinstance(change, Stub):
                assert isinstance(b, ToolResultBlock)
                row[change.block] = _stubbed(b, change)
                if change.claim:
                    claimed.append(b.tool_use_id)
            else:
                assert isinstance(b, ToolUseBlock)
                row[change.block] = b.model_copy(update={"input": {}})
            continue
        out = _flush(out, blocks)
        if blocks:
            unchanged = min(unchanged, min(blocks))
            blocks = {}
        if isinstance(change, Drop):
            out = out[: change.start] + out[change.stop :]
            unchanged = min(unchanged, change.start)
        elif isinstance(change, Rewrite):
            new = list(change.messages)
            unchanged = min(unchanged, common_prefix(out, new))
            out, boundary = new, change.boundary or boundary
        else:
            raise TypeError(f"unknown change {type(change).__name__}")
    if blocks:
        unchanged = min(unchanged, min(blocks))
        out = _flush(out, blocks)
    return out, boundary, unchanged, claimed


def _flush(messages: list[Message], blocks: dict[int, list]) -> list[Message]:
    if not blocks:
        return messages
    out = list(messages)
    for i, row in blocks.items():
        out[i] = out[i].model_copy(update={"content": tuple(row)})
    return out


def _commit(stage: Stage, decision: Decision, claimed: Sequence[str], noter: _Noter, ctx: StageContext) -> None:
    """Keep what the decision leaves for later: the stage's state, its claims, the positions it revisits."""
    state = ctx.state
    if decision.state is not None:
        state.stages[stage.name] = merge_state(state.stages.get(stage.name), decision.state)
    for tid in claimed:
        state.claims[tid] = stage.name
    if decision.revisit is not None and noter.memo is not None:
        noter.memo.mark_all("revisit", list(decision.revisit))
    if decision.forget_anchor:
        state.anchor = None
        state.anchor_messages = 0
    if decision.failure is not None:
        raise decision.failure


def _run(stage: Stage, messages: list[Message], ctx: StageContext) -> tuple[list[Message], Decision, Boundary | None, int]:
    noter = _Noter(stage, messages, ctx)
    decision = decide(stage, view_for(messages, ctx, noter), ctx)
    out, boundary, unchanged, claimed = apply(messages, decision.changes)
    _commit(stage, decision, claimed, noter, ctx)
    return out, decision, boundary, unchanged


def run_stage(stage: Stage, messages: Sequence[Message], ctx: StageContext) -> StageResult:
    """One stage on its own: its decision on ``messages``, applied, its next state kept in ``ctx.state``."""
    given = messages if isinstance(messages, list) else list(messages)
    out, decision, boundary, unchanged = _run(stage, given, ctx)
    if out is given and ctx.memos is None:
        # ``apply`` hands an unchanged list back as is; a caller outside an incremental run gets its own copy.
        out = list(out)
    return StageResult(out, decision.events, boundary, unchanged)


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
        gate = getattr(stage, "gate", False)
        if not gate and not stage.config.enabled:
            continue
        current, done, left, kept = _run(stage, current, ctx)
        events.extend(done.events)
        if gate:
            decision = done.gate
            if decision is None or not decision.compact:
                break
            continue
        unchanged = min(unchanged, kept)
        if kept < ctx.settled:
            ctx.settled = kept
        if left is not None:
            boundary = left
    return FoldResult(current, tuple(events), boundary, unchanged, decision)
