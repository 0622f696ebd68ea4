"""Reactive recovery: MiniCode's ladder numbers and MewCode's emergency path."""

from __future__ import annotations

import copy

import pytest

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import TextBlock, Usage, tool_pairs
from lab.core.stages.recovery import (
    RecoveryState,
    RecoveryConfig,
    RecoveryStage,
    accept_limit,
    truncate_keep_count,
    truncate_keep_ratio,
)
from lab.core.stages.summary import SummaryConfig
from lab.core.store import MemoryStore
from lab.core.summarizers.rules import RuleSummarizer, first_user_request
from lab.core.tokens import MiniCodeCounter
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import StageError
from tests.builders import call_and_result, system, user

REQUEST = "Please fix the failing test in app/models.py"


def ctx_for(config: CompactionConfig, *, trigger: str = "reactive", recovery_attempts: int = 0, **state) -> StageContext:
    return StageContext(
        config=config, counter=MiniCodeCounter(), store=MemoryStore(), summarizer=RuleSummarizer(),
        state=CompactorState(stages={"recovery": RecoveryState(recovery_attempts)}, **state), trigger=trigger, force=True,  # type: ignore[arg-type]
    )


def history(pairs: int = 20, size: int = 4000) -> list:
    """A request, then ``pairs`` tool round trips of about ``size / 4`` tokens each."""
    msgs = [system(), user(REQUEST)]
    for i in range(pairs):
        msgs += call_and_result("Bash", f"output {i}\n" * (size // 9), command=f"step {i}")
    return msgs


def body_len(msgs: list) -> int:
    return sum(1 for m in msgs if m.role != "system")


def text_of(msgs: list) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else getattr(b, "content", "") for m in msgs for b in m.content)


class TestLadderNumbers:
    def test_accept_limit_is_87_3_percent(self) -> None:
        assert accept_limit(RecoveryConfig(), 100_000) == 87_300
        assert accept_limit(RecoveryConfig(), 200_000) == 174_600

    # MiniCode's code: keep_ratio = 0.4 - attempt * 0.1 with attempt counted from 1, floored at 0.15.
    @pytest.mark.parametrize(("attempt", "ratio"), [(1, 0.3), (2, 0.2), (3, 0.15), (9, 0.15)])
    def test_keep_ratio_steps_down_to_the_floor(self, attempt: int, ratio: float) -> None:
        assert truncate_keep_ratio(RecoveryConfig(), attempt) == pytest.approx(ratio)

    def test_keep_count_never_under_three_messages(self) -> None:
        cfg = RecoveryConfig()
        assert truncate_keep_count(cfg, 100, 1) == 30
        assert truncate_keep_count(cfg, 100, 2) == 20
        assert truncate_keep_count(cfg, 100, 3) == 15
        assert truncate_keep_count(cfg, 10, 3) == 3
        assert truncate_keep_count(cfg, 2, 1) == 2

    def test_preset_numbers_are_the_seed_code(self) -> None:
        from lab.core.presets import preset

        rc = preset("minicode").recovery
        assert [truncate_keep_ratio(rc, k) for k in (1, 2, 3)] == pytest.approx([0.3, 0.2, 0.15])
        assert rc.max_attempts == 3 and rc.compact_every_attempt


class TestTruncationInMiniCodeMessages:
    """``truncate_unit="minicode_messages"``: the share counts MiniCode's list, each tool result one message."""

    @staticmethod
    def wide_history(widths: list[int]) -> list:
        from lab.core.messages import Message, ToolResultBlock, ToolUseBlock

        msgs = [system(), user(REQUEST)]
        for i, width in enumerate(widths):
            uses = tuple(ToolUseBlock(id=f"w{i}_{k}", name="Bash", input={"command": f"step {i}.{k}"}) for k in range(width))
            res = tuple(ToolResultBlock(tool_use_id=f"w{i}_{k}", content=f"out {i}.{k}\n" * 50) for k in range(width))
            msgs += [Message(role="assistant", content=uses, id=f"call{i}"), Message(role="user", content=res, id=f"res{i}")]
        return msgs

    def run(self, unit: str, widths: list[int]):
        cfg = CompactionConfig(window=1_000_000, summary=SummaryConfig(enabled=False), recovery=RecoveryConfig(truncate_unit=unit))  # type: ignore[arg-type]
        result = run_stage(RecoveryStage(cfg.recovery), self.wide_history(widths), ctx_for(cfg))
        return result, [m.id for m in result.messages if m.tag is None and m.role != "system"]

    def test_keeps_30_percent_of_minicode_messages_with_pairs_whole(self) -> None:
        from lab.core.tail import count_units

        msgs = self.wide_history([3] * 10)
        # MiniCode's len(non_system): the request and 10 x (1 call + 3 results) = 41; attempt 1 keeps int(41 x 0.3) = 12.
        assert count_units(msgs, "minicode_messages") == 41
        result, kept = self.run("minicode_messages", [3] * 10)
        assert kept == ["call7", "res7", "call8", "res8", "call9", "res9"]
        assert anthropic_problems(result.messages) == [] and openai_problems(result.messages) == []
        assert "of 41 MiniCode messages" in result.events[-1].detail

    def test_wide_rounds_weigh_more_than_in_the_lab_count(self) -> None:
        widths = [1] * 7 + [6] * 3
        # Lab: 21 messages, keep int(21 x 0.3) = 6, three rounds. MiniCode: 1 + 7 x 2 + 3 x 7 = 36, keep 10: round 9
        # (7) and three of round 8's results, whose call comes with them: two rounds.
        assert self.run("messages", widths)[1] == ["call7", "res7", "call8", "res8", "call9", "res9"]
        result, kept = self.run("minicode_messages", widths)
        assert kept == ["call8", "res8", "call9", "res9"] and anthropic_problems(result.messages) == []


class TestTruncation:
    """Truncations, entered directly by presetting the attempt counter; the summary is off, so no forced compact comes first."""

    def run(self, attempt: int, *, window: int = 1_000_000, max_attempts: int = 4, msgs: list | None = None):
        cfg = CompactionConfig(window=window, summary=SummaryConfig(enabled=False), recovery=RecoveryConfig(max_attempts=max_attempts))
        ctx = ctx_for(cfg, recovery_attempts=attempt - 1)
        msgs = msgs or history()
        return msgs, run_stage(RecoveryStage(cfg.recovery), msgs, ctx), ctx

    @pytest.mark.parametrize(("attempt", "share"), [(1, 0.3), (2, 0.2), (3, 0.15)])
    def test_keeps_30_20_15_percent_of_non_system_messages(self, attempt: int, share: float) -> None:
        msgs, result, ctx = self.run(attempt)
        body = body_len(msgs)  # 41: the request and 20 pairs
        kept = [m for m in result.messages if m.tag is None and m.role != "system"]
        # The cut may move back one message to keep a pair whole.
        assert int(body * share) <= len(kept) <= int(body * share) + 1
        assert ctx.state.stage("recovery", RecoveryState).attempts == attempt

    def test_note_is_a_user_message_carrying_the_first_request(self) -> None:
        _, result, _ = self.run(1)
        notes = [m for m in result.messages if m.tag == "truncation_note"]
        assert len(notes) == 1 and notes[0].role == "user"
        text = notes[0].content[0].text
        assert text.startswith("[Context aggressively truncated for recovery - attempt 1]")
        assert REQUEST in text

    def test_result_is_a_valid_request_with_pairs_intact(self) -> None:
        _, result, _ = self.run(3)
        assert anthropic_problems(result.messages) == [] and openai_problems(result.messages) == []
        for use_at, result_at in tool_pairs(result.messages).values():
            assert use_at is not None and result_at is not None

    def test_boundary_marker_after_the_system_prompt(self) -> None:
        msgs, result, _ = self.run(2)
        assert result.messages[0] is msgs[0]
        marker = result.messages[1]
        assert marker.tag == "boundary" and marker.boundary is not None
        assert marker.boundary.trigger == "reactive" and marker.boundary.messages_removed > 0
        assert result.boundary == marker.boundary

    def test_first_request_survives_a_second_truncation(self) -> None:
        _, first, _ = self.run(1)
        _, second, _ = self.run(2, msgs=first.messages)
        assert REQUEST in text_of(second.messages)
        assert sum(1 for m in second.messages if m.tag == "truncation_note") == 1
        assert first_user_request(second.messages) == REQUEST

    def test_never_mutates_and_is_deterministic(self) -> None:
        msgs = history()
        snapshot = copy.deepcopy(msgs)
        _, a, _ = self.run(2, msgs=msgs)
        _, b, _ = self.run(2, msgs=msgs)
        assert msgs == snapshot
        assert [m.id for m in a.messages] == [m.id for m in b.messages]

    def test_gives_up_after_max_attempts(self) -> None:
        cfg = CompactionConfig(window=1_000, summary=SummaryConfig(enabled=False))
        ctx = ctx_for(cfg)
        with pytest.raises(StageError, match="gave up after 3 attempt"):
            run_stage(RecoveryStage(cfg.recovery), history(), ctx)
        assert ctx.state.stage("recovery", RecoveryState).attempts == 3
        # A further call for the same request gives up at once.
        with pytest.raises(StageError):
            run_stage(RecoveryStage(cfg.recovery), history(), ctx)


class TestForcedCompact:
    def test_attempt_one_is_a_forced_full_compact_without_session_memory(self) -> None:
        msgs = history(20, 4000)  # about 20k tokens
        cfg = CompactionConfig(window=30_000, summary=SummaryConfig(tail_min_tokens=2000, tail_max_tokens=4000))
        ctx = ctx_for(cfg)
        result = run_stage(RecoveryStage(cfg.recovery), msgs, ctx)
        summaries = [e for e in result.events if e.stage == "summary"]
        assert summaries and all(e.trigger == "reactive" for e in summaries)
        assert summaries[-1].strategy == "full" and summaries[-1].effective
        verdict = [e for e in result.events if e.stage == "recovery"][-1]
        assert verdict.success and "accepted" in verdict.detail
        assert MiniCodeCounter().count_messages(result.messages) < accept_limit(cfg.recovery, 30_000)
        assert ctx.state.stage("recovery", RecoveryState).attempts == 1
        assert REQUEST in text_of(result.messages)

    def test_rejected_compact_falls_through_to_truncation_in_the_same_attempt(self) -> None:
        msgs = history(20, 4000)
        # The full compact keeps 3 round trips (~3.3k tokens): over 87.3% of a 3.5k window.
        cfg = CompactionConfig(window=3_500)
        ctx = ctx_for(cfg)
        result = run_stage(RecoveryStage(cfg.recovery), msgs, ctx)
        details = [e.detail for e in result.events if e.stage == "recovery"]
        assert details[0].startswith("attempt 1: forced full compact rejected")
        assert details[1].startswith("attempt 1: aggressive truncation")
        assert ctx.state.stage("recovery", RecoveryState).attempts == 1
        assert MiniCodeCounter().count_messages(result.messages) < accept_limit(cfg.recovery, 3_500)
        assert REQUEST in text_of(result.messages)

    # Every attempt: the compacts of attempts 1 and 2 run; by attempt 3 two truncations left 3 turns, too few to compact.
    @pytest.mark.parametrize(("every", "calls"), [(True, 2), (False, 1)], ids=["every-attempt", "first-only"])
    def test_the_forced_compact_starts_every_attempt(self, every: bool, calls: int) -> None:
        seen: list[str] = []

        class Counting(RuleSummarizer):
            def summarize(self, request):  # type: ignore[no-untyped-def]
                seen.append(request.trigger)
                return super().summarize(request)

        # A compact that never saves enough and a window nothing fits: all three attempts run.
        cfg = CompactionConfig(window=1_000, summary=SummaryConfig(min_saving=0.9), recovery=RecoveryConfig(compact_every_attempt=every))
        ctx = StageContext(config=cfg, counter=MiniCodeCounter(), store=MemoryStore(), summarizer=Counting(),
                           state=CompactorState(), trigger="reactive", force=True)
        with pytest.raises(StageError, match="gave up after 3 attempt"):
            run_stage(RecoveryStage(cfg.recovery), history(20, 4000), ctx)
        assert seen == ["reactive"] * calls


class TestMewCodeEmergency:
    def cfg(self, window: int, **recovery) -> CompactionConfig:
        return CompactionConfig(
            window=window,
            counter="chars/3.5",
            summary=SummaryConfig(session_memory=False, tail_policy="mewcode", full_tail_policy="same", tail_min_tokens=2000),
            recovery=RecoveryConfig(strategy="mewcode", **recovery),
        )

    def test_compacts_resets_the_anchor_and_allows_one_retry(self) -> None:
        cfg = self.cfg(20_000)
        ctx = ctx_for(cfg, trigger="emergency", anchor=Usage(input_tokens=50_000), anchor_messages=5)
        result = run_stage(RecoveryStage(cfg.recovery), history(20, 4000), ctx)
        assert ctx.state.anchor is None and ctx.state.anchor_messages == 0
        assert any(e.stage == "spill" for e in result.events)
        assert any(e.stage == "summary" and e.effective for e in result.events)
        assert result.events[-1].stage == "recovery" and result.events[-1].success
        with pytest.raises(StageError, match="exactly once"):
            run_stage(RecoveryStage(cfg.recovery), result.messages, ctx)

    def test_gives_up_within_the_margin_of_the_window(self) -> None:
        # After spill and summary about 2.8k tokens remain; a 5k window minus 3k leaves 2k: give up.
        cfg = self.cfg(5_000)
        with pytest.raises(StageError, match="give-up limit 2000"):
            run_stage(RecoveryStage(cfg.recovery), history(20, 4000), ctx_for(cfg, trigger="emergency"))

    def test_a_smaller_margin_lets_the_same_history_through(self) -> None:
        cfg = self.cfg(5_000, giveup_margin=0)
        result = run_stage(RecoveryStage(cfg.recovery), history(20, 4000), ctx_for(cfg, trigger="emergency"))
        assert 2_000 <= MiniCodeCounter().count_messages(result.messages) < 5_000
        assert "under the give-up limit 5000" in result.events[-1].detail


class TestSwitchedOff:
    def test_disabled_recovery_surfaces_the_error(self) -> None:
        cfg = CompactionConfig(recovery=RecoveryConfig(enabled=False))
        with pytest.raises(StageError, match="disabled"):
            run_stage(RecoveryStage(cfg.recovery), history(), ctx_for(cfg))
