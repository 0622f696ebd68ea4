"""The recovery attachment's window-relative cap: what gives way, in what order, and the cap always holds."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig, parse_config
from lab.core.events import CompactorState, StageContext
from lab.core.messages import Message, ToolSpec
from lab.core.pipeline import run_stage
from lab.core.presets import preset
from lab.core.stages.summary import SummaryConfig, SummaryStage
from lab.core.summarizers.attachment import LOSSY_NOTICE, MIN_FILE_TOKENS, build_attachment
from lab.core.summarizers.base import SummaryRequest, SummaryResult
from lab.core.summarizers.rules import RuleSummarizer
from lab.core.tokens.base import CharsPerTokenCounter, MiniCodeCounter
from lab.errors import ConfigError
from tests.builders import call_and_result, session, system, user

COUNTER = MiniCodeCounter()
SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string", "description": "Absolute path. " * 40}}}
TOOLS = [ToolSpec(name=n, description=f"The {n} tool. " * 30, input_schema=SCHEMA) for n in ("Read", "Edit", "Bash", "Grep")]


def reads(n: int = 5, lines: int = 400) -> list[Message]:
    """``n`` reads of ``lines`` numbered lines each, f0 oldest."""
    msgs = [user("go")]
    for i in range(n):
        body = "\n".join(f"{k + 1:>6}\tvalue_{i} = compute({k}, 'file {i}')" for k in range(lines))
        msgs += call_and_result("Read", body, file_path=f"src/f{i}.py")
    return msgs


def heads(text: str) -> list[str]:
    return [line[5:] for line in text.splitlines() if line.startswith("#### ")]


def fences_closed(text: str) -> bool:
    """Every file excerpt's opening fence has its closing fence before the next heading."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#### "):
            fence = lines[i + 2]
            if not fence.startswith("```") or fence not in lines[i + 3 :]:
                return False
            i = lines.index(fence, i + 3) + 1
        else:
            i += 1
    return True


class TestUncapped:
    def test_no_cap_is_mewcodes_attachment(self) -> None:
        msgs = reads()
        full = build_attachment(msgs, TOOLS, COUNTER)
        assert build_attachment(msgs, TOOLS, COUNTER, max_tokens=None) == full
        # A cap the attachment already fits changes nothing.
        assert build_attachment(msgs, TOOLS, COUNTER, max_tokens=COUNTER.count_text(full)) == full


class TestWhatGivesWay:
    def test_schemas_go_first(self) -> None:
        msgs = reads(2, 20)
        full = build_attachment(msgs, TOOLS, COUNTER)
        text = build_attachment(msgs, TOOLS, COUNTER, max_tokens=COUNTER.count_text(full) - 10)
        assert "input schema" not in text and "- Read\n" in text and "descriptions and schemas left out" in text
        assert heads(text) == ["src/f1.py", "src/f0.py"]  # both small files still fit whole

    def test_files_dropped_oldest_first_and_the_newest_kept_is_cut(self) -> None:
        msgs = reads(5, 400)
        one_file = COUNTER.count_text(build_attachment(msgs, [], COUNTER, max_files=1))
        text = build_attachment(msgs, [], COUNTER, max_tokens=int(one_file * 1.6))
        assert heads(text) == ["src/f4.py", "src/f3.py"]
        assert "(3 older file(s) left out to fit the attachment budget" in text
        second = text.split("#### src/f3.py\n", 1)[1]
        assert "to fit the attachment budget)" in second.splitlines()[0]  # the note on the cut file
        assert "value_4 = compute(399" in text  # the newest file is whole
        assert fences_closed(text) and text.rstrip().endswith("- Read")

    def test_file_content_is_cut_at_a_line(self) -> None:
        text = build_attachment(reads(1, 2000), [], COUNTER, max_tokens=1500)
        body = text.split("```\n", 1)[1].split("\n```", 1)[0]
        assert all(line.startswith("value_0 = compute(") and line.endswith("'file 0')") for line in body.splitlines())
        assert COUNTER.count_text(text) <= 1500

    def test_no_room_for_a_file_leaves_the_skeleton(self) -> None:
        msgs = reads(3, 400)
        skeleton = COUNTER.count_text(build_attachment(msgs, [], COUNTER, max_files=0)) + 20
        text = build_attachment(msgs, [], COUNTER, max_tokens=skeleton + MIN_FILE_TOKENS // 2)
        assert heads(text) == [] and "(3 older file(s) left out" in text and LOSSY_NOTICE in text

    def test_tool_list_then_everything(self) -> None:
        notice_only = COUNTER.count_text(build_attachment([user("hi")], [], COUNTER)) + 10
        text = build_attachment(reads(2, 50), TOOLS, COUNTER, max_tokens=notice_only + 20)
        assert "(tool list left out to fit the attachment budget)" in text and LOSSY_NOTICE in text
        assert build_attachment(reads(2, 50), TOOLS, COUNTER, max_tokens=30) == ""
        assert build_attachment(reads(2, 50), TOOLS, COUNTER, max_tokens=0) == ""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 6),
    lines=st.sampled_from([3, 60, 900]),
    cjk=st.booleans(),
    cap=st.integers(0, 12_000),
    files=st.integers(0, 5),
    chars=st.booleans(),
)
def test_the_cap_always_holds(n: int, lines: int, cjk: bool, cap: int, files: int, chars: bool) -> None:
    counter = CharsPerTokenCounter() if chars else MiniCodeCounter()
    msgs = [user("go")]
    for i in range(n):
        word = "数据" if cjk else "data"
        msgs += call_and_result("Read", "\n".join(f"{k + 1:>6}\t{word} {k} {i}" for k in range(lines)), file_path=f"f{i}.py")
    before = copy.deepcopy(msgs)
    text = build_attachment(msgs, TOOLS[:2], counter, max_files=files, max_tokens=cap)
    assert counter.count_text(text) <= cap
    assert text == "" or (LOSSY_NOTICE in text and fences_closed(text))
    assert build_attachment(msgs, TOOLS[:2], counter, max_files=files, max_tokens=cap) == text
    assert msgs == before


# -- the summary stage applies it -----------------------------------------------


class BigAttachmentLLM:
    """A stand-in LLM summarizer that brings an attachment built without any cap, as the real ones do."""

    name = "anthropic"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text="The user asked for X.", strategy="llm",
                             attachment=build_attachment(request.messages, request.tools, request.counter))


def _ctx(window: int, summarizer: Any = None, config: CompactionConfig | None = None) -> StageContext:
    return StageContext(config=config or CompactionConfig(window=window), counter=COUNTER, store=None,  # type: ignore[arg-type]
                        summarizer=summarizer or RuleSummarizer(), state=CompactorState(), now=1_700_000_000.0, tools=tuple(TOOLS))


# One history for every stage test, so attachments built under different settings compare.
HISTORY = [system(), *reads(6, 600)[:-2], user("next"), *call_and_result("Read", "small", file_path="x.py")]


def _attachment(window: int, summarizer: Any = None, **kw: Any) -> str:
    cfg = SummaryConfig(session_memory=False, attachment_for_rules=True, tail_min_tokens=500, tail_max_tokens=2000, **kw)
    result = run_stage(SummaryStage(cfg), HISTORY, _ctx(window, summarizer))
    event = next(e for e in result.events if e.stage == "summary")
    assert event.success, event.detail
    return event.attachment or ""


class TestSummaryStage:
    def test_field_bounds(self) -> None:
        assert SummaryConfig().attachment_max_window_share == 0.25
        for bad in (-0.1, 1.5):
            with pytest.raises(ConfigError, match="summary.attachment_max_window_share"):
                parse_config({"summary": {"attachment_max_window_share": bad}})

    @pytest.mark.parametrize("window", [16_000, 32_000], ids=["16k", "32k"])
    def test_rule_summary_attachment_within_the_share(self, window: int) -> None:
        text = _attachment(window)
        assert text and COUNTER.count_text(text) <= window // 4

    def test_llm_attachment_rebuilt_within_the_share(self) -> None:
        text = _attachment(16_000, BigAttachmentLLM())
        assert text.startswith("## Recovery attachment") and COUNTER.count_text(text) <= 4_000

    def test_share_zero_means_no_attachment(self) -> None:
        assert _attachment(16_000, attachment_max_window_share=0.0) == ""

    def test_at_200k_nothing_changes(self) -> None:
        assert _attachment(200_000) == _attachment(200_000, attachment_max_window_share=1.0)
        assert _attachment(200_000, BigAttachmentLLM()) == _attachment(200_000, BigAttachmentLLM(), attachment_max_window_share=1.0)

    def test_mewcode_preset_keeps_its_numbers_at_200k(self) -> None:
        cfg = preset("mewcode")
        s = cfg.summary.model_copy(update={"attachment_for_rules": True, "tail_min_tokens": 0})
        assert (s.attachment_files, s.attachment_file_tokens, s.attachment_max_window_share) == (5, 5000, 0.25)
        # Six reads of about 7000 tokens each: MewCode's 5 newest, each cut to 5000, with the full tool list.
        msgs = [system(), *reads(6, 800), user("thanks")] + [m for _ in range(3) for m in call_and_result("Bash", "ok", command="ls")]
        result = run_stage(SummaryStage(s), msgs, _ctx(200_000, config=cfg))
        text = next(e for e in result.events if e.stage == "summary").attachment or ""
        assert heads(text) == ["src/f5.py", "src/f4.py", "src/f3.py", "src/f2.py", "src/f1.py"]
        assert text.count("(as last read") == 5 and text.count("; cut to 5000 tokens)") == 5
        assert "input schema" in text and "left out" not in text

    def test_stage_stays_pure(self) -> None:
        msgs = session(n_reads=12, size=6000)
        before = copy.deepcopy(msgs)
        cfg = SummaryConfig(session_memory=False, attachment_for_rules=True, tail_min_tokens=500)
        once = run_stage(SummaryStage(cfg), msgs, _ctx(16_000))
        assert msgs == before
        assert run_stage(SummaryStage(cfg), msgs, _ctx(16_000)).messages == once.messages
