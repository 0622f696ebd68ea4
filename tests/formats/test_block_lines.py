"""Logs written one content block per record: flat block exports and sanitised Claude Code sessions.

Both fixtures hold the same synthetic session (a prompt, a thinking + text + tool call turn,
two parallel reads answered out of order, an edit, a second prompt):

- ``sanitised_claude_code.jsonl``: ``{timestamp, role, content: [one block]}`` per line, no
  uuids or message ids; read by ``anthropic`` (message lines), joined by role.
- ``flat_blocks.jsonl``: ``{timestamp, role: user|assistant|tool, content: {block}}``, the block
  an object and tool output under role ``tool``; the ``block_lines`` format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab

from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import TranscriptError
from lab.formats.claude import anthropic, block_lines
from lab.formats import detect, load
from lab.formats.detect import scores
from lab.formats.jsonio import read_file_head
from tests.builders import message_shapes

FIXTURES = Path(__file__).parent / "fixtures" / "block_lines"
SANITISED = FIXTURES / "sanitised_claude_code.jsonl"
FLAT = FIXTURES / "flat_blocks.jsonl"


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# The session both fixtures hold, as messages: what Claude Code sent.
_SESSION = [
    ("user", ["text"]),
    ("assistant", ["thinking", "text", "use:toolu_01"]),
    ("user", ["result:toolu_01"]),
    ("assistant", ["use:toolu_02", "use:toolu_03"]),
    # Written toolu_03 first: results go in the order of the calls.
    ("user", ["result:toolu_02", "result:toolu_03"]),
    ("assistant", ["use:toolu_04"]),
    ("user", ["result:toolu_04"]),
    ("assistant", ["text"]),
    ("user", ["text"]),
    ("assistant", ["use:toolu_05"]),
    ("user", ["result:toolu_05"]),
    ("assistant", ["text"]),
]


@pytest.mark.parametrize(("path", "fmt"), [(SANITISED, "anthropic"), (FLAT, "block_lines")])
def test_blocks_are_joined_into_the_messages_that_were_sent(path: Path, fmt: str) -> None:
    t = load(path)
    assert t.meta.source_format == fmt
    assert message_shapes(t) == _SESSION
    # Before, the sanitised session made 178 of 179 requests invalid: a call followed by another assistant message.
    assert anthropic_problems(t.messages) == []
    assert openai_problems(t.messages) == []
    records = len(_records(path))
    assert t.notes.records_read == records
    joined = [w for w in t.notes.warnings if w.startswith("joined ")]
    assert joined == [f"joined {records - len(_SESSION)} record(s) into the message before them ({len(_SESSION)} messages): "
                      "consecutive records of one role without message ids are one message, with tool results after their calls"]


@pytest.mark.parametrize("path", [SANITISED, FLAT])
def test_the_first_record_keeps_its_timestamp_and_nothing_is_lost(path: Path) -> None:
    t = load(path)
    assistant = t.messages[1]
    assert assistant.timestamp is not None and assistant.timestamp.isoformat().startswith("2026-03-02T10:00:03.100")
    thinking = assistant.content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == "sig-1"
    text = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert text[0].startswith("The tests in tests/test_parse.py fail")
    assert len({m.id for m in t.messages}) == len(t.messages)


def test_the_flat_export_is_detected_as_its_own_format() -> None:
    assert detect(FLAT) == "block_lines"
    ranked = scores(read_file_head(FLAT))
    assert ranked["block_lines"] > max(s for n, s in ranked.items() if n != "block_lines")
    # The sanitised session is message lines: block_lines does not claim it.
    assert scores(read_file_head(SANITISED))["block_lines"] == 0
    assert detect(SANITISED) == "anthropic"


def test_records_with_ids_stay_apart_unless_they_share_one(tmp_path: Path) -> None:
    # Lines that carry their own message ids said where messages start: only equal ids join.
    lines = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"id": "msg_a", "role": "assistant", "content": [{"type": "text", "text": "one"}]},
        {"id": "msg_a", "role": "assistant", "content": [{"type": "text", "text": "two"}]},
        {"id": "msg_b", "role": "assistant", "content": [{"type": "text", "text": "three"}]},
    ]
    t = anthropic.read_lines(_write(tmp_path / "ids.jsonl", lines))
    assert [[b.text for b in m.content if isinstance(b, TextBlock)] for m in t.messages] == [["go"], ["one", "two"], ["three"]]


def test_a_tool_record_of_text_naming_its_call_is_a_result(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": {"type": "text", "text": "list it"}},
        {"role": "assistant", "content": {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}},
        {"role": "tool", "tool_use_id": "t1", "content": {"type": "text", "text": "a.py"}},
        {"role": "user", "content": {"type": "text", "text": "and now?"}},
        {"role": "assistant", "content": {"type": "text", "text": "done"}},
    ]
    t = load(_write(tmp_path / "flat.jsonl", records))
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["use:t1"]), ("user", ["result:t1", "text"]), ("assistant", ["text"])]
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "a.py"
    assert anthropic_problems(t.messages) == []


def test_other_records_are_counted_and_unknown_blocks_skipped(tmp_path: Path) -> None:
    records = [
        {"type": "summary", "summary": "a title"},
        {"role": "user", "content": {"type": "text", "text": "hi"}},
        {"role": "assistant", "content": {"type": "mystery", "x": 1}},
        {"role": "narrator", "content": {"type": "text", "text": "meanwhile"}},
        {"role": "assistant", "content": {"type": "text", "text": "hello"}},
    ]
    t = block_lines.read(_write(tmp_path / "flat.jsonl", records))
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["text"])]
    assert t.notes.skipped == {"record:summary": 1, "block:mystery": 1, "empty_record": 1, "role:narrator": 1}


def test_a_flat_file_without_blocks_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="no content blocks found"):
        block_lines.read(_write(tmp_path / "flat.jsonl", [{"type": "x"}, {"type": "y"}]))


def test_a_cut_off_last_line_is_a_warning(tmp_path: Path) -> None:
    text = FLAT.read_text(encoding="utf-8") + '{"role": "assistant", "content": {"type": "te'
    p = tmp_path / "live.jsonl"
    p.write_text(text, encoding="utf-8")
    t = load(p)
    assert message_shapes(t) == _SESSION
    assert any("cut off mid-record" in w for w in t.notes.warnings)


@pytest.mark.parametrize(
    "records",
    [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "tool", "tool_call_id": "c", "content": "x"}],
        [{"type": "user", "message": {"role": "user", "content": {"type": "text", "text": "hi"}}, "uuid": "u1", "parentUuid": None}] * 2,
    ],
    ids=["chat-lines", "anthropic-lines", "claude-code"],
)
def test_other_jsonl_is_not_claimed(tmp_path: Path, records: list[Any]) -> None:
    assert block_lines.sniff(read_file_head(_write(tmp_path / "o.jsonl", records))) == 0


def test_tool_records_holding_block_lists_are_flat_blocks_too(tmp_path: Path) -> None:
    records = [dict(r, content=[r["content"]]) for r in _records(FLAT)]
    p = _write(tmp_path / "lists.jsonl", records)
    assert detect(p) == "block_lines"
    assert message_shapes(load(p)) == _SESSION


@pytest.mark.parametrize("path", [SANITISED, FLAT], ids=["sanitised", "flat"])
@pytest.mark.parametrize("preset", ["minicode", "mewcode"])
def test_replays_with_no_invalid_request(path: Path, preset: str) -> None:
    report = lab.replay(load(path), preset, window=32000)
    assert report.requests > 0 and report.invalid_requests == 0
