"""The watermark gate: thresholds of both designs, the usage anchor, the circuit breaker."""

from __future__ import annotations

import copy
import math

import pytest

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.messages import Usage
from lab.core.pipeline import fold, run_stage, view_for
from lab.core.stages.watermark import BreakerState, WatermarkConfig, WatermarkDecision, WatermarkStage, estimate, exceeds, threshold
from lab.core.store import MemoryStore
from lab.core.summarizers.rules import RuleSummarizer
from lab.core.tokens import CharsPerTokenCounter, MiniCodeCounter
from tests.builders import assistant, session, system, tool_result, user


def ctx_for(config: CompactionConfig, *, trigger: str = "auto", counter=None, breaker_failures: int = 0, breaker_failed_at: float | None = None,
            **state) -> StageContext:
    return StageContext(
        config=config,
        counter=counter or MiniCodeCounter(),
        store=MemoryStore(),
        summarizer=RuleSummarizer(),
        state=CompactorState(stages={"watermark": BreakerState(breaker_failures, breaker_failed_at)}, **state),
        trigger=trigger,  # type: ignore[arg-type]
    )


def gate(stage: WatermarkStage, msgs: list, ctx: StageContext) -> WatermarkDecision:
    """The gate's answer, with its next state kept in ``ctx.state`` as the Compactor keeps it."""
    decision = fold([stage], msgs, ctx).decision
    assert decision is not None
    return decision


RESERVE = WatermarkConfig(mode="reserve")


class TestThresholdNumbers:
    def test_minicode_ratio_is_85_percent_of_the_window(self) -> None:
        assert threshold(WatermarkConfig(), 200_000) == 170_000
        assert threshold(WatermarkConfig(), 32_000) == 27_200

    def test_mewcode_reserve_is_167000_for_200k(self) -> None:
        assert threshold(RESERVE, 200_000) == 167_000

    @pytest.mark.parametrize("window", [1_000, 16_000, 32_000, 33_000], ids=lambda w: f"window={w}")
    def test_mewcode_skips_auto_at_or_below_33k(self, window: int) -> None:
        assert threshold(RESERVE, window) is None

    def test_mewcode_just_above_33k_has_a_small_positive_threshold(self) -> None:
        assert threshold(RESERVE, 33_001) == 1

    def test_manual_path_only_keeps_the_manual_margin(self) -> None:
        assert threshold(RESERVE, 200_000, "manual") == 197_000
        # Even a window too small for auto has a manual threshold.
        assert threshold(RESERVE, 16_000, "manual") == 13_000

    def test_claude_code_style_reserve_zero_margin_13k(self) -> None:
        cfg = WatermarkConfig(mode="reserve", summary_reserve=0, safety_margin=13_000, min_window=13_000)
        assert threshold(cfg, 200_000) == 187_000

    def test_ratio_triggers_strictly_above_reserve_at_or_above(self) -> None:
        assert not exceeds(170_000, 170_000, "ratio") and exceeds(170_001, 170_000, "ratio")
        assert exceeds(167_000, 167_000, "reserve") and not exceeds(166_999, 167_000, "reserve")


class TestEstimate:
    def test_counts_messages_without_an_anchor(self) -> None:
        msgs = session(3, 2000)
        ctx = ctx_for(CompactionConfig())
        assert estimate(view_for(msgs, ctx), ctx.config.watermark) == MiniCodeCounter().count_messages(msgs)

    def test_anchor_is_usage_total_plus_messages_added_since(self) -> None:
        cfg = CompactionConfig(counter="chars/3.5", watermark=WatermarkConfig(use_usage_anchor=True))
        msgs = [system(), user("go"), assistant("reading")]
        added = [tool_result("t1", "x" * 700), user("and now?")]
        usage = Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=30_000, cache_write_tokens=2000)
        ctx = ctx_for(cfg, counter=CharsPerTokenCounter(), anchor=usage, anchor_messages=len(msgs))
        expected = 33_050 + CharsPerTokenCounter().count_messages(added)
        assert estimate(view_for(msgs + added, ctx), ctx.config.watermark) == expected
        # The cache terms matter: without them the anchor would be 1,050.
        assert usage.total == 33_050

    def test_chars_per_3_5_addition_is_a_ceiling(self) -> None:
        assert CharsPerTokenCounter().count_text("x" * 8) == math.ceil(8 / 3.5)

    def test_anchor_ignored_when_disabled_or_stale(self) -> None:
        msgs = [system(), user("go"), assistant("ok")]
        usage = Usage(input_tokens=99_999)
        counted = MiniCodeCounter().count_messages(msgs)
        off = ctx_for(CompactionConfig(), anchor=usage, anchor_messages=3)
        assert estimate(view_for(msgs, off), off.config.watermark) == counted
        on = CompactionConfig(watermark=WatermarkConfig(use_usage_anchor=True))
        # An anchor covering more messages than exist cannot describe them.
        stale = ctx_for(on, anchor=usage, anchor_messages=10)
        assert estimate(view_for(msgs, stale), stale.config.watermark) == counted


class TestDecision:
    def big(self, tokens: int) -> list:
        # MiniCode counts 4 chars per token plus 4 per message.
        return [system("s"), user("x" * (tokens * 4))]

    def test_below_threshold_no_compaction_no_event(self) -> None:
        cfg = CompactionConfig(window=100_000)
        d = gate(WatermarkStage(cfg.watermark), self.big(50_000), ctx_for(cfg))
        assert not d.compact and d.reason == "below" and d.event is None

    def test_above_threshold_compacts_with_an_event(self) -> None:
        cfg = CompactionConfig(window=100_000)
        d = gate(WatermarkStage(cfg.watermark), self.big(90_000), ctx_for(cfg))
        assert d.compact and d.threshold == 85_000 and d.event is not None
        assert d.event.stage == "watermark" and d.event.trigger == "threshold" and not d.event.effective

    def test_small_window_in_reserve_mode_is_skipped_with_an_event(self) -> None:
        cfg = CompactionConfig(window=32_000, watermark=RESERVE)
        d = gate(WatermarkStage(cfg.watermark), self.big(31_000), ctx_for(cfg))
        assert not d.compact and d.reason == "skipped_small_window"
        assert d.event is not None and "skipped" in d.event.detail

    def test_disabled_watermark_means_no_auto_compaction(self) -> None:
        cfg = CompactionConfig(window=100_000, watermark=WatermarkConfig(enabled=False))
        d = gate(WatermarkStage(cfg.watermark), self.big(99_000), ctx_for(cfg))
        assert not d.compact and d.reason == "disabled"

    @pytest.mark.parametrize("trigger", ["manual", "emergency", "reactive"])
    def test_other_paths_always_pass(self, trigger: str) -> None:
        cfg = CompactionConfig(window=100_000)
        d = gate(WatermarkStage(cfg.watermark), self.big(10), ctx_for(cfg, trigger=trigger, breaker_failures=99))
        assert d.compact and d.reason == "forced"


class TestBreaker:
    def test_three_failures_turn_auto_off(self) -> None:
        cfg = CompactionConfig(window=100_000)
        stage = WatermarkStage(cfg.watermark)
        assert gate(stage, self.big(), ctx_for(cfg, breaker_failures=2)).compact
        d = gate(stage, self.big(), ctx_for(cfg, breaker_failures=3))
        assert not d.compact and d.reason == "breaker_open"
        assert d.event is not None and "breaker" in d.event.detail and not d.event.success

    def test_breaker_closes_after_the_cooldown(self) -> None:
        # MiniCode's _maybe_auto_recover: circuit_breaker_recovery_seconds = 300 after the last failure.
        cfg = CompactionConfig(window=100_000)
        stage = WatermarkStage(cfg.watermark)
        early = ctx_for(cfg, breaker_failures=3, breaker_failed_at=1_000.0)
        early.now = 1_299.0
        assert gate(stage, self.big(), early).reason == "breaker_open" and early.state.stage("watermark", BreakerState).failures == 3
        late = ctx_for(cfg, breaker_failures=3, breaker_failed_at=1_000.0)
        late.now = 1_300.0
        d = gate(stage, self.big(), late)
        assert d.compact and late.state.stage("watermark", BreakerState).failures == 0 and late.state.stage("watermark", BreakerState).failed_at is None
        assert d.event is not None and "closed 300 s after the last failure" in d.event.detail

    def test_below_the_watermark_the_breaker_is_left_alone(self) -> None:
        cfg = CompactionConfig(window=100_000)
        ctx = ctx_for(cfg, breaker_failures=3, breaker_failed_at=0.0)
        ctx.now = 10_000.0
        assert gate(WatermarkStage(cfg.watermark), [system(), user("hi")], ctx).reason == "below"
        assert ctx.state.stage("watermark", BreakerState).failures == 3

    @pytest.mark.parametrize(("name", "cooldown"), [("minicode", 300), ("mewcode", 0)])
    def test_preset_cooldowns(self, name: str, cooldown: int) -> None:
        from lab.core.presets import preset

        assert preset(name).watermark.breaker_cooldown_seconds == cooldown
        assert preset(name).watermark.breaker_reset_on_forced is (name == "minicode")

    def test_zero_cooldown_never_closes(self) -> None:
        cfg = CompactionConfig(window=100_000, watermark=WatermarkConfig(breaker_cooldown_seconds=0))
        ctx = ctx_for(cfg, breaker_failures=3, breaker_failed_at=0.0)
        ctx.now = 10**9
        assert gate(WatermarkStage(cfg.watermark), self.big(), ctx).reason == "breaker_open"

    def test_breaker_is_configurable(self) -> None:
        cfg = CompactionConfig(window=100_000, watermark=WatermarkConfig(breaker_failures=1))
        assert not gate(WatermarkStage(cfg.watermark), self.big(), ctx_for(cfg, breaker_failures=1)).compact

    def test_manual_ignores_an_open_breaker(self) -> None:
        cfg = CompactionConfig(window=100_000)
        assert gate(WatermarkStage(cfg.watermark), self.big(), ctx_for(cfg, trigger="manual", breaker_failures=3)).compact

    def big(self) -> list:
        return [system("s"), user("x" * 400_000)]


class TestStageContract:
    def test_call_returns_same_objects_and_never_mutates(self) -> None:
        cfg = CompactionConfig(window=10_000)
        msgs = session(8, 6000)
        snapshot = copy.deepcopy(msgs)
        result = run_stage(WatermarkStage(cfg.watermark), msgs, ctx_for(cfg))
        assert msgs == snapshot
        assert result.messages is not msgs and all(a is b for a, b in zip(result.messages, msgs, strict=True))
        assert len(result.events) == 1 and result.events[0].tokens_freed == 0

    def test_idempotent(self) -> None:
        cfg = CompactionConfig(window=10_000)
        stage = WatermarkStage(cfg.watermark)
        once = run_stage(stage, session(8, 6000), ctx_for(cfg))
        twice = run_stage(stage, once.messages, ctx_for(cfg))
        assert twice.messages == once.messages
