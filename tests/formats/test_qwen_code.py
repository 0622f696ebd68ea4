"""Qwen Code importer: chat records, the parentUuid chain, tool calls, thinking, compression, damaged lines, detection.

The fixture (``fixtures/qwen_code/<sessionId>.jsonl``) follows QwenLM/qwen-code:
``packages/core/src/services/chatRecordingService.ts`` (the ``ChatRecord`` envelope,
``systemPayload`` shapes), ``session-api-history.ts`` (which records make the model's
history, and that a ``chat_compression`` record's ``compressedHistory`` replaces it) and
the Gemini ``Content`` of ``@google/genai``. It holds a tool loop with a thought, a failed
edit, an abandoned branch (a rewound prompt), an @-command with a screenshot, a
``/compress``, a call the user cut short and one left running at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, message_text, tool_pairs
from lab.errors import TranscriptError
from lab.formats.claude import claude_code
from lab.formats import detect, load
from lab.formats.editors import qwen_code
from lab.formats.jsonio import read_file_head
from lab.formats.registry import FileHead
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

FIXTURES = Path(__file__).parent / "fixtures" / "qwen_code"
SESSION = FIXTURES / "6d1c9a52-3f0e-4b7a-9e21-8c4d2f1a0b37.jsonl"
RECORDS: list[dict[str, Any]] = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()]


def _shape(t: Transcript) -> list[tuple[str, str | None, list[str]]]:
    return [(m.role, m.tag, [b.type for b in m.content]) for m in t.messages]


def _results(t: Transcript) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}


def _write(tmp_path: Path, records: list[Any], name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return p


def _rec(uuid: str, parent: str | None, kind: str, **kw: Any) -> dict[str, Any]:
    return {"uuid": uuid, "parentUuid": parent, "sessionId": "s1", "timestamp": "2026-03-02T09:00:00Z", "type": kind, "cwd": "/w", "version": "0.2.1", **kw}


def _user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return _rec(uuid, parent, "user", message={"role": "user", "parts": [{"text": text}]})


def _model(uuid: str, parent: str | None, *parts: dict[str, Any]) -> dict[str, Any]:
    return _rec(uuid, parent, "assistant", model="qwen3-coder-plus", message={"role": "model", "parts": list(parts)})


def _call(cid: str, name: str = "read_file") -> dict[str, Any]:
    return {"functionCall": {"id": cid, "name": name, "args": {"absolute_path": "/w/a.py"}}}


def _result(uuid: str, parent: str, cid: str, response: dict[str, Any], name: str = "read_file", **kw: Any) -> dict[str, Any]:
    part = {"functionResponse": {"id": cid, "name": name, "response": response}}
    return _rec(uuid, parent, "tool_result", message={"role": "user", "parts": [part]}, toolCallResult={"callId": cid, "status": "success", **kw})


# --- detection --------------------------------------------------------------------------------------


def test_the_session_is_detected_as_qwen_code_and_claude_code_gives_it_up() -> None:
    probe = read_file_head(SESSION)
    assert detect(SESSION) == "qwen_code"
    assert qwen_code.sniff(probe) == 97
    assert claude_code.sniff(probe) == 0


_CLAUDE_SAMPLES = sorted(SAMPLES.glob("*claude-code*.jsonl"))


@pytest.mark.parametrize("path", _CLAUDE_SAMPLES, ids=lambda p: p.name)
def test_claude_code_samples_stay_claude_code(path: Path) -> None:
    assert detect(path) == "claude_code"
    assert qwen_code.sniff(read_file_head(path)) == 0


def test_claude_code_entries_with_a_qwen_like_envelope_are_not_claimed(tmp_path: Path) -> None:
    entries = [
        {"uuid": "u1", "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"uuid": "u2", "parentUuid": "u1", "sessionId": "s", "type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
    ]
    p = _write(tmp_path, entries)
    assert qwen_code.sniff(read_file_head(p)) == 0
    assert detect(p) == "claude_code"


def test_a_head_of_only_system_records_and_a_huge_first_line() -> None:
    system = _rec("x", None, "system", subtype="session_source", systemPayload={"sourceType": "cli"})
    only_system = FileHead(path=SESSION, head="", shape="jsonl", records=[system, system], document=None)
    assert qwen_code.sniff(only_system) == 90
    huge = FileHead(path=SESSION, head=SESSION.read_text(encoding="utf-8")[:3000], shape="json", records=None, document=None)
    assert qwen_code.sniff(huge) == 75
    claude_head = FileHead(path=SESSION, head='{"parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"hi"}}', shape="json", records=None, document=None)
    assert qwen_code.sniff(claude_head) == 0


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert qwen_code.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert qwen_code.sniff(read_file_head(path)) == 0


# --- mapping ------------------------------------------------------------------------------------------


def test_the_session_maps_to_alternating_messages() -> None:
    t = load(SESSION)
    assert t.meta.source_format == "qwen_code"
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["thinking", "text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text", "tool_use", "tool_use"]),
        ("user", None, ["tool_result", "tool_result"]),
        ("assistant", None, ["text"]),
        ("system", "boundary", ["text"]),
        ("user", "summary", ["text"]),
        ("assistant", "placeholder", ["text"]),
        ("user", None, ["text"] * 5 + ["image"]),
        ("assistant", None, ["text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["tool_use"]),
        ("user", None, ["tool_result", "text"]),
        ("assistant", None, ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["tool_use"]),
    ]
    assert t.meta.session_id == "6d1c9a52-3f0e-4b7a-9e21-8c4d2f1a0b37"
    assert t.meta.cwd == "/home/dev/todo" and t.meta.model == "qwen3-coder-plus" and t.meta.title == "Qwen Code session"
    assert t.notes.records_read == len(RECORDS)


def test_thoughts_keep_their_signature_and_text_stays_text() -> None:
    t = load(SESSION)
    thinking, text, use = t.messages[1].content
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == "c2lnLXJlYWQtMQ=="
    assert thinking.thinking.startswith("The user wants a --verbose flag")
    assert isinstance(text, TextBlock) and text.text == "I'll read cli.py first."
    assert isinstance(use, ToolUseBlock) and use.name == "read_file" and use.input == {"absolute_path": "/home/dev/todo/cli.py"}


def test_usage_keeps_the_cached_prompt_tokens_apart_and_counts_thoughts_as_output() -> None:
    t = load(SESSION)
    # promptTokenCount 5200 holds the 4096 cached; 80 candidates + 40 thought tokens.
    assert t.messages[1].usage == Usage(input_tokens=1104, output_tokens=120, cache_read_tokens=4096)
    assert t.messages[14].usage == Usage(input_tokens=1500, output_tokens=30)


def test_an_at_command_prompt_is_read_as_it_was_sent_with_its_image() -> None:
    t = load(SESSION)
    prompt = t.messages[9]
    text = message_text(prompt)
    assert "Document the flag in @README.md" in text and "Content from @/home/dev/todo/README.md" in text and "A tiny todo printer." in text
    image = prompt.content[-1]
    assert isinstance(image, ImageBlock) and image.media_type == "image/png" and image.size_bytes > 0 and image.source == "base64"
    assert t.notes.skipped["system:at_command"] == 1


# --- tool calls -------------------------------------------------------------------------------------------


def test_function_responses_pair_with_their_calls_and_errors_are_marked() -> None:
    t = load(SESSION)
    pairs = tool_pairs(t.messages)
    assert pairs["call_read_1"] == (1, 2)
    assert pairs["call_edit_1"] == (3, 4) and pairs["call_sh_1"] == (3, 4)
    results = _results(t)
    assert results["call_edit_1"].is_error and "0 occurrences found" in results["call_edit_1"].content
    assert not results["call_sh_1"].is_error and "4 passed" in results["call_sh_1"].content
    assert results["call_read_1"].content.startswith("import argparse")


def test_a_call_cut_short_mid_session_is_answered_and_the_last_one_stays_unanswered() -> None:
    t = load(SESSION)
    cut = _results(t)["call_sh_2"]
    assert cut.is_error and "interrupted" in cut.content
    assert message_text(t.messages[15]).endswith("Stop, I'll run them myself.")
    assert t.notes.unanswered_tool_uses == ["call_read_3"]
    assert any("call_sh_2" in w and "answered" in w for w in t.notes.warnings)
    assert any("call_read_3" in w and "unanswered" in w for w in t.notes.warnings)


def test_a_status_error_marks_the_result_and_a_response_without_id_pairs_by_call_id(tmp_path: Path) -> None:
    response = _result("r3", "r2", "c1", {"output": "partial"}, status="error", error={"message": "boom"})
    response["message"]["parts"][0]["functionResponse"].pop("id")
    p = _write(tmp_path, [_user("r1", None, "go"), _model("r2", "r1", _call("c1")), response, _model("r4", "r3", {"text": "done"})])
    t = load(p)
    result = _results(t)["c1"]
    assert result.is_error and result.content == "partial"


def test_a_response_to_no_known_call_is_counted_not_kept(tmp_path: Path) -> None:
    records = [_user("r1", None, "go"), _model("r2", "r1", _call("c1")), _result("r3", "r2", "c1", {"output": "ok"}), _result("r4", "r3", "zz", {"output": "?"}, name="nothing")]
    records.append(_model("r5", "r4", {"text": "done"}))
    t = load(_write(tmp_path, records))
    assert set(_results(t)) == {"c1"}
    assert t.notes.skipped["functionResponse (unknown call)"] == 1 and t.notes.orphan_tool_results == ["zz"]


def test_parts_after_a_response_join_its_text(tmp_path: Path) -> None:
    result = _result("r3", "r2", "c1", {"output": "Binary content provided (1 item(s))."})
    result["message"]["parts"].append({"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}})
    t = load(_write(tmp_path, [_user("r1", None, "look"), _model("r2", "r1", _call("c1")), result, _model("r4", "r3", {"text": "a cat"})]))
    assert _results(t)["c1"].content == "Binary content provided (1 item(s)).\n[image: image/png, 5 bytes]"


# --- compression ------------------------------------------------------------------------------------------


def test_a_compression_becomes_a_boundary_before_the_tail_it_kept() -> None:
    t = load(SESSION)
    marker, summary, reply = t.messages[6:9]
    assert marker.boundary is not None and marker.boundary.strategy == qwen_code.STRATEGY == "qwen_compression"
    assert marker.boundary.trigger == "import" and marker.boundary.messages_removed == 6
    assert (marker.boundary.tokens_before, marker.boundary.tokens_after) == (7320, 1210)
    assert message_text(summary).startswith("<state_snapshot>") and summary.tag == "summary"
    assert message_text(reply) == "Got it. Thanks for the additional context!" and reply.tag == "placeholder"
    # The kept tail follows as imported once, not as a second copy.
    assert sum("README.md now has a usage section." in message_text(m) for m in t.messages) == 1


def test_undoing_the_compression_replays_the_raw_history() -> None:
    t = load(SESSION)
    undone, found, notes = apply_recorded(t, "undo")
    assert [c.action for c in found] == ["undone"] and found[0].written == 2 and found[0].strategy == "qwen_compression"
    assert [m.id for m in undone.messages] == [m.id for m in t.messages if m.tag not in ("boundary", "summary", "placeholder")]
    assert len(undone.messages) == len(t.messages) - 3 and notes
    kept, found_kept, _ = apply_recorded(t, "keep")
    assert kept is t and found_kept[0].action == "kept"


def test_a_tail_not_found_puts_the_marker_at_the_compression(tmp_path: Path) -> None:
    compressed = [{"role": "user", "parts": [{"text": "summary of it"}]}, {"role": "model", "parts": [{"text": "Got it."}]}, {"role": "user", "parts": [{"text": "never recorded"}]}]
    records = [
        _user("r1", None, "one"),
        _model("r2", "r1", {"text": "two"}),
        _rec("r3", "r2", "system", subtype="chat_compression", systemPayload={"info": {"originalTokenCount": 90, "newTokenCount": 10}, "compressedHistory": compressed}),
        _user("r4", "r3", "three"),
        _model("r5", "r4", {"text": "four"}),
    ]
    t = load(_write(tmp_path, records))
    assert _shape(t)[2:5] == [("system", "boundary", ["text"]), ("user", "summary", ["text"]), ("assistant", "placeholder", ["text"])]
    assert message_text(t.messages[5]) == "three"
    assert any("r3" in w and "not in the records" in w for w in t.notes.warnings)


def test_a_compression_without_history_is_counted(tmp_path: Path) -> None:
    records = [_user("r1", None, "one"), _model("r2", "r1", {"text": "two"}), _rec("r3", "r2", "system", subtype="chat_compression", systemPayload={"info": {}})]
    t = load(_write(tmp_path, records))
    assert all(m.boundary is None for m in t.messages) and t.notes.skipped["system:chat_compression"] == 1


# --- the chain ------------------------------------------------------------------------------------------------


def test_a_rewound_branch_is_off_the_chain_and_counted() -> None:
    t = load(SESSION)
    text = "\n".join(message_text(m) for m in t.messages)
    assert "--quiet" not in text and "Sure, adding" not in text
    assert t.notes.skipped["record (off the chain)"] == 3
    assert any("off the conversation chain" in w for w in t.notes.warnings)


def test_the_chain_is_followed_even_when_records_come_out_of_order(tmp_path: Path) -> None:
    a, b, c = _user("r1", None, "first"), _model("r2", "r1", {"text": "second"}), _user("r3", "r2", "third")
    d = _model("r4", "r3", {"text": "fourth"})
    t = load(_write(tmp_path, [a, c, b, d]))
    assert [message_text(m) for m in t.messages] == ["first", "second", "third", "fourth"]


def test_a_missing_parent_starts_the_conversation_after_it(tmp_path: Path) -> None:
    t = load(_write(tmp_path, [_user("r3", "gone", "third"), _model("r4", "r3", {"text": "fourth"})]))
    assert [message_text(m) for m in t.messages] == ["third", "fourth"]
    assert any("'gone'" in w for w in t.notes.warnings)


def test_consecutive_assistant_records_form_one_message(tmp_path: Path) -> None:
    records = [_user("r1", None, "go"), _model("r2", "r1", {"text": "thinking aloud", "thought": True}), _model("r3", "r2", {"text": "answer"}, _call("c1"))]
    records += [_result("r4", "r3", "c1", {"output": "ok"}), _model("r5", "r4", {"text": "done"})]
    t = load(_write(tmp_path, records))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["thinking", "text", "tool_use"]), ("user", None, ["tool_result"]), ("assistant", None, ["text"])]


# --- what is skipped, damaged input ---------------------------------------------------------------------------


def test_unknown_records_subtypes_and_parts_are_counted() -> None:
    t = load(SESSION)
    skipped = t.notes.skipped
    assert skipped["system:ui_telemetry"] == 1 and skipped["system:ui_telemetry_v2"] == 1 and skipped["system:slash_command"] == 2
    assert skipped["part:executableCode"] == 1


def test_unknown_record_types_and_subagent_records_are_counted(tmp_path: Path) -> None:
    records = [
        _user("r1", None, "go"),
        {"type": "checkpoint", "uuid": "k1", "sessionId": "s1"},
        _rec("x1", "r1", "assistant", isSidechain=True, message={"role": "model", "parts": [{"text": "subagent"}]}),
        _model("r2", "r1", {"text": "hello"}, {"videoMetadata": {"fps": 1}, "fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}}, {"someNewPart": {}}),
    ]
    t = load(_write(tmp_path, records))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text", "text"])]
    assert t.messages[1].content[1] == TextBlock(text="[file: video/mp4, gs://b/v.mp4]")
    assert t.notes.skipped["record:checkpoint"] == 1 and t.notes.skipped["record (sidechain)"] == 1 and t.notes.skipped["part:someNewPart"] == 1


def test_damaged_lines_are_counted_and_the_rest_imports(tmp_path: Path) -> None:
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    damaged = lines[:5] + ['{"uuid": "broken", "parentUuid": "a4", "type": "ass', "[1, 2]"] + lines[5:]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(damaged) + '\n{"uuid": "cut", "parentUuid": "d7", "type": "use', encoding="utf-8")
    t = load(p)
    assert _shape(t) == _shape(load(SESSION))
    assert t.notes.skipped["line (not JSON)"] == 2 and t.notes.skipped["line (not an object)"] == 1
    assert any("damaged line(s)" in w and "line 6" in w for w in t.notes.warnings)


def test_a_file_of_only_damaged_lines_is_a_transcript_error(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text("not json\n{also not\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="no JSON records"):
        qwen_code.read(p)


@pytest.mark.parametrize("path", _CLAUDE_SAMPLES + [SAMPLES / "codex-rollout-forecast.jsonl", SAMPLES / "generated-small.lab.json"], ids=lambda p: p.name)
def test_other_input_forced_through_the_reader_is_a_transcript_error(path: Path) -> None:
    with pytest.raises(TranscriptError) as caught:
        load(path, format="qwen_code")
    assert "could not import as" not in str(caught.value) and caught.value.reason


def test_claude_code_entries_forced_through_the_reader_say_whose_they_are() -> None:
    with pytest.raises(TranscriptError, match="not a Qwen Code session; its records carry message.content"):
        qwen_code.read(SAMPLES / "generated-claude-code.jsonl")
