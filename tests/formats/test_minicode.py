"""MiniCode dicts: the documented shape, compaction markers, the exporter round trip, errors, detection."""

from __future__ import annotations

import contextlib
import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats.shell_agents import minicode
from lab.formats.jsonio import read_file_head
from lab.formats.shell_agents.minicode import from_minicode, to_minicode
from lab.formats.registry import FileHead
from tests.builders import assistant, call_and_result, session, system, tool_call, tool_result, ts, user
from tests.conftest import CORPUS_FILES, corpus_id

SESSION = [
    {"role": "system", "content": "You are MiniCode."},
    {"role": "user", "content": "Refactor error handling"},
    {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [{"id": "t1", "name": "read_file", "input": {"file_path": "a.py"}}, {"id": "t2", "name": "grep", "input": {"q": "x"}}],
    },
    {
        "role": "tool_result",
        "tool_use_id": "t1",
        "toolName": "read_file",
        "content": "[Tool result persisted to disk \u2014 80000 chars]\nTool: read_file",
        "_persisted_path": ".mini-code-tool-results/read_file_3.txt",
    },
    {"role": "tool_result", "toolUseId": "t2", "content": "boom", "isError": True},
    {"role": "system", "content": "[Context compacted at 14:32:15 \u2014 Full Compact]\nOriginal: ~85000 tokens", "_compact_boundary": True},
    {"role": "assistant", "content": [{"type": "text", "text": "Again."}, {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"file_path": "a.py"}}]},
    {"role": "tool_result", "tool_use_id": "t3", "content": "[Old tool result content cleared by time-based microcompact]", "_microcompacted": True},
    {"role": "narrator", "content": "ignored"},
]


class TestShape:
    def test_roles_and_pairs(self) -> None:
        t = from_minicode(SESSION)
        assert [(m.role, m.tag) for m in t.messages] == [
            ("system", None),
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("system", "boundary"),
            ("user", "summary"),
            ("assistant", None),
            ("user", None),
        ]
        # consecutive tool_result dicts answer one assistant message: one user message
        assert [r.tool_use_id for r in t.messages[3].content] == ["t1", "t2"]
        assert tool_pairs(t.messages) == {"t1": (2, 3), "t2": (2, 3), "t3": (6, 7)}
        assert t.notes.skipped == {"role:narrator": 1}

    def test_compaction_markers(self) -> None:
        t = from_minicode({"messages": SESSION})
        spilled, failed = t.messages[3].content
        assert isinstance(spilled, ToolResultBlock)
        assert (spilled.compacted, spilled.spill_path, spilled.original_chars) == ("spill", ".mini-code-tool-results/read_file_3.txt", 80000)
        assert failed.is_error and failed.compacted is None
        assert t.messages[7].content[0].compacted == "cleared"
        boundary = t.messages[4].boundary
        assert boundary is not None and (boundary.trigger, boundary.strategy) == ("import", "full")
        assert t.messages[5].content[0].text.startswith("[Context compacted at 14:32:15")

    @pytest.mark.parametrize(
        ("header", "strategy"),
        [("[Context compacted via Session Memory]\nMessages removed: 4", "session_memory"), ("[Context aggressively truncated for recovery - attempt 2]", "reactive"), ("other", "unknown")],
        ids=["session-memory", "reactive", "unknown"],
    )
    def test_boundary_strategy_from_header(self, header: str, strategy: str) -> None:
        t = from_minicode([{"role": "system", "content": header, "_compact_boundary": True}])
        assert t.messages[0].boundary is not None and t.messages[0].boundary.strategy == strategy

    def test_dedup_stub_and_result_without_id(self) -> None:
        t = from_minicode(
            [
                {"role": "assistant", "tool_calls": [{"id": "t1", "name": "read_file", "input": {}}]},
                {"role": "tool_result", "content": "[Read deduplicated: a.py]\nFile unchanged since last read."},
            ]
        )
        assert t.messages[1].content[0].compacted == "dedup" and t.messages[1].content[0].tool_use_id == "t1"
        assert t.notes.warnings

    def test_ids_are_deterministic_and_unique(self) -> None:
        a, b = from_minicode(SESSION), from_minicode(copy.deepcopy(SESSION))
        assert a == b
        assert len({m.id for m in a.messages}) == len(a.messages)

    def test_input_is_not_mutated(self) -> None:
        before = copy.deepcopy(SESSION)
        from_minicode(SESSION)
        assert before == SESSION


class TestExport:
    def test_shape_written(self) -> None:
        msgs = [system("sys"), user("hi"), *call_and_result("read_file", "body", tool_id="t1", file_path="a.py")]
        out = to_minicode(msgs)
        assert [d["role"] for d in out] == ["system", "user", "assistant", "tool_result"]
        assert out[2]["tool_calls"] == [{"id": "t1", "name": "read_file", "input": {"file_path": "a.py"}}]
        assert {k: out[3][k] for k in ("tool_use_id", "content", "is_error", "tool_name")} == {"tool_use_id": "t1", "content": "body", "is_error": False, "tool_name": "read_file"}
        json.dumps(out)  # plain JSON

    def test_boundary_and_summary_become_one_minicode_message(self) -> None:
        marker = Message(role="system", id="bnd", tag="boundary", boundary=Boundary(trigger="auto", strategy="full", tokens_before=9, messages_removed=2))
        summary = Message(role="user", id="sum", tag="summary", content=(TextBlock(text="[Context compacted] ..."),))
        out = to_minicode([marker, summary])
        assert len(out) == 1 and out[0]["_compact_boundary"] is True and out[0]["content"] == "[Context compacted] ..."
        assert from_minicode(out).messages == [marker, summary]

    def test_round_trip_keeps_every_field(self) -> None:
        spilled = ToolResultBlock(tool_use_id="t9", content="[Tool result persisted to disk - 9000 chars]", compacted="spill", spill_path="/x/t9.txt", original_chars=9000)
        msgs = [
            system("sys"),
            user("start", at=1000),
            Message(role="user", id="img", content=(TextBlock(text="look"), ImageBlock(media_type="image/jpeg", size_bytes=12, source="url", url="https://x/i.jpg"))),
            assistant("thinking aloud", thinking="hmm", at=1001).model_copy(update={"usage": Usage(input_tokens=10, output_tokens=2, cache_read_tokens=5)}),
            tool_call("read_file", "t9", text="Reading", file_path="a.py"),
            Message(role="user", id="res9", content=(spilled, ToolResultBlock(tool_use_id="t10", content="", is_error=True))),
            tool_result("t11", "separate message", at=1002),
            Message(role="user", id="note", tag="truncation_note", content=(TextBlock(text="[truncated]"),)),
            Message(role="system", id="bnd", tag="boundary", boundary=Boundary(trigger="reactive", strategy="reactive", timestamp=ts(1003))),
            Message(role="user", id="sum", tag="summary", content=(TextBlock(text="summary"),)),
            # the core's own shape: a marker with a first line, then a user summary
            Message(role="system", id="bnd2", tag="boundary", boundary=Boundary(trigger="auto", strategy="full"), content=(TextBlock(text="[compacted]"),)),
            Message(role="user", id="sum2", tag="summary", content=(TextBlock(text="## Session summary"),)),
        ]
        back = from_minicode(json.loads(json.dumps(to_minicode(msgs))))
        assert back.messages == msgs

    def test_session_round_trip(self) -> None:
        msgs = session(n_reads=3, size=200)
        assert from_minicode(to_minicode(msgs)).messages == msgs


class TestErrors:
    @pytest.mark.parametrize(
        ("messages", "where"),
        [
            ([{"role": "user", "content": "a"}, 7], "$[1]"),
            ([{"content": "x"}], "$[0]"),
            ([{"role": "assistant", "tool_calls": [{"id": "t", "input": {}}]}], "$[0].tool_calls[0]"),
            ([{"role": "assistant", "tool_calls": [{"id": "t", "name": "n", "input": "str"}]}], "$[0].tool_calls[0].input"),
            ([{"role": "assistant", "tool_calls": "nope"}], "$[0].tool_calls"),
            ([{"role": "tool_result", "content": "no id, nothing pending"}], "$[0]"),
            ([{"role": "tool_result", "tool_use_id": "t", "content": 5}], "$[0].content"),
            ([{"role": "system", "content": "x", "_compact_boundary": True, "_boundary": {"trigger": "bogus"}}], "$[0]._boundary"),
        ],
        ids=["not-object", "no-role", "call-no-name", "input-not-object", "calls-not-list", "result-no-id", "content-number", "bad-boundary"],
    )
    def test_malformed_messages_name_file_and_path(self, tmp_path: Path, messages: list[Any], where: str) -> None:
        path = tmp_path / "mc.json"
        path.write_text(json.dumps(messages), encoding="utf-8")
        with pytest.raises(TranscriptError) as err:
            minicode.read(path)
        assert err.value.file == str(path) and err.value.where == where

    def test_not_a_list(self) -> None:
        with pytest.raises(TranscriptError):
            from_minicode({"history": []})


class TestSniff:
    def _probe(self, doc: Any, *, as_head: bool = False) -> FileHead:
        return FileHead(path=Path("x.json"), head=json.dumps(doc), shape="json", records=None, document=None if as_head else doc)

    def test_scores(self) -> None:
        assert minicode.sniff(self._probe(SESSION)) == 95
        assert minicode.sniff(self._probe(SESSION, as_head=True)) == 90
        assert minicode.sniff(self._probe(to_minicode([*call_and_result("x", "y")])[:1])) == 85
        chat = [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "n", "arguments": "{}"}}]}]
        assert minicode.sniff(self._probe(chat)) == 0

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_does_not_claim_corpus_files(self, path: Path) -> None:
        assert minicode.sniff(read_file_head(path)) == 0
        assert minicode.sniff(replace(read_file_head(path), records=None, document=None)) == 0


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = [system(draw(texts) or "s")]
    for i in range(draw(st.integers(min_value=0, max_value=5))):
        msgs.append(user(draw(texts) or "u"))
        n = draw(st.integers(min_value=0, max_value=3))
        if n:
            uses = tuple(ToolUseBlock(id=f"t{i}.{k}", name=draw(st.sampled_from(["read_file", "bash"])), input={"k": draw(texts)}) for k in range(n))
            msgs.append(Message(role="assistant", id=f"a{i}", content=(TextBlock(text="go"), *uses)))
            results = tuple(ToolResultBlock(tool_use_id=u.id, content=draw(texts), is_error=draw(st.booleans())) for u in uses)
            msgs.append(Message(role="user", id=f"r{i}", content=results))
        else:
            msgs.append(Message(role="assistant", id=f"a{i}", content=(ThinkingBlock(thinking="t"), TextBlock(text=draw(texts) or "a"))))
    return msgs


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_export_then_import_is_identity(msgs: list[Message]) -> None:
    assert from_minicode(json.loads(json.dumps(to_minicode(msgs)))).messages == msgs


_KEYS = st.sampled_from(
    [
        "role", "content", "tool_calls", "id", "name", "input", "tool_use_id", "toolUseId", "is_error", "isError",
        "_persisted_path", "_microcompacted", "_compact_boundary", "_boundary", "_summary_id", "_marker_only", "_tag",
        "_compacted", "_original_chars", "_thinking", "usage", "timestamp", "type", "text", "trigger", "strategy"
    ]
)
_VALUES = st.sampled_from(
    [
        "system", "user", "assistant", "tool_result", "text", "tool_use", "image", "thinking", "auto", "full",
        "spill", "summary", "[Read deduplicated: a]"
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
    for doc in (value, [value], {"messages": [value]}):
        with contextlib.suppress(TranscriptError):
            from_minicode(doc)
