"""The summary stage: new history layout, strategies, failure rules, validity, the first request."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Message, TextBlock, ToolSpec
from lab.core.stages.summary import SummaryConfig, SummaryStage
from lab.core.summarizers.base import SummaryRequest, SummaryResult
from lab.core.summarizers.rules import RuleSummarizer, first_user_request
from lab.core.tail import ASSISTANT_PLACEHOLDER
from lab.core.tokens.base import MiniCodeCounter
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import PromptTooLongError, SummaryError
from lab.formats import load
from lab.core.config import with_value
from tests.builders import assistant, call_and_result, session, system, user
from tests.conftest import CORPUS_FILES, corpus_id

NOW = 1_700_000_000.0
FIRST = "Please fix the failing test in app/models.py"
SMALL = dict(tail_min_tokens=2000, tail_max_tokens=8000, tail_min_messages=5)


class ScriptedSummarizer:
    """A stand-in LLM summarizer: returns a fixed text, or raises what it is given."""

    name = "anthropic"

    def __init__(self, text: str = "The user asked for X.", attachment: str = "", error: Exception | None = None) -> None:
        self.text, self.attachment, self.error = text, attachment, error
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return SummaryResult(text=self.text, strategy="llm", attachment=self.attachment)


def make_ctx(summarizer: Any = None, **kw: Any) -> StageContext:
    return StageContext(
        config=CompactionConfig(),
        counter=MiniCodeCounter(),
        store=None,  # type: ignore[arg-type]
        summarizer=summarizer or RuleSummarizer(),
        state=CompactorState(),
        now=NOW,
        **kw,
    )


def stage(**kw: Any) -> SummaryStage:
    return SummaryStage(SummaryConfig(**{**SMALL, **kw}))


def big_session() -> list[Message]:
    return session(n_reads=20, size=4000)


def with_decisions() -> list[Message]:
    msgs = big_session()
    return msgs[:2] + [assistant("We decided to always run the tests with -x.")] + msgs[2:]


def texts(messages: list[Message]) -> str:
    return "\n".join(b.text for m in messages for b in m.content if isinstance(b, TextBlock))


def first_user_text(messages: list[Message]) -> str:
    m = next(m for m in messages if m.role == "user" and m.tag is None and any(isinstance(b, TextBlock) and b.text.strip() for b in m.content))
    return "\n".join(b.text for b in m.content if isinstance(b, TextBlock))


def assert_valid(messages: list[Message]) -> None:
    assert anthropic_problems(messages) == []
    assert openai_problems(messages) == []


class TestLayout:
    def test_system_boundary_summary_tail(self) -> None:
        msgs = big_session()
        ctx = make_ctx()
        r = run_stage(stage(), msgs, ctx)
        out = r.messages
        assert out[0] is msgs[0]
        assert out[1].role == "system" and out[1].tag == "boundary" and out[1].boundary == r.boundary
        assert out[2].role == "user" and out[2].tag == "summary"
        kept = [m for m in out[3:] if m.tag is None]
        assert 5 <= len(kept) < len(msgs) - 1
        assert all(a is b for a, b in zip(kept, msgs[len(msgs) - len(kept):], strict=True))
        assert_valid(out)

    def test_boundary_fields_and_event(self) -> None:
        msgs = big_session()
        r = run_stage(stage(), msgs, make_ctx(trigger="manual"))
        b = r.boundary
        assert b is not None
        assert b.trigger == "manual" and b.strategy == "full"
        assert b.timestamp == datetime.fromtimestamp(NOW, tz=UTC)
        kept = [m for m in r.messages if m.tag is None and m.role != "system"]
        assert b.messages_removed == len(msgs) - 1 - len(kept)
        assert (b.preserved_first_id, b.preserved_last_id) == (kept[0].id, kept[-1].id)
        (event,) = [e for e in r.events if e.success]
        assert event.stage == "summary" and event.trigger == "manual" and event.effective
        assert (event.tokens_before, event.tokens_after) == (b.tokens_before, b.tokens_after)
        assert event.summary_text == r.messages[2].content[0].text  # type: ignore[union-attr]
        assert b.tokens_after == MiniCodeCounter().count_messages([m for m in r.messages if m.tag != "boundary"])

    def test_first_request_kept(self) -> None:
        r = run_stage(stage(), big_session(), make_ctx())
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in texts(r.messages)

    def test_placeholder_when_tail_starts_with_user(self) -> None:
        msgs = [system(), user(FIRST)]
        for i in range(12):
            msgs += [assistant("x" * 4000), user(f"question {i}")]
        r = run_stage(stage(tail_policy="mewcode", tail_min_tokens=0, tail_min_messages=3), msgs, make_ctx())
        out = r.messages
        assert out[3].tag == "placeholder" and out[3].content[0].text == ASSISTANT_PLACEHOLDER  # type: ignore[union-attr]
        assert out[4] is msgs[-3]
        assert_valid(out)

    def test_tail_policies_differ(self) -> None:
        msgs = big_session()
        mini = run_stage(stage(tail_policy="minicode", full_tail_policy="same"), msgs, make_ctx()).boundary
        mew = run_stage(stage(tail_policy="mewcode", full_tail_policy="same"), msgs, make_ctx()).boundary
        assert mini is not None and mew is not None
        assert mini.messages_removed < mew.messages_removed


class TestFullTail:
    """MiniCode 6b keeps the newest min(n/3, 5) turns; session memory keeps its own 10k-40k-token tail."""

    @pytest.mark.parametrize(("turns", "kept"), [(6, 2), (9, 3), (15, 5), (40, 5)], ids=["6-turns", "9-turns", "15-turns", "40-turns"])
    def test_keeps_a_third_capped_at_five(self, turns: int, kept: int) -> None:
        msgs = [system(), user(FIRST)] + [assistant(f"a{i} " + "x" * 3000) if i % 2 == 0 else user(f"u{i} " + "y" * 3000) for i in range(turns - 1)]
        r = run_stage(SummaryStage(SummaryConfig(session_memory=False)), msgs, make_ctx())
        assert r.boundary is not None
        tail = [m for m in r.messages if m.tag is None and m.role != "system"]
        assert [m.id for m in tail] == [m.id for m in msgs[-kept:]]

    def test_acts_where_the_session_memory_tail_holds_everything(self) -> None:
        # 12 turns of ~1,000 tokens: a 40k session-memory tail keeps them all, the full compact keeps 4.
        msgs = [system(), user(FIRST)] + [m for i in range(6) for m in (assistant("a" * 4000), user(f"go on {i} " + "b" * 4000))][:-1]
        r = run_stage(SummaryStage(SummaryConfig()), msgs, make_ctx())
        memory, full = r.events[0], r.events[-1]
        assert memory.strategy == "session_memory" and not memory.success and "nothing to summarise" in memory.detail
        assert full.strategy == "full" and full.success and r.boundary is not None
        assert "kept a tail of 4" in full.detail  # 12 turns // 3
        assert_valid(r.messages)
        assert FIRST in texts(r.messages)

    def test_never_splits_a_pair(self) -> None:
        msgs = [system(), user(FIRST)]
        for i in range(8):
            msgs += call_and_result("Read", f"content {i}\n" * 300, file_path=f"src/m{i}.py")
        r = run_stage(SummaryStage(SummaryConfig(session_memory=False)), msgs, make_ctx())
        assert r.boundary is not None
        assert_valid(r.messages)

    def test_same_uses_the_session_memory_tail(self) -> None:
        msgs = [system(), user(FIRST)] + [m for i in range(6) for m in (assistant("a" * 4000), user(f"go on {i} " + "b" * 4000))][:-1]
        r = run_stage(SummaryStage(SummaryConfig(full_tail_policy="same")), msgs, make_ctx())
        assert r.boundary is None and "nothing to summarise" in r.events[-1].detail


class TestPairs:
    def test_cut_on_a_result_moves_back_to_its_call(self) -> None:
        msgs = big_session()
        # mewcode with 4 messages lands on a tool_result message: the call must come along.
        r = run_stage(stage(tail_policy="mewcode", tail_min_tokens=0, tail_min_messages=4), msgs, make_ctx())
        tail = [m for m in r.messages if m.tag is None and m.role != "system"]
        assert tail[0].role == "assistant" and tail[0] is msgs[-5]
        assert_valid(r.messages)

    def test_multi_tool_message_kept_whole(self) -> None:
        from lab.core.messages import ToolResultBlock, ToolUseBlock

        call = Message(role="assistant", id="am", content=(ToolUseBlock(id="x1", name="Read", input={"file_path": "a"}), ToolUseBlock(id="x2", name="Read", input={"file_path": "b"})))
        res = Message(role="user", id="rm", content=(ToolResultBlock(tool_use_id="x1", content="a" * 8000), ToolResultBlock(tool_use_id="x2", content="b" * 8000)))
        msgs = big_session()[:-1] + [call, res, assistant("done")]
        r = run_stage(stage(tail_policy="mewcode", tail_min_tokens=0, tail_min_messages=2), msgs, make_ctx())
        assert any(m is call for m in r.messages) and any(m is res for m in r.messages)
        assert_valid(r.messages)


class TestStrategies:
    def test_session_memory_first(self) -> None:
        r = run_stage(stage(), with_decisions(), make_ctx())
        assert r.boundary is not None and r.boundary.strategy == "session_memory"
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert text.startswith("[Context compacted via Session Memory]")
        assert "We decided to always run the tests with -x." in text and FIRST in text

    def test_falls_back_to_full_without_memory(self) -> None:
        r = run_stage(stage(), big_session(), make_ctx())
        assert r.boundary is not None and r.boundary.strategy == "full"
        failed = [e for e in r.events if not e.success]
        assert [e.strategy for e in failed] == ["session_memory"]

    def test_session_memory_off(self) -> None:
        r = run_stage(stage(session_memory=False), with_decisions(), make_ctx())
        assert r.boundary is not None and r.boundary.strategy == "full"
        assert len(r.events) == 1

    def test_supplied_memory(self) -> None:
        r = run_stage(stage(memory_text="- Always use tabs."), big_session(), make_ctx())
        assert r.boundary is not None and r.boundary.strategy == "session_memory"
        assert "- Always use tabs." in texts(r.messages)

    def test_reactive_goes_straight_to_full(self) -> None:
        r = run_stage(stage(), with_decisions(), make_ctx(trigger="reactive"))
        assert r.boundary is not None and r.boundary.strategy == "full" and r.boundary.trigger == "reactive"

    def test_llm_summary_gets_heading_and_attachment(self) -> None:
        tools = (ToolSpec(name="Read", description="Read a file", input_schema={"type": "object"}),)
        llm = ScriptedSummarizer()
        r = run_stage(stage(session_memory=False), big_session(), make_ctx(llm, tools=tools, instructions="keep API decisions"))
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert text.startswith("## Session summary\nThe user asked for X.")
        assert "## Recovery attachment" in text and "#### app/file" in text and "- Read: Read a file" in text
        assert r.events[-1].attachment and r.events[-1].attachment in text
        assert llm.requests[0].instructions == "keep API decisions" and llm.requests[0].tools == tools
        assert r.boundary is not None and r.boundary.strategy == "llm"

    def test_llm_summary_that_drops_the_first_request_gets_it_back(self) -> None:
        r = run_stage(stage(session_memory=False), big_session(), make_ctx(ScriptedSummarizer(text="Fixed a test.")))
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in text
        # ... and a later compaction finds it there.
        assert first_user_request([r.messages[2]]) == FIRST

    def test_llm_attachment_passed_through(self) -> None:
        r = run_stage(stage(session_memory=False), big_session(), make_ctx(ScriptedSummarizer(attachment="ATTACHED")))
        assert r.messages[2].content[0].text.endswith("\n\nATTACHED")  # type: ignore[union-attr]

    def test_attachment_for_rules(self) -> None:
        r = run_stage(stage(attachment_for_rules=True, session_memory=False), big_session(), make_ctx())
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert text.startswith("[Context compacted at") and "## Recovery attachment" in text

    def test_keep_user_messages_tokens(self) -> None:
        msgs = big_session()
        msgs = msgs[:4] + [assistant("ok"), user("Second request: also update the docs")] + msgs[4:]
        r = run_stage(stage(keep_user_messages_tokens=500, session_memory=False), msgs, make_ctx(ScriptedSummarizer()))
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert "## Recent user messages (verbatim)\n" in text
        assert "<user-message>\nSecond request: also update the docs\n</user-message>" in text

    def test_kept_user_messages_not_repeated_by_rules(self) -> None:
        msgs = big_session()
        msgs = msgs[:4] + [assistant("ok"), user("Second request: also update the docs")] + msgs[4:]
        r = run_stage(stage(keep_user_messages_tokens=500, session_memory=False), msgs, make_ctx())
        text = r.messages[2].content[0].text  # type: ignore[union-attr]
        assert text.count("Second request: also update the docs") == 2  # topic line + verbatim block
        assert "## Recent user messages (verbatim)" not in text

    def test_prompt_too_long_propagates(self) -> None:
        ptl = ScriptedSummarizer(error=PromptTooLongError("prompt is too long"))
        with pytest.raises(PromptTooLongError):
            run_stage(stage(session_memory=False), big_session(), make_ctx(ptl))

    def test_summary_error_is_a_failed_strategy(self) -> None:
        msgs = big_session()
        r = run_stage(stage(session_memory=False), msgs, make_ctx(ScriptedSummarizer(error=SummaryError("empty reply"))))
        assert r.boundary is None and all(a is b for a, b in zip(r.messages, msgs, strict=True)) and len(r.messages) == len(msgs)
        (event,) = r.events
        assert not event.success and event.strategy == "llm" and "empty reply" in event.detail


class TestFailures:
    def test_saving_below_min_fails_without_change(self) -> None:
        msgs = big_session()
        r = run_stage(stage(min_saving=0.9), msgs, make_ctx())
        assert r.boundary is None
        assert r.messages == msgs and r.messages is not msgs and all(a is b for a, b in zip(r.messages, msgs, strict=True))
        assert r.events and not any(e.success for e in r.events)
        assert "saves too little" in r.events[-1].detail

    def test_under_5_percent_fails(self) -> None:
        # Little to summarise, a big tail: the saving is below MiniCode's 5%.
        msgs = [system(), user(FIRST), assistant("w" * 3000)] + [m for i in range(6) for m in (user("y" * 8000), assistant("z" * 8000))]
        r = run_stage(SummaryStage(SummaryConfig(tail_policy="mewcode", full_tail_policy="same", tail_min_tokens=0, tail_min_messages=12)), msgs, make_ctx())
        assert r.boundary is None and r.messages == msgs
        failed = r.events[-1]
        assert failed.strategy == "full" and not failed.success
        assert 0 < failed.tokens_freed < 0.05 * failed.tokens_before
        # The same history compacts when 1% is enough.
        ok = run_stage(SummaryStage(SummaryConfig(tail_policy="mewcode", full_tail_policy="same", tail_min_tokens=0, tail_min_messages=12, min_saving=0.01)), msgs, make_ctx())
        assert ok.boundary is not None and ok.boundary.tokens_after < ok.boundary.tokens_before

    def test_nothing_to_summarise(self) -> None:
        msgs = [system(), user(FIRST), assistant("ok"), user("more"), assistant("done")]
        r = run_stage(stage(full_tail_policy="same"), msgs, make_ctx())
        assert r.boundary is None and r.messages == msgs
        assert "nothing to summarise" in r.events[-1].detail

    def test_too_few_turns_for_the_full_compact(self) -> None:
        # MiniCode's _run_full_compact: "Too few messages to compact" at min_keep_messages (5) turns or fewer.
        msgs = [system(), user(FIRST), assistant("a" * 4000), user("b" * 4000), assistant("c" * 4000), user("d" * 4000)]
        r = run_stage(stage(session_memory=False), msgs, make_ctx())
        assert r.boundary is None and r.messages == msgs
        assert r.events[-1].strategy == "full" and "too few messages to compact: 5 turn(s)" in r.events[-1].detail
        six = run_stage(stage(session_memory=False), msgs + [assistant("e" * 4000)], make_ctx())
        assert six.boundary is not None and six.boundary.messages_removed == 4

    def test_disabled(self) -> None:
        msgs = big_session()
        r = run_stage(stage(enabled=False), msgs, make_ctx())
        assert r.messages == msgs and r.events == () and r.boundary is None


class TestContract:
    def test_no_mutation(self) -> None:
        msgs = with_decisions()
        before = copy.deepcopy(msgs)
        run_stage(stage(), msgs, make_ctx())
        run_stage(stage(session_memory=False), msgs, make_ctx(ScriptedSummarizer()))
        assert msgs == before

    def test_deterministic(self) -> None:
        msgs = big_session()
        a = run_stage(stage(), msgs, make_ctx()).messages
        b = run_stage(stage(), msgs, make_ctx()).messages
        assert a == b

    def test_idempotent(self) -> None:
        once = run_stage(stage(), big_session(), make_ctx()).messages
        r = run_stage(stage(), once, make_ctx())
        assert r.boundary is None
        assert len(r.messages) == len(once) and all(a is b for a, b in zip(r.messages, once, strict=True))

    def test_summary_of_a_summary_keeps_the_first_request(self) -> None:
        once = run_stage(stage(), big_session(), make_ctx()).messages
        more = list(once)
        for i in range(20):
            more += call_and_result("Read", f"second round {i}\n" * 500, file_path=f"lib/g{i}.py")
        more.append(user("Now also fix lib/g3.py"))
        twice = run_stage(stage(), more, make_ctx())
        assert twice.boundary is not None
        out = twice.messages
        assert sum(1 for m in out if m.tag == "boundary") == 1
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in texts(out)
        assert_valid(out)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["read", "chat", "error", "decision"]), min_size=3, max_size=30), st.sampled_from(["minicode", "mewcode"]))
def test_random_sessions_stay_valid_and_keep_the_first_request(shape: list[str], policy: str) -> None:
    msgs = [system(), user(FIRST)]
    for k, kind in enumerate(shape):
        if kind == "read":
            msgs += call_and_result("Read", f"{k}\n" * 1500, file_path=f"f{k}.py")
        elif kind == "error":
            msgs += call_and_result("Bash", f"failure {k}", is_error=True, command="make")
        elif kind == "decision":
            msgs += [assistant(f"We must keep rule {k}."), user(f"ok {k}")]
        else:
            msgs += [assistant("x" * 2000), user(f"next {k}")]
    before = copy.deepcopy(msgs)
    r = run_stage(SummaryStage(SummaryConfig(tail_policy=policy, tail_min_tokens=1000, tail_max_tokens=4000, tail_min_messages=3)), msgs, make_ctx())
    assert msgs == before
    assert_valid(r.messages)
    assert FIRST in texts(r.messages)
    if r.boundary is None:
        assert r.messages == msgs
    else:
        assert r.boundary.tokens_after < r.boundary.tokens_before


def _normalised(problems: list[str]) -> set[str]:
    # Indices shift after compaction; the message id and the rule stay.
    return {re.sub(r"^message \d+ ", "message ", p) for p in problems}


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
@pytest.mark.parametrize("policy", ["minicode", "mewcode"])
@pytest.mark.parametrize("memory", [True, False], ids=["memory", "rules"])
def test_corpus(path: Path, policy: str, memory: bool) -> None:
    transcript = load(path)
    msgs = transcript.messages
    # A small window (16k): tails of 2k..8k tokens, a 3k summary budget.
    cfg = SummaryConfig(tail_policy=policy, session_memory=memory, tail_min_tokens=2000, tail_max_tokens=8000, summary_max_tokens=3000)
    before = copy.deepcopy(msgs)
    r = run_stage(SummaryStage(cfg), msgs, make_ctx(tools=tuple(transcript.tools)))
    assert msgs == before
    if r.boundary is None:
        # Only short transcripts may be left alone: anything well over the tail must compact.
        assert MiniCodeCounter().count_messages(msgs) < 20_000
        assert len(r.messages) == len(msgs) and all(a is b for a, b in zip(r.messages, msgs, strict=True))
        return
    # Compaction adds no problem the source did not have (e.g. a final, still unanswered call).
    assert _normalised(anthropic_problems(r.messages)) <= _normalised(anthropic_problems(msgs))
    assert _normalised(openai_problems(r.messages)) <= _normalised(openai_problems(msgs))
    first = first_user_text(msgs)
    assert first in texts(r.messages)
    assert r.boundary.tokens_after < r.boundary.tokens_before


class TestWindowRelativeTail:
    def test_off_keeps_the_absolute_bounds(self) -> None:
        from lab.core.stages.summary import SummaryConfig

        cfg = SummaryConfig(tail_min_tokens=10_000, tail_max_tokens=40_000)
        assert cfg.tail_bounds(32_000) == (10_000, 40_000)

    @pytest.mark.parametrize(("window", "bounds"), [(32_000, (4_000, 8_000)), (64_000, (8_000, 16_000)), (200_000, (10_000, 40_000))])
    def test_a_share_caps_both_bounds_within_the_absolute_ones(self, window: int, bounds: tuple[int, int]) -> None:
        from lab.core.stages.summary import SummaryConfig

        cfg = SummaryConfig(tail_min_tokens=10_000, tail_max_tokens=40_000, tail_window_share=0.25)
        assert cfg.tail_bounds(window) == bounds

    def test_at_a_small_window_the_share_leaves_something_to_summarise(self) -> None:
        from lab.core.compactor import Compactor
        from lab.core.presets import preset

        history = session(n_reads=10, size=6000)
        cfg = with_value(preset("mewcode"), "window", 32_000)
        fixed = Compactor(cfg).compact(history)
        cfg = with_value(cfg, "summary.tail_window_share", 0.25)
        relative = Compactor(cfg).compact(history)
        assert relative.success and relative.tokens_freed > fixed.tokens_freed


class TestSeedFullCompact:
    """``full_tail_unit="minicode_messages"`` and ``rules_format="seed"``: MiniCode's 6b as its design writes it."""

    @staticmethod
    def one_turn_of_many_results(n: int) -> list[Message]:
        from lab.core.messages import ToolResultBlock, ToolUseBlock

        uses = tuple(ToolUseBlock(id=f"t{k}", name="Read", input={"file_path": f"src/m{k}.py"}) for k in range(n))
        res = tuple(ToolResultBlock(tool_use_id=f"t{k}", content=f"line {k}\n" * 400) for k in range(n))
        return [system(), user(FIRST), assistant("Planning. " * 2000), Message(role="assistant", content=uses, id="calls"),
                Message(role="user", content=res, id="results"), assistant("All read.")]

    def test_each_result_counts_toward_the_too_few_rule(self) -> None:
        msgs = self.one_turn_of_many_results(4)
        cfg = dict(session_memory=False, full_tail_policy="third")
        # 5 turns: at most min_keep_messages (5), so the lab's count refuses; MiniCode's list holds 1 + 1 + 1 + 4 + 1 = 8 entries.
        refused = run_stage(SummaryStage(SummaryConfig(**cfg)), msgs, make_ctx())  # type: ignore[arg-type]
        assert refused.boundary is None and "5 turn(s)" in refused.events[-1].detail
        done = run_stage(SummaryStage(SummaryConfig(**cfg, full_tail_unit="minicode_messages")), msgs, make_ctx())  # type: ignore[arg-type]
        # 8 // 3 = 2 entries kept: the final answer and one result, whose call pulls the whole turn in.
        assert done.boundary is not None and [m.id for m in done.messages[-3:]] == ["calls", "results", msgs[-1].id]
        assert not anthropic_problems(done.messages) and not openai_problems(done.messages)

    def test_seed_summary_lists_the_removed_messages_only(self) -> None:
        earlier = Message(role="user", id="old-summary", tag="summary", content=(TextBlock(text=(
            "[Context compacted at 10:00:00 - Full Compact] Original: ~9 tokens, 3 messages\n\n**Tools used:** OldTool (4)\n"
            f"**Files touched (most recent first):** old/legacy.py\n<primary-request>\n{FIRST}\n</primary-request>")),))
        msgs = [system(), earlier, assistant("Resuming."), user("Now look at the parser module please")]
        for i in range(6):
            msgs += call_and_result("Read", f"row {i}\n" * 300, file_path=f"src/p{i}.py")
        msgs.append(assistant("Read them all."))
        seed = run_stage(SummaryStage(SummaryConfig(session_memory=False, rules_format="seed")), msgs, make_ctx())
        lab = run_stage(SummaryStage(SummaryConfig(session_memory=False)), msgs, make_ctx())
        assert seed.boundary is not None and lab.boundary is not None
        seed_text, lab_text = seed.events[-1].summary_text or "", lab.events[-1].summary_text or ""
        tools = next(line for line in seed_text.splitlines() if line.startswith("**Tools used:**"))
        files = next(line for line in seed_text.splitlines() if line.startswith("**Files touched:**"))
        # MiniCode's lists: only what the removed messages did; the earlier summary is carried whole after them.
        assert tools == "**Tools used:** Read" and "old/legacy.py" not in files and files.startswith("**Files touched:** src/p0.py")
        assert seed_text.index("**Earlier summary:**") > seed_text.index(files) and "OldTool (4)" in seed_text
        assert "- Now look at the parser module please" in seed_text and FIRST in seed_text
        # The lab's own format merges the earlier summary's items into its lists.
        assert any(line.startswith("**Tools used:**") and "OldTool" in line for line in lab_text.splitlines())
