"""OpenAI Responses items and Codex CLI rollouts: corpus, item mapping, compaction, errors, detection."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, message_text, tool_pairs
from lab.errors import TranscriptError
from lab.formats.openai import openai_responses as resp
from lab.formats.openai.codex import is_injected_context
from lab.formats.jsonio import read_file_head
from lab.formats.registry import FileHead
from tests.conftest import CORPUS_FILES, corpus_file, corpus_glob, corpus_id

CODEX_FILES = corpus_glob("codex/*.jsonl")
OTHER_FILES = [p for p in CORPUS_FILES if p.parent.name != "codex"]
needs_corpus = pytest.mark.corpus("codex")
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "computer_call"}


def _jsonl(tmp_path: Path, records: list[Any], name: str = "rollout.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return p


def _rec(kind: str, payload: dict[str, Any], ts: str = "2025-01-01T00:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _msg(role: str, text: str, part: str = "input_text") -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _fc(call_id: str, name: str = "shell", args: str = '{"command": ["ls"]}') -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": args, "call_id": call_id}


def _out(call_id: str, output: Any = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


ROLLOUT = [
    _rec("session_meta", {"id": "sess-1", "cli_version": "0.50.0", "cwd": "/w", "instructions": "be careful"}),
    _rec("turn_context", {"model": "gpt-5-codex", "cwd": "/w"}),
    _rec("response_item", _msg("user", "fix it")),
    _rec("event_msg", {"type": "user_message", "message": "fix it"}),
    _rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "xx"}),
    _rec("response_item", _msg("assistant", "Looking.", "output_text")),
    _rec("response_item", _fc("call_1")),
    _rec("response_item", _fc("call_2", args="{broken")),
    _rec("response_item", _out("call_1", "files")),
    _rec("response_item", _out("call_2", {"content": "boom", "success": False})),
    _rec("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 7}}}),
    _rec("compacted", {"message": "Summary of the work so far."}),
    _rec("response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
    _rec("future_record", {"x": 1}),
    _rec("response_item", {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch"}),
    _rec("response_item", {"type": "custom_tool_call_output", "call_id": "call_3", "output": "Done"}),
    _rec("response_item", {"type": "local_shell_call", "call_id": "call_4", "action": {"type": "exec", "command": ["pwd"]}}),
]


@needs_corpus
class TestCorpus:
    @pytest.mark.parametrize("path", CODEX_FILES, ids=corpus_id)
    def test_pairs_and_messages_match_raw(self, path: Path) -> None:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        items = [r["payload"] for r in records if r["type"] == "response_item"]
        raw_calls = sum(1 for i in items if i.get("type") in CALL_TYPES)
        raw_messages = sum(1 for i in items if i.get("type") == "message")
        injected = sum(1 for i in items if i.get("type") == "message" and all(is_injected_context(p["text"]) for p in i["content"]))
        instructions = records[0]["payload"].get("instructions") or ""
        t = resp.read(path)
        assert len(tool_pairs(t.messages)) == raw_calls
        # injected context (AGENTS.md, environment) becomes system messages; every other message item stays a message
        assert sum(1 for m in t.messages if m.role != "system") == raw_messages - injected
        assert [m.role for m in t.messages].count("system") in (injected, injected + 1)
        # the header's instructions, which the AGENTS.md message repeats, are in the history once
        assert sum(message_text(m).count(instructions.strip()) for m in t.messages) == (1 if instructions.strip() else 0)
        assert t.notes.records_read == len(records)
        assert t.notes.skipped.get("turn_context") == sum(1 for r in records if r["type"] == "turn_context")

    def test_meta_from_session_and_turn_context(self) -> None:
        t = resp.read(corpus_file("codex/codex-rollout-sample.jsonl"))
        assert t.meta.session_id == "019b64e5-57fa-7463-b644-fba7e456f905"
        assert t.meta.model == "gpt-5.2-codex"
        assert "0.77.0" in (t.meta.title or "")
        assert t.messages[0].timestamp is not None and t.messages[0].timestamp.tzinfo is not None

    @pytest.mark.parametrize("path", CODEX_FILES, ids=corpus_id)
    def test_detected(self, path: Path) -> None:
        assert resp.sniff(read_file_head(path)) == 95

    @pytest.mark.parametrize("path", OTHER_FILES, ids=corpus_id)
    def test_does_not_claim_other_formats(self, path: Path) -> None:
        assert resp.sniff(read_file_head(path)) == 0

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_head_only_sniff_agrees(self, path: Path) -> None:
        head_only = replace(read_file_head(path), records=None, document=None)
        assert resp.sniff(head_only) == (95 if path in CODEX_FILES else 0)


class TestRollout:
    def test_items_map_to_canonical_blocks(self, tmp_path: Path) -> None:
        t = resp.read(_jsonl(tmp_path, ROLLOUT))
        roles = [(m.role, m.tag) for m in t.messages]
        assert roles == [
            ("system", None),
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("system", "boundary"),
            ("user", "summary"),
            ("assistant", None),
            ("user", None),
            ("assistant", None),
        ]
        turn = t.messages[2]
        # reasoning, text and both calls of one turn share one assistant message
        assert [type(b) for b in turn.content] == [ThinkingBlock, TextBlock, ToolUseBlock, ToolUseBlock]
        assert turn.content[3].input == {"_raw": "{broken"}
        assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.cache_read_tokens, turn.usage.output_tokens) == (40, 60, 7)
        results = t.messages[3].content
        assert [(r.tool_use_id, r.is_error) for r in results] == [("call_1", False), ("call_2", True)]
        assert t.messages[6].content[0].input == {"input": "*** Begin Patch"}
        assert t.messages[8].content[0].name == "local_shell"
        assert t.notes.unanswered_tool_uses == ["call_4"]

    def test_compacted_record_is_boundary_then_summary(self, tmp_path: Path) -> None:
        t = resp.read(_jsonl(tmp_path, ROLLOUT))
        boundary, summary = t.messages[4], t.messages[5]
        assert boundary.boundary is not None and boundary.boundary.trigger == "import" and not boundary.content
        assert summary.content[0].text == "Summary of the work so far."

    def test_replacement_history_follows_the_boundary(self, tmp_path: Path) -> None:
        recs = [_rec("response_item", _msg("user", "old")), _rec("compacted", {"message": "s", "replacement_history": [_msg("user", "kept"), _msg("user", "s")]})]
        t = resp.read(_jsonl(tmp_path, recs))
        # the replacement history's last message is the record's summary: tagged as one
        assert [(m.role, m.tag) for m in t.messages] == [("user", None), ("system", "boundary"), ("user", None), ("user", "summary")]
        assert t.messages[2].content[0].text == "kept"

    def test_skipped_records_are_counted(self, tmp_path: Path) -> None:
        t = resp.read(_jsonl(tmp_path, ROLLOUT))
        assert t.notes.skipped == {
            "turn_context": 1,
            "event_msg:user_message": 1,
            "event_msg:token_count": 1,
            "item:ghost_snapshot": 1,
            "record:future_record": 1,
        }
        assert t.notes.records_read == len(ROLLOUT)
        assert t.meta.model == "gpt-5-codex" and t.meta.session_id == "sess-1"

    def test_older_rollout_without_type_wrapper(self, tmp_path: Path) -> None:
        recs = [
            {"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "sys"},
            {"record_type": "state"},
            _msg("user", "hi"),
            _fc("c1"),
            _out("c1"),
        ]
        path = _jsonl(tmp_path, recs)
        assert resp.sniff(read_file_head(path)) == 85
        t = resp.read(path)
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
        assert t.meta.session_id == "old-1" and tool_pairs(t.messages) == {"c1": (2, 3)}
        assert t.notes.skipped == {"record_type:state": 1}

    def test_import_is_deterministic(self, tmp_path: Path) -> None:
        path = _jsonl(tmp_path, ROLLOUT)
        assert resp.read(path) == resp.read(path)


class TestDocument:
    def test_request_body_with_instructions_and_string_input(self) -> None:
        t = resp.from_document({"model": "gpt-5", "instructions": "sys", "input": "hello", "tools": [{"type": "function", "name": "f", "parameters": {}}]})
        assert [m.role for m in t.messages] == ["system", "user"]
        assert t.meta.model == "gpt-5" and [s.name for s in t.tools] == ["f"]

    def test_bare_item_list_roles_and_parts(self, tmp_path: Path) -> None:
        items = [
            _msg("developer", "rules"),
            {"role": "user", "content": [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "https://x/y.png"}]},
            {"type": "reasoning", "summary": [], "encrypted_content": "zz"},
            _fc("c1"),
            _out("c1", [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]),
            {"type": "web_search_call", "id": "ws1", "status": "completed"},
        ]
        path = tmp_path / "items.json"
        path.write_text(json.dumps(items), encoding="utf-8")
        t = resp.read(path)
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
        assert isinstance(t.messages[1].content[1], ImageBlock)
        result = t.messages[3].content[0]
        assert isinstance(result, ToolResultBlock) and result.content == "a\nb"
        assert t.notes.skipped == {"reasoning:encrypted": 1, "item:web_search_call": 1}


class TestErrors:
    @pytest.mark.parametrize(
        ("record", "where"),
        [
            (_rec("response_item", {"type": "function_call", "name": "x", "arguments": "{}"}), "line 2, $.payload"),
            (_rec("response_item", {"type": "message", "role": "user", "content": 5}), "line 2, $.payload.content"),
            (_rec("response_item", "not an object"), "line 2, $.payload"),
            (_rec("response_item", {"type": "message", "content": []}), "line 2, $.payload"),
        ],
        ids=["call-without-id", "content-number", "payload-string", "message-without-role"],
    )
    def test_malformed_records_name_file_and_line(self, tmp_path: Path, record: dict[str, Any], where: str) -> None:
        path = _jsonl(tmp_path, [ROLLOUT[0], record])
        with pytest.raises(TranscriptError) as err:
            resp.read(path)
        assert err.value.file == str(path) and err.value.where == where

    def test_broken_line_names_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "r.jsonl"
        path.write_text(json.dumps(ROLLOUT[0]) + "\n{broken\n" + json.dumps(ROLLOUT[2]) + "\n", encoding="utf-8")
        with pytest.raises(TranscriptError) as err:
            resp.read(path)
        assert err.value.where == "line 2"

    def test_document_without_input(self) -> None:
        with pytest.raises(TranscriptError) as err:
            resp.from_document({"messages": []}, file="x.json")
        assert err.value.file == "x.json" and err.value.where == "$"

    def test_item_path_in_document(self) -> None:
        with pytest.raises(TranscriptError) as err:
            resp.from_document({"input": [_msg("user", "a"), 3]})
        assert err.value.where == "$.input[1]"


class TestSniff:
    def _probe(self, doc: Any, *, as_head: bool = False) -> FileHead:
        return FileHead(path=Path("x.json"), head=json.dumps(doc), shape="json", records=None, document=None if as_head else doc)

    @pytest.mark.parametrize("as_head", [False, True], ids=["document", "head"])
    def test_scores(self, as_head: bool) -> None:
        assert resp.sniff(self._probe({"input": [_msg("user", "a"), _fc("c")]}, as_head=as_head)) == 90
        assert resp.sniff(self._probe({"messages": [{"role": "user", "content": "a"}]}, as_head=as_head)) == 0
        assert resp.sniff(self._probe([{"role": "user", "content": "plain chat"}], as_head=as_head)) == 0

    def test_jsonl_of_other_records_is_not_claimed(self, tmp_path: Path) -> None:
        path = _jsonl(tmp_path, [{"type": "user", "message": {"role": "user", "content": "x"}, "uuid": "1"}, {"type": "assistant", "uuid": "2"}])
        assert resp.sniff(read_file_head(path)) == 0


_KEYS = st.sampled_from(
    [
        "type", "role", "content", "text", "call_id", "id", "name", "arguments", "output", "summary", "input",
        "action", "image_url", "success", "instructions", "model", "tools"
    ]
)
_VALUES = st.sampled_from(
    [
        "message", "function_call", "function_call_output", "reasoning", "custom_tool_call", "local_shell_call",
        "computer_call_output", "input_text", "output_text", "summary_text", "input_image", "user", "assistant",
        "developer", "{}"
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | _VALUES | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None)
@given(_JSON)
def test_arbitrary_json_raises_only_transcript_error(value: Any) -> None:
    for doc in (value, [value], {"input": [value], "instructions": value}):
        with contextlib.suppress(TranscriptError):
            resp.from_document(doc)


def test_chat_messages_in_message_wrappers_keep_their_tool_calls(tmp_path: Path) -> None:
    # A home-made log: Chat Completions messages tagged {"type": "message"}, which also reads as Responses items.
    records: list[Any] = [{"type": "message", "role": "user", "content": "fix the bug"}]
    records += [{"type": "message", "role": "assistant", "content": "looking"}, {"type": "message", "role": "user", "content": "ok"}] * 12
    records += [
        {"type": "message", "role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
        {"type": "message", "role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"type": "message", "role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
        {"type": "message", "role": "function", "name": "ls", "content": "a.py"},
    ]
    t = resp.read_rollout(_jsonl(tmp_path, records, "chat.jsonl"))
    uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(u.name, u.input) for u in uses] == [("read_file", {"path": "a.py"}), ("ls", {})]
    assert [r.content for r in results] == ["print(1)", "a.py"]
    assert len(tool_pairs(t.messages)) == 2
    assert not t.notes.skipped


def test_chat_tool_calls_that_are_not_a_list_are_a_clear_error(tmp_path: Path) -> None:
    records = [{"type": "message", "role": "user", "content": "hi"}, {"type": "message", "role": "assistant", "content": "", "tool_calls": {"id": "x"}}]
    with pytest.raises(TranscriptError, match="tool_calls"):
        resp.read_rollout(_jsonl(tmp_path, records, "chat.jsonl"))
