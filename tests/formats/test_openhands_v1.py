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

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, dump, load, openhands, openhands_v1
from lab.formats.jsonio import make_probe
from lab.formats.openhands import CONDENSATION_STRATEGY
from lab.formats.registry import Probe
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
        assert isinstance(t.messages[6].content[0], ThinkingBlock) and t.messages[6].content[0].thinking == "Build it."
        result = t.messages[7].content[0]
        assert isinstance(result, ToolResultBlock)
        assert (result.tool_use_id, result.content, result.is_error) == ("toolu_03", "make: *** Error 2", True)

    def test_agent_errors_and_rejections(self, t: Transcript) -> None:
        error, rejected = t.messages[9].content[0], t.messages[11].content[0]
        assert isinstance(error, ToolResultBlock) and error.is_error and error.content == "Tool 'nope' not found."
        assert isinstance(rejected, ToolResultBlock) and rejected.is_error and rejected.content == "Action rejected: Too risky"

    def test_final_message_keeps_reasoning(self, t: Transcript) -> None:
        assert t.messages[-1].content == (ThinkingBlock(thinking="All good."), TextBlock(text="Done."))

    def test_other_kinds_are_counted(self, t: Transcript) -> None:
        assert t.notes.skipped == {
            "ConversationStateUpdateEvent": 1,
            "redacted_thinking": 1,
            "CondensationRequest": 1,
            "Condensation": 1,
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
        (tmp_path / "events").mkdir()
        _write(tmp_path / "events", "e1.json", EVENTS[1])
        with pytest.raises(TranscriptError, match="directory"):
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
    def _probe(self, doc: Any) -> Probe:
        return Probe(path=Path("x.json"), head=json.dumps(doc), shape="json", records=None, document=doc)

    def test_v0_and_v1_do_not_claim_each_other(self) -> None:
        from tests.formats.test_openhands import EVENTS as V0_EVENTS

        assert openhands.sniff(self._probe(EVENTS)) == 0
        assert openhands.sniff(self._probe({"events": EVENTS})) == 0
        assert openhands_v1.sniff(self._probe(V0_EVENTS)) == 0
        assert openhands_v1.sniff(self._probe({"history": V0_EVENTS})) == 0

    def test_head_only_probe_of_a_large_document(self, tmp_path: Path) -> None:
        probe = replace(make_probe(_write(tmp_path, "x.json", EVENTS)), records=None, document=None)
        assert openhands_v1.sniff(probe) == 90
        assert openhands.sniff(probe) == 0

    def test_head_cut_inside_a_long_system_prompt(self) -> None:
        text = json.dumps(EVENTS[1:2])
        head = text[: text.index("You are") + 3]
        assert '"kind"' not in head
        assert openhands_v1.sniff(Probe(path=Path("x.json"), head=head, shape="json", records=None, document=None)) == 85

    @pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
    def test_does_not_claim_corpus_files(self, path: Path) -> None:
        probe = make_probe(path)
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
    assert openhands_v1.sniff(make_probe(_write(tmp_path, "events.json", events))) == 0
