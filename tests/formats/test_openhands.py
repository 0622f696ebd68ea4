"""OpenHands importer: corpus records, action/observation mapping, sessions, errors, detection."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock, message_text, tool_pairs
from lab.errors import TranscriptError
from lab.formats.openhands import openhands
from lab.formats.jsonio import read_file_head
from lab.formats.registry import FileHead
from tests.conftest import CORPUS_FILES, corpus_id, corpus_path

OH_FILE = corpus_path("openhands/openhands-v0-ponyc-output.jsonl")
OTHER_FILES = [p for p in CORPUS_FILES if p.parent.name != "openhands"]
needs_corpus = pytest.mark.corpus("openhands/openhands-v0-ponyc-output.jsonl")


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in OH_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _tcm(call_id: str, name: str, args: dict[str, Any] | None = None, rid: str | None = None, text: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"tool_call_id": call_id, "function_name": name}
    if rid is not None:
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args or {})}}
        meta["model_response"] = {
            "id": rid,
            "choices": [{"message": {"role": "assistant", "content": text, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5},
        }
    return meta


def _act(eid: int, action: str, args: dict[str, Any] | None = None, source: str = "agent", **extra: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": "2025-04-30T16:32:54.707474", "source": source, "message": "", "action": action, "args": args or {}, **extra}


def _obs(eid: int, observation: str, content: str, cause: int | None = None, **extra: Any) -> dict[str, Any]:
    ev = {"id": eid, "timestamp": "2025-04-30T16:32:55", "source": "agent", "message": "", "observation": observation, "content": content, "extras": {}, **extra}
    if cause is not None:
        ev["cause"] = cause
    return ev


EVENTS = [
    _act(0, "system", {"content": "You are OpenHands.", "tools": [{"type": "function", "function": {"name": "execute_bash", "description": "d", "parameters": {}}}]}),
    _act(1, "message", {"content": "Fix the bug", "image_urls": ["data:image/png;base64,AAAA"]}, source="user"),
    _act(2, "recall", {"query": "Fix the bug"}, source="user"),
    _obs(3, "recall", "Added workspace context", cause=2, source="environment"),
    # one model response with two tool calls
    _act(4, "run", {"command": "ls", "thought": "Let me look."}, tool_call_metadata=_tcm("t1", "execute_bash", {"command": "ls"}, rid="r1", text="Let me look.")),
    _act(5, "read", {"path": "a.py"}, tool_call_metadata=_tcm("t2", "str_replace_editor", {"command": "view", "path": "a.py"}, rid="r1")),
    _obs(6, "run", "a.py", cause=4, tool_call_metadata=_tcm("t1", "execute_bash"), success=True),
    _obs(7, "read", "print(1)", cause=5, tool_call_metadata=_tcm("t2", "str_replace_editor")),
    # older style: no metadata, linked by cause
    _act(8, "run", {"command": "make", "thought": "Build it.", "blocking": False}),
    _obs(9, "run", "make: *** Error 2", cause=8, success=False),
    _obs(10, "error", "Parameter 'command' is invalid."),
    _act(11, "delegate", {"agent": "x"}),
    _obs(12, "error", "delegation failed", cause=11),
    {"id": 13, "source": "environment", "kind": "mystery"},
    _act(14, "message", {"content": "All done."}),
    _act(15, "finish", {"final_thought": "Done.", "thought": ""}, tool_call_metadata=_tcm("t3", "finish", {"message": "Done."}, rid="r3")),
]


@needs_corpus
class TestCorpus:
    def test_each_record_is_a_session(self) -> None:
        records = _records()
        t = openhands.read(OH_FILE)
        assert t.meta.session_id == records[0]["instance_id"]
        assert list(t.sidechains) == [r["instance_id"] for r in records[1:]]
        assert any("sidechains" in w for w in t.notes.warnings)
        assert t.notes.records_read == sum(len(r["history"]) for r in records)

    def test_tool_pairs_match_raw_events(self) -> None:
        records = _records()
        t = openhands.read(OH_FILE)
        threads = [t.messages, *t.sidechains.values()]
        for rec, messages in zip(records, threads, strict=True):
            events = rec["history"]
            raw_calls = sum(1 for e in events if "action" in e and e.get("tool_call_metadata"))
            raw_answers = sum(1 for e in events if "observation" in e and e.get("tool_call_metadata"))
            pairs = tool_pairs(messages)
            assert len(pairs) == raw_calls
            assert sum(1 for use, res in pairs.values() if use is not None and res is not None) == raw_answers
            assert all(res > use for use, res in pairs.values() if use is not None and res is not None)
        assert not t.notes.orphan_tool_results

    def test_roles_errors_and_tools(self) -> None:
        records = _records()
        t = openhands.read(OH_FILE)
        assert t.messages[0].role == "system" and t.messages[1].role == "user"
        assert t.messages[1].content[0].text == records[0]["history"][1]["message"]
        assert {s.name for s in t.tools} >= {"execute_bash", "str_replace_editor", "finish"}
        assert t.meta.model == "openai/openrouter-llama-4-maverick"
        assert t.notes.skipped == {"action:recall": 3, "observation:recall": 3}
        failed = [e for e in records[0]["history"] if e.get("observation") == "run" and e.get("success") is False]
        errors = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock) and b.is_error]
        assert len(errors) == len(failed) > 0
        # zone-less OpenHands timestamps are read as UTC
        assert all(m.timestamp is not None and m.timestamp.tzinfo is not None for m in t.messages)
        # actions carry the model's per-call usage
        assert all(m.usage is not None for m in t.messages if m.role == "assistant")

    def test_ids_unique_across_threads(self) -> None:
        t = openhands.read(OH_FILE)
        ids = [m.id for m in t.messages] + [m.id for ms in t.sidechains.values() for m in ms]
        assert len(ids) == len(set(ids))

    def test_detected(self) -> None:
        assert openhands.sniff(read_file_head(OH_FILE)) == 95

    @pytest.mark.parametrize("path", OTHER_FILES, ids=corpus_id)
    def test_does_not_claim_other_formats(self, path: Path) -> None:
        assert openhands.sniff(read_file_head(path)) == 0

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_head_only_sniff_agrees(self, path: Path) -> None:
        head_only = replace(read_file_head(path), records=None, document=None)
        assert openhands.sniff(head_only) == (95 if path == OH_FILE else 0)


class TestMapping:
    def _t(self, tmp_path: Path, doc: Any = None) -> Any:
        path = tmp_path / "events.json"
        path.write_text(json.dumps(EVENTS if doc is None else doc), encoding="utf-8")
        return openhands.read(path)

    def test_roles_and_blocks(self, tmp_path: Path) -> None:
        t = self._t(tmp_path)
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user", "user", "assistant", "user", "assistant", "assistant"]
        assert isinstance(t.messages[1].content[1], ImageBlock)
        turn = t.messages[2]
        # two actions of response r1 share one assistant message, led by the model's text
        assert [type(b) for b in turn.content] == [TextBlock, ToolUseBlock, ToolUseBlock]
        assert turn.content[2].input == {"command": "view", "path": "a.py"}
        assert turn.usage is not None and turn.usage.input_tokens == 50
        assert [r.tool_use_id for r in t.messages[3].content] == ["t1", "t2"]
        assert [s.name for s in t.tools] == ["execute_bash"]

    def test_actions_without_metadata_link_by_cause(self, tmp_path: Path) -> None:
        t = self._t(tmp_path)
        use = t.messages[4].content[-1]
        assert isinstance(use, ToolUseBlock) and use.name == "run" and use.input == {"command": "make"}
        result = t.messages[5].content[0]
        assert isinstance(result, ToolResultBlock) and result.tool_use_id == use.id and result.is_error

    def test_error_observations(self, tmp_path: Path) -> None:
        t = self._t(tmp_path)
        # an unlinked error reaches the model as user text; a linked one is an error result
        assert t.messages[6].content[0].text == "Parameter 'command' is invalid."
        assert t.messages[8].content[0].is_error and t.messages[8].content[0].content == "delegation failed"
        assert any("error observation linked to no action" in w for w in t.notes.warnings)

    def test_skips_are_counted(self, tmp_path: Path) -> None:
        t = self._t(tmp_path)
        assert t.notes.skipped == {"action:recall": 1, "observation:recall": 1, "event:unknown": 1}
        assert t.notes.unanswered_tool_uses == ["t3"]

    def test_pair_history_and_single_record(self, tmp_path: Path) -> None:
        pairs = [[EVENTS[4], EVENTS[6]]]
        t = self._t(tmp_path, {"instance_id": "i-1", "history": pairs, "metadata": {"llm_config": {"model": "m"}}})
        assert tool_pairs(t.messages) == {"t1": (0, 1)}
        assert t.meta.session_id == "i-1" and t.meta.model == "m"

    def test_import_is_deterministic(self, tmp_path: Path) -> None:
        assert self._t(tmp_path) == self._t(tmp_path)


def _condensation(eid: int, **args: Any) -> dict[str, Any]:
    # A V0 CondensationAction as event_to_dict writes it: its fields under ``args``
    # (All-Hands-AI/OpenHands, openhands/events/action/agent.py and openhands/events/serialization/event.py).
    full = {"forgotten_event_ids": None, "forgotten_events_start_id": None, "forgotten_events_end_id": None, "summary": None, "summary_offset": None}
    return _act(eid, "condensation", {**full, **args}, message="Summary: ...")


class TestCondensation:
    def _t(self, *events: dict[str, Any]) -> Any:
        return openhands.from_document([EVENTS[0], EVENTS[1], EVENTS[4], EVENTS[6], *events], file="x.json")

    @pytest.mark.parametrize(
        ("args", "count"),
        [
            ({"forgotten_events_start_id": 2, "forgotten_events_end_id": 6, "summary_offset": 2}, "5 event(s)"),
            ({"forgotten_event_ids": [2, 3, 4]}, "3 event(s)"),
            ({}, "events forgotten"),
        ],
        ids=["range", "id-list", "no-ids"],
    )
    def test_summary_becomes_boundary_and_summary(self, args: dict[str, Any], count: str) -> None:
        t = self._t(_condensation(20, summary="USER_CONTEXT: fix the bug", **args), _act(21, "message", {"content": "next"}))
        marker, summary, after = t.messages[-3:]
        assert marker.role == "system" and marker.tag == "boundary" and marker.boundary is not None
        assert marker.boundary.strategy == openhands.CONDENSATION_STRATEGY and marker.boundary.trigger == "import"
        assert count in marker.content[0].text
        assert summary.role == "user" and summary.tag == "summary" and summary.content == (TextBlock(text="USER_CONTEXT: fix the bug"),)
        assert after.role == "assistant" and after.content[0].text == "next"
        assert "action:condensation" not in t.notes.skipped

    @pytest.mark.parametrize("summary", [None, ""], ids=["none", "empty"])
    @pytest.mark.parametrize(
        ("args", "count"),
        [({"forgotten_event_ids": [2, 3]}, "2 event(s)"), ({"forgotten_events_start_id": 2, "forgotten_events_end_id": 4}, "3 event(s)")],
        ids=["id-list", "range"],
    )
    def test_without_summary_forgotten_events_are_a_boundary_and_a_note(self, summary: str | None, args: dict[str, Any], count: str) -> None:
        # The amortized-forgetting condenser (and a summarizer whose model returned nothing) forgets
        # events without a summary: the model stopped seeing them, so a replay must know where.
        t = self._t(_condensation(20, summary=summary, **args), _act(21, "message", {"content": "next"}))
        marker, note, after = t.messages[-3:]
        assert marker.tag == "boundary" and marker.boundary is not None and marker.boundary.strategy == openhands.CONDENSATION_STRATEGY
        assert count in marker.content[0].text and "no summary" in marker.content[0].text
        assert note.role == "user" and note.tag == "summary" and "no summary" in message_text(note)
        assert after.content[0].text == "next" and "action:condensation" not in t.notes.skipped

    @pytest.mark.parametrize("args", [{}, {"forgotten_event_ids": []}, {"forgotten_events_start_id": 5, "forgotten_events_end_id": 2}], ids=["no-ids", "empty", "backwards"])
    def test_one_that_forgot_nothing_is_counted(self, args: dict[str, Any]) -> None:
        t = self._t(_condensation(20, **args))
        assert t.notes.skipped == {"action:condensation": 1}
        assert all(m.boundary is None for m in t.messages)

    def test_a_condensation_request_is_counted(self) -> None:
        t = self._t(_act(20, "condensation_request", {}))
        assert t.notes.skipped == {"action:condensation_request": 1} and all(m.boundary is None for m in t.messages)

    def test_next_actions_do_not_merge_into_the_previous_turn(self) -> None:
        same_response = _act(22, "run", {"command": "pwd"}, tool_call_metadata=_tcm("t9", "execute_bash", {"command": "pwd"}, rid="r1"))
        t = self._t(_condensation(20, summary="s"), same_response)
        assert [m.tag for m in t.messages[-3:]] == ["boundary", "summary", None]
        assert isinstance(t.messages[-1].content[-1], ToolUseBlock) and t.messages[-1].content[-1].id == "t9"


class TestErrors:
    def _jsonl(self, tmp_path: Path, records: list[Any]) -> Path:
        path = tmp_path / "output.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        return path

    @pytest.mark.parametrize(
        ("history", "where"),
        [
            ([EVENTS[0], "junk"], "line 2, $.history[1]"),
            ([_act(4, "run", {}, tool_call_metadata={"function_name": "x"})], "line 2, $.history[0].tool_call_metadata"),
            ("not a list", "line 2, $.history"),
        ],
        ids=["event-not-object", "metadata-without-id", "history-not-list"],
    )
    def test_malformed_records_name_file_line_and_path(self, tmp_path: Path, history: Any, where: str) -> None:
        path = self._jsonl(tmp_path, [{"instance_id": "a", "history": [EVENTS[0]]}, {"instance_id": "b", "history": history}])
        with pytest.raises(TranscriptError) as err:
            openhands.read(path)
        assert err.value.file == str(path) and err.value.where == where

    def test_not_a_history(self) -> None:
        with pytest.raises(TranscriptError):
            openhands.from_document("text", file="x.json")


class TestSniff:
    def test_bare_event_list_and_foreign_shapes(self) -> None:
        def probe(doc: Any) -> FileHead:
            return FileHead(path=Path("x.json"), head=json.dumps(doc), shape="json", records=None, document=doc)

        assert openhands.sniff(probe(EVENTS)) == 95
        assert openhands.sniff(probe({"history": [{"role": "user", "content": "x"}]})) == 0
        assert openhands.sniff(probe([{"role": "user", "content": "x"}])) == 0


_KEYS = st.sampled_from(
    [
        "id", "source", "action", "observation", "args", "content", "message", "cause", "tool_call_metadata",
        "tool_call_id", "function_name", "model_response", "choices", "tool_calls", "function", "arguments",
        "success", "thought", "image_urls", "tools", "history", "instance_id", "metadata"
    ]
)
_VALUES = st.sampled_from(
    [
        "agent", "user", "environment", "run", "read", "edit", "error", "message", "system", "recall", "think",
        "finish", "{}", "t1"
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
    for doc in (value, [value], {"history": [value, value], "instance_id": "i"}):
        with contextlib.suppress(TranscriptError):
            openhands.from_document(doc)
