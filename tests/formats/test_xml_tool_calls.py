"""Cline's XML tool calls become tool_use / tool_result pairs the stages can act on."""

from __future__ import annotations

import json
from pathlib import Path

from lab.core.messages import ImportNotes, Message, TextBlock, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.formats import load
from lab.formats.claude.anthropic import request_to_transcript
from lab.formats.xml_tool_calls import xml_tool_calls

ENV = "<environment_details>\n# VSCode Visible Files\nsrc/a.py\n</environment_details>"
WRITE = "def f():\n    return '<content>not the end</content>'\n"
HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "<task>\nFix f in src/a.py\n</task>"}, {"type": "text", "text": ENV}]},
    {"role": "assistant", "content": [{"type": "text", "text": "<thinking>Read it first.</thinking>\n\n<read_file>\n<path>src/a.py</path>\n</read_file>"}]},
    {"role": "user", "content": [{"type": "text", "text": "[read_file for 'src/a.py'] Result:"}, {"type": "text", "text": "1 | def f():\n2 |     return 1"},
                                 {"type": "text", "text": ENV}]},
    {"role": "assistant", "content": [{"type": "text", "text": f"<write_to_file>\n<path>src/a.py</path>\n<content>\n{WRITE}</content>\n</write_to_file>"}]},
    {"role": "user", "content": [{"type": "text", "text": "[write_to_file for 'src/a.py'] Result:"},
                                 {"type": "text", "text": "The user denied this operation."}, {"type": "text", "text": ENV}]},
    {"role": "assistant", "content": [{"type": "text", "text": "<execute_command>\n<command>pytest -q</command>\n<requires_approval>false</requires_approval>\n</execute_command>"}]},
    {"role": "user", "content": [{"type": "text", "text": "[execute_command for 'pytest -q'] Result:"}, {"type": "text", "text": "Command executed.\n1 passed"}]},
    # The last call has no answer in the log: it stays text.
    {"role": "assistant", "content": [{"type": "text", "text": "<attempt_completion>\n<result>Fixed.</result>\n</attempt_completion>"}]},
]


def _messages() -> list[Message]:
    return request_to_transcript({"messages": HISTORY}, file="h.json", notes=ImportNotes()).messages


def test_every_answered_call_becomes_a_pair() -> None:
    out = xml_tool_calls(_messages())
    calls = [b for m in out for b in m.content if isinstance(b, ToolUseBlock)]
    assert [(c.name, c.input) for c in calls] == [
        ("read_file", {"path": "src/a.py"}),
        ("write_to_file", {"path": "src/a.py", "content": WRITE.strip()}),
        ("execute_command", {"command": "pytest -q", "requires_approval": "false"}),
    ]
    results = [b for m in out for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(r.content, r.is_error) for r in results] == [
        ("1 | def f():\n2 |     return 1", False), ("The user denied this operation.", True), ("Command executed.\n1 passed", False)]
    assert all(out[i].content[0] == r for i, r in ((2, results[0]), (4, results[1]), (6, results[2])))
    # The prose beside a call and the environment details after a result stay text.
    assert out[1].content[0] == TextBlock(text="<thinking>Read it first.</thinking>")
    assert out[2].content[-1] == TextBlock(text=ENV)
    assert "<attempt_completion>" in out[-1].content[0].text  # type: ignore[union-attr]
    assert len(tool_pairs(out)) == 3


def test_prose_that_names_a_tag_and_unanswered_calls_are_left_alone() -> None:
    msgs = request_to_transcript({"messages": [
        {"role": "user", "content": "Explain <read_file> tags"},
        {"role": "assistant", "content": "You write <read_file><path>x</path></read_file>."},
        {"role": "user", "content": "Thanks"},
    ]}, file="h.json", notes=ImportNotes()).messages  # fmt: skip
    assert xml_tool_calls(msgs) == msgs


def test_a_task_folder_and_a_bare_history_file_both_read_the_pairs(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "1717000000000"
    folder.mkdir(parents=True)
    (folder / "api_conversation_history.json").write_text(json.dumps(HISTORY), encoding="utf-8")
    for t in (load(folder), load(folder / "api_conversation_history.json")):
        assert sum(isinstance(b, ToolUseBlock) for m in t.messages for b in m.content) == 3
        assert len(tool_pairs(t.messages)) == 3
