"""OpenHands V1 importer: event mapping, the accepted containers, errors, detection.

The fixtures follow the event shapes of the OpenHands software-agent-sdk
(repository OpenHands/software-agent-sdk): openhands-sdk/openhands/sdk/event/
llm_convertible/{system,message,action,observation}.py, event/condenser.py,
llm/message.py (TextContent, ImageContent, MessageToolCall, ThinkingBlock),
tool/schema.py (Observation content / is_error), tool/tool.py (a ToolDefinition
dumps its ``title``, not its name) and openhands-agent-server/openhands/
agent_server/models.py (the ``EventPage`` of ``items``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, dump, load
from lab.formats.openhands import openhands, openhands_v1
from lab.formats.jsonio import read_file_head
from lab.formats.openhands.openhands import CONDENSATION_STRATEGY
from lab.formats.registry import FileHead
from tests.conftest import CORPUS_FILES, corpus_id

TS = "2025-11-05T10:00:00.123456"


def _ev(eid: str, kind: str, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": TS, "source": source, **fields, "kind": kind}


def _text(text: str) -> dict[str, Any]:
    return {"cache_prompt": False, "type": "text", "text": text}


def _action(eid: str, call_id: str, tool: str, args: dict[str, Any], rid: str, thought: str = "", **extra: Any) -> dict[str, Any]:
    return _ev(
        eid,
        "ActionEvent",
        "agent",
        thought=[_text(thought)] if thought else [],
        action={"kind": "TerminalAction", **args},
        tool_name=tool,
        tool_call_id=call_id,
        tool_call={"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"},
        llm_response_id=rid,
        security_risk="LOW",
        **extra,
    )


def _obs(eid: str, call_id: str, tool: str, content: Any, action_id: str, is_error: bool = False) -> dict[str, Any]:
    observation = {"kind": "TerminalObservation", "content": content, "is_error": is_error, "command": "x", "exit_code": 0}
    return _ev(eid, "ObservationEvent", "environment", tool_name=tool, tool_call_id=call_id, observation=observation, action_id=action_id)


EVENTS: list[dict[str, Any]] = [
    _ev("c0", "ConversationStateUpdateEvent", "environment", key="execution_status", value="running"),
    _ev(
        "e1",
        "SystemPromptEvent",
        "agent",
        system_prompt=_text("You are OpenHands agent."),
        dynamic_context=_text("Repo: demo"),
        tools=[
            {"kind": "TerminalTool", "title": "terminal", "description": "Run a bash command.", "action_type": "TerminalAction"},
            {"type": "function", "function": {"name": "file_editor", "description": "Edit files.", "parameters": {"type": "object"}}},
        ],
    ),
    _ev(
        "e2",
        "MessageEvent",
        "user",
        llm_message={"role": "user", "content": [_text("Fix the bug"), {"type": "image", "image_urls": ["data:image/png;base64,AAAA"]}]},
        activated_skills=[],
        extended_content=[_text("<skill>repo notes</skill>")],
    ),
    # one model response, two parallel tool calls: only the first carries thought and reasoning
    _action(
        "a1",
        "toolu_01",
        "terminal",
        {"command": "ls"},
        "resp-1",
        thought="Let me look.",
        thinking_blocks=[{"type": "thinking", "thinking": "Inspect first.", "signature": "sig"}, {"type": "redacted_thinking", "data": "xx"}],
    ),
    _action("a2", "toolu_02", "terminal", {"command": "cat a.py"}, "resp-1"),
    _obs("o1", "toolu_01", "terminal", [_text("a.py")], "a1"),
    _obs("o2", "toolu_02", "terminal", [_text("print(1)"), {"type": "image", "image_urls": ["https://x/y.png"]}], "a2"),
    _ev("r1", "CondensationRequest", "environment"),
    _ev("k1", "Condensation", "environment", forgotten_event_ids=["a1", "a2", "o1"], summary="USER_CONTEXT: fix the bug", summary_offset=1, llm_response_id="resp-c"),
    _ev("k2", "Condensation", "environment", forgotten_event_ids=["o2"], summary=None, summary_offset=None, llm_response_id="resp-d"),
    # an older observation shape (output / error fields), answered by action_id only
    _action("a3", "toolu_03", "terminal", {"command": "make"}, "resp-2", reasoning_content="Build it."),
    _ev("o3", "ObservationEvent", "environment", tool_name="terminal", action_id="a3", observation={"kind": "ExecuteBashObservation", "output": "make: *** Error 2", "error": True}),
    _action("a4", "toolu_04", "nope", {}, "resp-3"),
    _ev("x1", "AgentErrorEvent", "agent", tool_name="nope", tool_call_id="toolu_04", error="Tool 'nope' not found."),
    _ev("x2", "AgentErrorEvent", "agent", tool_name="ghost", tool_call_id="toolu_99", error="never called"),
    _action("a5", "toolu_05", "terminal", {"command": "rm -rf /"}, "resp-4"),
    _ev("x3", "UserRejectObservation", "environment", tool_name="terminal", tool_call_id="toolu_05", action_id="a5", rejection_reason="Too risky", rejection_source="user"),
    _ev("p1", "PauseEvent", "user"),
    _ev("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_text("Done.")], "reasoning_content": "All good."}, llm_response_id="resp-5"),
    _ev("z1", "SomethingNew", "agent"),
    {"id": "z2", "source": "agent"},
]


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _jsonl(tmp_path: Path, events: list[Any], name: str = "events.jsonl") -> Path:
    return _write(tmp_path, name, "\n".join(json.dumps(e) for e in events) + "\n")


@pytest.fixture
def t(tmp_path: Path) -> Transcript:
    return openhands_v1.read(_write(tmp_path, "events.json", EVENTS))


class TestMapping:
    def test_roles_and_tags(self, t: Transcript) -> None:
        assert [(m.role, m.tag) for m in t.messages] == [
            ("system", None),
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("system", "boundary"),
            ("user", "summary"),
            # k2 forgot an event without a summary: still a boundary, with a note as its user turn
            ("system", "boundary"),
            ("user", "summary"),
            ("assistant", None),
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("assistant", None),
        ]

    def test_system_prompt_and_tools(self, t: Transcript) -> None:
        assert [b.text for b in t.messages[0].content] == ["You are OpenHands agent.", "Repo: demo"]  # type: ignore[union-attr]
        assert [(s.name, s.description) for s in t.tools] == [("terminal", "Run a bash command."), ("file_editor", "Edit files.")]
        assert t.tools[1].input_schema == {"type": "object"}

    def test_user_message_keeps_images_and_extended_content(self, t: Transcript) -> None:
        user = t.messages[1].content
        assert [type(b) for b in user] == [TextBlock, ImageBlock, TextBlock]
        assert isinstance(user[2], TextBlock) and user[2].text == "<skill>repo notes</skill>"

    def test_parallel_actions_share_one_assistant_message(self, t: Transcript) -> None:
        turn = t.messages[2].content
        assert [type(b) for b in turn] == [ThinkingBlock, TextBlock, ToolUseBlock, ToolUseBlock]
        assert isinstance(turn[0], ThinkingBlock) and turn[0].thinking == "Inspect first." and turn[0].signature == "sig"
        uses = [b for b in turn if isinstance(b, ToolUseBlock)]
        assert [(u.id, u.name, u.input) for u in uses] == [("toolu_01", "terminal", {"command": "ls"}), ("toolu_02", "terminal", {"command": "cat a.py"})]
        assert t.notes.skipped["redacted_thinking"] == 1

    def test_observations_pair_by_call_id_in_one_message(self, t: Transcript) -> None:
        results = t.messages[3].content
        assert all(isinstance(r, ToolResultBlock) for r in results)
        assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [  # type: ignore[union-attr]
            ("toolu_01", "a.py", False),
            ("toolu_02", "print(1)\n[image: image/unknown, https://x/y.png]", False),
        ]
        assert not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses
        assert all(use is not None and res is not None for use, res in tool_pairs(t.messages).values())

    def test_condensation_with_summary_is_a_boundary_and_a_summary(self, t: Transcript) -> None:
        marker, summary = t.messages[4], t.messages[5]
        assert marker.boundary is not None and marker.boundary.strategy == CONDENSATION_STRATEGY and marker.boundary.trigger == "import"
        assert isinstance(marker.content[0], TextBlock) and "3 event(s) forgotten" in marker.content[0].text
        assert summary.content == (TextBlock(text="USER_CONTEXT: fix the bug"),)
        assert marker.timestamp is not None and marker.timestamp.tzinfo is not None

    def test_older_observation_linked_by_action_id(self, t: Transcript) -> None:
        assert isinstance(t.messages[8].content[0], ThinkingBlock) and t.messages[8].content[0].thinking == "Build it."
        result = t.messages[9].content[0]
        assert isinstance(result, ToolResultBlock)
        assert (result.tool_use_id, result.content, result.is_error) == ("toolu_03", "make: *** Error 2", True)

    def test_agent_errors_and_rejections(self, t: Transcript) -> None:
        error, rejected = t.messages[11].content[0], t.messages[13].content[0]
        assert isinstance(error, ToolResultBlock) and error.is_error and error.content == "Tool 'nope' not found."
        assert isinstance(rejected, ToolResultBlock) and rejected.is_error and rejected.content == "Action rejected: Too risky"

    def test_final_message_keeps_reasoning(self, t: Transcript) -> None:
        assert t.messages[-1].content == (ThinkingBlock(thinking="All good."), TextBlock(text="Done."))

    def test_other_kinds_are_counted(self, t: Transcript) -> None:
        assert t.notes.skipped == {
            "ConversationStateUpdateEvent": 1,
            "redacted_thinking": 1,
            "CondensationRequest": 1,
            "AgentErrorEvent (unlinked)": 1,
            "PauseEvent": 1,
            "SomethingNew": 1,
            "unknown": 1,
        }
        assert t.notes.records_read == len(EVENTS)

    def test_meta_ids_and_determinism(self, tmp_path: Path, t: Transcript) -> None:
        assert t.meta.source_format == "openhands_v1"
        assert len({m.id for m in t.messages}) == len(t.messages)
        again = openhands_v1.read(_write(tmp_path, "again.json", EVENTS))
        assert (again.messages, again.tools, again.notes) == (t.messages, t.tools, t.notes)

    def test_arguments_fall_back_to_the_action(self) -> None:
        ev = _action("a1", "c1", "terminal", {"command": "ls"}, "r")
        del ev["tool_call"]
        t = openhands_v1.from_events([ev])
        use = t.messages[0].content[0]
        assert isinstance(use, ToolUseBlock) and use.input == {"command": "ls"} and use.id == "c1"

    def test_exports_to_provider_bodies(self, t: Transcript) -> None:
        body = dump(t, to="anthropic")
        assert body["messages"][0]["role"] == "user"
        assert all("boundary" not in json.dumps(m) for m in body["messages"])
        assert dump(t, to="openai")["messages"][0]["role"] == "system"


class TestSources:
    @pytest.mark.parametrize(
        "shape",
        ["list", "jsonl", "events", "items", "events-pretty", "events-one-line-jsonl"],
    )
    def test_every_container_gives_the_same_history(self, tmp_path: Path, t: Transcript, shape: str) -> None:
        if shape == "list":
            path = _write(tmp_path, "x.json", EVENTS)
        elif shape == "jsonl":
            path = _jsonl(tmp_path, EVENTS)
        elif shape == "events-pretty":
            path = _write(tmp_path, "x.json", json.dumps({"events": EVENTS}, indent=2))
        elif shape == "events-one-line-jsonl":
            path = _write(tmp_path, "x.jsonl", json.dumps({"events": EVENTS}) + "\n")
        else:
            path = _write(tmp_path, "x.json", {shape: EVENTS, "next_page_id": None})
        assert detect(path) == "openhands_v1"
        got = load(path)
        assert got.messages == t.messages and got.tools == t.tools and got.notes.skipped == t.notes.skipped

    def test_single_event_file(self, tmp_path: Path) -> None:
        # One file of a persisted conversation: events/event-00002-<id>.json
        path = _write(tmp_path, "event-00002-e2.json", json.dumps(EVENTS[2], indent=2))
        assert detect(path) == "openhands_v1"
        assert [m.role for m in load(path).messages] == ["user"]

    def test_document_conversation_id(self) -> None:
        assert openhands_v1.from_document({"conversation_id": "abc", "events": EVENTS[:3]}).meta.session_id == "abc"

    def test_a_folder_of_other_files_is_not_a_transcript(self, tmp_path: Path) -> None:
        # Not a conversation folder (no event-*.json): a folder of session files, whose one file is no transcript.
        (tmp_path / "events").mkdir()
        _write(tmp_path / "events", "e1.json", EVENTS[1])
        with pytest.raises(TranscriptError, match=r"e1\.json: no format gives a usable transcript"):
            load(tmp_path / "events")


class TestErrors:
    def test_event_not_an_object_names_the_line(self, tmp_path: Path) -> None:
        path = _jsonl(tmp_path, [EVENTS[1], EVENTS[2]])
        path.write_text(path.read_text() + "[1, 2]\n", encoding="utf-8")
        with pytest.raises(TranscriptError) as err:
            openhands_v1.read(path)
        assert err.value.where == "line 3"

    def test_event_not_an_object_in_a_document(self, tmp_path: Path) -> None:
        with pytest.raises(TranscriptError) as err:
            openhands_v1.read(_write(tmp_path, "x.json", {"events": [EVENTS[1], "junk"]}))
        assert err.value.where == "$.events[1]"

    def test_action_without_tool_name_is_kept_as_an_unnamed_call(self, tmp_path: Path) -> None:
        bad = {k: v for k, v in EVENTS[3].items() if k not in ("tool_name", "tool_call")}
        t = openhands_v1.read(_jsonl(tmp_path, [EVENTS[1], bad]))
        uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert [u.name for u in uses] == ["unnamed_tool"]
        assert any(w.startswith("line 2") and "without a tool name" in w for w in t.notes.warnings)

    def test_bad_arguments_are_kept_raw(self) -> None:
        ev = _action("a1", "c1", "terminal", {}, "r")
        ev["tool_call"]["arguments"] = "{not json"
        t = openhands_v1.from_events([ev])
        assert t.messages[0].content[0].input == {"_raw": "{not json"}  # type: ignore[union-attr]
        assert any("not valid JSON" in w for w in t.notes.warnings)

    @pytest.mark.parametrize("doc", ["text", 3, {"hello": "world"}], ids=["string", "number", "foreign-object"])
    def test_not_a_history(self, doc: Any) -> None:
        with pytest.raises(TranscriptError):
            openhands_v1.from_document(doc, file="x.json")


class TestDetection:
    def _probe(self, doc: Any) -> FileHead:
        return FileHead(path=Path("x.json"), head=json.dumps(doc), shape="json", records=None, document=doc)

    def test_v0_and_v1_do_not_claim_each_other(self) -> None:
        from tests.formats.test_openhands import EVENTS as V0_EVENTS

        assert openhands.sniff(self._probe(EVENTS)) == 0
        assert openhands.sniff(self._probe({"events": EVENTS})) == 0
        assert openhands_v1.sniff(self._probe(V0_EVENTS)) == 0
        assert openhands_v1.sniff(self._probe({"history": V0_EVENTS})) == 0

    def test_head_only_probe_of_a_large_document(self, tmp_path: Path) -> None:
        probe = replace(read_file_head(_write(tmp_path, "x.json", EVENTS)), records=None, document=None)
        assert openhands_v1.sniff(probe) == 90
        assert openhands.sniff(probe) == 0

    def test_head_cut_inside_a_long_system_prompt(self) -> None:
        text = json.dumps(EVENTS[1:2])
        head = text[: text.index("You are") + 3]
        assert '"kind"' not in head
        assert openhands_v1.sniff(FileHead(path=Path("x.json"), head=head, shape="json", records=None, document=None)) == 85

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_does_not_claim_corpus_files(self, path: Path) -> None:
        probe = read_file_head(path)
        assert openhands_v1.sniff(probe) == 0
        assert openhands_v1.sniff(replace(probe, records=None, document=None)) == 0

    def test_foreign_shapes(self) -> None:
        assert openhands_v1.sniff(self._probe([{"role": "user", "content": "x"}])) == 0
        assert openhands_v1.sniff(self._probe({"items": [{"kind": "Cat"}]})) == 0
        assert openhands_v1.sniff(self._probe({"kind": "MessageEvent"})) == 95


_KEYS = st.sampled_from(
    [
        "id", "kind", "source", "llm_message", "role", "content", "text", "type", "image_urls", "thought",
        "tool_name", "tool_call_id", "tool_call", "arguments", "name", "action", "observation", "action_id",
        "is_error", "error", "output", "summary", "forgotten_event_ids", "llm_response_id", "events", "items",
        "thinking_blocks", "thinking", "reasoning_content", "system_prompt", "tools", "title", "extended_content",
    ]
)  # fmt: skip
_VALUES = st.sampled_from(
    [
        "SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
        "UserRejectObservation", "Condensation", "agent", "user", "text", "image", "c1", "r1", "{}",
    ]
)  # fmt: skip
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | _VALUES | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=80, deadline=None)
@given(_JSON)
def test_arbitrary_json_raises_only_transcript_error(value: Any) -> None:
    for doc in (value, [value, value], {"events": [value]}):
        with contextlib.suppress(TranscriptError):
            openhands_v1.from_document(doc)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(EVENTS) - 1), _KEYS, _JSON), min_size=1, max_size=4))
def test_damaged_real_shapes_raise_only_transcript_error(damage: list[tuple[int, str, Any]]) -> None:
    events = json.loads(json.dumps(EVENTS))
    for i, key, value in damage:
        events[i][key] = value
    try:
        t = openhands_v1.from_events(events)
    except TranscriptError:
        return
    # Whatever survived import is a well-formed history: unique ids, results after their calls.
    assert len({m.id for m in t.messages}) == len(t.messages)
    assert all(res > use for use, res in tool_pairs(t.messages).values() if use is not None and res is not None)


class TestConversationFolder:
    def _folder(self, tmp_path: Path, nested: bool = True) -> Path:
        conv = tmp_path / "conv-1"
        events = conv / "events" if nested else conv
        events.mkdir(parents=True)
        (conv / "base_state.json").write_text(json.dumps({"id": "conv-1"}), encoding="utf-8")
        for i, ev in enumerate(e for e in EVENTS if "kind" in e):
            # Out of creation order on disk: the zero-padded index in the name is the order.
            _write(events, f"event-{i:05d}-{ev['id']}.json", ev)
        return conv

    @pytest.mark.parametrize("nested", [True, False])
    def test_a_persisted_conversation_folder_loads_like_the_joined_list(self, tmp_path: Path, nested: bool) -> None:
        folder = load(self._folder(tmp_path, nested))
        joined = openhands_v1.from_events([e for e in EVENTS if "kind" in e])
        assert [(m.role, [type(b).__name__ for b in m.content]) for m in folder.messages] == [
            (m.role, [type(b).__name__ for b in m.content]) for m in joined.messages
        ]
        assert folder.meta.source_format == "openhands_v1"

    def test_a_folder_without_event_files_is_a_clear_error(self, tmp_path: Path) -> None:
        (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
        with pytest.raises(TranscriptError, match="directory"):
            load(tmp_path)

    def test_a_broken_event_file_names_the_file(self, tmp_path: Path) -> None:
        conv = self._folder(tmp_path)
        bad = sorted((conv / "events").glob("event-*.json"))[2]
        bad.write_text("{not json", encoding="utf-8")
        with pytest.raises(TranscriptError) as err:
            load(conv)
        assert bad.name in str(err.value)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_an_event_whose_kind_is_not_text_is_not_claimed(tmp_path: Path) -> None:
    # The sniffer looked a list-valued kind up in a set: TypeError, which detection logs as a "no".
    events = [{**EVENTS[1], "kind": ["SystemPromptEvent"]}, *EVENTS[2:]]
    assert openhands_v1.sniff(read_file_head(_write(tmp_path, "events.json", events))) == 0


# --- shapes of the current SDK (audit against OpenHands/software-agent-sdk) -------------------------


def _terminal_obs(eid: str, call_id: str, text: str, action_id: str, *, exit_code: int, is_error: bool = False) -> dict[str, Any]:
    # tools/terminal/definition.py: TerminalObservation keeps the PS1 metadata the model is shown after the output.
    metadata = {"exit_code": exit_code, "pid": 7, "username": "openhands", "hostname": "box", "working_dir": "/workspace",
                "py_interpreter_path": "/usr/bin/python", "prefix": "", "suffix": ""}  # fmt: skip
    observation = {"kind": "TerminalObservation", "content": [_text(text)], "is_error": is_error, "command": "pytest",
                   "exit_code": exit_code, "timeout": False, "metadata": metadata}  # fmt: skip
    return _ev(eid, "ObservationEvent", "environment", tool_name="terminal", tool_call_id=call_id, observation=observation, action_id=action_id)


class TestCurrentSdkShapes:
    def test_condensation_without_summary_is_still_a_boundary(self) -> None:
        # context/condenser/agent_reset_condenser.py: a new_context reset forgets events and writes no summary;
        # the model no longer sees them, so a replay must be able to undo it.
        events = [
            EVENTS[1],
            EVENTS[2],
            _action("a1", "toolu_01", "terminal", {"command": "ls"}, "resp-1"),
            _obs("o1", "toolu_01", "terminal", [_text("a.py")], "a1"),
            _ev("k1", "Condensation", "environment", forgotten_event_ids=["a1", "o1"], llm_response_id="resp-1"),
            _ev("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_text("Fresh start.")]}, llm_response_id="resp-2"),
        ]
        t = openhands_v1.from_events(events)
        marker = t.messages[4]
        assert marker.boundary is not None and marker.boundary.strategy == CONDENSATION_STRATEGY
        assert isinstance(marker.content[0], TextBlock) and "2 event(s) forgotten" in marker.content[0].text
        assert [m.tag for m in t.messages[4:]] == ["boundary", "summary", None]
        assert "Condensation" not in t.notes.skipped

    def test_condensation_that_forgets_nothing_is_counted(self) -> None:
        t = openhands_v1.from_events([EVENTS[1], _ev("k1", "Condensation", "environment", forgotten_event_ids=[], llm_response_id="r")])
        assert [m.boundary for m in t.messages] == [None]
        assert t.notes.skipped == {"Condensation (nothing forgotten)": 1}

    def test_terminal_observation_as_the_model_saw_it(self) -> None:
        # to_llm_content appends the working directory, interpreter and exit code to the output.
        events = [_action("a1", "toolu_01", "terminal", {"command": "pytest"}, "r1"), _terminal_obs("o1", "toolu_01", "2 passed", "a1", exit_code=0)]
        result = openhands_v1.from_events(events).messages[1].content[0]
        assert isinstance(result, ToolResultBlock)
        assert result.content == (
            "2 passed\n[Current working directory: /workspace]\n[Python interpreter: /usr/bin/python]\n[Command finished with exit code 0]"
        )

    def test_terminal_still_running_has_no_exit_line(self) -> None:
        events = [_action("a1", "toolu_01", "terminal", {"command": "sleep 99"}, "r1"), _terminal_obs("o1", "toolu_01", "", "a1", exit_code=-1)]
        result = openhands_v1.from_events(events).messages[1].content[0]
        assert isinstance(result, ToolResultBlock) and "exit code" not in result.content
        assert result.content.startswith("\n[Current working directory: /workspace]")

    def test_error_observation_carries_the_sdk_error_header(self) -> None:
        # tool/schema.py: Observation.to_llm_content puts ERROR_MESSAGE_HEADER before an error's content.
        obs = _obs("o1", "toolu_01", "file_editor", [_text("No such file: /x.py")], "a1", is_error=True)
        obs["observation"] = {"kind": "FileEditorObservation", "command": "view", "content": [_text("No such file: /x.py")], "is_error": True}
        t = openhands_v1.from_events([_action("a1", "toolu_01", "file_editor", {"command": "view", "path": "/x.py"}, "r1"), obs])
        result = t.messages[1].content[0]
        assert isinstance(result, ToolResultBlock) and result.is_error
        assert result.content == "[An error occurred during execution.]\nNo such file: /x.py"

    def test_string_observation_content(self) -> None:
        obs = _obs("o1", "toolu_01", "think", "Your thought has been logged.", "a1")
        obs["observation"] = {"kind": "ThinkObservation", "content": "Your thought has been logged.", "is_error": False}
        t = openhands_v1.from_events([_action("a1", "toolu_01", "think", {"thought": "hm"}, "r1"), obs])
        assert t.messages[1].content[0].content == "Your thought has been logged."  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        "kind", ["ConversationIterationLimitEvent", "WarningEvent", "AskUserRequestEvent", "AskUserResponseEvent"]
    )
    def test_newer_event_kinds_are_counted_and_identify_v1(self, kind: str) -> None:
        events = [_ev("w1", kind, "environment", message="x"), EVENTS[1], EVENTS[2]]
        assert openhands_v1.sniff(FileHead(path=Path("x.json"), head=json.dumps(events), shape="json", records=None, document=events)) == 95
        t = openhands_v1.from_events(events)
        assert t.notes.skipped == {kind: 1} and [m.role for m in t.messages] == ["system", "user"]


def _stats(*usages: dict[str, Any]) -> dict[str, Any]:
    # conversation/conversation_stats.py + llm/utils/metrics.py: one Metrics per LLM usage id, a TokenUsage per call.
    return {"usage_to_metrics": {"agent": {"model_name": "claude-sonnet-4-5", "accumulated_cost": 0.01, "costs": [],
                                           "response_latencies": [], "token_usages": list(usages)}}}  # fmt: skip


def _usage(rid: str, prompt: int, completion: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "prompt_tokens": prompt, "completion_tokens": completion, "cache_read_tokens": read,
            "cache_write_tokens": write, "reasoning_tokens": 0, "context_window": 200000, "per_turn_token": prompt + completion,
            "response_id": rid}  # fmt: skip


class TestUsageFromState:
    EVENTS = [
        EVENTS[1],
        EVENTS[2],
        _action("a1", "toolu_01", "terminal", {"command": "ls"}, "resp-1", thought="Look."),
        _action("a2", "toolu_02", "terminal", {"command": "pwd"}, "resp-1"),
        _obs("o1", "toolu_01", "terminal", [_text("a.py")], "a1"),
        _obs("o2", "toolu_02", "terminal", [_text("/w")], "a2"),
        _ev("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_text("Done.")]}, llm_response_id="resp-2"),
    ]

    def _folder(self, tmp_path: Path, state: dict[str, Any]) -> Path:
        conv = tmp_path / "conv"
        (conv / "events").mkdir(parents=True)
        (conv / "base_state.json").write_text(json.dumps(state), encoding="utf-8")
        for i, ev in enumerate(self.EVENTS):
            _write(conv / "events", f"event-{i:05d}-{ev['id']}.json", ev)
        return conv

    def test_per_response_usage_lands_on_its_assistant_message(self, tmp_path: Path) -> None:
        state = {"id": "conv-9", "agent": {"kind": "Agent", "llm": {"model": "anthropic/claude-sonnet-4-5"}},
                 "stats": _stats(_usage("resp-1", 1200, 80, read=1000, write=150), _usage("resp-2", 1400, 20, read=1300))}  # fmt: skip
        t = load(self._folder(tmp_path, state))
        assistant = [m for m in t.messages if m.role == "assistant"]
        assert [m.usage for m in assistant] == [
            Usage(input_tokens=50, output_tokens=80, cache_read_tokens=1000, cache_write_tokens=150),
            Usage(input_tokens=100, output_tokens=20, cache_read_tokens=1300),
        ]
        assert (t.meta.session_id, t.meta.model) == ("conv-9", "anthropic/claude-sonnet-4-5")

    def test_usage_reported_apart_from_cache_reads_is_kept(self, tmp_path: Path) -> None:
        # ACP agents report cache reads beside the prompt, not inside it (MetricsSnapshot.cache_hit_rate).
        t = load(self._folder(tmp_path, {"stats": _stats(_usage("resp-2", 300, 20, read=5000))}))
        assert t.messages[-1].usage == Usage(input_tokens=300, output_tokens=20, cache_read_tokens=5000)
        assert [m.usage for m in t.messages if m.role == "assistant"][0] is None

    def test_older_state_key_and_damaged_state(self, tmp_path: Path) -> None:
        old = {"stats": {"service_to_metrics": _stats(_usage("resp-2", 10, 5))["usage_to_metrics"]}}
        assert load(self._folder(tmp_path / "a", old)).messages[-1].usage == Usage(input_tokens=10, output_tokens=5)
        damaged = self._folder(tmp_path / "b", {})
        (damaged / "base_state.json").write_text("{not json", encoding="utf-8")
        t = load(damaged)
        assert all(m.usage is None for m in t.messages)
        assert any("base_state.json" in w for w in t.notes.warnings)

    def test_replay_of_the_folder_is_valid(self, tmp_path: Path) -> None:
        from lab import replay

        state = {"stats": _stats(_usage("resp-1", 1200, 80, read=1000), _usage("resp-2", 1400, 20, read=1300))}
        report = replay(load(self._folder(tmp_path, state)), "lab", window=32000)
        assert report.requests > 0 and report.invalid_requests == 0
        assert report.first_request_kept is True and all(r.first_request_kept for r in report.rows)


def test_the_mapping_fixture_replays_valid(t: Transcript) -> None:
    from lab import replay

    report = replay(t, "lab", window=32000)
    assert report.requests > 0 and report.invalid_requests == 0
    assert report.first_request_kept is True and all(r.first_request_kept for r in report.rows)
    # Honoured, the condensation's boundary stops the history before it being sent, as OpenHands did.
    kept = replay(t, "lab", window=32000, recorded_compactions="keep")
    assert kept.invalid_requests == 0 and [c.action for c in kept.recorded] == ["kept", "kept"]


def _acp(eid: str, call_id: str, status: str, **fields: Any) -> dict[str, Any]:
    # event/acp_tool_call.py: an ACP server's call, streamed pending -> in_progress -> completed under one id.
    return _ev(eid, "ACPToolCallEvent", "agent", tool_call_id=call_id, title=fields.pop("title", "Read"), status=status,
               tool_kind=fields.pop("tool_kind", "read"), **fields)  # fmt: skip


class TestAcpToolCalls:
    EVENTS = [
        _ev("u1", "MessageEvent", "user", llm_message={"role": "user", "content": [_text("Fix a.py")]}),
        _acp("t1", "exec_1", "pending"),
        _acp("t2", "exec_1", "in_progress", raw_input={"path": "a.py"}),
        _acp("t3", "exec_2", "pending", title="Edit", tool_kind="edit"),
        _acp("t4", "exec_1", "completed", raw_input={"path": "a.py"}, raw_output="print(1)"),
        _ev("s1", "ConversationStateUpdateEvent", "environment", key="stats", value={}),
        _acp("t5", "exec_2", "failed", title="Edit", tool_kind="edit", raw_input={"path": "a.py"}, is_error=True,
             content=[{"type": "diff", "path": "a.py", "oldText": "1", "newText": "print(2)"}]),  # fmt: skip
        _ev("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_text("Edited.")]}),
        # A later run restarts the server's counters: exec_1 again is a new call.
        _ev("u2", "MessageEvent", "user", llm_message={"role": "user", "content": [_text("Again")]}),
        _acp("t6", "exec_1", "completed", raw_input="ls", content=[{"type": "content", "content": {"type": "text", "text": "a.py"}}]),
    ]

    def test_each_call_once_with_its_final_input_and_output(self) -> None:
        t = openhands_v1.from_events(self.EVENTS)
        assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
        uses = [b for b in t.messages[1].content if isinstance(b, ToolUseBlock)]
        assert [(u.id, u.name, u.input) for u in uses] == [("exec_1", "Read", {"path": "a.py"}), ("exec_2", "Edit", {"path": "a.py"})]
        results = t.messages[2].content
        assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [  # type: ignore[union-attr]
            ("exec_1", "print(1)", False),
            ("exec_2", "a.py\nprint(2)", True),
        ]
        last_use, last_result = t.messages[5].content[0], t.messages[6].content[0]
        assert isinstance(last_use, ToolUseBlock) and last_use.input == {"input": "ls"} and last_use.id == "exec_1#2"
        assert isinstance(last_result, ToolResultBlock) and last_result.tool_use_id == "exec_1#2" and last_result.content == "a.py"
        assert not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses
        assert t.notes.skipped == {"ACPToolCallEvent (progress update)": 3, "ConversationStateUpdateEvent": 1}

    def test_acp_history_replays_valid(self) -> None:
        from lab import replay

        report = replay(openhands_v1.from_events(self.EVENTS), "lab", window=32000)
        assert report.requests > 0 and report.invalid_requests == 0 and report.first_request_kept is True


def test_an_export_with_stats_carries_usage() -> None:
    doc = {"conversation_id": "c", "stats": _stats(_usage("resp-5", 900, 40, read=800)), "events": EVENTS}
    t = openhands_v1.from_document(doc)
    assert t.messages[-1].usage == Usage(input_tokens=100, output_tokens=40, cache_read_tokens=800)
    assert openhands_v1.state_usages({"stats": {"usage_to_metrics": {"agent": {"token_usages": [{"response_id": "r"}, "junk"]}}}}) == {}


def test_event_files_past_99999_keep_their_order(tmp_path: Path) -> None:
    # persistence_const.py: the index is padded to at least five digits, never capped.
    names = ["event-100000-bbbbbbbb.json", "event-99999-aaaaaaaa.json", "event-00001-cccccccc.json", "event-10001-dddddddd.json"]
    for name in names:
        _write(tmp_path, name, EVENTS[2])
    assert [p.name for p in openhands_v1.event_files(tmp_path)] == [
        "event-00001-cccccccc.json", "event-10001-dddddddd.json", "event-99999-aaaaaaaa.json", "event-100000-bbbbbbbb.json",
    ]  # fmt: skip


def test_browser_screenshot_is_an_image_marker() -> None:
    # tools/browser_use/definition.py: BrowserObservation keeps the screenshot as base64 beside its text content.
    obs = _obs("o1", "toolu_01", "browser_get_state", [_text("[1] <button>Go</button>")], "a1")
    obs["observation"] = {"kind": "BrowserObservation", "content": [_text("[1] <button>Go</button>")], "is_error": False,
                          "screenshot_data": "/9j/" + "A" * 400}  # fmt: skip
    t = openhands_v1.from_events([_action("a1", "toolu_01", "browser_get_state", {"include_screenshot": True}, "r1"), obs])
    result = t.messages[1].content[0]
    assert isinstance(result, ToolResultBlock)
    assert result.content.startswith("[1] <button>Go</button>\n[image: image/jpeg")
