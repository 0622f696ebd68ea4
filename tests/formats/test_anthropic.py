"""Anthropic Messages request bodies and request/response logs."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.errors import TranscriptError
from lab.formats.claude import anthropic
from lab.formats import detect, load
from lab.formats.claude.anthropic import base64_size, request_to_transcript
from lab.formats.export import to_anthropic


def _body(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": "Fix the bug"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "read first", "signature": "sig"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "print(1)"}]}],
            },
        ],
        "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}],
    }
    body.update(extra)
    return body


def _write(path: Path, data: Any, *, jsonl: bool = False) -> Path:
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- one request body ---------------------------------------------------------------


def test_request_body_becomes_system_messages_and_tools(tmp_path: Path) -> None:
    t = anthropic.read(_write(tmp_path / "req.json", _body()))
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
    assert t.messages[0].content == (TextBlock(text="You are a coding agent."),)
    kinds = [type(b) for b in t.messages[2].content]
    assert kinds == [ThinkingBlock, TextBlock, ToolUseBlock]
    result = t.messages[3].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "print(1)"
    assert [s.name for s in t.tools] == ["Read"]
    assert t.tools[0].input_schema["properties"]["file_path"] == {"type": "string"}
    assert (t.meta.source_format, t.meta.model) == ("anthropic", "claude-sonnet-4-5")


def test_system_as_blocks(tmp_path: Path) -> None:
    system = [{"type": "text", "text": "Part one", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Part two"}]
    t = anthropic.read(_write(tmp_path / "req.json", _body(system=system)))
    assert [b.text for b in t.messages[0].content] == ["Part one", "Part two"]  # type: ignore[union-attr]


def test_message_ids_are_deterministic_and_unique(tmp_path: Path) -> None:
    p = _write(tmp_path / "req.json", _body())
    a, b = anthropic.read(p), anthropic.read(p)
    assert [m.id for m in a.messages] == [m.id for m in b.messages]
    assert len({m.id for m in a.messages}) == len(a.messages)


def test_unknown_blocks_and_roles_are_counted(tmp_path: Path) -> None:
    body = _body()
    body["messages"][1]["content"].append({"type": "redacted_thinking", "data": "xx"})
    body["messages"].append({"role": "critic", "content": "hmm"})
    body["messages"].append({"role": "user", "content": [{"type": "document", "source": {}}]})
    t = anthropic.read(_write(tmp_path / "req.json", body))
    assert t.notes.skipped == {"block:redacted_thinking": 1, "role:critic": 1, "block:document": 1, "empty_message": 1}


def test_images_keep_only_their_size(tmp_path: Path) -> None:
    data = base64.b64encode(b"z" * 500).decode()
    body = _body()
    body["messages"][0]["content"] = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    ]
    t = anthropic.read(_write(tmp_path / "req.json", body))
    images = [b for b in t.messages[1].content if isinstance(b, ImageBlock)]
    assert [(i.source, i.size_bytes, i.url) for i in images] == [("base64", 500, None), ("url", 0, "https://example.com/a.png")]


@pytest.mark.parametrize("raw", [b"", b"a", b"ab", b"abc", b"\xff" * 31, b"x" * 1000])
def test_base64_size_matches_decoding(raw: bytes) -> None:
    assert base64_size(base64.b64encode(raw).decode()) == len(raw)


def test_request_with_response_document(tmp_path: Path) -> None:
    response = {"id": "msg_9", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Fixed."}], "usage": {"input_tokens": 50, "output_tokens": 3, "cache_read_input_tokens": 40}}
    t = anthropic.read(_write(tmp_path / "pair.json", {"request": _body(), "response": response}))
    last = t.messages[-1]
    assert (last.role, last.id, last.content) == ("assistant", "msg_9", (TextBlock(text="Fixed."),))
    assert last.usage is not None and last.usage.cache_read_tokens == 40


# --- logs ---------------------------------------------------------------------------------


def _log() -> list[dict[str, Any]]:
    full = _body()
    short = _body(messages=full["messages"][:1])
    reply = {"id": "msg_r", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    first_reply = {"id": "msg_q", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Reading."}]}
    return [short, first_reply, full, reply]


def test_jsonl_log_takes_the_longest_request_and_its_response(tmp_path: Path) -> None:
    t = anthropic.read(_write(tmp_path / "log.jsonl", _log(), jsonl=True))
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert t.messages[-1].id == "msg_r"
    assert t.notes.skipped == {"earlier_request": 1, "response": 1}
    assert t.notes.records_read == 4


def test_array_log_reads_like_jsonl(tmp_path: Path) -> None:
    a = anthropic.read(_write(tmp_path / "log.jsonl", _log(), jsonl=True))
    b = anthropic.read(_write(tmp_path / "log.json", _log()))
    assert a.messages == b.messages


def test_log_of_pairs_and_a_record_it_does_not_know(tmp_path: Path) -> None:
    log = [{"request": _body(), "response": {"id": "msg_x", "type": "message", "role": "assistant", "content": "ok"}}, {"event": "ping"}]
    t = anthropic.read(_write(tmp_path / "log.jsonl", log, jsonl=True))
    assert t.messages[-1].id == "msg_x"
    assert t.notes.skipped == {"unknown_record": 1}


# --- errors --------------------------------------------------------------------------------


def test_messages_not_a_list(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="messages"):
        anthropic.read(_write(tmp_path / "req.json", {"model": "m", "messages": "hi"}))


def test_message_not_an_object_names_its_path(tmp_path: Path) -> None:
    body = _body()
    body["messages"][1] = "oops"
    with pytest.raises(TranscriptError) as err:
        anthropic.read(_write(tmp_path / "req.json", body))
    assert err.value.where == "$.messages[1]"


def test_log_without_any_request(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="no request"):
        anthropic.read(_write(tmp_path / "log.jsonl", [{"a": 1}, {"b": 2}], jsonl=True))


# --- round trip through the exporter ------------------------------------------------------


def test_export_then_import_keeps_the_conversation(tmp_path: Path) -> None:
    t = load(_write(tmp_path / "req.json", _body()))
    again = request_to_transcript(to_anthropic(t))
    assert [m.content for m in again.messages] == [m.content for m in t.messages]
    assert again.tools == t.tools


# --- block dicts: the shape the importers validate in bulk ------------------------------


def _mixed_content() -> list[Any]:
    return [
        "bare string",
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": "hmm", "signature": 7},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": "a.py"},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}], "is_error": "yes"},
        {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}},
        {"type": "redacted_thinking", "data": "..."},
        {"type": "text", "text": 5},
        42,
    ]


def test_convert_blocks_is_block_dicts_validated() -> None:
    from pydantic import TypeAdapter

    from lab.core.messages import Block, ImportNotes

    notes_a, notes_b = ImportNotes(), ImportNotes()
    dicts = anthropic.block_dicts(_mixed_content(), notes_a, "w")
    blocks = anthropic.convert_blocks(_mixed_content(), notes_b, "w")
    assert blocks == [TypeAdapter(Block).validate_python(d) for d in dicts]
    # A text written as a number is read as its text, and counted in a warning.
    assert [type(b) for b in blocks] == [TextBlock, TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, ImageBlock, TextBlock]
    assert blocks[-1] == TextBlock(text="5")
    assert notes_a == notes_b
    assert notes_a.skipped == {"block:redacted_thinking": 1, "block:invalid": 1}
    assert "1 text field(s) held a number, read as its text" in notes_a.warnings
    assert blocks[2] == ThinkingBlock(thinking="hmm", signature=None)
    assert blocks[3] == ToolUseBlock(id="t1", name="Read", input={"value": "a.py"})
    assert blocks[4] == ToolResultBlock(tool_use_id="t1", content="ok", is_error=False)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "x",
        {},
        {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 6},
        {"input_tokens": True, "output_tokens": -1, "cache_read_input_tokens": 2.5, "cache_creation_input_tokens": "7"},
        {"input_tokens": 10**20, "output_tokens": None},
    ],
)
def test_usage_fields_are_the_fields_of_usage_from(raw: Any) -> None:
    fields = anthropic.usage_fields(raw)
    usage = anthropic.usage_from(raw)
    assert (fields is None) == (usage is None) == (not isinstance(raw, dict))
    if usage is not None:
        assert usage.model_dump() == fields


def test_a_bare_list_of_messages_is_a_saved_conversation(tmp_path: Path) -> None:
    # Cline and Roo Code save api_conversation_history.json as a top-level list of Messages-API messages.
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "<task>fix the bug</task>"}], "ts": 1732867200000},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}], "ts": 1732867201000},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}], "ts": 1732867202000},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(msgs), encoding="utf-8")
    assert detect(path) == "anthropic"
    t = load(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert len(tool_pairs(t.messages)) == 1
    assert t.messages[0].timestamp is not None and t.messages[0].timestamp.year == 2024
    assert t.messages[3].timestamp is None
    # Text-only turns read the same through openai_chat, which claims them and keeps their "ts" too.
    path.write_text(json.dumps([msgs[0], {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "ts": 1732867201000}]), encoding="utf-8")
    plain = load(path)
    assert [m.role for m in plain.messages] == ["user", "assistant"] and all(m.timestamp is not None for m in plain.messages)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


@pytest.mark.parametrize("role", [["user"], {"role": "user"}], ids=["list", "object"])
def test_a_message_whose_role_is_not_text_is_skipped_and_counted(role: Any) -> None:
    # A Cline api_conversation_history.json with such a message raised TypeError (set lookup).
    body = _body()
    body["messages"].insert(1, {"role": role, "content": "x"})
    t = request_to_transcript(body)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"] and t.notes.skipped == {"role:missing": 1}
