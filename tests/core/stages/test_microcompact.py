"""Stage 4, microcompact: keep the newest N results, clear the rest on a clock, an idle gap, always, or a token trigger."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pydantic import ValidationError

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Message, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.core.stages.microcompact import MicrocompactConfig, MicrocompactStage, MicrocompactState
from lab.core.store import MemoryStore
from lab.core.tokens.base import MiniCodeCounter
from lab.formats import load
from tests.builders import call_and_result, system, user
from tests.conftest import CORPUS_FILES, corpus_id

CLEARED = "[Old tool result content cleared by time-based microcompact]"


def make_ctx(state: CompactorState | None = None, now: float = 0.0) -> StageContext:
    return StageContext(CompactionConfig(), MiniCodeCounter(), MemoryStore(), None, state or CompactorState(), now=now)  # type: ignore[arg-type]


def results(messages: list[Message]) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def history(n: int = 8, size: int = 800, tool: str = "Read", prefix: str = "t") -> list[Message]:
    msgs = [system(), user("work")]
    for i in range(n):
        msgs += call_and_result(tool, f"result {i}\n" + "v" * size, tool_id=f"{prefix}{i}", file_path=f"f{i}.py")
    return msgs


def cleared_ids(messages: list[Message]) -> list[str]:
    return [b.tool_use_id for b in results(messages) if b.compacted in ("cleared", "masked")]


def due(stage: MicrocompactStage, msgs: list[Message], state: CompactorState | None = None) -> list[Message]:
    """Run an interval stage twice an interval apart, so the second run is due."""
    state = state or CompactorState()
    run_stage(stage, msgs, make_ctx(state, now=0.0))
    return run_stage(stage, msgs, make_ctx(state, now=10_000.0)).messages


class TestDefaults:
    def test_minicode_numbers(self) -> None:
        cfg = MicrocompactConfig()
        assert (cfg.mode, cfg.interval_seconds, cfg.keep_recent, cfg.clear_text) == ("interval", 3600, 5, CLEARED)
        assert (cfg.trigger_tokens, cfg.clear_at_least, cfg.clear_tool_inputs) == (100_000, 0, False)
        assert MicrocompactStage().name == "microcompact"

    @pytest.mark.parametrize("field,value", [("mode", "sometimes"), ("keep_recent", -1), ("trigger_tokens", 10), ("clear_text", ""), ("interval_seconds", -5)])
    def test_validation(self, field: str, value: object) -> None:
        with pytest.raises(ValidationError):
            MicrocompactConfig(**{field: value})


class TestKeepRecent:
    def test_keeps_newest_five(self) -> None:
        msgs = history(8)
        out = due(MicrocompactStage(), msgs)
        assert cleared_ids(out) == ["t0", "t1", "t2"]
        block = results(out)[0]
        assert block.content == CLEARED and block.compacted == "cleared" and block.original_chars == len(results(msgs)[0].content)
        assert tool_pairs(out) == tool_pairs(msgs)

    def test_keep_zero_clears_all(self) -> None:
        assert len(cleared_ids(due(MicrocompactStage(MicrocompactConfig(keep_recent=0)), history(4)))) == 4

    def test_fewer_results_than_keep(self) -> None:
        msgs = history(3)
        assert due(MicrocompactStage(), msgs) == msgs

    def test_already_compacted_are_skipped_and_not_counted(self) -> None:
        msgs = history(8)
        # The two newest results were spilled: the newest five *uncompacted* ones are t1..t5.
        for i in (-1, -3):
            block = msgs[i].content[0].model_copy(update={"content": "[Tool result persisted: stub]", "compacted": "spill"})  # type: ignore[union-attr]
            msgs[i] = msgs[i].model_copy(update={"content": (block,)})
        out = due(MicrocompactStage(), msgs)
        assert cleared_ids(out) == ["t0"]
        assert [b.compacted for b in results(out)][-2:] == ["spill", "spill"]

    def test_excluded_tools_are_never_cleared(self) -> None:
        msgs = history(4, tool="Read") + history(4, tool="memory", prefix="m")[2:]
        cfg = MicrocompactConfig(keep_recent=1, exclude_tools=["memory"])
        out = due(MicrocompactStage(cfg), msgs)
        assert cleared_ids(out) == ["t0", "t1", "t2"]

    def test_results_shorter_than_the_placeholder_stay(self) -> None:
        msgs = [system()] + call_and_result("Bash", "ok", tool_id="s0") + history(6)[2:]
        out = due(MicrocompactStage(), msgs)
        assert "s0" not in cleared_ids(out) and cleared_ids(out) == ["t0"]


class TestTiming:
    def test_interval_first_run_starts_the_clock(self) -> None:
        stage, state, msgs = MicrocompactStage(), CompactorState(), history(8)
        first = run_stage(stage, msgs, make_ctx(state, now=100.0))
        assert first.messages == msgs and first.events == () and state.stage("microcompact", MicrocompactState).last_run == 100.0
        early = run_stage(stage, msgs, make_ctx(state, now=100.0 + 3599))
        assert early.messages == msgs and state.stage("microcompact", MicrocompactState).last_run == 100.0
        on_time = run_stage(stage, msgs, make_ctx(state, now=100.0 + 3600))
        assert cleared_ids(on_time.messages) == ["t0", "t1", "t2"] and state.stage("microcompact", MicrocompactState).last_run == 3700.0
        (event,) = on_time.events
        assert event.trigger == "microcompact_time" and event.strategy == "microcompact" and event.ids == ("t0", "t1", "t2")
        assert event.tokens_after == MiniCodeCounter().count_messages(on_time.messages) < event.tokens_before

    def test_interval_clock_stays_when_nothing_is_cleared(self) -> None:
        # MiniCode returns before setting last_time_based_compact while there are <= keep_recent results.
        stage, state = MicrocompactStage(), CompactorState(stages={"microcompact": MicrocompactState(0.0)})
        quiet = run_stage(stage, history(2), make_ctx(state, now=5000.0))
        assert quiet.events == () and state.stage("microcompact", MicrocompactState).last_run == 0.0
        # So the first request with enough results clears at once, an hour after the clock last moved.
        cleared = run_stage(stage, history(8), make_ctx(state, now=5010.0))
        assert cleared_ids(cleared.messages) == ["t0", "t1", "t2"] and state.stage("microcompact", MicrocompactState).last_run == 5010.0

    def test_interval_clock_starts_at_session_start(self) -> None:
        msgs = [system(), user("work", at=1000.0)]
        for i in range(8):
            msgs += call_and_result("Read", f"result {i}\n" + "v" * 800, tool_id=f"t{i}", file_path=f"f{i}.py", at=1000.0 + 10 * i)
        state = CompactorState()
        # The first request an hour after the session began is due: the clock did not start at this request.
        r = run_stage(MicrocompactStage(), msgs, make_ctx(state, now=1000.0 + 3600))
        assert cleared_ids(r.messages) == ["t0", "t1", "t2"] and state.stage("microcompact", MicrocompactState).last_run == 4600.0
        early = CompactorState()
        run_stage(MicrocompactStage(), msgs, make_ctx(early, now=1000.0 + 3599))
        assert early.stage("microcompact", MicrocompactState).last_run == 1000.0

    def test_interval_clock_from_the_epoch(self) -> None:
        stage = MicrocompactStage(MicrocompactConfig(clock_start="epoch"))
        state = CompactorState()
        r = run_stage(stage, history(8), make_ctx(state, now=5000.0))
        assert cleared_ids(r.messages) == ["t0", "t1", "t2"] and state.stage("microcompact", MicrocompactState).last_run == 5000.0

    def test_idle_gap(self) -> None:
        stage, msgs = MicrocompactStage(MicrocompactConfig(mode="idle", interval_seconds=300)), history(8)
        assert run_stage(stage, msgs, make_ctx(CompactorState(), now=1000.0)).messages == msgs  # no previous request
        state = CompactorState(last_request_time=1000.0)
        assert run_stage(stage, msgs, make_ctx(state, now=1299.0)).messages == msgs
        result = run_stage(stage, msgs, make_ctx(state, now=1300.0))
        assert cleared_ids(result.messages) == ["t0", "t1", "t2"] and result.events[0].trigger == "idle"
        assert state.last_request_time == 1000.0  # stamped by the Compactor, not here

    def test_always_masks_every_request(self) -> None:
        stage = MicrocompactStage(MicrocompactConfig(mode="always", keep_recent=2))
        msgs = history(4)
        out = run_stage(stage, msgs, make_ctx()).messages
        assert cleared_ids(out) == ["t0", "t1"] and {b.compacted for b in results(out)[:2]} == {"masked"}
        assert results(out)[0].content == MicrocompactConfig().masked_text
        grown = out + call_and_result("Read", "new\n" + "v" * 800, tool_id="t9")
        assert cleared_ids(run_stage(stage, grown, make_ctx()).messages) == ["t0", "t1", "t2"]


class TestTokenTrigger:
    def cfg(self, **kw: object) -> MicrocompactConfig:
        return MicrocompactConfig(mode="token_trigger", trigger_tokens=1000, keep_recent=3, **kw)  # type: ignore[arg-type]

    def test_under_trigger_does_nothing(self) -> None:
        msgs = history(2)
        assert MiniCodeCounter().count_messages(msgs) <= 1000
        result = run_stage(MicrocompactStage(self.cfg()), msgs, make_ctx())
        assert result.messages == msgs and result.events == ()

    def test_over_trigger_clears_oldest(self) -> None:
        result = run_stage(MicrocompactStage(self.cfg()), history(8), make_ctx())
        assert cleared_ids(result.messages) == ["t0", "t1", "t2", "t3", "t4"]
        (event,) = result.events
        assert event.trigger == "threshold" and event.strategy == "clear_tool_uses" and event.success

    def test_clear_at_least_not_met(self) -> None:
        msgs = history(8)
        result = run_stage(MicrocompactStage(self.cfg(clear_at_least=100_000)), msgs, make_ctx())
        assert result.messages == msgs
        (event,) = result.events
        assert not event.success and event.tokens_before == event.tokens_after and "clear_at_least" in event.detail

    def test_a_window_share_replaces_the_absolute_trigger(self) -> None:
        msgs = history(8)
        tokens = MiniCodeCounter().count_messages(msgs)
        cfg = MicrocompactConfig(mode="token_trigger", trigger_tokens=1_000_000, keep_recent=3, trigger_window_share=0.5)
        assert cfg.trigger_at(200_000) == 100_000 and self.cfg().trigger_at(200_000) == 1000
        wide = StageContext(CompactionConfig(window=4 * tokens), MiniCodeCounter(), MemoryStore(), None, CompactorState())  # type: ignore[arg-type]
        narrow = StageContext(CompactionConfig(window=max(1000, tokens)), MiniCodeCounter(), MemoryStore(), None, CompactorState())  # type: ignore[arg-type]
        assert run_stage(MicrocompactStage(cfg), msgs, wide).messages == msgs
        assert cleared_ids(run_stage(MicrocompactStage(cfg), msgs, narrow).messages) == ["t0", "t1", "t2", "t3", "t4"]

    def test_clear_tool_inputs(self) -> None:
        out = run_stage(MicrocompactStage(self.cfg(clear_tool_inputs=True)), history(8), make_ctx()).messages
        uses = {b.id: b for m in out for b in m.content if isinstance(b, ToolUseBlock)}
        assert uses["t0"].input == {} and uses["t4"].input == {} and uses["t5"].input == {"file_path": "f5.py"}
        assert tool_pairs(out) == tool_pairs(history(8))


class TestPurity:
    def test_no_mutation(self) -> None:
        msgs = history(8)
        snapshot = copy.deepcopy(msgs)
        due(MicrocompactStage(), msgs)
        assert msgs == snapshot

    @pytest.mark.parametrize("mode", ["interval", "idle", "always", "token_trigger"])
    def test_idempotent(self, mode: str) -> None:
        cfg = MicrocompactConfig(mode=mode, trigger_tokens=1000, clear_tool_inputs=True)  # type: ignore[arg-type]
        stage, state = MicrocompactStage(cfg), CompactorState(stages={"microcompact": MicrocompactState(0.0)}, last_request_time=0.0)
        once = run_stage(stage, history(8), make_ctx(state, now=10_000.0)).messages
        assert cleared_ids(once)
        again = run_stage(stage, once, make_ctx(state, now=20_000.0))
        assert again.messages == once and again.events == ()

    def test_disabled(self) -> None:
        msgs = history(8)
        assert due(MicrocompactStage(MicrocompactConfig(enabled=False)), msgs) == msgs


@pytest.mark.parametrize("mode", ["interval", "always", "token_trigger"])
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_pairs_and_tokens(path: Path, mode: str) -> None:
    msgs = load(path).messages
    counter = MiniCodeCounter()
    cfg = MicrocompactConfig(mode=mode, trigger_tokens=1000, clear_tool_inputs=True)  # type: ignore[arg-type]
    result = run_stage(MicrocompactStage(cfg), msgs, make_ctx(CompactorState(stages={"microcompact": MicrocompactState(0.0)}), now=10_000.0))
    assert tool_pairs(result.messages) == tool_pairs(msgs)
    assert counter.count_messages(result.messages) <= counter.count_messages(msgs)
