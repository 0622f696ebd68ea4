"""Stage 1, active context: keep the system prompt and everything from the last boundary on."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Boundary, Message, TextBlock, tool_pairs
from lab.core.stages.active import ActiveContextConfig, ActiveContextStage, is_boundary, system_prompt_length
from lab.core.store import MemoryStore
from lab.core.tokens.base import MiniCodeCounter
from lab.formats import load
from tests.builders import assistant, call_and_result, system, user
from tests.conftest import CORPUS_FILES, corpus_id


def make_ctx() -> StageContext:
    return StageContext(CompactionConfig(), MiniCodeCounter(), MemoryStore(), None, CompactorState())  # type: ignore[arg-type]


def marker(mid: str, *, tagged: bool = True) -> Message:
    return Message(
        role="system",
        content=(TextBlock(text="[Context compacted]"),),
        id=mid,
        tag="boundary" if tagged else None,
        boundary=Boundary(trigger="auto", strategy="full"),
    )


def history() -> list[Message]:
    return [system(), user("first request"), *call_and_result("Read", "x" * 400, file_path="a.py"), marker("b1"), user("summary"), assistant("next"), user("go on")]


class TestDefaults:
    def test_config(self) -> None:
        assert ActiveContextConfig().enabled is True
        assert ActiveContextStage().name == "active"

    def test_no_boundary_changes_nothing(self) -> None:
        msgs = [system(), user("hi"), assistant("hello")]
        result = run_stage(ActiveContextStage(), msgs, make_ctx())
        assert result.messages == msgs and all(a is b for a, b in zip(result.messages, msgs, strict=True))
        assert result.messages is not msgs and result.events == ()


class TestBoundaries:
    def test_keeps_system_prompt_and_tail(self) -> None:
        msgs = history()
        result = run_stage(ActiveContextStage(), msgs, make_ctx())
        assert [m.id for m in result.messages] == [msgs[0].id] + [m.id for m in msgs[4:]]
        (event,) = result.events
        assert event.stage == "active" and event.strategy is None and event.success
        assert event.ids == tuple(m.id for m in msgs[1:4])
        assert event.tokens_before > event.tokens_after
        assert event.tokens_after == MiniCodeCounter().count_messages(result.messages)

    def test_last_boundary_wins(self) -> None:
        msgs = history() + [marker("b2"), user("latest")]
        result = run_stage(ActiveContextStage(), msgs, make_ctx())
        assert [m.id for m in result.messages] == [msgs[0].id, "b2", msgs[-1].id]

    def test_boundary_right_after_system_prompt_drops_nothing(self) -> None:
        msgs = [system(), marker("b1"), user("x")]
        result = run_stage(ActiveContextStage(), msgs, make_ctx())
        assert result.events == () and result.messages == msgs

    def test_without_system_prompt(self) -> None:
        msgs = [user("a"), assistant("b"), marker("b1"), user("c")]
        result = run_stage(ActiveContextStage(), msgs, make_ctx())
        assert [m.id for m in result.messages] == ["b1", msgs[-1].id]

    def test_untagged_system_marker_with_boundary_counts(self) -> None:
        msgs = [system(), user("a"), marker("b1", tagged=False), user("c")]
        assert is_boundary(msgs[2])
        assert [m.id for m in run_stage(ActiveContextStage(), msgs, make_ctx()).messages] == [msgs[0].id, "b1", msgs[-1].id]

    def test_several_system_prompt_messages_are_kept(self) -> None:
        msgs = [system("a"), system("b"), user("x"), marker("b1"), user("y")]
        assert system_prompt_length(msgs) == 2
        assert [m.id for m in run_stage(ActiveContextStage(), msgs, make_ctx()).messages] == [msgs[0].id, msgs[1].id, "b1", msgs[-1].id]


class TestEdgeCases:
    def test_disabled(self) -> None:
        msgs = history()
        result = run_stage(ActiveContextStage(ActiveContextConfig(enabled=False)), msgs, make_ctx())
        assert result.messages == msgs and result.events == ()

    def test_empty(self) -> None:
        assert run_stage(ActiveContextStage(), [], make_ctx()).messages == []

    def test_no_mutation(self) -> None:
        msgs = history()
        snapshot = copy.deepcopy(msgs)
        run_stage(ActiveContextStage(), msgs, make_ctx())
        assert msgs == snapshot

    def test_idempotent(self) -> None:
        stage, ctx = ActiveContextStage(), make_ctx()
        once = run_stage(stage, history(), ctx).messages
        twice = run_stage(stage, once, ctx)
        assert twice.messages == once and twice.events == ()


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_pairs_and_tokens(path: Path) -> None:
    msgs = load(path).messages
    counter = MiniCodeCounter()
    result = run_stage(ActiveContextStage(), msgs, make_ctx())
    if not any(is_boundary(m) for m in msgs):
        # An imported transcript has no compaction boundary: everything is active.
        assert tool_pairs(result.messages) == tool_pairs(msgs) and result.events == ()
    assert counter.count_messages(result.messages) <= counter.count_messages(msgs)


@pytest.mark.parametrize("module", ["active", "spill", "dedup", "microcompact"])
def test_all_is_complete(module: str) -> None:
    import importlib

    mod = importlib.import_module(f"lab.core.stages.{module}")
    public = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__}
    assert public <= set(mod.__all__), public - set(mod.__all__)
