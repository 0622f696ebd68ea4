"""Claude Managed Agents importer: the containers, span grouping and usage, tool pairs, status events, errors, detection.

The fixtures (``fixtures/managed_agents/``: one hand-written session as a JSON
list, JSONL, a ``{"data": [...]}`` page and JSONL of ``{role, kind, time,
raw}`` wrappers) follow the event shapes of the public API reference
(platform.claude.com/docs/en/managed-agents: event types, events and
streaming) and the Python SDK's generated types
(anthropics/anthropic-sdk-python, src/anthropic/types/beta/sessions/
beta_managed_agents_*_event.py: ``tool_use_id`` / ``mcp_tool_use_id`` /
``custom_tool_use_id``, ``span.model_request_end.model_usage``,
``session.status_idle.stop_reason``, ``session.error.error``).
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, load
from lab.formats.claude import managed_agents
from lab.formats.openai import openai_chat
from lab.formats.export import to_anthropic, to_openai
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

FIXTURES = Path(__file__).parent / "fixtures" / "managed_agents"
CONTAINERS = {
    "list": FIXTURES / "session.events.json",
    "jsonl": FIXTURES / "session.events.jsonl",
    "page": FIXTURES / "session.page.json",
    "wrapped": FIXTURES / "session.wrapped.jsonl",
}
EVENTS: list[dict[str, Any]] = json.loads(CONTAINERS["list"].read_text(encoding="utf-8"))
SHAPE = [
    ("user", ["text"]),
    ("assistant", ["text", "tool_use", "tool_use"]),
    ("user", ["tool_result", "tool_result"]),
    ("assistant", ["tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["tool_use"]),
    ("user", ["tool_result"]),
    ("assistant", ["text"]),
]


def _shape(t: Transcript) -> list[tuple[str, list[str]]]:
    return [(m.role, [b.type for b in m.content]) for m in t.messages]


def _ev(type_: str, eid: str, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "type": type_, "processed_at": "2026-05-02T10:00:00Z", **fields}


def _text(t: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t}]


def _jsonl(tmp_path: Path, records: list[Any], name: str = "events.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def _load_events(tmp_path: Path, events: list[Any]) -> Transcript:
    return load(_jsonl(tmp_path, events))


# --- containers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONTAINERS)
def test_every_container_gives_the_same_history(kind: str) -> None:
    t = load(CONTAINERS[kind])
    assert t.meta.source_format == "managed_agents"
    assert _shape(t) == SHAPE
    assert t.notes.records_read == len(EVENTS)
    # The wrapper's time stands in for the processed_at the wrapped events lack.
    assert [m.timestamp for m in t.messages] == [m.timestamp for m in load(CONTAINERS["list"]).messages]
    assert all(m.timestamp is not None for m in t.messages)


@pytest.mark.parametrize("key", ["data", "events"])
def test_a_page_document_and_a_single_event(tmp_path: Path, key: str) -> None:
    page = tmp_path / "page.json"
    page.write_text(json.dumps({key: EVENTS}), encoding="utf-8")
    assert _shape(load(page)) == SHAPE
    one = tmp_path / "one.json"
    one.write_text(json.dumps(_ev("user.message", "u1", content=_text("hello"))), encoding="utf-8")
    assert _shape(load(one, format="managed_agents")) == [("user", ["text"])]


def test_a_raw_event_stored_as_json_text(tmp_path: Path) -> None:
    records = [{"role": "user", "kind": e["type"], "time": e["processed_at"], "raw": json.dumps(e)} for e in EVENTS]
    assert _shape(load(_jsonl(tmp_path, records))) == SHAPE


def test_a_last_line_cut_off_mid_write_is_a_warning(tmp_path: Path) -> None:
    text = CONTAINERS["jsonl"].read_text(encoding="utf-8")
    p = tmp_path / "live.jsonl"
    p.write_text(text + '{"id": "sevt_z", "type": "agent.mess', encoding="utf-8")
    t = load(p)
    assert _shape(t) == SHAPE
    assert any("cut off" in w for w in t.notes.warnings)


# --- mapping ----------------------------------------------------------------------------------------


def test_roles_alternate_and_tool_pairs_are_kept() -> None:
    t = load(CONTAINERS["jsonl"])
    roles = [m.role for m in t.messages]
    assert all(a != b for a, b in pairwise(roles))
    pairs = tool_pairs(t.messages)
    assert set(pairs) == {"sevt_tu1", "sevt_tu2", "sevt_mtu1", "sevt_ctu1"}
    assert all(use is not None and result is not None and result == use + 1 for use, result in pairs.values())
    uses = {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    assert uses["sevt_tu1"].name == "bash" and uses["sevt_tu1"].input == {"command": "pytest -q"}
    assert uses["sevt_mtu1"].name == "search_issues"
    assert uses["sevt_ctu1"].input["path"] == "calc.py"
    results = {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    assert results["sevt_tu1"].is_error and "1 failed" in results["sevt_tu1"].content
    assert not results["sevt_tu2"].is_error and "return a - b" in results["sevt_tu2"].content
    assert results["sevt_mtu1"].content == "#12 add() subtracts (open)"
    assert results["sevt_ctu1"].content == "patched calc.py"
    assert t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []


def test_usage_of_each_model_request_sits_on_its_assistant_message() -> None:
    t = load(CONTAINERS["list"])
    usages = [m.usage for m in t.messages if m.role == "assistant"]
    assert usages == [
        Usage(input_tokens=1800, output_tokens=95, cache_read_tokens=0, cache_write_tokens=1500),
        Usage(input_tokens=260, output_tokens=40, cache_read_tokens=1800),
        Usage(input_tokens=120, output_tokens=60, cache_read_tokens=2060),
        Usage(input_tokens=90, output_tokens=30, cache_read_tokens=2180),
    ]
    assert all(m.usage is None for m in t.messages if m.role == "user")


def test_status_and_span_events_are_counted_never_messages() -> None:
    t = load(CONTAINERS["wrapped"])
    s = t.notes.skipped
    assert s["session.status_running"] == 2 and s["session.status_idle"] == 2 and s["session.status_rescheduled"] == 1
    assert s["span.model_request_start"] == 4 and s["span.model_request_end"] == 4
    assert s["session.error"] == 1 and s["agent.thinking"] == 1
    assert [m for m in t.messages if m.role == "system"] == []
    texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert not any("status" in x or "Overloaded" in x for x in texts)
    assert any("session error model_overloaded_error: Overloaded" in w for w in t.notes.warnings)


def test_unknown_event_types_and_other_records_are_skipped_and_counted(tmp_path: Path) -> None:
    t = _load_events(tmp_path, [{"note": "exported by hand"}, *EVENTS, {"kind": "heartbeat"}])
    assert _shape(t) == SHAPE
    assert t.notes.skipped["event:agent.future_event"] == 1
    assert t.notes.skipped["record:unknown"] == 1 and t.notes.skipped["record:heartbeat"] == 1


def test_thinking_with_text_becomes_a_thinking_block(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("user.message", "u1", content=_text("hi")),
            _ev("span.model_request_start", "m1"),
            _ev("agent.thinking", "t1", thinking="The user greets me."),
            _ev("agent.message", "a1", content=_text("Hello!")),
            _ev("span.model_request_end", "me1", model_request_start_id="m1", model_usage={"input_tokens": 5, "output_tokens": 3}),
        ],
    )
    first = t.messages[1].content
    assert isinstance(first[0], ThinkingBlock) and first[0].thinking == "The user greets me."
    assert isinstance(first[1], TextBlock) and t.messages[1].usage == Usage(input_tokens=5, output_tokens=3)


def test_a_denied_call_is_answered_with_the_deny_message(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("user.message", "u1", content=_text("clean up")),
            _ev("agent.tool_use", "tu1", name="bash", input={"command": "rm -rf build"}, evaluated_permission="ask"),
            _ev("session.status_idle", "s1", stop_reason={"type": "requires_action", "event_ids": ["tu1"]}),
            _ev("user.tool_confirmation", "c1", tool_use_id="tu1", result="deny", deny_message="not the build folder"),
            _ev("agent.message", "a2", content=_text("Understood, I will leave it.")),
        ],
    )
    assert _shape(t) == [("user", ["text"]), ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("assistant", ["text"])]
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.is_error and "not the build folder" in result.content


def test_an_unanswered_call_is_closed_before_the_conversation_moves_on(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("user.message", "u1", content=_text("run it")),
            _ev("agent.tool_use", "tu1", name="bash", input={"command": "sleep 100"}),
            _ev("user.interrupt", "i1"),
            _ev("user.message", "u2", content=_text("stop, do something else")),
            _ev("agent.message", "a2", content=_text("Stopped.")),
        ],
    )
    # The synthetic result and the user's next words share one user turn.
    assert _shape(t) == [("user", ["text"]), ("assistant", ["tool_use"]), ("user", ["tool_result", "text"]), ("assistant", ["text"])]
    assert t.messages[2].content[0].is_error  # type: ignore[union-attr]
    assert any("'tu1'" in w and "no result" in w for w in t.notes.warnings)
    assert t.notes.skipped["user.interrupt"] == 1


def test_requests_with_no_user_turn_between_merge_into_one_message(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("user.message", "u1", content=_text("go")),
            _ev("span.model_request_start", "m1"),
            _ev("agent.message", "a1", content=_text("Part one.")),
            _ev("span.model_request_end", "me1", model_request_start_id="m1", model_usage={"input_tokens": 10, "output_tokens": 2}),
            _ev("span.model_request_start", "m2"),
            _ev("agent.message", "a2", content=_text("Part two.")),
            _ev("span.model_request_end", "me2", model_request_start_id="m2", model_usage={"input_tokens": 14, "output_tokens": 2}),
        ],
    )
    assert _shape(t) == [("user", ["text"]), ("assistant", ["text", "text"])]
    assert t.messages[1].usage == Usage(input_tokens=14, output_tokens=2)
    assert any("merged into one assistant message" in w for w in t.notes.warnings)


def test_subagent_cross_posts_orphans_and_duplicates_are_counted(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("user.message", "u1", content=_text("go")),
            _ev("agent.tool_use", "tu1", name="read", input={"path": "a.py"}),
            _ev("agent.tool_use", "tu9", name="bash", input={}, session_thread_id="sthr_1"),
            _ev("agent.tool_result", "r1", tool_use_id="tu1", content=_text("x = 1")),
            _ev("agent.tool_result", "r1b", tool_use_id="tu1", content=_text("x = 1")),
            _ev("agent.tool_result", "r2", tool_use_id="nope", content=_text("?")),
            _ev("agent.message", "a2", content=_text("Done.")),
        ],
    )
    assert _shape(t) == [("user", ["text"]), ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("assistant", ["text"])]
    s = t.notes.skipped
    assert s["agent.tool_use (subagent thread)"] == 1
    assert s["agent.tool_result (already answered)"] == 1 and s["agent.tool_result (unknown tool use)"] == 1
    assert t.notes.orphan_tool_results == ["nope"]


def test_system_message_events_and_warnings_for_terminal_states(tmp_path: Path) -> None:
    t = _load_events(
        tmp_path,
        [
            _ev("system.message", "y1", content=_text("Answer in French.")),
            _ev("user.message", "u1", content=_text("hi")),
            _ev("agent.message", "a1", content=_text("Salut !")),
            _ev("agent.thread_context_compacted", "k1"),
            _ev("session.status_idle", "s1", stop_reason={"type": "retries_exhausted"}),
            _ev("session.status_terminated", "s2"),
        ],
    )
    assert _shape(t) == [("system", ["text"]), ("user", ["text"]), ("assistant", ["text"])]
    joined = "\n".join(t.notes.warnings)
    assert "compacted its own context" in joined and "exhausting its retries" in joined and "session.status_terminated" in joined


# --- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("not json at all\n", id="not-json"),
        pytest.param('[{"id": "x", "type": "agent.message"', id="cut-document"),
        pytest.param('{"id": "s1", "type": "session.status_idle"}\n{"id": "s2", "type": "session.status_running"}\n', id="status-only"),
        pytest.param('[{"role": "user", "content": "hi"}]', id="chat-messages"),
        pytest.param('{"data": []}', id="empty-page"),
        pytest.param("[1, 2, 3]", id="numbers"),
    ],
)
def test_garbage_raises_a_transcript_error(tmp_path: Path, content: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError):
        load(p, format="managed_agents")


def test_a_tool_use_without_a_name_is_kept_as_an_unnamed_call_naming_its_line(tmp_path: Path) -> None:
    p = _jsonl(tmp_path, [_ev("user.message", "u1", content=_text("go")), _ev("agent.tool_use", "tu1", input={})])
    t = load(p)
    uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert [u.name for u in uses] == ["unnamed_tool"]
    assert any("line 2" in w and "without a tool name" in w for w in t.notes.warnings)


# --- detection --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONTAINERS)
def test_detection_picks_managed_agents_over_openai_chat(kind: str) -> None:
    probe = read_file_head(CONTAINERS[kind])
    assert detect(CONTAINERS[kind]) == "managed_agents"
    assert managed_agents.sniff(probe) > openai_chat.sniff(probe)


def test_a_wrapped_json_list_is_not_read_as_system_messages(tmp_path: Path) -> None:
    # The misread: wrapped events carry a chat role, so they look like chat messages without content.
    role = {"user": "user", "agent": "assistant"}
    records = [{"role": role.get(e["type"].split(".")[0], "system"), "kind": e["type"], "time": e["processed_at"], "raw": e} for e in EVENTS]
    p = tmp_path / "wrapped.json"
    p.write_text(json.dumps(records), encoding="utf-8")
    assert openai_chat.sniff(read_file_head(p)) == 0  # a role without content is no Chat message (see its sniffer)
    assert detect(p) == "managed_agents"
    assert _shape(load(p)) == SHAPE


def test_a_large_document_is_detected_from_its_head(tmp_path: Path) -> None:
    filler = [_ev("agent.tool_result", f"r{i}", tool_use_id="tu", content=_text("x" * 2000)) for i in range(600)]
    p = tmp_path / "big.json"
    p.write_text(json.dumps([EVENTS[0], EVENTS[1], *filler]), encoding="utf-8")
    assert p.stat().st_size > 1024 * 1024
    assert managed_agents.sniff(read_file_head(p)) == 92


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert managed_agents.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md"), ids=lambda p: p.name)
def test_other_samples_are_not_claimed_and_refused_when_forced(path: Path) -> None:
    if path.name.startswith("managed-agents-"):
        assert detect(path) == "managed_agents"
        return
    assert managed_agents.sniff(read_file_head(path)) == 0
    with pytest.raises(TranscriptError):
        load(path, format="managed_agents")


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_refused_when_forced(path: Path) -> None:
    with pytest.raises(TranscriptError):
        load(path, format="managed_agents")


# --- replay and export ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CONTAINERS["wrapped"], SAMPLES / "managed-agents-sample.events.jsonl"], ids=["fixture", "sample"])
def test_replays_and_exports_with_every_pair(path: Path) -> None:
    t = load(path)
    result = lab.replay(t, "minicode", window=32000)
    assert result.invalid_requests == 0
    assert len(result.rows) == sum(1 for m in t.messages if m.role == "assistant")
    body = to_anthropic(t)
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses and uses == results == set(tool_pairs(t.messages))
    chat = to_openai(t)
    assert {c["id"] for m in chat["messages"] for c in m.get("tool_calls") or []} == uses


# --- the task given as an outcome, other user events ------------------------------------------------

OUTCOME = FIXTURES / "outcome.events.jsonl"


def test_a_task_defined_as_an_outcome_is_the_first_user_turn() -> None:
    events = [json.loads(line) for line in OUTCOME.read_text(encoding="utf-8").splitlines()]
    assert not any(e["type"] == "user.message" for e in events)
    (outcome,) = [e for e in events if e["type"] == "user.define_outcome"]
    t = load(OUTCOME)
    assert t.meta.source_format == "managed_agents"
    first = t.messages[0]
    assert first.role == "user" and [b.text for b in first.content if isinstance(b, TextBlock)] == [outcome["description"]]
    # The rubric is the grader's input, not the agent's: counted, never in a message.
    assert t.notes.skipped["user.define_outcome rubric"] == 1
    assert "Rubric" not in t.model_dump_json(include={"messages"})
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]


def test_any_other_user_event_with_text_is_a_user_turn_and_unknown_types_are_counted() -> None:
    events = [json.loads(line) for line in OUTCOME.read_text(encoding="utf-8").splitlines()]
    (note,) = [e for e in events if e["type"] == "user.note"]
    t = load(OUTCOME)
    users = [b.text for m in t.messages if m.role == "user" for b in m.content if isinstance(b, TextBlock)]
    assert note["text"] in users
    known = {"user.define_outcome", "user.note", "agent.message", "agent.tool_use", "agent.tool_result"}
    unknown = {e["type"] for e in events} - managed_agents.EVENT_TYPES - known
    assert unknown == {"agent.future_event"} and t.notes.skipped["event:agent.future_event"] == 1
    # Every event is a message part or counted: none is dropped unseen.
    counted = sum(v for k, v in t.notes.skipped.items() if k != "user.define_outcome rubric")
    parts = sum(1 for e in events if e["type"] in known)
    assert counted + parts == len(events)


def test_a_user_event_without_text_is_counted_by_its_type(tmp_path: Path) -> None:
    t = _load_events(tmp_path, [_ev("user.define_outcome", "o1", rubric={"type": "file", "file_id": "file_1"}), *EVENTS])
    assert _shape(t) == SHAPE
    assert t.notes.skipped["user.define_outcome"] == 1 and t.notes.skipped["user.define_outcome rubric"] == 1


def test_an_outcome_session_replays_with_no_invalid_request() -> None:
    t = load(OUTCOME)
    for preset in ("minicode", "mewcode"):
        assert lab.replay(t, preset, window=32000).invalid_requests == 0
