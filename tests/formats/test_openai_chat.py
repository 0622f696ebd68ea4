"""OpenAI Chat importer: corpus trajectories, role mapping, tool pairing, errors, detection."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.errors import TranscriptError
from lab.formats.openai import openai_chat
from lab.formats.jsonio import read_file_head
from lab.formats.registry import FileHead
from tests.conftest import CORPUS_FILES, corpus_file, corpus_glob, corpus_id

CHAT_FILES = corpus_glob("openai-chat/*")
OTHER_FILES = [p for p in CORPUS_FILES if p.parent.name != "openai-chat"]
needs_corpus = pytest.mark.corpus("openai-chat")


def _raw_messages(path: Path) -> list[dict[str, Any]]:
    # Demonstrations included: SWE-agent sends them with every request, so they are read as text.
    doc = json.loads(path.read_text(encoding="utf-8"))
    return list(doc.get("history") or doc.get("messages"))


_BASH_FENCE = re.compile(r"^```(?:bash|mswea_bash_command)[ \t]*$", re.M)


def _mini_text_commands(raw: list[dict[str, Any]]) -> int:
    """Answered bash commands of a mini-swe-agent text-mode history, counted from the raw dicts."""
    def text(m: dict[str, Any]) -> str:
        c = m.get("content")
        return c if isinstance(c, str) else json.dumps(c)

    return sum(
        1
        for m, nxt in zip(raw, raw[1:], strict=False)
        if m["role"] == "assistant" and len(_BASH_FENCE.findall(text(m))) == 1 and nxt["role"] == "user" and "<returncode>" in text(nxt)
    )


def _write(tmp_path: Path, doc: Any, name: str = "chat.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def _call(cid: str, name: str = "bash", args: str = '{"command": "ls"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


@needs_corpus
class TestCorpus:
    @pytest.mark.parametrize("path", CHAT_FILES, ids=corpus_id)
    def test_tool_pairs_match_raw_tool_calls(self, path: Path) -> None:
        raw = _raw_messages(path)
        raw_calls = sum(len(m.get("tool_calls") or []) for m in raw)
        raw_results = sum(1 for m in raw if m.get("role") == "tool")
        if not raw_calls and any(m.get("action") for m in raw):
            # A SWE-agent text-command trajectory: each action is a call, answered by the user message after it (the last is not).
            raw_calls = sum(1 for m in raw if m["role"] == "assistant" and m.get("action"))
            raw_results = raw_calls - 1
        elif not raw_calls:
            # A mini-swe-agent text-mode trajectory (bash in the reply, no tool_calls): a reply with exactly one bash
            # block is a call when the user message after it reports its <returncode>; format complaints, and the
            # final submit answered by the diff, stay text.
            raw_calls = raw_results = _mini_text_commands(raw)
        t = openai_chat.read(path)
        pairs = tool_pairs(t.messages)
        assert len(pairs) == raw_calls
        assert sum(1 for use, res in pairs.values() if use is not None and res is not None) == raw_results
        # every result comes after its call
        assert all(res > use for use, res in pairs.values() if use is not None and res is not None)
        assert not t.notes.orphan_tool_results

    @pytest.mark.parametrize("path", CHAT_FILES, ids=corpus_id)
    def test_roles_map_one_to_one(self, path: Path) -> None:
        raw = _raw_messages(path)
        t = openai_chat.read(path)
        by_role = {r: sum(1 for m in t.messages if m.role == r) for r in ("system", "user", "assistant")}
        assert by_role["system"] == sum(1 for m in raw if m["role"] in ("system", "developer"))
        assert by_role["assistant"] == sum(1 for m in raw if m["role"] == "assistant")
        # one user message per raw user message plus one per run of tool messages
        runs = sum(1 for i, m in enumerate(raw) if m["role"] == "tool" and (i == 0 or raw[i - 1]["role"] != "tool"))
        assert by_role["user"] == sum(1 for m in raw if m["role"] == "user") + runs

    @pytest.mark.parametrize("path", CHAT_FILES, ids=corpus_id)
    def test_detected_as_openai_chat(self, path: Path) -> None:
        assert openai_chat.sniff(read_file_head(path)) == 95

    @pytest.mark.parametrize("path", OTHER_FILES, ids=corpus_id)
    def test_does_not_claim_other_formats(self, path: Path) -> None:
        assert openai_chat.sniff(read_file_head(path)) == 0

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_head_only_sniff_agrees(self, path: Path) -> None:
        # Documents over the probe's size limit are sniffed from their first 64 KiB alone.
        head_only = replace(read_file_head(path), records=None, document=None)
        assert openai_chat.sniff(head_only) == (95 if path in CHAT_FILES else 0)

    def test_text_command_trajectory_models_commands_as_tool_calls(self) -> None:
        # The shapes themselves are tested in test_text_commands.py.
        path = corpus_file("openai-chat/swe-agent-pydicom-1458.traj")
        t = openai_chat.read(path)
        raw = _raw_messages(path)
        uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert [u.input["command"] for u in uses] == [m["action"].strip() for m in raw if m["role"] == "assistant"]
        assert raw[1].get("is_demo") and not t.notes.skipped
        assert any(w.startswith("1 demonstration entries kept") for w in t.notes.warnings)
        # the system prompt, the demonstration and the issue stay text; each reply keeps its thought; every observation is a tool result
        texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
        assert texts == [raw[0]["content"], raw[1]["content"], raw[2]["content"]] + [m["thought"].strip() for m in raw if m["role"] == "assistant"]
        results = [b.content for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert results == [m["content"] for m in raw[3:] if m["role"] == "user"]

    def test_mini_swe_agent_meta_and_exit_entry(self) -> None:
        t = openai_chat.read(corpus_file("openai-chat/mini-swe-agent-django-14238.traj.json"))
        assert t.meta.model == "deepseek/deepseek-chat"
        assert t.meta.session_id == "django__django-14238"
        assert t.meta.source_format == "openai_chat"
        assert t.notes.skipped == {"role:exit": 1}
        # the final submit call is never answered (the exit entry is not a tool message)
        assert len(t.notes.unanswered_tool_uses) == 1
        assert any(m.usage is not None and m.usage.input_tokens > 0 for m in t.messages if m.role == "assistant")

    def test_reused_call_ids_stay_unique(self) -> None:
        t = openai_chat.read(corpus_file("openai-chat/swe-agent-marshmallow-1867.traj"))
        ids = [b.id for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert len(ids) == len(set(ids)) == 13
        assert any("used more than once" in w for w in t.notes.warnings)

    def test_import_is_deterministic(self) -> None:
        path = corpus_file("openai-chat/swe-agent-marshmallow-1867.traj")
        assert openai_chat.read(path) == openai_chat.read(path)


class TestMapping:
    def test_request_body_roles_tools_and_parts(self) -> None:
        doc = {
            "model": "gpt-4o",
            "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}}]},
                {"role": "assistant", "content": None, "reasoning_content": "hmm", "tool_calls": [_call("c1"), _call("c2", "read", '{"path": "a"}')]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "y"}]},
                {"role": "assistant", "content": "done"},
            ],
        }
        t = openai_chat.from_document(doc)
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
        img = t.messages[1].content[1]
        assert isinstance(img, ImageBlock) and img.media_type == "image/jpeg" and img.size_bytes == 3
        a = t.messages[2].content
        assert isinstance(a[0], ThinkingBlock) and [b.input for b in a[1:]] == [{"command": "ls"}, {"path": "a"}]
        results = t.messages[3].content
        assert [(r.tool_use_id, r.content) for r in results] == [("c1", "x"), ("c2", "y")]
        assert t.meta.model == "gpt-4o" and [s.name for s in t.tools] == ["bash"]

    def test_bad_json_arguments_are_kept_raw_and_noted(self) -> None:
        t = openai_chat.from_messages([{"role": "assistant", "tool_calls": [_call("c1", args="{not json")]}])
        use = t.messages[0].content[0]
        assert isinstance(use, ToolUseBlock) and use.input == {"_raw": "{not json"}
        assert any("$[0].tool_calls[0].function.arguments" in w for w in t.notes.warnings)

    def test_legacy_function_call_pairs_by_name(self) -> None:
        t = openai_chat.from_messages(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": '{"q": 1}'}},
                {"role": "function", "name": "lookup", "content": "42"},
            ]
        )
        pairs = tool_pairs(t.messages)
        assert list(pairs.values()) == [(1, 2)]
        assert not t.notes.unanswered_tool_uses and not t.notes.orphan_tool_results

    def test_tool_message_without_id_answers_the_only_pending_call(self) -> None:
        t = openai_chat.from_messages([{"role": "assistant", "tool_calls": [_call("c1")]}, {"role": "tool", "content": "ok"}])
        assert tool_pairs(t.messages) == {"c1": (0, 1)}
        assert t.notes.warnings

    def test_unknown_roles_are_counted_not_fatal(self) -> None:
        t = openai_chat.from_messages([{"role": "user", "content": "a"}, {"role": "critic", "content": "b"}, {"role": "critic"}])
        assert len(t.messages) == 1 and t.notes.skipped == {"role:critic": 2}

    def test_orphan_and_unanswered_are_recorded(self) -> None:
        t = openai_chat.from_messages([{"role": "tool", "tool_call_id": "ghost", "content": "?"}, {"role": "assistant", "tool_calls": [_call("c9")]}])
        assert t.notes.orphan_tool_results == ["ghost"] and t.notes.unanswered_tool_uses == ["c9"]


class TestErrors:
    @pytest.mark.parametrize(
        ("messages", "where"),
        [
            ([{"role": "user", "content": "a"}, "oops"], "$.messages[1]"),
            ([{"content": "no role"}], "$.messages[0]"),
            ([{"role": "assistant", "tool_calls": {"id": "x"}}], "$.messages[0].tool_calls"),
            ([{"role": "assistant", "tool_calls": [{"id": "x", "function": {}}]}], "$.messages[0].tool_calls[0]"),
            ([{"role": "user", "content": 7}], "$.messages[0].content"),
            ([{"role": "tool", "content": "no id, nothing pending"}], "$.messages[0]"),
        ],
        ids=["not-an-object", "no-role", "tool-calls-not-list", "call-without-name", "content-number", "tool-without-id"],
    )
    def test_malformed_items_name_file_and_path(self, tmp_path: Path, messages: list[Any], where: str) -> None:
        path = _write(tmp_path, {"messages": messages})
        with pytest.raises(TranscriptError) as err:
            openai_chat.read(path)
        assert err.value.file == str(path) and err.value.where == where

    def test_invalid_json_names_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text('{"messages": [\n{"role": "user",\n]}', encoding="utf-8")
        with pytest.raises(TranscriptError) as err:
            openai_chat.read(path)
        assert err.value.file == str(path) and "line 3" in (err.value.where or "")

    def test_document_without_messages(self) -> None:
        with pytest.raises(TranscriptError, match="no chat messages"):
            openai_chat.from_document({"prompt": "hi"})


def _probe(doc: Any, *, as_head: bool = False) -> FileHead:
    text = json.dumps(doc)
    return FileHead(path=Path("x.json"), head=text, shape="json", records=None, document=None if as_head else doc)


class TestSniff:
    ANTHROPIC = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
        ],
    }
    OPENAI = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [_call("c")]}, {"role": "tool", "tool_call_id": "c", "content": "r"}]}

    @pytest.mark.parametrize("as_head", [False, True], ids=["document", "head"])
    def test_scores(self, as_head: bool) -> None:
        assert openai_chat.sniff(_probe(self.OPENAI, as_head=as_head)) == 90
        assert openai_chat.sniff(_probe(self.ANTHROPIC, as_head=as_head)) == 0
        assert openai_chat.sniff(_probe({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}, as_head=as_head)) == 60
        assert openai_chat.sniff(_probe({"messages": [{"role": "user", "content": "u"}]}, as_head=as_head)) == 30
        minicode = [{"role": "assistant", "tool_calls": [{"id": "t", "name": "n", "input": {}}]}, {"role": "tool_result", "tool_use_id": "t", "content": ""}]
        assert openai_chat.sniff(_probe(minicode, as_head=as_head)) == 0
        responses = {"input": [{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}]}
        assert openai_chat.sniff(_probe(responses, as_head=as_head)) == 0

    def test_plain_user_assistant_body_goes_to_anthropic(self) -> None:
        # Valid for both APIs: the Anthropic importer scores such a body higher (40 vs 30).
        from lab.formats.claude import anthropic

        probe = _probe({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
        assert anthropic.sniff(probe) > openai_chat.sniff(probe) > 0


calls = st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(calls)
def test_every_call_pairs_with_its_result(sizes: list[int]) -> None:
    """Any run of assistant turns with N calls each, answered in order, pairs fully."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    n = 0
    for size in sizes:
        ids = [f"c{n + i}" for i in range(size)]
        n += size
        messages.append({"role": "assistant", "content": "step", "tool_calls": [_call(c) for c in ids]})
        messages += [{"role": "tool", "tool_call_id": c, "content": c} for c in ids]
    t = openai_chat.from_messages(messages)
    pairs = tool_pairs(t.messages)
    assert len(pairs) == n
    assert all(use is not None and res == use + 1 for use, res in pairs.values())
    assert not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses
    assert len({m.id for m in t.messages}) == len(t.messages)


_KEYS = st.sampled_from(
    [
        "role", "content", "tool_calls", "function", "name", "arguments", "id", "type", "tool_call_id",
        "tool_call_ids", "text", "image_url", "url", "function_call", "reasoning_content", "is_demo", "extra",
        "usage", "timestamp", "object", "output", "call_id", "thinking_blocks", "thinking", "signature", "returncode", "cost",
        "compaction", "records", "compacted_until", "summary", "attempts", "history", "trajectory"
    ]
)
_VALUES = st.sampled_from(
    [
        "user", "assistant", "tool", "system", "developer", "function", "text", "image_url", "custom", "{bad", "{}",
        "data:image/png;base64,AAAA", "response", "function_call_output", "function_call", "reasoning", "thinking",
        "redacted_thinking", "mini-swe-agent-1.1"
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
    mini = {"messages": [value], "trajectory_format": "mini-swe-agent-1.1", "compaction": value}
    for doc in (value, [value], {"messages": [value], "history": [value]}, mini, {"attempts": [value, {"history": [value]}]}):
        with contextlib.suppress(TranscriptError):
            openai_chat.from_document(doc)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_a_content_part_whose_type_is_not_text_is_skipped_and_counted() -> None:
    # The Anthropic-parts check looked a list-valued type up in a set: TypeError out of the reader.
    t = openai_chat.from_messages([{"role": "user", "content": [{"type": ["tool_use"], "text": "?"}, {"type": "text", "text": "hi"}]}, {"role": "assistant", "content": "ok"}])
    assert t.messages[0].content == (TextBlock(text="hi"),) and t.notes.skipped == {"content part:invalid": 1}


# --- what mini-swe-agent 2 and SWE-agent 1.x write today (shapes from their serializers) ---------------


def _replay_ok(t: Any) -> None:
    import lab

    report = lab.replay(t, "lab", window=32000)
    assert report.invalid_requests == 0
    assert all(row.first_request_kept for row in report.rows)


def _mini2(messages: list[dict[str, Any]], model_class: str = "litellm") -> dict[str, Any]:
    """A mini-swe-agent 2 .traj.json around ``messages``, as its agent's serialize() writes it."""
    return {
        "info": {
            "model_stats": {"instance_cost": 0.0123, "api_calls": 2},
            "config": {"model": {"model_name": "openai/gpt-5-mini"}, "model_type": f"minisweagent.models.{model_class}"},
            "mini_version": "2.1.0",
            "exit_status": "Submitted",
            "submission": "diff --git a/x.py b/x.py",
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "demo__demo-1",
    }


def _response(call_id: str, command: str, *, text: str = "", summary: str = "", cost: float = 0.004) -> dict[str, Any]:
    """One reply of mini-swe-agent 2's Responses-API model: the provider's response object plus ``extra``."""
    output: list[dict[str, Any]] = []
    if summary:
        output.append({"type": "reasoning", "id": f"rs_{call_id}", "summary": [{"type": "summary_text", "text": summary}]})
    if text:
        output.append({"type": "message", "role": "assistant", "id": f"msg_{call_id}", "content": [{"type": "output_text", "text": text}]})
    output.append({"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "bash", "arguments": json.dumps({"command": command})})
    return {
        "id": f"resp_{call_id}",
        "object": "response",
        "model": "gpt-5-mini-2025-08-07",
        "status": "completed",
        "output": output,
        "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1000}, "output_tokens": 80},
        "extra": {"actions": [{"command": command, "tool_call_id": call_id}], "cost": cost, "timestamp": 1767225600.0},
    }


def _call_output(call_id: str, output: str, returncode: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": f"<returncode>{returncode}</returncode>\n<output>\n{output}</output>",
            "extra": {"raw_output": output, "returncode": returncode, "timestamp": 1767225601.0}}


def _responses_traj() -> dict[str, Any]:
    return _mini2(
        [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            {"role": "user", "content": "Please solve this issue: the sum is wrong"},
            _response("call_a", "python -m pytest -q", text="Run the tests first.", summary="Reproduce before fixing."),
            _call_output("call_a", "1 failed", 1),
            # A reply without a tool call is not kept: only the format error, the rejected response in its extra.
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Please always call the bash tool."}],
             "extra": {"interrupt_type": "FormatError", "response": {"object": "response", "output": []}}},
            _response("call_c", "git diff"),
            _call_output("call_c", "diff --git a/x.py b/x.py", 0),
            _response("call_d", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"),
            {"role": "exit", "content": "diff --git a/x.py b/x.py", "extra": {"exit_status": "Submitted", "submission": "diff --git a/x.py b/x.py"}},
        ],
        model_class="litellm_response_model.LitellmResponseModel",
    )


class TestMiniSweAgent2:
    def test_responses_api_history_reads_as_calls_and_results(self) -> None:
        # Its Responses model keeps the provider's response objects and function_call_output items as "messages".
        t = openai_chat.from_document(_responses_traj())
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "user", "assistant", "user", "assistant"]
        first = t.messages[2].content
        assert isinstance(first[0], ThinkingBlock) and first[0].thinking == "Reproduce before fixing."
        assert first[1] == TextBlock(text="Run the tests first.")
        assert isinstance(first[2], ToolUseBlock) and first[2].input == {"command": "python -m pytest -q"}
        results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert [(r.tool_use_id, r.is_error) for r in results] == [("call_a", True), ("call_c", False)]
        assert results[0].content.startswith("<returncode>1</returncode>")
        # the submitting call is answered only by the exit entry, which is counted
        assert t.notes.unanswered_tool_uses == ["call_d"] and t.notes.skipped == {"role:exit": 1}
        assert t.meta.model == "openai/gpt-5-mini" and t.meta.title == "mini-swe-agent trajectory: demo__demo-1"

    def test_responses_usage_and_cost_are_per_request(self) -> None:
        t = openai_chat.from_document(_responses_traj())
        usages = [m.usage for m in t.messages if m.role == "assistant"]
        assert all(u is not None for u in usages) and len(usages) == 3
        u = usages[0]
        assert u is not None and (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.cost_usd) == (200, 1000, 80, 0.004)
        assert t.messages[2].timestamp is not None

    def test_responses_history_is_detected_and_not_text_commands(self, tmp_path: Path) -> None:
        doc = _responses_traj()
        assert openai_chat.sniff(_probe(doc)) == 95 and openai_chat.sniff(_probe(doc, as_head=True)) == 95
        assert not any("as text" in w for w in openai_chat.from_document(doc).notes.warnings)
        from lab.formats import detect, load

        path = _write(tmp_path, doc, "demo__demo-1.traj.json")
        assert detect(path) == "openai_chat" and len(load(path).messages) == 8

    def test_responses_history_replays_validly(self) -> None:
        _replay_ok(openai_chat.from_document(_responses_traj()))

    def test_toolcall_history_keeps_exit_codes_and_costs(self) -> None:
        # The default v2 model: Chat tool calls, answered by role "tool" messages with the exit code in extra.
        call = _call("call_1", args='{"command": "ls nope"}')
        doc = _mini2(
            [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "Look.", "tool_calls": [call], "function_call": None, "provider_specific_fields": {},
                 "extra": {"actions": [{"command": "ls nope", "tool_call_id": "call_1"}], "cost": 0.002, "timestamp": 1767225600.0,
                           "response": {"usage": {"prompt_tokens": 900, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 800}}}}},
                {"role": "tool", "tool_call_id": "call_1", "content": "<returncode>2</returncode>\n<output>\nls: nope: No such file</output>",
                 "extra": {"raw_output": "ls: nope: No such file", "returncode": 2, "timestamp": 1767225601.0}},
                {"role": "assistant", "content": "Done.", "extra": {"cost": 0.001}},
            ]
        )
        t = openai_chat.from_document(doc)
        (result,) = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert result.tool_use_id == "call_1" and result.is_error
        u = t.messages[2].usage
        assert u is not None and (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.cost_usd) == (100, 800, 30, 0.002)
        # a reply whose provider reported no tokens still carries its bill
        last = t.messages[-1].usage
        assert last is not None and last.cost_usd == 0.001 and last.input_tokens == 0
        _replay_ok(t)

    def test_text_mode_replies_carry_their_cost(self) -> None:
        doc = _mini2(
            [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "THOUGHT: look\n\n```mswea_bash_command\nls\n```", "extra": {"actions": [{"command": "ls"}], "cost": 0.003}},
                {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>", "extra": {"returncode": 0}},
            ]
        )
        t = openai_chat.from_document(doc)
        assert [b.input for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)] == [{"command": "ls"}]
        usage = t.messages[2].usage
        assert usage is not None and usage.cost_usd == 0.003
        _replay_ok(t)

    @pytest.mark.parametrize("cost", [True, "0.1", -1.0, None], ids=["bool", "text", "negative", "null"])
    def test_a_cost_that_is_not_a_price_is_ignored(self, cost: Any) -> None:
        t = openai_chat.from_messages([{"role": "user", "content": "u"}, {"role": "assistant", "content": "a", "extra": {"cost": cost}}])
        assert t.messages[1].usage is None

    def test_a_response_without_output_names_its_place(self) -> None:
        with pytest.raises(TranscriptError) as err:
            openai_chat.from_document(_mini2([{"role": "user", "content": "u"}, {"object": "response", "output": "?"}]))
        assert err.value.where == "$.messages[1].output"


def _swe_history_item(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "agent": "main", **extra}


def _swe_traj(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"trajectory": [{"action": "ls", "observation": "a.py", "response": "", "thought": "", "state": {}, "query": []}],
            "history": history, "info": {"model_stats": {"instance_cost": 0.01, "api_calls": 1}, "exit_status": "submitted"},
            "replay_config": json.dumps({"agent": {"model": {"name": "claude-sonnet-4"}}, "problem_statement": {"id": "demo-1"}})}


def _swe_function_calling() -> list[dict[str, Any]]:
    call = _call("toolu_1", args='{"command": "ls"}')
    return [
        _swe_history_item("system", "You are a helpful assistant.", message_type="system_prompt"),
        _swe_history_item("user", "Fix the bug.", message_type="observation"),
        _swe_history_item(
            "assistant", "Let me look.", message_type="action", thought="Let me look.", action="ls", tool_calls=[call],
            thinking_blocks=[{"type": "thinking", "thinking": "List first.", "signature": "sig-1"}, {"type": "redacted_thinking", "data": "xx"}],
            reasoning_content="List first.",
        ),
        _swe_history_item("tool", [{"type": "text", "text": "a.py"}], message_type="observation", tool_call_ids=["toolu_1"]),
    ]


class TestSweAgentToday:
    def test_thinking_blocks_keep_their_signature_once(self) -> None:
        # LiteLLM sets reasoning_content and thinking_blocks for one Anthropic reply; SWE-agent sends the blocks back.
        t = openai_chat.from_document(_swe_traj(_swe_function_calling()))
        thinking = [b for m in t.messages for b in m.content if isinstance(b, ThinkingBlock)]
        assert thinking == [ThinkingBlock(thinking="List first.", signature="sig-1")]
        assert t.notes.skipped == {"thinking block:redacted_thinking": 1}
        assert tool_pairs(t.messages) == {"toolu_1": (2, 3)}
        _replay_ok(t)

    def test_thinking_of_a_text_parser_reply_is_not_sent_so_not_kept(self) -> None:
        # _history_to_messages adds thinking_blocks only to items with tool_calls; text parsers leave them None.
        history = [
            _swe_history_item("system", "s", message_type="system_prompt"),
            _swe_history_item("user", "Fix it.", message_type="observation"),
            _swe_history_item("assistant", "Look.\n```\nls\n```", message_type="action", thought="Look.", action="ls", tool_calls=None,
                              thinking_blocks=[{"type": "thinking", "thinking": "hmm", "signature": "s"}]),
            _swe_history_item("user", "a.py", message_type="observation"),
        ]
        t = openai_chat.from_document(_swe_traj(history))
        assert not [b for m in t.messages for b in m.content if isinstance(b, ThinkingBlock)]
        assert t.notes.skipped == {"thinking block:not sent": 1}
        assert [b.input for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)] == [{"command": "ls"}]

    def test_retry_agent_attempts_without_a_choice_read_the_last_attempt(self) -> None:
        # RetryAgent saves {"attempts": [...]} while it runs; the best attempt's keys join only once it has chosen.
        first, second = _swe_traj(_swe_function_calling()), _swe_traj(_swe_function_calling()[:2])
        doc = {"attempts": [first, second]}
        assert openai_chat.sniff(_probe(doc)) == 95 and openai_chat.sniff(_probe(doc, as_head=True)) == 95
        t = openai_chat.from_document(doc)
        assert [m.role for m in t.messages] == ["system", "user"]
        assert any("2 attempts" in w and "attempt 1" in w for w in t.notes.warnings)
        assert t.meta.session_id == "demo-1" and t.meta.model == "claude-sonnet-4"

    def test_retry_agent_with_a_chosen_attempt_reads_that_one(self) -> None:
        first, second = _swe_traj(_swe_function_calling()), _swe_traj(_swe_function_calling()[:2])
        doc = {"attempts": [first, second], **first}
        t = openai_chat.from_document(doc)
        assert len(t.messages) == 4
        assert any("2 attempts" in w and "the chosen one" in w for w in t.notes.warnings)


def _compacted_traj() -> dict[str, Any]:
    """A text-mode mini-swe-agent 2 run its agent compacted once before the second command (records from serialize())."""
    bash = "```mswea_bash_command\n{}\n```"
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "THOUGHT: look\n\n" + bash.format("ls"), "extra": {"actions": [{"command": "ls"}], "cost": 0.01}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>", "extra": {"returncode": 0}},
        {"role": "assistant", "content": "THOUGHT: read\n\n" + bash.format("cat a.py"), "extra": {"actions": [{"command": "cat a.py"}], "cost": 0.01}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nprint(1)\n</output>", "extra": {"returncode": 0}},
    ]
    doc = _mini2(messages)
    doc["compaction"] = {
        "summary": "Listed the files: a.py.",
        "compacted_until": 4,
        "records": [{"summary": "Listed the files: a.py.", "compacted_until": 4, "reason": "auto", "estimated_tokens_before": 9000,
                     "estimated_tokens_after": 1200, "cost": 0.002, "timestamp": 1767225700.0}],
        "active_estimated_tokens": 1500,
        "context_limit": 10000,
    }
    return doc


class TestMiniSweAgentCompaction:
    def test_a_record_becomes_a_boundary_and_the_summary_sent_after_it(self) -> None:
        t = openai_chat.from_document(_compacted_traj())
        tags = [(m.role, m.tag) for m in t.messages]
        assert tags == [("system", None), ("user", None), ("assistant", None), ("user", None),
                        ("system", "boundary"), ("user", "summary"), ("assistant", None), ("user", None)]
        marker = t.messages[4].boundary
        assert marker is not None and marker.strategy == openai_chat.MINI_COMPACTION == "mini_swe_agent_compaction"
        assert (marker.trigger, marker.tokens_before, marker.tokens_after, marker.messages_removed) == ("auto", 9000, 1200, 3)
        assert "Listed the files: a.py." in t.messages[5].content[0].text  # type: ignore[union-attr]
        # the commands on both sides of it still pair
        assert [(u, r) for u, r in tool_pairs(t.messages).values()] == [(2, 3), (6, 7)]

    def test_replay_undoes_the_recorded_compaction(self) -> None:
        import lab

        t = openai_chat.from_document(_compacted_traj())
        report = lab.replay(t, "lab", window=32000)
        assert report.recorded_compactions == 1 and report.invalid_requests == 0
        assert all(row.first_request_kept for row in report.rows)
        assert [(c.agent, c.action) for c in report.recorded] == [("mini-swe-agent", "undone")]

    def test_a_record_outside_the_history_is_counted(self) -> None:
        doc = _compacted_traj()
        doc["compaction"]["records"].append({"summary": "?", "compacted_until": 99})
        t = openai_chat.from_document(doc)
        assert sum(1 for m in t.messages if m.boundary is not None) == 1
        assert t.notes.skipped == {"compaction record:invalid": 1}

    def test_without_a_compaction_nothing_is_inserted(self) -> None:
        doc = _compacted_traj()
        doc["compaction"] = {"summary": "", "compacted_until": 1, "records": []}
        assert not any(m.boundary is not None for m in openai_chat.from_document(doc).messages)
