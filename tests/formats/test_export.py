"""Exporting canonical messages to Anthropic and OpenAI request bodies."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Transcript
from lab.core.validate import is_valid_anthropic, is_valid_openai
from lab.formats import dump
from lab.formats.export import to_anthropic, to_openai
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user


def _boundary() -> Message:
    return Message(role="system", content=(TextBlock(text="[compacted]"),), id="b1", tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))


def _pair_ids_anthropic(body: dict[str, Any]) -> tuple[set[str], set[str]]:
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    return uses, results


def _pair_ids_openai(body: dict[str, Any]) -> tuple[set[str], set[str]]:
    uses = {c["id"] for m in body["messages"] for c in m.get("tool_calls", [])}
    results = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    return uses, results


# --- Anthropic --------------------------------------------------------------------------


def test_anthropic_system_prompt_and_boundaries() -> None:
    msgs = [system("one"), system("two"), user("hi"), _boundary(), assistant("hello")]
    body = to_anthropic(msgs)
    assert body["system"] == "one\n\ntwo"
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
    assert "tools" not in body


def test_anthropic_without_system_leaves_the_key_out() -> None:
    assert "system" not in to_anthropic([user("hi")])


def test_anthropic_late_system_becomes_user_text_and_merges() -> None:
    msgs = [user("hi"), assistant("ok"), system("Budget low"), user("continue")]
    body = to_anthropic(msgs)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "text", "text": "[system] Budget low"},
        {"type": "text", "text": "continue"},
    ]


def test_anthropic_merge_puts_tool_results_first() -> None:
    call, result = call_and_result("Read", "data", tool_id="t1", file_path="a.py")
    msgs = [user("go"), call, user("also this"), result]
    body = to_anthropic(msgs)
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]


def test_anthropic_blocks() -> None:
    reply = Message(
        role="assistant",
        id="a1",
        content=(
            ThinkingBlock(thinking="signed", signature="s"),
            ThinkingBlock(thinking="unsigned"),
            ToolUseBlock(id="t1", name="Bash", input={"command": "ls"}),
        ),
    )
    shown = Message(
        role="user",
        id="u2",
        content=(
            ToolResultBlock(tool_use_id="t1", content="boom", is_error=True),
            ImageBlock(size_bytes=10),
            ImageBlock(source="url", url="https://x.test/i.png"),
        ),
    )
    notes: list[str] = []
    body = to_anthropic([user("go"), reply, shown], notes=notes)
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "signed", "signature": "s"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
        {"type": "text", "text": "[image omitted: image/png, 10 bytes]"},
        {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}},
    ]
    assert any("without signature" in n for n in notes) and any("image" in n for n in notes)


def test_anthropic_tools_from_transcript_or_argument() -> None:
    t = Transcript(messages=[user("hi")], tools=[ToolSpec(name="Read", description="r")])
    assert to_anthropic(t)["tools"] == [{"name": "Read", "description": "r", "input_schema": {"type": "object", "properties": {}}}]
    other = [ToolSpec(name="Bash", input_schema={"type": "object", "properties": {"c": {"type": "string"}}})]
    assert [x["name"] for x in to_anthropic(t, tools=other)["tools"]] == ["Bash"]


# --- OpenAI ----------------------------------------------------------------------------------


def test_openai_tool_messages_follow_their_call() -> None:
    call = tool_call("Read", "t1", text="Reading", file_path="a.py")
    msgs = [system("sys"), user("go"), call, user("hurry"), tool_result("t1", "data"), _boundary(), system("late")]
    body = to_openai(msgs)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "user", "system"]
    a = body["messages"][2]
    assert a["content"] == "Reading"
    assert a["tool_calls"] == [{"id": "t1", "type": "function", "function": {"name": "Read", "arguments": json.dumps({"file_path": "a.py"})}}]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "t1", "content": "data"}


def test_openai_parallel_calls_and_user_text_in_the_result_message() -> None:
    call = Message(role="assistant", id="a", content=(ToolUseBlock(id="t1", name="A"), ToolUseBlock(id="t2", name="B")))
    answer = Message(
        role="user",
        id="r",
        content=(ToolResultBlock(tool_use_id="t1", content="1"), ToolResultBlock(tool_use_id="t2", content="2"), TextBlock(text="next")),
    )
    body = to_openai([user("go"), call, answer])
    assert [(m["role"], m.get("tool_call_id")) for m in body["messages"]] == [
        ("user", None),
        ("assistant", None),
        ("tool", "t1"),
        ("tool", "t2"),
        ("user", None),
    ]
    assert body["messages"][1]["content"] is None


def test_openai_thinking_dropped_and_images_as_parts() -> None:
    notes: list[str] = []
    pic = Message(role="user", id="u", content=(TextBlock(text="see"), ImageBlock(media_type="image/jpeg", size_bytes=9)))
    body = to_openai([pic, assistant("ok", thinking="hmm")], notes=notes)
    assert body["messages"][0]["content"][0] == {"type": "text", "text": "see"}
    assert body["messages"][0]["content"][1]["type"] == "image_url"
    assert "image/jpeg" in body["messages"][0]["content"][1]["image_url"]["url"]
    assert body["messages"][1] == {"role": "assistant", "content": "ok"}
    assert any("thinking" in n for n in notes)


def test_openai_tools_in_function_shape() -> None:
    t = Transcript(messages=[user("hi")], tools=[ToolSpec(name="Read", description="r", input_schema={"type": "object"})])
    assert to_openai(t)["tools"] == [{"type": "function", "function": {"name": "Read", "description": "r", "parameters": {"type": "object"}}}]


def test_dump_targets() -> None:
    t = Transcript(messages=[user("hi")])
    assert dump(t, "anthropic") == to_anthropic(t)
    assert dump(t, "openai") == to_openai(t)
    assert dump(t)["lab_transcript"] == 1


# --- invariants ---------------------------------------------------------------------------------

_piece = st.sampled_from(["call", "parallel", "text", "system", "boundary", "thinking"])


def _session(pieces: list[str]) -> list[Message]:
    msgs: list[Message] = [system(), user("start")]
    for k, piece in enumerate(pieces):
        if piece == "call":
            msgs += call_and_result("Read", f"content {k}", file_path=f"f{k}.py")
        elif piece == "parallel":
            ids = (f"p{k}a", f"p{k}b")
            msgs.append(Message(role="assistant", id=f"pa{k}", content=tuple(ToolUseBlock(id=i, name="Grep") for i in ids)))
            msgs.append(Message(role="user", id=f"pr{k}", content=tuple(ToolResultBlock(tool_use_id=i, content="hit") for i in ids)))
        elif piece == "text":
            msgs += [assistant(f"step {k}"), user(f"more {k}")]
        elif piece == "system":
            msgs.append(system(f"note {k}"))
        elif piece == "boundary":
            msgs.append(_boundary().model_copy(update={"id": f"b{k}"}))
        else:
            msgs.append(assistant(f"thought {k}", thinking="why"))
    return msgs


def _anthropic_shape_ok(body: dict[str, Any]) -> bool:
    turns = body["messages"]
    if not turns or turns[0]["role"] != "user":
        return False
    for prev, nxt in zip(turns, turns[1:]):
        if prev["role"] == nxt["role"]:
            return False
        uses = [b["id"] for b in prev["content"] if b["type"] == "tool_use"]
        lead = [b["tool_use_id"] for b in nxt["content"][: len(uses)] if b["type"] == "tool_result"]
        if sorted(uses) != sorted(lead):
            return False
    return not any(b["type"] == "tool_use" for b in turns[-1]["content"])


def _openai_shape_ok(body: dict[str, Any]) -> bool:
    msgs = body["messages"]
    for i, m in enumerate(msgs):
        calls = [c["id"] for c in m.get("tool_calls", [])]
        following = [x["tool_call_id"] for x in msgs[i + 1 : i + 1 + len(calls)] if x["role"] == "tool"]
        if sorted(calls) != sorted(following):
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(st.lists(_piece, max_size=12))
def test_exports_keep_every_pair_never_mutate_and_stay_valid(pieces: list[str]) -> None:
    msgs = _session(pieces)
    before = copy.deepcopy(msgs)
    a, o = to_anthropic(msgs), to_openai(msgs)
    assert msgs == before
    ids = {b.id for m in msgs for b in m.content if isinstance(b, ToolUseBlock)}
    assert _pair_ids_anthropic(a) == (ids, ids)
    assert _pair_ids_openai(o) == (ids, ids)
    boundary_texts = {"[compacted]"}
    assert not any(b.get("text") in boundary_texts for m in a["messages"] for b in m["content"])
    if is_valid_anthropic(msgs):
        assert _anthropic_shape_ok(a)
    if is_valid_openai(msgs):
        assert _openai_shape_ok(o)
