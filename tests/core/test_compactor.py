"""The Compactor's four entry points, the breaker, the usage anchor, PTL matching and the fold."""

from __future__ import annotations

import pytest

from lab.core.compactor import CompactionOutcome, Compactor
from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.messages import Message, TextBlock, ToolResultBlock, Usage
from lab.core.pipeline import STAGES, build_stages, fold
from lab.core.presets import preset
from lab.core.stages.microcompact import MicrocompactConfig
from lab.core.stages.recovery import RecoveryConfig
from lab.core.stages.summary import SummaryConfig
from lab.core.stages.watermark import BreakerState, WatermarkConfig
from lab.core.store import MemoryStore
from lab.core.summarizers.base import SummaryRequest, SummaryResult
from lab.core.summarizers.rules import RuleSummarizer
from lab.core.tokens import MiniCodeCounter
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import PromptTooLongError, StageError, SummaryError, TranscriptError
from lab.core.config import with_values
from tests.builders import assistant, call_and_result, session, system, user

REQUEST = "Please fix the failing test in app/models.py"


class FailingSummarizer:
    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise SummaryError("the summary model is down")


class CountingCounter(MiniCodeCounter):
    def __init__(self) -> None:
        super().__init__()
        self.messages_counted = 0

    def count_message(self, message: Message) -> int:
        self.messages_counted += 1
        return super().count_message(message)


def small_window(**overrides) -> CompactionConfig:
    """MiniCode defaults with a window small enough for builder sessions, and a short tail."""
    summary = SummaryConfig(session_memory=False, tail_min_tokens=500, tail_max_tokens=2000, tail_min_messages=3)
    return CompactionConfig(window=8_000, summary=summary, **overrides)


def texts(msgs: list[Message]) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else getattr(b, "content", "") for m in msgs for b in m.content)


class TestDefaults:
    def test_default_parts(self) -> None:
        c = Compactor()
        assert c.config == CompactionConfig()
        assert c.counter.name == "minicode"
        assert isinstance(c.store, MemoryStore) and isinstance(c.summarizer, RuleSummarizer)
        assert c.state.session_id == "session"

    def test_counter_follows_the_config(self) -> None:
        assert Compactor(preset("mewcode")).counter.name == "chars/3.5"

    def test_session_id_and_state(self) -> None:
        assert Compactor(session_id="abc").state.session_id == "abc"
        state = CompactorState(session_id="shared")
        assert Compactor(state=state).state is state


class TestProcessRequest:
    def test_small_history_is_left_alone(self) -> None:
        msgs = [system(), user(REQUEST), assistant("looking")]
        out = Compactor().process_request(msgs)
        assert out.events == () and not out.effective and out.success
        assert out.messages is not msgs and all(a is b for a, b in zip(out.messages, msgs, strict=True))
        assert out.tokens_before == out.tokens_after

    def test_spill_frees_tokens_per_stage(self) -> None:
        out = Compactor().process_request(session(4, 8000))
        assert out.effective and out.strategy == "tool_budget"
        assert out.freed_by_stage["spill"] == out.tokens_before - out.tokens_after > 0

    def test_watermark_triggers_the_summary(self) -> None:
        c = Compactor(small_window(spill={"enabled": False}))
        out = c.process_request(session(8, 6000))
        stages = [e.stage for e in out.events]
        assert stages == ["watermark", "summary"]
        assert out.effective and out.boundary is not None and out.boundary.trigger == "auto"
        assert REQUEST in texts(out.messages)
        assert anthropic_problems(out.messages) == [] and openai_problems(out.messages) == []
        assert c.breaker.failures == 0

    def test_the_outcome_carries_the_gates_decision(self) -> None:
        c = Compactor(small_window(spill={"enabled": False}))
        quiet = c.process_request([system(), user(REQUEST), assistant("looking")])
        assert quiet.gate is not None and quiet.gate.reason == "below" and not quiet.gate.compact
        assert quiet.gate.threshold == int(0.85 * 8_000) and quiet.gate.estimate == quiet.tokens_after
        loud = c.process_request(session(8, 6000))
        assert loud.gate is not None and loud.gate.reason == "above" and loud.gate.estimate > loud.gate.threshold
        # Only the auto path consults the gate.
        assert c.dispatch(session(2, 100)).gate is None and c.compact(session(8, 6000)).gate is None

    def test_outcome_effective_means_tokens_went_down(self) -> None:
        o = CompactionOutcome([], (), None, 10, 10, True, None)
        assert not o.effective
        assert CompactionOutcome([], (), None, 10, 9, True, None).effective
        assert not CompactionOutcome([], (), None, 10, 9, False, None).effective

    def test_time_comes_from_timestamps(self) -> None:
        c = Compactor()
        c.process_request([system(), user("hi", at=1_700_000_000), assistant("ok", at=1_700_000_100)])
        assert c.state.last_request_time == 1_700_000_100

    def test_bad_input_raises_lab_errors(self) -> None:
        with pytest.raises(TranscriptError, match="list of messages"):
            Compactor().process_request("hello")  # type: ignore[arg-type]
        with pytest.raises(TranscriptError, match=r"messages\[1\]"):
            Compactor().process_request([system(), {"role": "user"}])  # type: ignore[list-item]

    def test_unchanged_messages_are_not_recounted(self) -> None:
        counter = CountingCounter()
        c = Compactor(counter=counter)
        msgs = session(3, 1000)
        c.process_request(msgs)
        first = counter.messages_counted
        c.process_request(msgs + [user("and now?")])
        assert counter.messages_counted - first == 1


class TestBreaker:
    def failing(self) -> Compactor:
        return Compactor(small_window(spill={"enabled": False}), summarizer=FailingSummarizer())

    def test_three_consecutive_auto_failures_turn_auto_off(self) -> None:
        c = self.failing()
        msgs = session(8, 6000)
        for n in (1, 2, 3):
            out = c.process_request(msgs)
            assert not out.success and c.breaker.failures == n
        out = c.process_request(msgs)
        assert [e.strategy for e in out.events] == ["breaker_open"]
        assert c.summarizer.calls == 3  # type: ignore[attr-defined]
        assert c.breaker.failures == 3

    def test_manual_and_emergency_ignore_the_breaker_and_do_not_count(self) -> None:
        # MewCode's forced paths neither record a failure nor close the breaker.
        cfg = small_window(spill={"enabled": False}, watermark=WatermarkConfig(breaker_reset_on_forced=False))
        c = Compactor(cfg, state=CompactorState(stages={"watermark": BreakerState(3)}))
        msgs = session(8, 6000)
        manual = c.compact(msgs)
        assert manual.effective and c.breaker.failures == 3
        rescued = c.recover(msgs, "prompt is too long: 9000 tokens > 8000 maximum")
        assert rescued.effective and c.breaker.failures == 3

    @pytest.mark.parametrize("path", ["manual", "recovery"])
    def test_a_successful_forced_compact_closes_the_breaker(self, path: str) -> None:
        # MiniCode's reactive recovery resets its breaker, and _on_success keeps it at zero.
        c = Compactor(small_window(spill={"enabled": False}), state=CompactorState(stages={"watermark": BreakerState(3, 5.0)}))
        msgs = session(8, 6000)
        out = c.compact(msgs) if path == "manual" else c.recover(msgs, "prompt is too long: 9000 tokens > 8000 maximum")
        assert out.effective and c.breaker.failures == 0 and c.breaker.failed_at is None

    def test_a_failed_forced_compact_leaves_the_breaker_open(self) -> None:
        c = self.failing()
        c.breaker.failures = 3
        out = c.compact(session(8, 6000))
        assert not out.success and c.breaker.failures == 3

    def test_the_breaker_closes_300_s_after_the_last_failure(self) -> None:
        c = self.failing()
        msgs = session(8, 6000)
        for now in (0.0, 10.0, 20.0):
            c.process_request(msgs, now=now)
        assert c.breaker.failures == 3 and c.breaker.failed_at == 20.0
        early = c.process_request(msgs, now=20.0 + 299)
        assert [e.strategy for e in early.events] == ["breaker_open"] and c.summarizer.calls == 3  # type: ignore[attr-defined]
        late = c.process_request(msgs, now=20.0 + 300)
        trigger = next(e for e in late.events if e.stage == "watermark")
        assert trigger.success and "circuit breaker closed 300 s after the last failure" in trigger.detail
        assert c.summarizer.calls == 4  # type: ignore[attr-defined]
        # That attempt failed too: one failure, not a re-opened breaker.
        assert c.breaker.failures == 1 and c.breaker.failed_at == 320.0

    def test_no_cooldown_keeps_it_open(self) -> None:
        cfg = small_window(spill={"enabled": False}, microcompact=MicrocompactConfig(enabled=False), watermark=WatermarkConfig(breaker_cooldown_seconds=0))
        c = Compactor(cfg, summarizer=FailingSummarizer())
        msgs = session(8, 6000)
        for now in (0.0, 10.0, 20.0, 100_000.0):
            out = c.process_request(msgs, now=now)
        assert [e.strategy for e in out.events] == ["breaker_open"] and c.summarizer.calls == 3  # type: ignore[attr-defined]

    def test_failed_manual_compaction_does_not_count(self) -> None:
        c = self.failing()
        out = c.compact(session(8, 6000))
        assert not out.success and c.breaker.failures == 0

    def test_a_success_resets_the_count(self) -> None:
        c = Compactor(small_window(spill={"enabled": False}), state=CompactorState(stages={"watermark": BreakerState(2)}))
        c.process_request(session(8, 6000))
        assert c.breaker.failures == 0


class TestUsageAnchor:
    def anchored(self, **watermark) -> Compactor:
        config = CompactionConfig(window=200_000, spill={"enabled": False}, watermark=WatermarkConfig(mode="reserve", use_usage_anchor=True, **watermark),
                                  summary=SummaryConfig(session_memory=False, tail_min_tokens=500, tail_min_messages=3, tail_policy="mewcode"))
        return Compactor(config)

    def test_usage_becomes_the_anchor_covering_up_to_the_last_response(self) -> None:
        c = self.anchored()
        msgs = [system(), user(REQUEST), assistant("reading"), user("more")]
        c.process_request(msgs, usage=Usage(input_tokens=10, output_tokens=5))
        assert c.state.anchor == Usage(input_tokens=10, output_tokens=5)
        assert c.state.anchor_messages == 3

    def test_a_large_anchor_triggers_compaction_that_counting_would_not(self) -> None:
        c = self.anchored()
        msgs = session(8, 2000)
        assert MiniCodeCounter().count_messages(msgs) < 167_000
        out = c.process_request(msgs, usage=Usage(input_tokens=100_000, cache_read_tokens=70_000))
        assert [e.stage for e in out.events][:1] == ["watermark"]
        assert out.events[0].tokens_before >= 170_000
        # The summary rewrote history: the anchor no longer describes it.
        assert out.effective and c.state.anchor is None

    def test_anchor_dropped_when_a_cheap_stage_rewrites_covered_messages(self) -> None:
        config = CompactionConfig(watermark=WatermarkConfig(use_usage_anchor=True), microcompact=MicrocompactConfig(mode="always", keep_recent=1))
        c = Compactor(config)
        out = c.process_request(session(4, 2000), usage=Usage(input_tokens=5000))
        assert any(e.stage == "microcompact" for e in out.events)
        assert c.state.anchor is None


class TestManual:
    def test_instructions_reach_the_summary(self) -> None:
        out = Compactor(small_window()).compact(session(8, 6000), "keep the API decisions")
        assert out.trigger == "manual" and out.effective
        assert "keep the API decisions" in texts(out.messages)
        assert out.boundary is not None and out.boundary.trigger == "manual"

    def test_disabled_summary_reports_instead_of_raising(self) -> None:
        out = Compactor(CompactionConfig(summary=SummaryConfig(enabled=False))).compact(session(2, 100))
        assert not out.success and "disabled" in out.events[0].detail


class TestRecover:
    def test_rejects_errors_that_are_not_prompt_too_long(self) -> None:
        with pytest.raises(StageError, match="prompt-too-long"):
            Compactor().recover(session(2, 100), RuntimeError("rate limit"))

    def test_minicode_ladder_from_a_provider_error(self) -> None:
        c = Compactor(small_window(spill={"enabled": False}))
        err = PromptTooLongError("prompt is too long", body={"type": "error"}, provider="anthropic")
        out = c.recover(session(8, 6000), err)
        assert out.trigger == "reactive" and out.effective
        assert anthropic_problems(out.messages) == [] and openai_problems(out.messages) == []

    def test_next_request_resets_the_attempt_counter(self) -> None:
        c = Compactor(small_window(spill={"enabled": False}))
        out = c.recover(session(8, 6000), "prompt is too long")
        assert c.recovery_attempts >= 1
        c.process_request(out.messages)
        assert c.recovery_attempts == 0

    def test_mewcode_emergency_retries_once(self) -> None:
        config = with_values(preset("mewcode"), {"window": 20_000, "summary.tail_min_tokens": 2_000})
        c = Compactor(config)
        msgs = session(8, 6000)
        out = c.recover(msgs, {"error": {"code": "context_length_exceeded"}})
        assert out.trigger == "emergency" and c.state.anchor is None
        with pytest.raises(StageError, match="exactly once"):
            c.recover(out.messages, "prompt is too long")

    def test_gives_up_with_a_stage_error(self) -> None:
        c = Compactor(CompactionConfig(window=1_000, summary=SummaryConfig(enabled=False), recovery=RecoveryConfig(max_attempts=2)))
        with pytest.raises(StageError, match="gave up after 2"):
            c.recover(session(8, 6000), "prompt is too long")


class TestDispatch:
    def test_dedups_a_reread_and_spills_a_big_result(self) -> None:
        content = "def f():\n    return 1\n" * 20
        msgs = [system(), user(REQUEST)]
        msgs += call_and_result("Read", content, file_path="app/x.py")
        msgs += call_and_result("Read", content, file_path="app/x.py")
        msgs += call_and_result("Bash", "log line\n" * 1000, command="pytest")
        out = Compactor().dispatch(msgs)
        compacted = {b.compacted for m in out.messages for b in m.content if isinstance(b, ToolResultBlock)}
        assert compacted == {None, "dedup", "spill"}
        assert set(out.freed_by_stage) == {"dedup", "spill"}


class TestState:
    def test_every_stage_keeps_typed_state_and_the_spill_paths_a_reader_holds_grow(self) -> None:
        c = Compactor(CompactionConfig())
        paths = c.state.spill_paths
        out = c.process_request(session(n_reads=2, size=9000))
        spilled = {b.tool_use_id: b.spill_path for m in out.messages for b in m.content if isinstance(b, ToolResultBlock) and b.compacted == "spill"}
        assert spilled and dict(paths) == spilled
        assert {"spill", "dedup", "microcompact", "watermark", "recovery"} <= set(c.state.stages)


class TestFold:
    def ctx(self, config: CompactionConfig) -> StageContext:
        return StageContext(config=config, counter=MiniCodeCounter(), store=MemoryStore(), summarizer=RuleSummarizer(), state=CompactorState())

    def test_registry_is_in_pipeline_order(self) -> None:
        assert list(STAGES) == ["active", "spill", "dedup", "microcompact", "watermark", "summary"]

    def test_disabled_stages_do_not_run(self) -> None:
        config = CompactionConfig(spill={"enabled": False})
        result = fold(build_stages(config), session(4, 8000), self.ctx(config))
        assert not any(e.stage == "spill" for e in result.events)

    def test_closed_gate_stops_the_summary(self) -> None:
        config = small_window(spill={"enabled": False}, watermark=WatermarkConfig(enabled=False))
        msgs = session(8, 6000)
        result = fold(build_stages(config, ["watermark", "summary"]), msgs, self.ctx(config))
        assert result.events == () and all(a is b for a, b in zip(result.messages, msgs, strict=True))

    def test_open_gate_runs_the_summary(self) -> None:
        config = small_window(spill={"enabled": False})
        result = fold(build_stages(config, ["watermark", "summary"]), session(8, 6000), self.ctx(config))
        assert [e.stage for e in result.events] == ["watermark", "summary"] and result.boundary is not None


class TestSharedCounts:
    """``share_counts=True``: Compactors with one counter object share its per-message count cache."""

    def test_two_compactors_share_one_cache_per_counter(self) -> None:
        from lab.core.compactor import shared_counts
        from lab.core.tokens.base import get_counter

        counter = get_counter("minicode")
        a = Compactor(CompactionConfig(), counter, share_counts=True)
        b = Compactor(preset("mewcode"), counter, share_counts=True)
        assert a.counts is b.counts is shared_counts(counter)
        # Another counter object, or no sharing asked for: a cache of its own.
        assert Compactor(CompactionConfig(), get_counter("minicode"), share_counts=True).counts is not a.counts
        assert Compactor(CompactionConfig(), counter).counts is not a.counts

    def test_a_shared_cache_gives_the_counts_a_private_one_gives(self) -> None:
        from lab.core.tokens.base import get_counter

        msgs = session(n_reads=4, size=6000)
        counter = get_counter("minicode")
        warm = Compactor(CompactionConfig(), counter, share_counts=True)
        warm.process_request(msgs)
        shared = Compactor(CompactionConfig(), counter, share_counts=True).process_request(msgs)
        private = Compactor(CompactionConfig(), get_counter("minicode")).process_request(msgs)
        assert shared == private

    def test_clear_forgets_them(self) -> None:
        from lab.core.compactor import clear_shared_counts, shared_counts
        from lab.core.tokens.base import get_counter

        counter = get_counter("minicode")
        first = shared_counts(counter)
        clear_shared_counts()
        assert shared_counts(counter) is not first


class TestCountCache:
    """The per-message count cache keeps two generations: what is in use stays, what is long gone is let go."""

    @staticmethod
    def _cache(generation: int):  # type: ignore[no-untyped-def]
        from lab.core.compactor import _MessageCountCache

        cache = _MessageCountCache(MiniCodeCounter())
        cache.generation = generation
        return cache

    def test_counts_are_the_counters_and_bounded_by_two_generations(self) -> None:
        cache = self._cache(4)
        counter = MiniCodeCounter()
        msgs = [user("x" * (i + 1)) for i in range(30)]
        for _ in range(2):
            assert [cache.count_message(m) for m in msgs] == [counter.count_message(m) for m in msgs]
        counts, held, old, old_held = cache._table
        assert len(counts) <= 4 and len(old) <= 4 and len(held) == len(counts) and len(old_held) == len(old)

    def test_a_count_in_use_survives_a_new_generation(self) -> None:
        cache = self._cache(3)
        kept = user("kept")
        cache.count_message(kept)
        for i in range(5):
            cache.count_message(user("y" * i))
            # Used again on every request: moved back into the young generation each time it ages.
            cache.count_message(kept)
        assert any(m is kept for m in cache._table[1] + cache._table[3])

    def test_a_compactor_grows_the_generation_to_its_context(self) -> None:
        msgs = session(n_reads=4, size=600)
        compactor = Compactor(CompactionConfig(), MiniCodeCounter())
        compactor.process_request(msgs)
        assert compactor.counts.generation >= max(2 * len(msgs), compactor.counts.min_generation)  # type: ignore[attr-defined]
