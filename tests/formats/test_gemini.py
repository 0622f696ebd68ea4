"""Gemini importer: API bodies, SDK dumps, Gemini CLI files, pairing, errors, detection.

Where each fixture shape comes from:

* Gemini API request body (camelCase ``contents`` / ``systemInstruction`` /
  ``tools[].functionDeclarations``; Part fields ``text``, ``thought``,
  ``thoughtSignature``, ``functionCall {id?, name, args}``, ``functionResponse
  {id?, name, response, parts?}``, ``inlineData``, ``fileData``,
  ``executableCode``, ``codeExecutionResult``): the field names of
  googleapis/python-genai google/genai/types.py (classes Part, FunctionCall,
  FunctionResponse, Blob, FileData, ExecutableCode, CodeExecutionResult,
  Content, Tool, FunctionDeclaration), which the REST API spells in camelCase.
* The SDK's snake_case dump (``function_call``, ``inline_data``, the request's
  ``config.system_instruction`` and ``config.tools``): the same file,
  GenerateContentConfig and the snake_case model fields.
* Gemini CLI chat recordings: google-gemini/gemini-cli
  packages/core/src/services/chatRecordingTypes.ts (ConversationRecord,
  MessageRecord with types user / gemini / info / error / warning,
  ToolCallRecord, TokensSummary, ``$rewindTo`` and ``$set`` records) and
  packages/core/src/services/chatRecordingService.ts (the JSONL log: header
  line, a message written again by id replaces the earlier copy, legacy
  single-JSON files); tool results as ``functionResponse {id, name, response:
  {output}}``: packages/core/src/utils/generateContentResponseUtilities.ts.
* ``/chat save`` checkpoints ``{history, authType}`` and the legacy bare list of
  Content: google-gemini/gemini-cli packages/core/src/core/logger.ts
  (Checkpoint, loadCheckpoint); ``/chat share <file>.json`` writes the bare
  list: packages/cli/src/ui/commands/chatCommand.ts.
* ``/restore`` checkpoints ``{history, clientHistory, commitHash, toolCall,
  messageId}``: google-gemini/gemini-cli packages/core/src/utils/checkpointUtils.ts.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, dump, load
from lab.formats.editors import gemini
from lab.formats.export import to_anthropic, to_openai
from lab.formats.tool_results import anthropic_tool_id, openai_tool_id
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, ROOT, corpus_id

PNG = base64.b64encode(b"\x89PNG" + b"\0" * 296).decode()  # 300 bytes once decoded


def _write(tmp_path: Path, doc: Any, name: str = "gemini.json", indent: int | None = None) -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=indent), encoding="utf-8")
    return p


def _jsonl(tmp_path: Path, records: list[Any], name: str = "session-2025-10-18T14-57-abcd1234.jsonl") -> Path:
    return _write(tmp_path, "".join(json.dumps(r) + "\n" for r in records), name)


def _user(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def _model(*parts: Any) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def _call(name: str, args: dict[str, Any] | None = None, cid: str | None = None) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name, "args": args or {}}
    if cid:
        fc["id"] = cid
    return {"functionCall": fc}


def _resp(name: str, response: Any, cid: str | None = None) -> dict[str, Any]:
    fr: dict[str, Any] = {"name": name, "response": response}
    if cid:
        fr["id"] = cid
    return {"functionResponse": fr}


CONTENTS = [
    _user({"text": "What is in src/?"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}),
    _model(
        {"text": "**Planning**\nList first.", "thought": True, "thoughtSignature": "c2lnMQ=="},
        {"text": "Let me look."},
        _call("list_directory", {"path": "src"}) | {"thoughtSignature": "c2lnMg=="},
        _call("read_file", {"path": "src/a.py"}),
    ),
    _user(_resp("list_directory", {"output": "a.py\nb.py"}), _resp("read_file", {"error": "permission denied"})),
    _model({"executableCode": {"language": "PYTHON", "code": "print(1 + 1)"}}, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}}),
    _user({"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/spec.pdf"}}, {"videoMetadata": {"fps": 1}, "fileData": {"mimeType": "video/mp4", "fileUri": "https://x/v.mp4"}}, {"somethingNew": {}}),
    _model({"text": "Done: two files."}),
]
BODY = {
    "contents": CONTENTS,
    "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
    "tools": [
        {"functionDeclarations": [{"name": "list_directory", "description": "List a folder", "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}}}]},
        {"googleSearch": {}},
    ],
    "generationConfig": {"temperature": 0},
}


def _snake(value: Any) -> Any:
    """The SDK's snake_case spelling of a camelCase body (keys only; args and responses are data)."""
    if isinstance(value, list):
        return [_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        key = "".join("_" + c.lower() if c.isupper() else c for c in k)
        out[key] = v if k in ("args", "response", "parameters") else _snake(v)
    return out


@pytest.fixture()
def body(tmp_path: Path) -> Transcript:
    return load(_write(tmp_path, BODY))


class TestApiBody:
    def test_roles_system_and_tools(self, body: Transcript) -> None:
        assert [m.role for m in body.messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
        assert body.messages[0].content == (TextBlock(text="You are a coding agent."),)
        assert [t.name for t in body.tools] == ["list_directory"]
        assert body.tools[0].input_schema["properties"]["path"] == {"type": "STRING"}
        assert body.notes.skipped["tool:googleSearch"] == 1
        assert body.meta.source_format == "gemini"

    def test_images_keep_their_size_never_their_bytes(self, tmp_path: Path, body: Transcript) -> None:
        image = body.messages[1].content[1]
        assert image == ImageBlock(media_type="image/png", size_bytes=300, source="base64")
        assert PNG not in json.dumps(dump(body))

    def test_thoughts_text_and_calls(self, body: Transcript) -> None:
        thought, text, ls, read = body.messages[2].content
        assert thought == ThinkingBlock(thinking="**Planning**\nList first.", signature="c2lnMQ==")
        assert text == TextBlock(text="Let me look.")
        assert isinstance(ls, ToolUseBlock) and (ls.name, ls.input) == ("list_directory", {"path": "src"})
        # No source ids: derived from the position, so a replay gets the same ones.
        assert (ls.id, getattr(read, "id", None)) == ("call_c1.2", "call_c1.3")
        # A signature on a function call part has no canonical home: dropped and counted.
        assert body.notes.skipped["thought_signature"] == 1

    def test_responses_render_their_output_or_error(self, body: Transcript) -> None:
        ok, failed = body.messages[3].content
        assert isinstance(ok, ToolResultBlock) and isinstance(failed, ToolResultBlock)
        assert (ok.tool_use_id, ok.content, ok.is_error) == ("call_c1.2", "a.py\nb.py", False)
        assert (failed.tool_use_id, failed.content, failed.is_error) == ("call_c1.3", "permission denied", True)
        assert not body.notes.orphan_tool_results and not body.notes.unanswered_tool_uses

    def test_code_execution_and_files_become_text(self, body: Transcript) -> None:
        code, result = body.messages[4].content
        assert code == TextBlock(text="```python\nprint(1 + 1)\n```")
        assert result == TextBlock(text="[code execution: OUTCOME_OK]\n2")
        pdf, video = body.messages[5].content
        assert pdf == TextBlock(text="[file: application/pdf, gs://bucket/spec.pdf]")
        assert video == TextBlock(text="[file: video/mp4, https://x/v.mp4]")

    def test_unknown_parts_are_counted(self, body: Transcript) -> None:
        assert body.notes.skipped["part:somethingNew"] == 1
        assert body.notes.records_read == len(CONTENTS)

    @pytest.mark.parametrize(
        ("response", "text", "is_error"),
        [
            ({"output": "plain"}, "plain", False),
            ({"result": {"rows": 2}}, '{"rows":2}', False),
            ({"output": "partial", "error": "timeout"}, "partial\ntimeout", True),
            ({"stdout": "x", "exit_code": 1}, '{"stdout":"x","exit_code":1}', False),
            ({"content": "x", "error": {"code": 3}}, '{"content":"x","error":{"code":3}}', True),
            ({}, "{}", False),
        ],
        ids=["output", "result-json", "output-and-error", "other-fields", "other-with-error", "empty"],
    )
    def test_response_rendering(self, response: dict[str, Any], text: str, is_error: bool) -> None:
        t = gemini.from_contents([_model(_call("f")), _user(_resp("f", response))])
        block = t.messages[1].content[0]
        assert isinstance(block, ToolResultBlock) and (block.content, block.is_error) == (text, is_error)

    def test_parts_after_a_response_belong_to_it(self) -> None:
        # The Gemini CLI sends a file's bytes or extra text beside the functionResponse.
        t = gemini.from_contents(
            [
                _model(_call("read_many_files")),
                _user({"text": "and now?"}, _resp("read_many_files", {"output": "Tool execution succeeded."}), {"text": "--- a.py ---\nx = 1"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}),
            ]
        )
        result, follow_up = t.messages[1], t.messages[2]
        assert result.content == (
            ToolResultBlock(tool_use_id="call_c0.0", content="Tool execution succeeded.\n--- a.py ---\nx = 1\n[image: image/png, 300 bytes]"),
        )
        assert follow_up.role == "user" and follow_up.content == (TextBlock(text="and now?"),)

    def test_function_role_and_separate_response_turns_share_one_message(self) -> None:
        t = gemini.from_contents([_model(_call("a"), _call("b")), {"role": "function", "parts": [_resp("a", {"output": "1"})]}, _user(_resp("b", {"output": "2"}))])
        assert len(t.messages) == 2
        assert [b.content for b in t.messages[1].content if isinstance(b, ToolResultBlock)] == ["1", "2"]

    def test_strings_missing_roles_and_unknown_roles(self) -> None:
        t = gemini.from_contents(["hello", {"parts": [{"text": "no role"}]}, {"role": "system", "parts": [{"text": "x"}]}, _model()])
        assert [m.role for m in t.messages] == ["user", "user"]
        assert t.notes.skipped == {"role:system": 1, "empty turn": 1}

    def test_exports_keep_every_tool_pair(self, body: Transcript) -> None:
        pairs = {k for k, (u, r) in tool_pairs(body.messages).items() if u is not None and r is not None}
        assert len(pairs) == 2
        anthropic = to_anthropic(body)
        # Gemini's ids are the lab's ("call_c1.2"); Anthropic takes only [A-Za-z0-9_-], so its export rewrites them.
        assert {b["tool_use_id"] for m in anthropic["messages"] for b in m["content"] if b["type"] == "tool_result"} == {anthropic_tool_id(i) for i in pairs}
        assert {m["tool_call_id"] for m in to_openai(body)["messages"] if m["role"] == "tool"} == {openai_tool_id(i) for i in pairs}


class TestSdkDump:
    def test_snake_case_dump_imports_like_the_rest_body(self, tmp_path: Path, body: Transcript) -> None:
        doc = {"model": "models/gemini-2.5-pro", "contents": _snake(CONTENTS), "config": _snake({"systemInstruction": BODY["systemInstruction"], "tools": BODY["tools"]})}
        t = load(_write(tmp_path, doc, "sdk.json"))
        assert [m.model_dump() for m in t.messages] == [m.model_dump() for m in body.messages]
        assert t.tools == body.tools
        assert t.meta.model == "gemini-2.5-pro"

    def test_system_instruction_as_plain_text(self) -> None:
        t = gemini.from_document({"contents": [_user({"text": "hi"})], "config": {"system_instruction": "Be brief."}})
        assert t.messages[0].role == "system" and t.messages[0].content == (TextBlock(text="Be brief."),)


class TestCliFiles:
    def test_chat_share_is_a_bare_contents_list(self, tmp_path: Path, body: Transcript) -> None:
        t = load(_write(tmp_path, CONTENTS, "gemini-conversation-1760800000000.json", indent=2))
        assert [m.model_dump() for m in t.messages] == [m.model_dump() for m in body.messages[1:]]

    def test_chat_save_checkpoint(self, tmp_path: Path, body: Transcript) -> None:
        t = load(_write(tmp_path, {"history": CONTENTS, "authType": "oauth-personal"}, "checkpoint-my%20tag.json", indent=2))
        assert len(t.messages) == len(body.messages) - 1
        assert t.meta.title == "Gemini CLI saved chat"

    def test_restore_checkpoint_reads_the_client_history(self, tmp_path: Path) -> None:
        doc = {
            "history": [{"type": "user", "text": "write it", "id": 1}],
            "clientHistory": [_user({"text": "write it"}), _model(_call("write_file", {"file_path": "a.py"}, "w1"))],
            "toolCall": {"name": "write_file", "args": {"file_path": "a.py"}},
            "commitHash": "0123abc",
            "messageId": "p-1",
        }
        t = load(_write(tmp_path, doc, "2025-10-18T14-57-00_000Z-a.py-write_file.json", indent=2))
        assert [m.role for m in t.messages] == ["user", "assistant"]
        # The checkpoint was written before the tool ran: its call is unanswered.
        assert t.notes.unanswered_tool_uses == ["w1"]


class TestPairing:
    def test_ids_pair_out_of_order_responses(self) -> None:
        t = gemini.from_contents([_model(_call("run", cid="a"), _call("run", cid="b")), _user(_resp("run", {"output": "B"}, "b"), _resp("run", {"output": "A"}, "a"))])
        assert {r.tool_use_id: r.content for r in t.messages[1].content if isinstance(r, ToolResultBlock)} == {"b": "B", "a": "A"}

    def test_without_ids_the_oldest_call_of_that_name_answers(self) -> None:
        t = gemini.from_contents(
            [_model(_call("run", {"n": 1}), _call("ls"), _call("run", {"n": 2})), _user(_resp("run", {"output": "first"}), _resp("ls", {"output": "l"}), _resp("run", {"output": "second"}))]
        )
        uses = {u.id: u.input for u in t.messages[0].content if isinstance(u, ToolUseBlock)}
        answers = {r.tool_use_id: r.content for r in t.messages[1].content if isinstance(r, ToolResultBlock)}
        assert answers == {"call_c0.0": "first", "call_c0.1": "l", "call_c0.2": "second"}
        assert uses["call_c0.0"] == {"n": 1}

    def test_response_id_unknown_falls_back_to_the_name(self) -> None:
        t = gemini.from_contents([_model(_call("run")), _user(_resp("run", {"output": "x"}, "other-id"))])
        assert t.messages[1].content[0] == ToolResultBlock(tool_use_id="call_c0.0", content="x")
        assert not t.notes.orphan_tool_results

    def test_orphans_duplicates_and_unanswered_calls_are_noted(self) -> None:
        t = gemini.from_contents(
            [
                _model(_call("run", cid="a"), _call("ls")),
                _user(_resp("run", {"output": "x"}, "a")),
                _user(_resp("run", {"output": "again"}, "a"), _resp("grep", {"output": "?"})),
            ]
        )
        assert t.notes.skipped["functionResponse (duplicate)"] == 1
        assert t.notes.orphan_tool_results == ["call_c2.r1"]
        assert t.notes.unanswered_tool_uses == ["call_c0.1"]

    def test_repeated_ids_across_turns_pair_with_the_latest_call(self) -> None:
        t = gemini.from_contents([_model(_call("run", cid="c1")), _user(_resp("run", {"output": "1"}, "c1")), _model(_call("run", cid="c1")), _user(_resp("run", {"output": "2"}, "c1"))])
        assert {k: r for k, (_, r) in tool_pairs(t.messages).items()} == {"c1": 1, "c1#2": 3}


TS = "2025-10-18T14:57:28.974Z"
HEADER = {"sessionId": "f86f5318-f47b-4433-85f8-ec9d9a417f8e", "projectHash": "79b6fa86e3c0d317", "startTime": TS, "lastUpdated": TS}
TOOL_CALL = {
    "id": "run_shell_command-1760799450000-1",
    "name": "run_shell_command",
    "args": {"command": "ls"},
    "result": [{"functionResponse": {"id": "run_shell_command-1760799450000-1", "name": "run_shell_command", "response": {"output": "a.py\nb.py"}}}],
    "status": "success",
    "timestamp": "2025-10-18T14:57:31.000Z",
    "displayName": "Shell",
    "resultDisplay": "a.py\nb.py",
}
MESSAGES = [
    {"id": "u1", "timestamp": TS, "type": "user", "content": "List the files"},
    {
        "id": "g1",
        "timestamp": "2025-10-18T14:57:30.000Z",
        "type": "gemini",
        "content": "",
        "thoughts": [{"subject": "Listing files", "description": "I'll run ls.", "timestamp": TS}],
        "tokens": {"input": 1000, "output": 20, "cached": 400, "thoughts": 30, "tool": 0, "total": 1050},
        "model": "gemini-2.5-pro",
        "toolCalls": [TOOL_CALL, {"id": "rm-1", "name": "run_shell_command", "args": {"command": "rm x"}, "result": [{"functionResponse": {"id": "rm-1", "name": "run_shell_command", "response": {"error": "denied"}}}], "status": "error", "timestamp": TS}],
    },
    {"id": "i1", "timestamp": TS, "type": "info", "content": "Request cancelled."},
    {"id": "w1", "timestamp": TS, "type": "warning", "content": "Low disk."},
    {"id": "e1", "timestamp": TS, "type": "error", "content": "Quota exceeded."},
    {"id": "x1", "timestamp": TS, "type": "compression", "content": ""},
    {"id": "g2", "timestamp": "2025-10-18T14:57:35.000Z", "type": "gemini", "content": [{"text": "Two files."}], "model": "gemini-2.5-pro"},
]


class TestChatRecording:
    @pytest.fixture()
    def t(self, tmp_path: Path) -> Transcript:
        return load(_write(tmp_path, {**HEADER, "messages": MESSAGES}, "session-2025-10-18T14-57-f86f5318.json", indent=2))

    def test_messages_and_meta(self, t: Transcript) -> None:
        assert [(m.role, m.id) for m in t.messages] == [("user", "u1"), ("assistant", "g1"), ("user", "g1.t0"), ("assistant", "g2")]
        assert (t.meta.session_id, t.meta.model, t.meta.title) == (HEADER["sessionId"], "gemini-2.5-pro", "Gemini CLI session")
        assert t.messages[0].timestamp is not None and t.messages[0].timestamp.isoformat() == "2025-10-18T14:57:28.974000+00:00"

    def test_older_qwen_code_session_files_type_model_turns_qwen(self, tmp_path: Path) -> None:
        qwen = [{**m, "type": "qwen"} if m.get("type") == "gemini" else m for m in MESSAGES]
        t = load(_write(tmp_path, {**HEADER, "messages": qwen}, "session-2025-10-18T14-57-f86f5318.json", indent=2))
        assert [(m.role, m.id) for m in t.messages] == [("user", "u1"), ("assistant", "g1"), ("user", "g1.t0"), ("assistant", "g2")]
        assert "message:qwen" not in t.notes.skipped

    def test_thoughts_calls_and_tokens(self, t: Transcript) -> None:
        g1 = t.messages[1]
        assert g1.content[0] == ThinkingBlock(thinking="Listing files\nI'll run ls.")
        assert [b.id for b in g1.content if isinstance(b, ToolUseBlock)] == [TOOL_CALL["id"], "rm-1"]
        assert g1.usage is not None
        assert (g1.usage.input_tokens, g1.usage.cache_read_tokens, g1.usage.output_tokens, g1.usage.total) == (600, 400, 50, 1050)

    def test_results_follow_their_calls(self, t: Transcript) -> None:
        ok, denied = t.messages[2].content
        assert ok == ToolResultBlock(tool_use_id=TOOL_CALL["id"], content="a.py\nb.py")
        assert denied == ToolResultBlock(tool_use_id="rm-1", content="denied", is_error=True)
        assert t.messages[2].timestamp is not None and t.messages[2].timestamp.second == 31

    def test_notices_and_unknown_types_are_counted(self, t: Transcript) -> None:
        assert t.notes.skipped == {"message:info": 1, "message:warning": 1, "message:error": 1, "message:compression": 1}
        assert t.notes.records_read == len(MESSAGES)

    def test_status_error_marks_a_result_and_a_missing_result_stays_unanswered(self) -> None:
        calls = [{"id": "a", "name": "f", "args": {}, "result": "boom", "status": "error"}, {"id": "b", "name": "g", "args": {}, "status": "cancelled"}]
        t = gemini.from_document({**HEADER, "messages": [{"id": "g", "type": "gemini", "content": "", "toolCalls": calls}]})
        assert t.messages[1].content == (ToolResultBlock(tool_use_id="a", content="boom", is_error=True),)
        assert t.notes.unanswered_tool_uses == ["b"]

    def test_summary_and_subagent_titles(self) -> None:
        assert gemini.from_document({**HEADER, "summary": "Fix the parser", "messages": []}).meta.title == "Fix the parser"
        assert gemini.from_document({**HEADER, "kind": "subagent", "messages": []}).meta.title == "Gemini CLI subagent session"


class TestChatRecordingLog:
    def test_the_log_replays_like_the_json_file(self, tmp_path: Path) -> None:
        legacy = load(_write(tmp_path, {**HEADER, "messages": MESSAGES}, "s.json"))
        log = load(_jsonl(tmp_path, [HEADER, *MESSAGES, {"$set": {"lastUpdated": "2025-10-18T15:00:00Z"}}]))
        assert [m.model_dump() for m in log.messages] == [m.model_dump() for m in legacy.messages]
        assert log.notes.records_read == len(MESSAGES) + 2

    def test_a_message_written_again_replaces_its_first_copy(self, tmp_path: Path) -> None:
        g1 = {"id": "g1", "timestamp": TS, "type": "gemini", "content": "", "toolCalls": [{**TOOL_CALL, "result": None, "status": "executing"}]}
        done = {**g1, "toolCalls": [TOOL_CALL], "tokens": {"input": 10, "output": 1, "cached": 0, "total": 11}}
        t = load(_jsonl(tmp_path, [HEADER, MESSAGES[0], g1, MESSAGES[-1], done]))
        assert [m.id for m in t.messages] == ["u1", "g1", "g1.t0", "g2"]
        assert t.messages[1].usage is not None and t.messages[1].usage.input_tokens == 10
        assert not t.notes.unanswered_tool_uses

    def test_rewind_drops_the_message_and_everything_after(self, tmp_path: Path) -> None:
        u2 = {"id": "u2", "timestamp": TS, "type": "user", "content": "actually, stop"}
        t = load(_jsonl(tmp_path, [HEADER, MESSAGES[0], MESSAGES[-1], u2, {"$rewindTo": "g2"}, {"id": "u3", "type": "user", "content": "again"}]))
        assert [m.id for m in t.messages] == ["u1", "u3"]
        cleared = load(_jsonl(tmp_path, [HEADER, MESSAGES[0], {"$rewindTo": "nope"}], "c.jsonl"))
        assert cleared.messages == []

    def test_set_messages_replaces_the_history_and_sets_the_title(self, tmp_path: Path) -> None:
        synced = [{"id": "s1", "type": "user", "content": [{"text": "summary of earlier work"}]}, MESSAGES[-1]]
        t = load(_jsonl(tmp_path, [HEADER, *MESSAGES[:2], {"$set": {"messages": synced, "summary": "Listing"}}, {"id": "u9", "type": "user", "content": "next"}]))
        assert [m.id for m in t.messages] == ["s1", "g2", "u9"]
        assert t.meta.title == "Listing"

    def test_history_sync_does_not_double_calls_or_results(self, tmp_path: Path) -> None:
        # Newer CLIs sync the model's history into the log: a gemini record's content then holds the
        # functionCall parts its toolCalls already record, and a user record holds the responses.
        fc = {"functionCall": {"id": TOOL_CALL["id"], "name": "run_shell_command", "args": {"command": "ls"}}}
        g1 = {"id": "g1", "timestamp": TS, "type": "gemini", "content": [fc], "toolCalls": [TOOL_CALL]}
        u2 = {"id": "u2", "timestamp": TS, "type": "user", "content": TOOL_CALL["result"]}
        t = load(_jsonl(tmp_path, [HEADER, MESSAGES[0], g1, u2, MESSAGES[-1]]))
        assert [m.id for m in t.messages] == ["u1", "g1", "g1.t0", "g2"]
        assert t.notes.skipped == {"functionCall (also in toolCalls)": 1, "functionResponse (duplicate)": 1}

    def test_a_header_alone_is_an_empty_session(self, tmp_path: Path) -> None:
        t = load(_jsonl(tmp_path, [HEADER]))
        assert t.messages == [] and t.meta.session_id == HEADER["sessionId"]


class TestErrors:
    @pytest.mark.parametrize(
        ("doc", "where"),
        [
            ({"contents": [_user({"text": "x"}), 3]}, "$.contents[1]"),
            ({"contents": [{"role": "user", "parts": 7}]}, "$.contents[0].parts"),
            ({"contents": [_model({"text": "x"}, ["not", "a", "part"])]}, "$.contents[0].parts[1]"),
            ({"contents": [_model({"functionCall": {"args": {}}})]}, "$.contents[0].parts[0].functionCall"),
            ({"contents": [_model({"function_call": "ls"})]}, "$.contents[0].parts[0].function_call"),
            ({"contents": [_user({"functionResponse": {"response": {}}})]}, "$.contents[0].parts[0].functionResponse"),
            ({"contents": [_model({"text": 5})]}, "$.contents[0].parts[0].text"),
            ({**HEADER, "messages": [{"id": "g", "type": "gemini", "toolCalls": {"a": 1}}]}, "$.messages[0].toolCalls"),
            ({**HEADER, "messages": [{"id": "g", "type": "gemini", "toolCalls": [{"args": {}}]}]}, "$.messages[0].toolCalls[0]"),
            ({**HEADER, "messages": "none"}, "$.messages"),
            ({"contents": [], "config": {"system_instruction": [3]}}, "$.config.system_instruction[0]"),
            ({"contents": "hi", "model": "m"}, "$"),
        ],
        ids=["content", "parts", "part", "call-name", "call-not-object", "response-name", "text", "tool-calls", "tool-call-name", "messages", "system", "not-gemini"],
    )
    def test_bad_documents_say_where(self, doc: Any, where: str) -> None:
        with pytest.raises(TranscriptError) as err:
            gemini.from_document(doc, file="g.json")
        assert err.value.where == where
        assert err.value.file == "g.json"

    def test_a_bad_log_line_names_the_line(self, tmp_path: Path) -> None:
        p = _jsonl(tmp_path, [HEADER, MESSAGES[0], {"id": "g", "type": "gemini", "content": [{"text": ["x"]}]}])
        with pytest.raises(TranscriptError) as err:
            load(p)
        assert err.value.where == "line 3, $.content[0].text"

    def test_string_arguments_are_parsed_or_kept(self) -> None:
        t = gemini.from_contents([_model({"functionCall": {"name": "f", "args": '{"a": 1}'}}, {"functionCall": {"name": "g", "args": "oops"}})])
        assert [b.input for b in t.messages[0].content if isinstance(b, ToolUseBlock)] == [{"a": 1}, {"_raw": "oops"}]
        assert any("not valid JSON" in w for w in t.notes.warnings)


def _head_only(path: Path) -> Any:
    return replace(read_file_head(path), records=None, document=None)


class TestDetection:
    @pytest.mark.parametrize(
        "doc",
        [
            BODY,
            {"model": "gemini-2.5-flash", "contents": _snake(CONTENTS)},
            CONTENTS,
            [{"role": "user", "parts": [{"text": "x"}]}, {"role": "function", "parts": [_resp("f", {})]}],
            {"history": CONTENTS, "authType": "gemini-api-key"},
            {"history": [{"type": "user", "text": "x"}], "clientHistory": CONTENTS, "toolCall": {"name": "write_file", "args": {}}},
            {**HEADER, "messages": MESSAGES},
        ],
        ids=["rest-body", "sdk-dump", "bare-contents", "function-role", "chat-save", "restore", "cli-json"],
    )
    def test_shapes_are_claimed_whole_and_from_the_head(self, tmp_path: Path, doc: Any) -> None:
        p = _write(tmp_path, doc, indent=2)
        assert detect(p) == "gemini"
        assert gemini.sniff(read_file_head(p)) == 95
        assert gemini.sniff(_head_only(p)) >= 85
        # Too large to parse while probing, the head alone must still pick Gemini.
        from lab.formats.detect import scores

        head_scores = scores(_head_only(p))
        assert max(head_scores, key=lambda k: head_scores[k]) == "gemini"

    def test_cli_log_is_claimed(self, tmp_path: Path) -> None:
        assert detect(_jsonl(tmp_path, [HEADER, *MESSAGES])) == "gemini"
        assert detect(_jsonl(tmp_path, [HEADER], "one.jsonl")) == "gemini"

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_does_not_claim_corpus_files(self, path: Path) -> None:
        assert gemini.sniff(read_file_head(path)) == 0
        assert gemini.sniff(_head_only(path)) == 0

    @pytest.mark.parametrize(
        "doc",
        [
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
            {"contents": [1, 2]},
            {"history": [{"role": "user", "content": "hi"}], "trajectory": []},
            {"sessionId": "s", "messages": []},
        ],
        ids=["openai-body", "anthropic-list", "claude-code-entry", "contents-of-numbers", "swe-agent", "no-project-hash"],
    )
    def test_foreign_shapes_are_not_claimed(self, tmp_path: Path, doc: Any) -> None:
        assert gemini.sniff(read_file_head(_write(tmp_path, doc))) == 0

    def test_the_lab_json_is_not_claimed(self, tmp_path: Path, body: Transcript) -> None:
        p = _write(tmp_path, dump(body), "lab.json")
        assert detect(p) == "lab"
        assert load(p).messages == body.messages


_KEYS = st.sampled_from(
    [
        "contents", "role", "parts", "text", "thought", "thoughtSignature", "functionCall", "function_call", "functionResponse",
        "function_response", "name", "id", "args", "response", "output", "error", "inlineData", "fileData", "mimeType", "data",
        "executableCode", "codeExecutionResult", "systemInstruction", "tools", "functionDeclarations", "history", "clientHistory",
        "toolCall", "sessionId", "projectHash", "messages", "type", "content", "toolCalls", "result", "status", "tokens", "thoughts",
        "$set", "$rewindTo", "config",
    ]
)  # fmt: skip
_VALUES = st.sampled_from(["user", "model", "gemini", "info", "function", "image/png", "error", "ls", "a", "s", "h"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | _VALUES | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=80, deadline=None)
@given(_JSON)
def test_arbitrary_json_raises_only_transcript_error(value: Any) -> None:
    for doc in (value, [value], {"contents": [value]}, {"contents": [{"role": "model", "parts": [value]}]}, {**HEADER, "messages": [value]}):
        with contextlib.suppress(TranscriptError):
            gemini.from_document(doc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.dictionaries(_KEYS, _JSON, max_size=5), min_size=1, max_size=4))
def test_arbitrary_log_records_raise_only_transcript_error(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    p = _jsonl(tmp_path, [HEADER, *records])
    try:
        t = gemini.read(p)
    except TranscriptError:
        return
    assert len({m.id for m in t.messages}) == len(t.messages)
    assert all(res > use for use, res in tool_pairs(t.messages).values() if use is not None and res is not None)


def test_python_m_lab_import_exits_0(tmp_path: Path) -> None:
    src = _jsonl(tmp_path, [HEADER, *MESSAGES])
    out = tmp_path / "lab.json"
    proc = subprocess.run([sys.executable, "-m", "lab", "import", str(src), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "as gemini" in proc.stdout
    assert "message:info 1" in proc.stdout
    assert len(json.loads(out.read_text())["messages"]) == 4
