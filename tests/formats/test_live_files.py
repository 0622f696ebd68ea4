"""Live files: a JSONL session still being written, its last line cut off mid-record.

For every JSONL importer that reads through ``jsonio``: the cut file imports
exactly what the file holds before the cut (the same messages as the file
without that line) with a warning naming the line, and the same cut line
anywhere but last is an error naming its line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import Transcript
from lab.errors import TranscriptError
from lab.formats import load
from tests.conftest import SAMPLES

TS = "2025-11-05T10:00:00.123456"


def _sample_lines(name: str) -> list[str]:
    return [line for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _openhands_v0_lines() -> list[str]:
    # An evaluation output.jsonl: one whole session per line; the sample session's events in each.
    events = json.loads((SAMPLES / "openhands-pagecount.openhands.json").read_text(encoding="utf-8"))
    return [json.dumps({"instance_id": f"task-{i}", "history": events}) for i in range(4)]


def _v1(eid: str, kind: str, source: str, **fields: Any) -> str:
    return json.dumps({"id": eid, "timestamp": TS, "source": source, **fields, "kind": kind})


def _openhands_v1_lines() -> list[str]:
    def text(t: str) -> dict[str, Any]:
        return {"cache_prompt": False, "type": "text", "text": t}

    def action(eid: str, call_id: str, command: str, rid: str) -> str:
        args = {"command": command}
        return _v1(eid, "ActionEvent", "agent", thought=[], action={"kind": "TerminalAction", **args}, tool_name="terminal", tool_call_id=call_id,
                   tool_call={"id": call_id, "name": "terminal", "arguments": json.dumps(args), "origin": "completion"}, llm_response_id=rid)

    def obs(eid: str, call_id: str, out: str, action_id: str) -> str:
        observation = {"kind": "TerminalObservation", "content": [text(out)], "is_error": False, "command": "x", "exit_code": 0}
        return _v1(eid, "ObservationEvent", "environment", tool_name="terminal", tool_call_id=call_id, observation=observation, action_id=action_id)

    return [
        _v1("e1", "SystemPromptEvent", "agent", system_prompt=text("You are OpenHands agent."), tools=[]),
        _v1("e2", "MessageEvent", "user", llm_message={"role": "user", "content": [text("Fix the bug in a.py")]}),
        action("a1", "toolu_01", "ls", "resp-1"),
        obs("o1", "toolu_01", "a.py", "a1"),
        action("a2", "toolu_02", "cat a.py — ünïcödé 中文", "resp-2"),
        obs("o2", "toolu_02", "print(1) — 中文", "a2"),
        _v1("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [text("Done: the bug is fixed.")]}, llm_response_id="resp-3"),
    ]


def _openai_chat_lines() -> list[str]:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    return [json.dumps(m, ensure_ascii=False) for m in [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "List the files, please — 中文"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files: a.py and b.py."},
        {"role": "user", "content": "Thanks. Now read a.py."},
    ]]  # fmt: skip


def _anthropic_lines() -> list[str]:
    return [json.dumps(m, ensure_ascii=False) for m in [
        {"role": "user", "content": "What is in a.py?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1) 中文"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It prints 1."}]},
        {"role": "user", "content": "And b.py?"},
    ]]  # fmt: skip


def _gemini_log_lines() -> list[str]:
    from tests.formats.test_gemini import HEADER, MESSAGES

    # A Gemini CLI chat recording log, as the CLI appends it: the header, then one record per message.
    return [json.dumps(r, ensure_ascii=False) for r in [HEADER, *MESSAGES, {"id": "u2", "timestamp": TS, "type": "user", "content": "Thanks — 中文"}]]


def _anthropic_request_log_lines() -> list[str]:
    from tests.formats.test_anthropic import _log

    # A request/response log: a cut last record drops the newest request, so the one before it is the conversation.
    return [json.dumps(r, ensure_ascii=False) for r in _log()]


# (format the file imports as (Codex rollouts are read by openai_responses), its lines); every one of them has at least 4 lines.
CASES = {
    "claude_code": ("claude_code", lambda: _sample_lines("claude-code-compacted.jsonl")),
    "claude_code-generated": ("claude_code", lambda: _sample_lines("generated-claude-code.jsonl")),
    "codex": ("openai_responses", lambda: _sample_lines("codex-rollout-forecast.jsonl")),
    "openhands": ("openhands", _openhands_v0_lines),
    "openhands_v1": ("openhands_v1", _openhands_v1_lines),
    "message-lines-openai": ("openai_chat", _openai_chat_lines),
    "message-lines-anthropic": ("anthropic", _anthropic_lines),
    "gemini-log": ("gemini", _gemini_log_lines),
    "anthropic-request-log": ("anthropic", _anthropic_request_log_lines),
}


def _write(path: Path, lines: list[str], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(line.encode("utf-8") + b"\n" for line in lines) + tail)
    return path


def _half(line: str) -> bytes:
    raw = line.encode("utf-8")
    return raw[: len(raw) // 2]


def _outline(t: Transcript) -> list[Any]:
    return [m.model_dump(mode="json") for m in t.messages] + [
        (name, [m.model_dump(mode="json") for m in msgs]) for name, msgs in sorted(t.sidechains.items())
    ]


@pytest.fixture(params=sorted(CASES), ids=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    fmt, lines = CASES[request.param]
    return fmt, lines()


def test_a_cut_last_line_imports_everything_before_it(tmp_path: Path, case: tuple[str, list[str]]) -> None:
    fmt, lines = case
    assert len(lines) >= 4
    whole = load(_write(tmp_path / "whole.jsonl", lines[:-1]))
    cut = load(_write(tmp_path / "cut.jsonl", lines[:-1], tail=_half(lines[-1])))
    assert cut.meta.source_format == whole.meta.source_format == fmt
    assert cut.messages, "the lines before the cut made no messages"
    assert _outline(cut) == _outline(whole)
    cut_warnings = [w for w in cut.notes.warnings if "cut off" in w]
    assert cut_warnings == [f"line {len(lines)}: last line cut off mid-record (log still being written?); ignored"]
    assert not [w for w in whole.notes.warnings if "cut off" in w]


def test_a_cut_line_that_is_not_last_is_an_error_naming_it(tmp_path: Path, case: tuple[str, list[str]]) -> None:
    _, lines = case
    broken = len(lines) - 1  # the second-to-last line, 1-based
    path = _write(tmp_path / "broken.jsonl", [*lines[: broken - 1], _half(lines[broken - 1]).decode("utf-8", "ignore"), lines[-1]])
    with pytest.raises(TranscriptError) as err:
        load(path)
    assert err.value.where == f"line {broken}"
    assert "cut off" not in str(err.value) and "truncated" not in str(err.value)


def test_a_file_that_is_only_a_cut_line_is_an_error(tmp_path: Path) -> None:
    # Nothing was written before the cut: there is nothing to import, and saying so beats an empty transcript.
    path = _write(tmp_path / "only.jsonl", [], tail=_half(_sample_lines("claude-code-compacted.jsonl")[0]))
    with pytest.raises(TranscriptError):
        load(path, format="claude_code")


def test_claude_code_second_pass_keeps_the_warning(tmp_path: Path) -> None:
    # A file whose entries are out of parentUuid order is read twice; the second pass's notes are the ones returned.
    lines = _sample_lines("claude-code-compacted.jsonl")
    entries = [json.loads(line) for line in lines]
    swapped = [json.dumps(e) for e in [entries[0], entries[2], entries[1], *entries[3:]]]
    cut = load(_write(tmp_path / "cut.jsonl", swapped[:-1], tail=_half(swapped[-1])))
    whole = load(_write(tmp_path / "whole.jsonl", swapped[:-1]))
    assert any("parentUuid order" in w for w in cut.notes.warnings)
    assert _outline(cut) == _outline(whole)
    assert sum("cut off" in w for w in cut.notes.warnings) == 1
