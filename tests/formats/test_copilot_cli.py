"""GitHub Copilot CLI session events (``lab.formats.editors.copilot_cli``), from the fixture built to the SDKs' event shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, message_text
from lab.core.validate import anthropic_problems
from lab.errors import TranscriptError
from lab.formats.editors import copilot_cli
from lab.formats import detect, load
from lab.formats.export import to_anthropic
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded, find_recorded

FIXTURE = Path(__file__).parent / "fixtures" / "copilot_cli" / "events.jsonl"


def _events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _write(tmp_path: Path, events: list[Any], name: str = "events.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def t() -> Any:
    return load(FIXTURE)


class TestMapping:
    def test_detected_above_managed_agents(self) -> None:
        assert detect(FIXTURE) == "copilot_cli"

    def test_meta(self, t: Any) -> None:
        assert t.meta.source_format == "copilot_cli" and t.meta.session_id == "5fedbe45-b06c-46ff-97b7-11f1f699020f"
        assert t.meta.cwd == "/home/dev/weatherbot" and t.meta.model == "claude-sonnet-4.5"
        assert t.meta.title == "GitHub Copilot CLI 0.0.407-1 session"

    def test_the_user_turn_is_what_the_model_was_sent(self, t: Any) -> None:
        first = t.messages[0]
        assert first.role == "user" and "<current_datetime>" in message_text(first)

    def test_reasoning_text_and_calls_make_one_assistant_message(self, t: Any) -> None:
        reply = t.messages[1]
        assert [type(b) for b in reply.content] == [ThinkingBlock, TextBlock, ToolUseBlock, ToolUseBlock]
        view, bash = reply.content[2:]
        assert (view.id, view.name, view.input) == ("toolu_vrtx_01", "view", {"path": "/home/dev/weatherbot/weatherbot/cli.py"})
        # Arguments recorded as JSON text are parsed.
        assert bash.input == {"command": "grep -n days weatherbot/forecast.py"}
        # inputTokens (16,210) holds the cached prompt too: the uncached rest is what is left.
        assert reply.usage is not None and (reply.usage.input_tokens, reply.usage.cache_read_tokens, reply.usage.output_tokens) == (5210, 11000, 88)
        last = [m for m in t.messages if m.role == "assistant" and m.usage is not None][-1].usage
        assert last is not None and (last.input_tokens, last.cache_read_tokens, last.cache_write_tokens) == (402, 16300, 120)

    def test_results_and_failures(self, t: Any) -> None:
        results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert [(r.tool_use_id, r.is_error) for r in results] == [("toolu_vrtx_01", False), ("toolu_vrtx_02", True), ("toolu_vrtx_03", False)]
        assert results[0].content.startswith("1. import click") and "No such file or directory" in results[1].content

    def test_a_subagent_s_events_stay_out_of_the_main_thread(self, t: Any) -> None:
        assert "Searching." not in " ".join(message_text(m) for m in t.messages)
        assert t.notes.skipped["subagent:assistant.message"] == 1

    def test_bookkeeping_and_unknown_events_are_counted(self, t: Any) -> None:
        assert t.notes.skipped["event:tool.execution_start"] == 2 and t.notes.skipped["event:brand.new_event"] == 1
        assert any("truncated 2 message(s)" in w for w in t.notes.warnings)

    def test_the_history_is_valid_for_the_api(self, t: Any) -> None:
        assert anthropic_problems(t.messages) == [] and to_anthropic(t)["messages"]


class TestCompaction:
    def test_a_compaction_is_a_boundary_and_its_summary(self, t: Any) -> None:
        tags = [m.tag for m in t.messages]
        at = tags.index("boundary")
        marker, summary = t.messages[at : at + 2]
        assert marker.boundary is not None and marker.boundary.strategy == copilot_cli.COMPACTION_STRATEGY
        assert marker.boundary.tokens_before == 17000
        assert summary.tag == "summary" and message_text(summary).startswith("The user asked why")

    def test_undo_replays_the_raw_history_and_keep_honours_it(self, t: Any) -> None:
        found = find_recorded(t)
        assert [(c.agent, c.action) for c in found] == [("GitHub Copilot CLI", "undone")]
        undone = apply_recorded(t, "undo")[0]
        assert len(undone.messages) == len(t.messages) - 2 and not any(m.boundary is not None for m in undone.messages)
        assert apply_recorded(t, "keep")[0] is t

    def test_one_without_a_summary_says_so(self, tmp_path: Path) -> None:
        events = [e for e in _events() if e["type"] != "session.compaction_complete"]
        events.insert(5, {"type": "session.compaction_complete", "data": {"success": True, "messagesRemoved": 4}, "id": "c", "timestamp": None})
        t = load(_write(tmp_path, events))
        summary = next(m for m in t.messages if m.tag == "summary")
        assert "4 message(s) removed" in message_text(summary) and "not in the file" in message_text(summary)

    def test_a_failed_compaction_changed_nothing(self, tmp_path: Path) -> None:
        events = [e for e in _events() if e["type"] != "session.compaction_complete"]
        events.append({"type": "session.compaction_complete", "data": {"success": False, "error": "timeout"}, "id": "c", "timestamp": None})
        t = load(_write(tmp_path, events))
        assert not any(m.boundary is not None for m in t.messages) and t.notes.skipped["event:session.compaction_complete"] == 1


class TestEdges:
    def test_an_older_flat_session_file_reads_the_same(self, tmp_path: Path, t: Any) -> None:
        assert load(_write(tmp_path, _events(), "5fedbe45.jsonl")).messages == t.messages

    def test_the_workspace_summary_is_the_title(self, tmp_path: Path) -> None:
        events = _write(tmp_path, _events())
        (tmp_path / "workspace.yaml").write_text("id: 5fedbe45\nsummary: Forecast crash on zero days\nsummary_count: 1\n", encoding="utf-8")
        assert load(events).meta.title == "Forecast crash on zero days"
        (tmp_path / "workspace.yaml").write_text(": not [yaml", encoding="utf-8")
        assert load(events).meta.title == "GitHub Copilot CLI 0.0.407-1 session"

    def test_lines_that_are_no_events_are_counted(self, tmp_path: Path) -> None:
        t = load(_write(tmp_path, [*_events(), {"note": "x"}, [1, 2]]))
        assert t.notes.skipped["record:dict"] == 1 and t.notes.skipped["record:list"] == 1

    def test_a_result_without_a_call_id_names_its_line(self, tmp_path: Path) -> None:
        events = [*_events(), {"type": "tool.execution_complete", "data": {"success": True}, "id": "x", "timestamp": None}]
        with pytest.raises(TranscriptError, match="without a toolCallId") as err:
            copilot_cli.read(_write(tmp_path, events))
        assert "line 25" in str(err.value)

    def test_managed_agents_events_are_not_claimed(self) -> None:
        managed = Path(__file__).parent / "fixtures" / "managed_agents" / "session.events.jsonl"
        assert detect(managed) == "managed_agents"

    def test_a_file_of_bare_user_messages_is_not_copilot(self, tmp_path: Path) -> None:
        # Dotted types alone are Managed Agents' shape too: Copilot needs one of its own types.
        path = _write(tmp_path, [{"type": "user.message", "data": {"content": "hi"}, "id": "1"}] * 3)
        assert copilot_cli.sniff(read_file_head(path)) == 0
