"""smolagents' ``tool-call`` / ``tool-response`` roles in a chat history (``lab.formats.shell_agents.smolagents``, read by ``openai_chat``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.core.messages import TextBlock, ToolResultBlock, ToolUseBlock, message_text
from lab.core.validate import anthropic_problems
from lab.formats import load


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _calls(*calls: tuple[str, str, Any]) -> str:
    # As ActionStep.to_messages writes them: "Calling tools:\n" + str(a list of tool call dicts).
    return "Calling tools:\n" + str([{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls])


def _history() -> list[dict[str, Any]]:
    return [
        _msg("system", "You are an expert assistant who can solve any task using code blobs."),
        _msg("user", "New task:\nHow many rows does data.csv have?"),
        _msg("assistant", "Thought: count them.\n<code>\nprint(sum(1 for _ in open('data.csv')))\n</code>"),
        _msg("tool-call", _calls(("call_1", "python_interpreter", "print(sum(1 for _ in open('data.csv')))"))),
        _msg("tool-response", "Observation:\nExecution logs:\n1001\nLast output from code snippet:\nNone"),
        _msg("assistant", "Thought: look up both files.\n"),
        _msg("tool-call", _calls(("call_2", "read_file", {"path": "a.txt"}), ("call_3", "read_file", {"path": "b.txt"}))),
        _msg("tool-response", "Call id: call_2\nObservation:\nalpha\nCall id: call_3\nError:\nNo such file: b.txt"),
        _msg("assistant", "Thought: done.\n<code>\nfinal_answer(1000)\n</code>"),
    ]


def _load(tmp_path: Path, messages: list[dict[str, Any]]) -> Any:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return load(path)


def test_calls_join_their_reply_and_observations_answer_them(tmp_path: Path) -> None:
    t = _load(tmp_path, _history())
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    first = t.messages[2]
    assert isinstance(first.content[0], TextBlock) and isinstance(first.content[1], ToolUseBlock)
    assert (first.content[1].id, first.content[1].name, first.content[1].input) == (
        "call_1", "python_interpreter", {"code": "print(sum(1 for _ in open('data.csv')))"},
    )
    result = t.messages[3].content[0]
    assert isinstance(result, ToolResultBlock) and result.tool_use_id == "call_1" and "1001" in result.content and not result.is_error
    assert not t.notes.skipped and anthropic_problems(t.messages) == []


def test_one_observation_for_parallel_calls_answers_each_and_flags_errors(tmp_path: Path) -> None:
    t = _load(tmp_path, _history())
    calls = [b for b in t.messages[4].content if isinstance(b, ToolUseBlock)]
    assert [(c.id, c.input) for c in calls] == [("call_2", {"path": "a.txt"}), ("call_3", {"path": "b.txt"})]
    results = [b for b in t.messages[5].content if isinstance(b, ToolResultBlock)]
    assert [r.tool_use_id for r in results] == ["call_2", "call_3"] and all(r.is_error for r in results)
    assert "No such file: b.txt" in results[0].content and "result above" in results[1].content


def test_text_that_is_no_call_list_is_kept_as_one_call(tmp_path: Path) -> None:
    history = [_msg("user", "go"), _msg("assistant", "ok"), _msg("tool-call", "Calling tools:\nnot python ["), _msg("tool-response", "Observation:\nfine")]
    t = _load(tmp_path, history)
    use = t.messages[1].content[-1]
    assert isinstance(use, ToolUseBlock) and use.name == "tool" and use.input == {"text": "not python ["}
    assert isinstance(t.messages[2].content[0], ToolResultBlock)


def test_a_response_with_no_open_call_is_the_user_s_text(tmp_path: Path) -> None:
    t = _load(tmp_path, [_msg("user", "go"), _msg("assistant", "ok"), _msg("tool-response", "Observation:\nlate")])
    assert t.messages[-1].role == "user" and "late" in message_text(t.messages[-1])
