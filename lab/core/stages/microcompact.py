"""Stage 4, microcompact: clear old tool results without touching the structure.

Four policies, all keeping the newest ``keep_recent`` results intact and
leaving every tool_use/tool_result pair in place (only content changes):

- ``interval`` (MiniCode): run when ``interval_seconds`` have passed since the
  last clearing. The clock starts at session start (the first message's
  timestamp), and only a run that actually clears restarts it: MiniCode's
  ``run_time_based_microcompact`` returns early, leaving
  ``last_time_based_compact`` alone, while there are no more than
  ``keep_recent`` results, and sets it only after clearing.
- ``idle``: run when the gap since the previous request is at least
  ``interval_seconds``, i.e. the provider's prompt cache has expired anyway,
  so clearing costs no cache hit. The previous request's time is stamped by
  the Compactor after each request; this stage reads it from its view.
- ``always`` (OpenHands-style observation masking): every request, mask all
  but the newest results.
- ``token_trigger`` (Anthropic context editing ``clear_tool_uses``): when the
  context exceeds ``trigger_tokens``, clear the oldest results beyond the
  newest ``keep_recent``, but only if that frees at least ``clear_at_least``
  tokens; optionally clear the matching tool_use inputs too.

Results already spilled, deduped, cleared or masked are skipped and do not
count toward ``keep_recent`` (MiniCode); results of ``exclude_tools`` are
never cleared and do not count either.

Each message is noted once (its calls' names, then its results: clearable,
or too short ever to be cleared) through ``view.note``; the Compactor keeps those notes,
so a run costs the messages that arrived since the last one, however long the
history (after a clearing only the newest few clearable results are left).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..events import Event
from ..incremental import Memo, Rescan
from ..messages import Message, ToolResultBlock, ToolUseBlock, block_text
from .base import StageConfig
from .contract import Change, ClearInput, Decision, Stub, View

__all__ = ["MicrocompactConfig", "MicrocompactState", "MicrocompactStage"]


class MicrocompactConfig(StageConfig):
    mode: Literal["interval", "idle", "always", "token_trigger"] = Field(
        "interval",
        description="'interval': run when this long has passed since the last run (MiniCode). 'idle': run after a gap between requests longer than the cache TTL. 'always': mask old results on every request (OpenHands observation masking). 'token_trigger': clear old results when the context passes trigger_tokens (Anthropic clear_tool_uses).",
    )
    interval_seconds: int = Field(3600, ge=0, le=86_400 * 7, description="Seconds between clearings (MiniCode 3600), or the idle gap in 'idle' mode.")
    clock_start: Literal["session_start", "epoch"] = Field(
        "session_start",
        description="'interval' mode: where the clock starts before the first clearing. 'session_start': the session's first message. 'epoch': time 0, as MiniCode's code initialises last_time_based_compact = 0.0, so the first clearing comes as soon as more than keep_recent results exist.",
    )
    keep_recent: int = Field(5, ge=0, le=1000, description="Newest tool results kept intact (MiniCode 5).")
    clear_text: str = Field("[Old tool result content cleared by time-based microcompact]", min_length=1, max_length=500, description="Text a cleared result gets.")
    exclude_tools: list[str] = Field(default_factory=list, description="Tool names whose results are never cleared.")
    masked_text: str = Field("[Old tool result masked to save context; run the tool again if you need it]", min_length=1, max_length=500, description="Text a masked result gets in 'always' mode.")
    trigger_tokens: int = Field(100_000, ge=1_000, le=2_000_000, description="'token_trigger' mode: clear when the context is larger than this many tokens (Anthropic default 100,000).")
    trigger_window_share: float = Field(0.0, ge=0.0, le=1.0, description="'token_trigger' mode: when above 0, clear when the context passes this share of the window instead of trigger_tokens, so the trigger scales with the window (0 = trigger_tokens).")
    clear_at_least: int = Field(0, ge=0, le=1_000_000, description="'token_trigger' mode: skip clearing unless it frees at least this many tokens, so a prompt-cache miss is worth it.")
    clear_tool_inputs: bool = Field(False, description="'token_trigger' mode: also empty the inputs of the cleared tool calls.")

    def trigger_at(self, window: int) -> int:
        """The context size in tokens above which 'token_trigger' mode clears, at a ``window``-token context."""
        return int(self.trigger_window_share * window) if self.trigger_window_share > 0 else self.trigger_tokens


def _session_start(messages: Sequence[Message], now: float) -> float:
    """The first message's timestamp; ``now`` when no message has one (the clock then starts at this request)."""
    for m in messages:
        if m.timestamp is not None:
            return min(m.timestamp.timestamp(), now)
    return now


def _targets(clearable: list[tuple[int, int]], stuck: list[tuple[int, int]], keep: int) -> list[tuple[int, int]]:
    """The ``clearable`` results older than the newest ``keep`` of ``clearable`` and ``stuck`` together."""
    if len(clearable) + len(stuck) <= keep:
        return []
    # Walk the newest `keep` results of both lists; what is older than them may be cleared.
    a, b = len(clearable), len(stuck)
    for _ in range(keep):
        if b == 0 or (a > 0 and clearable[a - 1] > stuck[b - 1]):
            a -= 1
        else:
            b -= 1
    return clearable[:a]


class _Notes:
    """The note passes of one placeholder text: calls first, then results.

    The memo holds ``names`` (tool_use id -> tool name, only with
    exclude_tools), ``orphans`` (results seen before any call of theirs),
    ``calls`` (tool_use id -> positions of the messages calling it, for
    clear_tool_inputs), and the marks ``clearable`` (results a clearing would
    shorten) and ``stuck`` (results already no longer than the placeholder,
    which stay as they are but count for keep_recent), as (message index,
    block index).
    """

    def __init__(self, config: MicrocompactConfig, cost: int, count: Callable[[str], int]) -> None:
        self.config, self.cost, self.count = config, cost, count
        self.excluded = set(config.exclude_tools)
        self.track_calls = config.mode == "token_trigger" and config.clear_tool_inputs

    def calls(self, memo: Memo, i: int, m: Message) -> None:
        # A pass of its own: a run from scratch knows every call's name before it looks at any result.
        names, calls = memo.table("names"), memo.table("calls")
        for b in m.content:
            if not isinstance(b, ToolUseBlock):
                continue
            if self.excluded:
                if (memo.start and names.get(b.id, b.name) != b.name) or b.id in memo.table("orphans"):
                    # An earlier result was judged under another name (or none): judge everything again.
                    raise Rescan(b.id)
                memo.set(names, b.id, b.name)
            if self.track_calls:
                memo.set(calls, b.id, calls.get(b.id, ()) + (i,))

    def results(self, memo: Memo, i: int, m: Message) -> None:
        names = memo.table("names")
        for j, b in enumerate(m.content):
            if not isinstance(b, ToolResultBlock) or b.compacted is not None:
                continue
            if self.excluded:
                name = names.get(b.tool_use_id)
                if name is None:
                    memo.set(memo.table("orphans"), b.tool_use_id, True)
                elif name in self.excluded:
                    continue
            memo.marked("clearable" if self.count(b.content) - self.cost > 0 else "stuck").append((i, j))


@dataclass
class MicrocompactState:
    """When the last clearing happened ('interval' mode's clock); None until the first request sets it."""

    last_run: float | None = None


class MicrocompactStage:
    name = "microcompact"
    State = MicrocompactState

    def __init__(self, config: MicrocompactConfig | None = None) -> None:
        self.config = config or MicrocompactConfig()

    @staticmethod
    def _due(view: View, cfg: MicrocompactConfig, state: MicrocompactState) -> tuple[bool, str, float | None]:
        """Whether this request clears, the trigger to report, and the interval clock as it stands."""
        last = state.last_run
        if cfg.mode == "interval":
            if last is None:
                last = 0.0 if cfg.clock_start == "epoch" else _session_start(view.messages, view.now)
            return view.now - last >= cfg.interval_seconds, "microcompact_time", last
        if cfg.mode == "idle":
            gap = view.last_request_time
            return gap is not None and view.now - gap >= cfg.interval_seconds, "idle", last
        if cfg.mode == "always":
            return True, view.trigger, last
        return True, "threshold", last

    def decide(self, view: View, config: MicrocompactConfig, state: MicrocompactState) -> Decision:
        cfg = config
        if not cfg.enabled:
            return Decision()
        due, trigger, clock = self._due(view, cfg, state)
        # The interval clock starts on the first request, whatever it decides.
        started = MicrocompactState(clock) if clock != state.last_run else None
        if not due:
            return Decision(state=started)
        messages = view.messages
        count = view.counter.count_text
        before: int | None = None
        if cfg.mode == "token_trigger":
            before = view.tokens()
            if before <= cfg.trigger_at(view.window):
                return Decision(state=started)
        masked = cfg.mode == "always"
        text = cfg.masked_text if masked else cfg.clear_text
        cost = count(text)
        notes = _Notes(cfg, cost, count)
        memo = view.note(notes.calls, notes.results)
        targets = _targets(memo.marked("clearable"), memo.marked("stuck"), cfg.keep_recent)
        if not targets:
            return Decision(state=started)
        changes: list[Change] = []
        cleared_ids: list[str] = []
        freed = 0
        compacted = "masked" if masked else "cleared"
        for i, j in targets:
            block = messages[i].content[j]
            assert isinstance(block, ToolResultBlock)
            freed += count(block.content) - cost
            changes.append(Stub(i, j, text, compacted))
            cleared_ids.append(block.tool_use_id)
        if cfg.mode == "token_trigger" and cfg.clear_tool_inputs:
            calls = sorted({p for tid in cleared_ids for p in memo.table("calls").get(tid, ())})
            changes += self._clear_inputs(messages, set(cleared_ids), calls)
            freed += sum(self._input_saving(messages[c.index].content[c.block], count) for c in changes if isinstance(c, ClearInput))
        if before is None:
            before = view.tokens()
        if cfg.mode == "token_trigger" and freed < cfg.clear_at_least:
            event = Event(
                self.name, trigger, before, before, tuple(cleared_ids), "clear_tool_uses", False,
                f"clearing would free only {freed} tokens (< clear_at_least {cfg.clear_at_least}); nothing cleared",
            )
            return Decision(events=(event,), state=started)
        if cfg.mode == "interval":
            # Only an actual clearing restarts the clock (MiniCode sets last_time_based_compact after clearing).
            started = MicrocompactState(view.now)
        strategy = {"always": "observation_masking", "token_trigger": "clear_tool_uses"}.get(cfg.mode, "microcompact")
        verb = "masked" if masked else "cleared"
        event = Event(
            self.name, trigger, before, before - freed, tuple(cleared_ids), strategy, True,
            f"{verb} {len(cleared_ids)} old tool result(s), kept the newest {cfg.keep_recent}",
        )
        return Decision(tuple(changes), (event,), started)

    @staticmethod
    def _clear_inputs(messages: Sequence[Message], ids: set[str], positions: Iterable[int]) -> list[ClearInput]:
        """The inputs of the calls in ``ids`` at ``positions`` that are not empty yet."""
        return [
            ClearInput(i, j)
            for i in positions
            for j, b in enumerate(messages[i].content)
            if isinstance(b, ToolUseBlock) and b.id in ids and b.input
        ]

    @staticmethod
    def _input_saving(block: object, count: Callable[[str], int]) -> int:
        assert isinstance(block, ToolUseBlock)
        return count(block_text(block)) - count(block_text(block.model_copy(update={"input": {}})))
