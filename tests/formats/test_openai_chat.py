"""OpenAI Chat importer: corpus trajectories, role mapping, tool pairing, errors, detection."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.errors import TranscriptError
from lab.formats import openai_chat
from lab.formats.jsonio import make_probe
from lab.formats.registry import Probe
from tests.conftest import CORPUS_FILES, corpus_file, corpus_glob, corpus_id

CHAT_FILES = corpus_glob("openai-chat/*")
OTHER_FILES = [p for p in CORPUS_FILES if p.parent.name != "openai-chat"]
needs_corpus = pytest.mark.corpus("openai-chat")


def _raw_messages(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    msgs = doc.get("history") or doc.get("messages")
    return [m for m in msgs if not m.get("is_demo")]


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
        if not raw_calls:
            # A text-command trajectory: each action is a call, answered by the user message after it (the last is not).
            raw_calls = sum(1 for m in raw if m["role"] == "assistant" and m.get("action"))
            raw_results = raw_calls - 1
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
        assert openai_chat.sniff(make_probe(path)) == 95

    @pytest.mark.parametrize("path", OTHER_FILES, ids=corpus_id)
    def test_does_not_claim_other_formats(self, path: Path) -> None:
        assert openai_chat.sniff(make_probe(path)) == 0

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_head_only_sniff_agrees(self, path: Path) -> None:
        # Documents over the probe's size limit are sniffed from their first 64 KiB alone.
        head_only = replace(make_probe(path), records=None, document=None)
        assert openai_chat.sniff(head_only) == (95 if path in CHAT_FILES else 0)

    def test_text_command_trajectory_models_commands_as_tool_calls(self) -> None:
        # The shapes themselves are tested in test_text_commands.py.
        path = corpus_file("openai-chat/swe-agent-pydicom-1458.traj")
        t = openai_chat.read(path)
        raw = _raw_messages(path)
        uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert [u.input["command"] for u in uses] == [m["action"].strip() for m in raw if m["role"] == "assistant"]
        assert t.notes.skipped == {"demonstration": 1}
        # the system prompt and the issue stay text; each reply keeps its thought; every observation is a tool result
        texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
        assert texts == [raw[0]["content"], raw[1]["content"]] + [m["thought"].strip() for m in raw if m["role"] == "assistant"]
        results = [b.content for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
        assert results == [m["content"] for m in raw[2:] if m["role"] == "user"]

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


def _probe(doc: Any, *, as_head: bool = False) -> Probe:
    text = json.dumps(doc)
    return Probe(path=Path("x.json"), head=text, shape="json", records=None, document=None if as_head else doc)


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
        from lab.formats import anthropic

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
        "usage", "timestamp"
    ]
)
_VALUES = st.sampled_from(
    [
        "user", "assistant", "tool", "system", "developer", "function", "text", "image_url", "custom", "{bad", "{}",
        "data:image/png;base64,AAAA"
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
    for doc in (value, [value], {"messages": [value], "history": [value]}):
        with contextlib.suppress(TranscriptError):
            openai_chat.from_document(doc)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_a_content_part_whose_type_is_not_text_is_skipped_and_counted() -> None:
    # The Anthropic-parts check looked a list-valued type up in a set: TypeError out of the reader.
    t = openai_chat.from_messages([{"role": "user", "content": [{"type": ["tool_use"], "text": "?"}, {"type": "text", "text": "hi"}]}, {"role": "assistant", "content": "ok"}])
    assert t.messages[0].content == (TextBlock(text="hi"),) and t.notes.skipped == {"content part:invalid": 1}
