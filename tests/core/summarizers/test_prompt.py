"""The MewCode summary request: rendering, request shapes, and summary extraction."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, ImageBlock, Message, TextBlock, ThinkingBlock
from lab.core.summarizers.prompt import (
    SECTION_TITLES,
    SUMMARY_INSTRUCTIONS,
    build_summary_prompt,
    extract_summary,
    render_transcript,
)
from lab.errors import SummaryError
from tests.builders import assistant, call_and_result, session, system, tool_call, user


@pytest.mark.parametrize("module", ["prompt", "llm", "ptl"])
def test_all_is_complete(module: str) -> None:
    mod = importlib.import_module(f"lab.core.summarizers.{module}")
    public = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__}
    assert public <= set(mod.__all__)
    assert all(hasattr(mod, n) for n in mod.__all__)


class TestInstructions:
    def test_nine_sections_in_order(self) -> None:
        assert len(SECTION_TITLES) == 9
        positions = [SUMMARY_INSTRUCTIONS.index(f"{i}. {title}") for i, title in enumerate(SECTION_TITLES, 1)]
        assert positions == sorted(positions)

    def test_two_phases_and_verbatim_user_messages(self) -> None:
        text = SUMMARY_INSTRUCTIONS
        assert "<analysis>" in text and "<summary>" in text
        assert text.index("<analysis>") < text.index("<summary>")
        assert "discarded" in text
        assert "verbatim" in text.split("6. All user messages")[1].split("7.")[0]
        assert "most detail" in text.split("8. Current work")[1].split("9.")[0]


class TestRender:
    def test_user_messages_verbatim(self) -> None:
        odd = "  Fix   the bug!\n\n\twith tabs, trailing spaces   \nand 中文 <summary>not a tag</summary>"
        msgs = [user(odd), assistant("ok"), user("second request")]
        text = render_transcript(msgs)
        assert odd in text
        assert text.index(odd) < text.index("second request")

    def test_tool_calls_and_results_are_labelled_by_name_and_id(self) -> None:
        msgs = [user("read it"), *call_and_result("Read", "file body", tool_id="toolu_A", file_path="a.py")]
        msgs += call_and_result("Bash", "boom", tool_id="toolu_B", is_error=True, command="make")
        text = render_transcript(msgs)
        assert '[tool call Read id=toolu_A] {"file_path": "a.py"}' in text
        assert "[tool result for Read id=toolu_A]\nfile body" in text
        assert "[tool result error for Bash id=toolu_B]\nboom" in text
        # Tool output is not shown as if the user had written it.
        assert "[tool output]\n[tool result for Read" in text

    def test_boundary_and_thinking_are_left_out_images_noted(self) -> None:
        boundary = Message(role="system", id="b1", content=(TextBlock(text="BOUNDARY-TEXT"),), boundary=Boundary(trigger="auto", strategy="full"))
        thinking = Message(role="assistant", id="a1", content=(ThinkingBlock(thinking="SECRET-THOUGHT"), TextBlock(text="visible")))
        image = Message(role="user", id="u1", content=(ImageBlock(media_type="image/png", size_bytes=123),))
        text = render_transcript([boundary, thinking, image])
        assert "BOUNDARY-TEXT" not in text and "SECRET-THOUGHT" not in text
        assert "visible" in text
        assert "[image image/png, 123 bytes, not shown]" in text

    def test_previous_summary_is_labelled(self) -> None:
        prior = Message(role="user", id="s1", content=(TextBlock(text="## Session summary\nold"),), tag="summary")
        assert render_transcript([prior]).startswith("[previous summary]\n## Session summary")

    def test_empty_history(self) -> None:
        assert render_transcript([]) == ""

    def test_input_not_mutated(self) -> None:
        msgs = session(2, 100)
        before = [m.model_dump() for m in msgs]
        build_summary_prompt(msgs, "x")
        assert [m.model_dump() for m in msgs] == before


class TestRequestShape:
    def test_custom_instructions_appended_last(self) -> None:
        p = build_summary_prompt([user("hi")], "  keep the API decisions  ")
        assert p.user.rstrip().endswith("keep the API decisions")
        assert p.user.index("</transcript>") < p.user.index("Summarise") < p.user.index("keep the API decisions")

    @pytest.mark.parametrize("blank", [None, "", "   \n"], ids=["none", "empty", "whitespace"])
    def test_no_custom_section_without_instructions(self, blank: str | None) -> None:
        assert "Additional instructions" not in build_summary_prompt([user("hi")], blank).user

    def test_anthropic_shape_has_one_user_message_and_no_tools(self) -> None:
        msgs = [system(), user("hi"), tool_call("Read", "t1", file_path="x")]
        kw = build_summary_prompt(msgs).anthropic_kwargs("m", 1000)
        assert set(kw) == {"model", "max_tokens", "system", "messages"}
        assert [m["role"] for m in kw["messages"]] == ["user"]
        assert kw["messages"][0]["content"][0]["type"] == "text"

    @pytest.mark.parametrize("param", ["max_completion_tokens", "max_tokens"])
    def test_openai_shape(self, param: str) -> None:
        kw = build_summary_prompt([user("hi")]).openai_kwargs("m", 1000, param)
        assert set(kw) == {"model", param, "messages"}
        assert [m["role"] for m in kw["messages"]] == ["system", "user"]
        assert kw[param] == 1000


class TestExtract:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("<analysis>think</analysis>\n<summary>\n1. Intent\n</summary>", "1. Intent"),
            ("<ANALYSIS>x</ANALYSIS><Summary>mixed case</Summary>", "mixed case"),
            ("<analysis>a <summary>fake</summary></analysis><summary>real</summary>", "real"),
            ("<analysis>a</analysis>\nplain summary without tags", "plain summary without tags"),
            ("just text", "just text"),
            ("<analysis>a</analysis><summary>cut off by max tokens", "cut off by max tokens"),
            ("<summary>kept</summary> trailing chatter", "kept"),
        ],
        ids=["normal", "case", "summary-inside-analysis", "no-tags", "bare", "unclosed-summary", "trailing"],
    )
    def test_extract(self, text: str, expected: str) -> None:
        assert extract_summary(text) == expected

    @pytest.mark.parametrize(
        "text",
        ["", "   ", "<analysis>only thinking</analysis>", "<analysis>unclosed, ran out of tokens", "<summary> </summary>"],
        ids=["empty", "blank", "only-analysis", "unclosed-analysis", "blank-summary"],
    )
    def test_nothing_usable_raises(self, text: str) -> None:
        with pytest.raises(SummaryError, match="no summary text"):
            extract_summary(text)


_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_text, min_size=1, max_size=5))
def test_every_user_text_appears_verbatim(texts: list[str]) -> None:
    msgs = [m for t in texts for m in (user(t), assistant("ok"))]
    prompt = build_summary_prompt(msgs).user
    for t in texts:
        assert t in prompt


@settings(max_examples=60, deadline=None)
@given(analysis=_text, summary=_text)
def test_extract_round_trip(analysis: str, summary: str) -> None:
    # No "<" at all, so the texts cannot hold (or build) a tag of their own.
    analysis, summary = analysis.replace("<", ""), summary.replace("<", "")
    if not summary.strip():
        return
    assert extract_summary(f"<analysis>{analysis}</analysis>\n<summary>{summary}</summary>") == summary.strip()
