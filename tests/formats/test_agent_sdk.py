"""Claude Agent SDK importer: init/result records, split assistant blocks, subagent threads, stream events, containers, detection.

The fixtures (``fixtures/agent_sdk/``) are one hand-written session, written
twice: as ``claude -p --output-format stream-json --verbose`` lines and as the
Python SDK's dataclass dumps of the same messages (``dataclasses.asdict``: no
``type`` keys). Their shapes follow the Python SDK's message parser and types
(anthropics/claude-agent-sdk-python, ``_internal/message_parser.py``:
``AssistantMessage(content, model, parent_tool_use_id, usage, message_id,
...)``, ``SystemMessage(subtype, data)``, ``ResultMessage(subtype,
duration_ms, num_turns, session_id, total_cost_usd, usage, ...)``,
``StreamEvent(uuid, session_id, event, parent_tool_use_id)``) and the
TypeScript ``SDKMessage`` types (``SDKAssistantMessage.message`` is an API
message; one record per content block sharing ``message.id``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.core.messages import ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats.claude import agent_sdk
from lab.formats import detect, load
from lab.formats.export import to_anthropic
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

FIXTURES = Path(__file__).parent / "fixtures" / "agent_sdk"
STREAM = FIXTURES / "session.stream.jsonl"
DUMPS = FIXTURES / "session.dataclasses.jsonl"
SAMPLE = SAMPLES / "claude-agent-sdk-sample.stream.jsonl"
RECORDS: list[dict[str, Any]] = [json.loads(line) for line in STREAM.read_text(encoding="utf-8").splitlines()]
SESSION = "5f0c2a9e-7b1d-4c3e-9a42-1d2e3f4a5b6c"
SHAPE = [
    ("user", ["text"]),
    ("assistant", ["thinking", "text", "tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["text", "tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["tool_use", "tool_use"]),
    ("user", ["tool_result", "tool_result"]),
    ("assistant", ["text", "tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["text"]),
]
SUBAGENT = [("user", ["text"]), ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("assistant", ["text"])]


def _shape(messages: list[Any]) -> list[tuple[str, list[str]]]:
    return [(m.role, [b.type for b in m.content]) for m in messages]


def _jsonl(tmp_path: Path, records: list[Any], name: str = "run.stream.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def _init(**fields: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-x", "cwd": "/w", "tools": ["Bash"], **fields}


def _assistant(mid: str, block: dict[str, Any], uuid: str, parent: str | None = None, output: int = 10) -> dict[str, Any]:
    usage = {"input_tokens": 5, "output_tokens": output, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}
    message = {"id": mid, "type": "message", "role": "assistant", "model": "claude-x", "content": [block], "usage": usage}
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent, "session_id": "s1", "uuid": uuid}


def _user(content: Any, uuid: str, parent: str | None = None) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": parent, "session_id": "s1", "uuid": uuid}


def _bash(tid: str, command: str = "ls") -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}


def _result(tid: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": text}


# --- containers ---------------------------------------------------------------------------------------


def _as_list(tmp_path: Path) -> Path:
    p = tmp_path / "run.json"
    p.write_text(json.dumps(RECORDS, indent=1), encoding="utf-8")
    return p


def _class_named(tmp_path: Path) -> Path:
    # {"type": type(m).__name__, **asdict(m)}: how users tag their dumps.
    names = {"assistant": "AssistantMessage", "user": "UserMessage", "result": "ResultMessage", "stream_event": "StreamEvent"}
    out = []
    for dump in (json.loads(x) for x in DUMPS.read_text(encoding="utf-8").splitlines()):
        kind = agent_sdk.normalize(dump)
        name = names.get(kind[0], "SystemMessage") if kind is not None else "RateLimitEvent"
        out.append({"type": name, **dump})
    return _jsonl(tmp_path, out, "run.dumps.jsonl")


def _old_dumps(tmp_path: Path) -> Path:
    # An older SDK: AssistantMessage(content, model) and UserMessage(content) only.
    out = []
    for dump in (json.loads(x) for x in DUMPS.read_text(encoding="utf-8").splitlines()):
        kind = agent_sdk.normalize(dump)
        if kind is not None and kind[0] == "assistant":
            dump = {"content": dump["content"], "model": dump["model"], "parent_tool_use_id": dump["parent_tool_use_id"]}
        elif kind is not None and kind[0] == "user" and dump["parent_tool_use_id"] is None:
            dump = {"content": dump["content"]}
        out.append(dump)
    return _jsonl(tmp_path, out, "run.old.jsonl")


CONTAINERS = ["stream", "dataclasses", "json_list", "class_named", "old_dumps"]


@pytest.mark.parametrize("kind", CONTAINERS)
def test_every_container_gives_the_same_history(tmp_path: Path, kind: str) -> None:
    makers = {"json_list": _as_list, "class_named": _class_named, "old_dumps": _old_dumps}
    path = makers[kind](tmp_path) if kind in makers else {"stream": STREAM, "dataclasses": DUMPS}[kind]
    assert detect(path) == "claude_agent_sdk"
    t = load(path)
    assert t.meta.source_format == "claude_agent_sdk"
    assert _shape(t.messages) == SHAPE
    assert {k: _shape(v) for k, v in t.sidechains.items()} == {"toolu_02": SUBAGENT}
    # The one warning: how much of the file the subagent's thread is.
    assert [w for w in t.notes.warnings if "sidechain records" not in w] == []
    assert not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses


# --- init and result -----------------------------------------------------------------------------------


def test_the_init_record_gives_meta_and_tools() -> None:
    t = load(STREAM)
    assert (t.meta.session_id, t.meta.model, t.meta.cwd) == (SESSION, "claude-sonnet-4-5-20250929", "/home/dev/slugkit")
    assert [s.name for s in t.tools] == ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite", "mcp__docs__search"]
    assert "system:init" not in t.notes.skipped


def test_the_result_record_goes_into_the_notes_with_its_usage_and_cost() -> None:
    t = load(STREAM)
    [line] = [d for d in t.notes.dropped if "result record" in d]
    assert line.startswith(f"line {len(RECORDS)}: result record (success)")
    for fact in ("7 turns", "48.2 s", "total_cost_usd 0.0871", "input_tokens 43", "output_tokens 760", "cache_read_tokens 108140", "cache_write_tokens 7290"):
        assert fact in line
    assert "result" not in t.notes.skipped


def test_model_usage_and_permission_denials_of_the_result_are_reported(tmp_path: Path) -> None:
    result = {"type": "result", "subtype": "success", "num_turns": 2, "duration_ms": 900, "session_id": "s1", "total_cost_usd": 0.02,
              "modelUsage": {"claude-x": {"inputTokens": 40, "outputTokens": 12, "cacheReadInputTokens": 300, "cacheCreationInputTokens": 0, "costUSD": 0.015},
                             "claude-haiku": {"inputTokens": 9, "outputTokens": 3, "costUSD": 0.001}},
              "permission_denials": [{"tool_name": "Bash", "tool_use_id": "toolu_2", "tool_input": {"command": "rm -rf /"}}]}
    records = [_init(), _user("Clean up", "u1"), _assistant("m1", _bash("toolu_2", "rm -rf /"), "a1"),
               _user([_result("toolu_2", "Permission to use Bash has been denied.")], "u2"), _assistant("m2", {"type": "text", "text": "I may not."}, "a2"), result]
    t = load(_jsonl(tmp_path, records))
    [line] = [d for d in t.notes.dropped if "result record" in d]
    assert "by model: claude-x (in 40, out 12, cache read 300, cache write 0, $0.015); claude-haiku (in 9, out 3, $0.001)" in line
    assert [w for w in t.notes.warnings if "permission" in w] == [f"line {len(records)}: the permission system refused 1 tool call(s): Bash (toolu_2)"]
    assert "rm -rf" not in " ".join(t.notes.warnings)


def test_a_run_that_did_not_succeed_is_a_warning() -> None:
    t = load(SAMPLE)
    assert any("error_max_turns" in w for w in t.notes.warnings)


# --- assistant messages split per block -----------------------------------------------------------------


def test_blocks_of_one_message_merge_with_their_usage_counted_once() -> None:
    t = load(STREAM)
    first = t.messages[1]
    assert isinstance(first.content[0], ThinkingBlock) and first.content[0].signature == "c2lnLTAx"
    assert first.usage == Usage(input_tokens=4, output_tokens=96, cache_read_tokens=11800, cache_write_tokens=5120)
    # One usage per model response: seven responses in the main thread, seven usages.
    ids = {r["message"]["id"] for r in RECORDS if r["type"] == "assistant" and r["parent_tool_use_id"] is None}
    assert len(ids) == 7
    assert sum(m.usage is not None for m in t.messages) == 7
    assert sum(m.usage.output_tokens for m in t.messages if m.usage) == 96 + 120 + 140 + 210 + 70 + 66 + 58


def test_the_last_block_record_gives_the_usage(tmp_path: Path) -> None:
    recs = [_init(), _user("go", "u0"), _assistant("m1", {"type": "text", "text": "a"}, "a1", output=1), _assistant("m1", _bash("t1"), "a2", output=40), _user([_result("t1")], "u1")]
    t = load(_jsonl(tmp_path, recs))
    assert _shape(t.messages) == [("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"])]
    assert t.messages[1].usage is not None and t.messages[1].usage.output_tokens == 40
    assert t.messages[1].id == "a1"


def test_a_result_written_between_blocks_of_one_message_moves_after_it(tmp_path: Path) -> None:
    # The harness may run a tool while the model still streams the next call of the same response.
    recs = [_init(), _user("go", "u0"), _assistant("m1", _bash("t1"), "a1"), _user([_result("t1", "one")], "u1"),
            _assistant("m1", _bash("t2"), "a2"), _user([_result("t2", "two")], "u2"), _assistant("m2", {"type": "text", "text": "done"}, "a3")]  # fmt: skip
    t = load(_jsonl(tmp_path, recs))
    assert _shape(t.messages) == [("user", ["text"]), ("assistant", ["tool_use", "tool_use"]), ("user", ["tool_result", "tool_result"]), ("assistant", ["text"])]
    assert lab.replay(t, "minicode", window=32000).invalid_requests == 0


# --- tool pairs and subagents ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [STREAM, DUMPS, SAMPLE], ids=["stream", "dataclasses", "sample"])
def test_every_tool_call_keeps_its_result_in_its_own_thread(path: Path) -> None:
    t = load(path)
    for messages in [t.messages, *t.sidechains.values()]:
        pairs = tool_pairs(messages)
        assert pairs and all(use is not None and result is not None and use < result for use, result in pairs.values())
    body = to_anthropic(t)
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses and uses == results


def test_subagent_messages_go_to_the_sidechain_of_their_task_call() -> None:
    t = load(STREAM)
    [side] = t.sidechains.values()
    assert "Grep" in {b.name for m in side for b in m.content if isinstance(b, ToolUseBlock)}
    main_tools = {b.name for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    assert "Grep" not in main_tools and "Task" in main_tools
    task = next(b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock) and b.name == "Task")
    assert task.id in t.sidechains
    answer = next(b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock) and b.tool_use_id == task.id)
    assert answer.content.startswith("One place: slugkit/core.py line 14")


def test_subagent_records_are_counted_and_listed_as_threads() -> None:
    from lab.formats import sessions

    side = [r for r in RECORDS if r.get("parent_tool_use_id")]
    t = load(STREAM)
    (note,) = [w for w in t.notes.warnings if "sidechain records" in w]
    assert note.startswith(f"{len(side)} sidechain records in {len({r['parent_tool_use_id'] for r in side})} subagent threads, not part of the main context")
    listed = sessions(STREAM)
    assert [(s.id, s.kind) for s in listed] == [(t.meta.session_id, None), ("toolu_02", "subagent")]
    assert load(STREAM, session="toolu_02").messages == t.sidechains["toolu_02"]


def test_a_subagent_thread_without_its_prompt_gets_the_task_prompt(tmp_path: Path) -> None:
    task = {"type": "tool_use", "id": "task1", "name": "Task", "input": {"description": "d", "prompt": "find the config"}}
    recs = [_init(), _user("go", "u0"), _assistant("m1", task, "a1"), _assistant("s1", {"type": "text", "text": "found it"}, "b1", parent="task1"),
            _user([_result("task1", "found it")], "u1"), _assistant("m2", {"type": "text", "text": "done"}, "a2")]  # fmt: skip
    t = load(_jsonl(tmp_path, recs))
    side = t.sidechains["task1"]
    assert _shape(side) == [("user", ["text"]), ("assistant", ["text"])]
    assert side[0].content[0].text == "find the config"  # type: ignore[union-attr]
    assert [w for w in t.notes.warnings if not w.startswith("1 sidechain records in 1 subagent threads")] == []


def test_a_stream_without_the_prompt_starts_with_a_placeholder_turn() -> None:
    t = load(SAMPLE)
    first = t.messages[0]
    assert first.role == "user" and first.tag == "placeholder"
    assert any("placeholder user turn" in w for w in t.notes.warnings)


# --- records that are not messages -----------------------------------------------------------------------


def test_unknown_records_and_other_system_subtypes_are_skipped_and_counted(tmp_path: Path) -> None:
    t = load(STREAM)
    assert t.notes.skipped == {"system:hook_response": 1, "record:rate_limit_event": 1, "record:tool_progress": 1}
    assert t.notes.records_read == len(RECORDS)
    recs = [_init(), _user("go", "u0"), {"type": "control_request", "request_id": "r1"}, "a string", _assistant("m1", {"type": "text", "text": "hi"}, "a1"),
            {"type": "system", "subtype": "status", "status": "compacting", "session_id": "s1"}, _init(session_id="s2")]  # fmt: skip
    t = load(_jsonl(tmp_path, recs))
    assert t.notes.skipped == {"record:control_request": 1, "record:non_object": 1, "system:status": 1, "system:init (repeated)": 1}
    assert any("second session" in w for w in t.notes.warnings)


def test_stream_events_are_superseded_by_the_complete_records() -> None:
    t = load(STREAM)
    assert not any("stream_event" in k or k.startswith("sse:") for k in t.notes.skipped)
    reads = [b for b in t.messages[5].content if isinstance(b, ToolUseBlock)]
    assert [b.input["file_path"] for b in reads] == ["/home/dev/slugkit/slugkit/core.py", "/home/dev/slugkit/tests/test_slug.py"]


def test_a_message_the_stream_never_completed_is_assembled_from_its_events(tmp_path: Path) -> None:
    def ev(event: dict[str, Any]) -> dict[str, Any]:
        return {"type": "stream_event", "uuid": f"e{len(recs)}", "session_id": "s1", "event": event, "parent_tool_use_id": None}

    recs: list[Any] = [_init(), _user("go", "u0")]
    recs.append(ev({"type": "message_start", "message": {"id": "m9", "role": "assistant", "model": "claude-x", "content": [], "usage": {"input_tokens": 7, "output_tokens": 1}}}))
    recs.append(ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    recs.append(ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half an ans"}}))
    t = load(_jsonl(tmp_path, recs))
    assert _shape(t.messages) == [("user", ["text"]), ("assistant", ["text"])]
    assert t.messages[1].content[0].text == "Half an ans"  # type: ignore[union-attr]
    assert t.messages[1].usage is not None and t.messages[1].usage.input_tokens == 7
    assert any("assembled from stream events" in w for w in t.notes.warnings)


def test_a_compact_boundary_becomes_a_boundary_message(tmp_path: Path) -> None:
    boundary = {"type": "system", "subtype": "compact_boundary", "compact_metadata": {"trigger": "auto", "pre_tokens": 150000}, "session_id": "s1", "uuid": "c1"}
    recs = [_init(), _user("go", "u0"), _assistant("m1", {"type": "text", "text": "a"}, "a1"), boundary, _user("next", "u1"), _assistant("m2", {"type": "text", "text": "b"}, "a2")]
    t = load(_jsonl(tmp_path, recs))
    marker = t.messages[2]
    assert marker.role == "system" and marker.boundary is not None
    assert (marker.boundary.trigger, marker.boundary.tokens_before) == ("auto", 150000)


def test_an_assistant_error_is_a_warning(tmp_path: Path) -> None:
    failed = {**_assistant("m1", {"type": "text", "text": "API Error: 429"}, "a1"), "error": "rate_limit"}
    t = load(_jsonl(tmp_path, [_init(), _user("go", "u0"), failed]))
    assert any("rate_limit" in w for w in t.notes.warnings)


def test_a_last_line_cut_off_mid_write_is_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "live.stream.jsonl"
    text = STREAM.read_text(encoding="utf-8")
    p.write_text(text + json.dumps(RECORDS[2])[:70], encoding="utf-8")
    t = load(p)
    assert _shape(t.messages) == SHAPE
    assert any("cut off mid-record" in w for w in t.notes.warnings)


# --- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "not json at all\n",
        '{"type": "system", "subtype": "init", "session_id": "s"}\n{"type": "assistant", "message": \n{"x": 1}\n',
        "42",
        json.dumps({"type": "result", "subtype": "success", "num_turns": 1, "duration_ms": 5, "session_id": "s", "total_cost_usd": 0.01}),
        json.dumps(_init()) + "\n" + json.dumps({"type": "system", "subtype": "status", "session_id": "s1"}) + "\n",
        "",
    ],
    ids=["text", "broken_line", "number", "lone_result", "init_only", "empty"],
)
def test_garbage_raises_a_transcript_error(tmp_path: Path, content: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError):
        load(p, format="claude_agent_sdk")


def test_a_lone_result_record_is_claimed_and_refused_with_a_hint(tmp_path: Path) -> None:
    p = tmp_path / "out.json"
    p.write_text(json.dumps(RECORDS[-1]), encoding="utf-8")
    assert agent_sdk.sniff(read_file_head(p)) == 50
    with pytest.raises(TranscriptError, match="stream-json"):
        load(p, format="claude_agent_sdk")


# --- detection --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [STREAM, DUMPS, SAMPLE], ids=["stream", "dataclasses", "sample"])
def test_detection_picks_the_agent_sdk_over_claude_code_and_anthropic(path: Path) -> None:
    assert agent_sdk.sniff(read_file_head(path)) == 97
    assert detect(path) == "claude_agent_sdk"


def test_a_large_document_is_detected_from_its_head(tmp_path: Path) -> None:
    filler = [_user([_result(f"t{i}", "x" * 2000)], f"u{i}") for i in range(600)]
    p = tmp_path / "big.json"
    p.write_text(json.dumps([RECORDS[0], *filler]), encoding="utf-8")
    assert p.stat().st_size > 1024 * 1024
    assert agent_sdk.sniff(read_file_head(p)) == 92


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed_and_refused_when_forced(path: Path) -> None:
    assert agent_sdk.sniff(read_file_head(path)) == 0
    with pytest.raises(TranscriptError):
        load(path, format="claude_agent_sdk")


@pytest.mark.parametrize("path", sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md"), ids=lambda p: p.name)
def test_other_samples_are_not_claimed_and_refused_when_forced(path: Path) -> None:
    if path == SAMPLE:
        return
    assert agent_sdk.sniff(read_file_head(path)) == 0
    with pytest.raises(TranscriptError):
        load(path, format="claude_agent_sdk")


# --- replay -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [STREAM, DUMPS, SAMPLE], ids=["stream", "dataclasses", "sample"])
def test_replays_with_no_invalid_request(path: Path) -> None:
    t: Transcript = load(path)
    result = lab.replay(t, "minicode", window=32000)
    assert result.invalid_requests == 0
    assert len(result.rows) == sum(1 for m in t.messages if m.role == "assistant")


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


@pytest.mark.parametrize("kind", [["assistant"], {"t": 1}], ids=["list", "object"])
def test_a_record_whose_type_is_not_text_is_skipped_and_counted(tmp_path: Path, kind: Any) -> None:
    # The set lookup of an unhashable type raised TypeError out of the reader.
    records = [_init(), _user("hi", "u1"), {**_assistant("m0", {"type": "text", "text": "?"}, "a0"), "type": kind}, _assistant("m1", {"type": "text", "text": "hello"}, "a1", output=3)]
    assert agent_sdk.normalize(records[2]) is None
    t = agent_sdk.read(_jsonl(tmp_path, records))
    assert [m.role for m in t.messages] == ["user", "assistant"] and sum(t.notes.skipped.values()) == 1
