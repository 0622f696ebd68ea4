"""Stage 4, microcompact: clear old tool results without touching the structure.

Four policies, all keeping the newest ``keep_recent`` results intact and
leaving every tool_use/tool_result pair in place (only content changes):

- ``interval`` (MiniCode): run when ``interval_seconds`` have passed since the
  last run; the first call only starts the clock.
- ``idle``: run when the gap since the previous request is at least
  ``interval_seconds``, i.e. the provider's prompt cache has expired anyway,
  so clearing costs no cache hit. ``state.last_request_time`` is stamped by
  the Compactor after each request; this stage only reads it.
- ``always`` (OpenHands-style observation masking): every request, mask all
  but the newest results.
- ``token_trigger`` (Anthropic context editing ``clear_tool_uses``): when the
  context exceeds ``trigger_tokens``, clear the oldest results beyond the
  newest ``keep_recent``, but only if that frees at least ``clear_at_least``
  tokens; optionally clear the matching tool_use inputs too.

Results already spilled, deduped, cleared or masked are skipped and do not
count toward ``keep_recent`` (MiniCode); results of ``exclude_tools`` are
never cleared and do not count either.
"""

from __future__ import annotations

from typing import Callable, Literal, Sequence

from pydantic import Field

from ..events import Event, StageContext, StageResult
from ..messages import Message, ToolResultBlock, ToolUseBlock, block_text
from .base import StageConfig

__all__ = ["MicrocompactConfig", "MicrocompactStage", "clearable_results"]


class MicrocompactConfig(StageConfig):
    mode: Literal["interval", "idle", "always", "token_trigger"] = Field(
        "interval",
        description="'interval': run when this long has passed since the last run (MiniCode). 'idle': run after a gap between requests longer than the cache TTL. 'always': mask old results on every request (OpenHands observation masking). 'token_trigger': clear old results when the context passes trigger_tokens (Anthropic clear_tool_uses).",
    )
    interval_seconds: int = Field(3600, ge=0, le=86_400 * 7, description="Seconds between runs (MiniCode 3600), or the idle gap in 'idle' mode.")
    keep_recent: int = Field(5, ge=0, le=1000, description="Newest tool results kept intact (MiniCode 5).")
    clear_text: str = Field("[Old tool result content cleared by time-based microcompact]", min_length=1, max_length=500, description="Text a cleared result gets.")
    exclude_tools: list[str] = Field(default_factory=list, description="Tool names whose results are never cleared.")
    masked_text: str = Field("[Old tool result masked to save context; run the tool again if you need it]", min_length=1, max_length=500, description="Text a masked result gets in 'always' mode.")
    trigger_tokens: int = Field(100_000, ge=1_000, le=2_000_000, description="'token_trigger' mode: clear when the context is larger than this many tokens (Anthropic default 100,000).")
    clear_at_least: int = Field(0, ge=0, le=1_000_000, description="'token_trigger' mode: skip clearing unless it frees at least this many tokens, so a prompt-cache miss is worth it.")
    clear_tool_inputs: bool = Field(False, description="'token_trigger' mode: also empty the inputs of the cleared tool calls.")


def clearable_results(messages: Sequence[Message], config: MicrocompactConfig) -> list[tuple[int, int]]:
    """(message index, block index) of results that may be cleared, oldest first, minus the newest ``keep_recent``."""
    names = {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
    excluded = set(config.exclude_tools)
    found = [
        (i, j)
        for i, m in enumerate(messages)
        for j, b in enumerate(m.content)
        if isinstance(b, ToolResultBlock) and b.compacted is None and names.get(b.tool_use_id) not in excluded
    ]
    keep = config.keep_recent
    return found[: max(len(found) - keep, 0)]


class MicrocompactStage:
    name = "microcompact"

    def __init__(self, config: MicrocompactConfig | None = None) -> None:
        self.config = config or MicrocompactConfig()

    def _due(self, ctx: StageContext) -> tuple[bool, str]:
        """Whether this request clears, and the trigger to report."""
        cfg, state = self.config, ctx.state
        if cfg.mode == "interval":
            last = state.microcompact_last_run
            if last is None:
                # The first request only starts the clock (MiniCode).
                state.microcompact_last_run = ctx.now
                return False, "microcompact_time"
            return ctx.now - last >= cfg.interval_seconds, "microcompact_time"
        if cfg.mode == "idle":
            last = state.last_request_time
            return last is not None and ctx.now - last >= cfg.interval_seconds, "idle"
        if cfg.mode == "always":
            return True, ctx.trigger
        return True, "threshold"

    def __call__(self, messages: Sequence[Message], ctx: StageContext) -> StageResult:
        cfg = self.config
        if not cfg.enabled:
            return StageResult(list(messages))
        due, trigger = self._due(ctx)
        if not due:
            return StageResult(list(messages))
        count = ctx.counter.count_text
        before: int | None = None
        if cfg.mode == "token_trigger":
            before = ctx.counter.count_messages(messages)
            if before <= cfg.trigger_tokens:
                return StageResult(list(messages))
        if cfg.mode in ("interval", "idle"):
            ctx.state.microcompact_last_run = ctx.now
        targets = clearable_results(messages, cfg)
        if not targets:
            return StageResult(list(messages))
        masked = cfg.mode == "always"
        text = cfg.masked_text if masked else cfg.clear_text
        out = list(messages)
        cleared_ids: list[str] = []
        freed = 0
        for i, j in targets:
            m = out[i]
            block = m.content[j]
            assert isinstance(block, ToolResultBlock)
            saving = count(block.content) - count(text)
            # A result already shorter than the placeholder is left alone: clearing it would cost tokens.
            if saving <= 0:
                continue
            new = block.model_copy(
                update={
                    "content": text,
                    "compacted": "masked" if masked else "cleared",
                    "original_chars": block.original_chars if block.original_chars is not None else len(block.content),
                }
            )
            freed += saving
            blocks = list(m.content)
            blocks[j] = new
            out[i] = m.model_copy(update={"content": tuple(blocks)})
            cleared_ids.append(block.tool_use_id)
        if not cleared_ids:
            return StageResult(list(messages))
        if cfg.mode == "token_trigger" and cfg.clear_tool_inputs:
            freed += self._clear_inputs(out, set(cleared_ids), count)
        if before is None:
            before = ctx.counter.count_messages(messages)
        if cfg.mode == "token_trigger" and freed < cfg.clear_at_least:
            event = Event(
                self.name, trigger, before, before, tuple(cleared_ids), "clear_tool_uses", False,
                f"clearing would free only {freed} tokens (< clear_at_least {cfg.clear_at_least}); nothing cleared",
            )
            return StageResult(list(messages), (event,))
        strategy = {"always": "observation_masking", "token_trigger": "clear_tool_uses"}.get(cfg.mode, "microcompact")
        verb = "masked" if masked else "cleared"
        event = Event(
            self.name, trigger, before, before - freed, tuple(cleared_ids), strategy, True,
            f"{verb} {len(cleared_ids)} old tool result(s), kept the newest {cfg.keep_recent}",
        )
        return StageResult(out, (event,))

    @staticmethod
    def _clear_inputs(out: list[Message], ids: set[str], count: Callable[[str], int]) -> int:
        freed = 0
        for i, m in enumerate(out):
            if not any(isinstance(b, ToolUseBlock) and b.id in ids and b.input for b in m.content):
                continue
            blocks = list(m.content)
            for j, b in enumerate(blocks):
                if isinstance(b, ToolUseBlock) and b.id in ids and b.input:
                    new = b.model_copy(update={"input": {}})
                    freed += count(block_text(b)) - count(block_text(new))
                    blocks[j] = new
            out[i] = m.model_copy(update={"content": tuple(blocks)})
        return freed
