"""Pydantic AI message histories (``lab.formats.shell_agents.pydantic_ai``), from a fixture written to ``pydantic_ai.messages``' shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, message_text
from lab.core.validate import anthropic_problems
from lab.errors import TranscriptError
from lab.formats import detect, load
from lab.formats.shell_agents import pydantic_ai

FIXTURE = Path(__file__).parent / "fixtures" / "pydantic_ai" / "history.json"


def _messages() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def t() -> Any:
    return load(FIXTURE)


class TestMapping:
    def test_detected_above_gemini(self) -> None:
        assert detect(FIXTURE) == "pydantic_ai"

    def test_system_prompt_then_instructions_once_then_the_user(self, t: Any) -> None:
        roles = [(m.role, message_text(m)[:24]) for m in t.messages[:3]]
        assert roles == [("system", "You are a coding agent w"), ("system", "Answer briefly."), ("user", "Why does the health chec")]
        # Repeated on every request, sent once.
        assert sum(message_text(m) == "Answer briefly." for m in t.messages) == 1
        assert "[image: https://example.com/shot.png]" in message_text(t.messages[2])

    def test_a_response_is_one_assistant_message_with_its_usage(self, t: Any) -> None:
        reply = t.messages[3]
        assert [type(b) for b in reply.content] == [ThinkingBlock, TextBlock, ToolUseBlock]
        assert reply.content[0].signature == "sig-abc" and reply.content[2].input == {"path": "app/health.py"}
        # input_tokens holds the cached tokens too: the uncached rest is 1500 - 1000 - 200.
        assert reply.usage is not None and (reply.usage.input_tokens, reply.usage.cache_read_tokens, reply.usage.cache_write_tokens) == (300, 1000, 200)
        assert t.meta.model == "claude-sonnet-4-5"

    def test_tool_returns_and_retries(self, t: Any) -> None:
        results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert [(r.tool_use_id, r.is_error) for r in results] == [("toolu_01", False), ("toolu_02", True)]
        assert json.loads(results[0].content)["lines"] == 2
        assert "Invalid JSON" in results[1].content and results[1].content.endswith("Fix the errors and try again.")
        # A retry that names no tool is the user's turn.
        assert message_text(t.messages[-2]).startswith("Please return a final answer")

    def test_older_usage_field_names(self, t: Any) -> None:
        second = [m for m in t.messages if m.role == "assistant"][1]
        assert second.usage is not None and (second.usage.input_tokens, second.usage.output_tokens) == (1800, 40)

    def test_provider_run_parts_are_counted(self, t: Any) -> None:
        assert t.notes.skipped["part:builtin-tool-call"] == 1 and t.notes.skipped["part:builtin-tool-return"] == 1
        assert anthropic_problems(t.messages) == []


class TestSources:
    @pytest.mark.parametrize("holder", ["messages", "all_messages"])
    def test_an_object_holding_the_list(self, tmp_path: Path, holder: str, t: Any) -> None:
        path = tmp_path / "run.json"
        path.write_text(json.dumps({"run_id": "run-1", holder: _messages()}), encoding="utf-8")
        assert detect(path) == "pydantic_ai" and load(path).messages == t.messages

    def test_one_message_per_line(self, tmp_path: Path, t: Any) -> None:
        path = tmp_path / "history.jsonl"
        path.write_text("".join(json.dumps(m) + "\n" for m in _messages()), encoding="utf-8")
        assert detect(path) == "pydantic_ai" and [m.content for m in load(path).messages] == [m.content for m in t.messages]

    def test_unknown_kinds_are_counted(self, tmp_path: Path) -> None:
        path = tmp_path / "h.json"
        extra = [*_messages(), {"kind": "checkpoint", "parts": []}, {"kind": "response", "parts": [{"part_kind": "file", "content": {}}]}]
        path.write_text(json.dumps(extra), encoding="utf-8")
        notes = load(path).notes
        assert notes.skipped["message:checkpoint"] == 1 and notes.skipped["part:file"] == 1

    def test_a_tool_return_without_a_call_id_names_where(self, tmp_path: Path) -> None:
        bad = _messages()
        del bad[2]["parts"][0]["tool_call_id"]
        path = tmp_path / "h.json"
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(TranscriptError, match=r"\$\[2\]\.parts\[0\].*without a tool_call_id"):
            pydantic_ai.read(path)

    def test_gemini_contents_stay_gemini(self, tmp_path: Path) -> None:
        path = tmp_path / "contents.json"
        path.write_text(json.dumps([{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "hello"}]}]), encoding="utf-8")
        assert detect(path) == "gemini"
