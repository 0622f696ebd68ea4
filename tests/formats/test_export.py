"""Exporting canonical messages to Anthropic and OpenAI request bodies."""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from typing import Any

import pytest
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


def _session(pieces: list[str], start: int = 0) -> list[Message]:
    msgs: list[Message] = [system(), user("start")]
    for k, piece in enumerate(pieces, start):
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
    for prev, nxt in pairwise(turns):
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


# --- what the APIs refuse: empty text, empty messages, pending calls ---------------------------

from lab.formats.export import INTERRUPTED, close_pending, pending_tool_calls  # noqa: E402


def _blank_user(k: int, text: str = " \n\t") -> Message:
    return Message(role="user", id=f"blank{k}", content=(TextBlock(text=text),))


def test_anthropic_drops_blank_text_and_the_message_it_empties() -> None:
    notes: list[str] = []
    mixed = Message(role="assistant", id="a1", content=(TextBlock(text="  "), TextBlock(text="real"), TextBlock(text="")))
    body = to_anthropic([system("  "), user("hi"), mixed, _blank_user(1), user("next")], notes=notes)
    assert "system" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "real"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    assert sum("whitespace-only" in n for n in notes) == 3
    assert any("blank1: nothing left to send" in n for n in notes)


def test_anthropic_blank_late_system_message_is_dropped_not_sent_as_a_bare_prefix() -> None:
    body = to_anthropic([user("hi"), assistant("ok"), system(" "), user("go")])
    assert body["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "go"}]}


def test_anthropic_error_result_without_content_says_error() -> None:
    call = tool_call("Bash", "t1", command="false")
    body = to_anthropic([user("go"), call, tool_result("t1", "", is_error=True), assistant("done")])
    assert body["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": "error", "is_error": True}]
    ok = to_anthropic([user("go"), call, tool_result("t1", ""), assistant("done")])
    assert ok["messages"][2]["content"][0]["content"] == ""  # an empty result that is not an error is accepted


def test_anthropic_final_assistant_text_loses_trailing_whitespace() -> None:
    body = to_anthropic([user("hi"), assistant("Sure.\n\n")])
    assert body["messages"][-1]["content"] == [{"type": "text", "text": "Sure."}]
    assert to_anthropic([user("hi"), assistant("a \n"), user("b ")])["messages"][-1]["content"][0]["text"] == "b "


def test_openai_drops_blank_text_system_and_user_messages() -> None:
    notes: list[str] = []
    reply = Message(role="assistant", id="a1", content=(TextBlock(text=" "), ToolUseBlock(id="t1", name="Bash")))
    pic = Message(role="user", id="p", content=(TextBlock(text="\n"), ImageBlock(size_bytes=3)))
    body = to_openai([system("sys"), system("\t"), user("hi"), reply, tool_result("t1", "x"), _blank_user(1), pic], notes=notes)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert body["messages"][2]["content"] is None and body["messages"][2]["tool_calls"][0]["id"] == "t1"
    assert [part["type"] for part in body["messages"][4]["content"]] == ["image_url"]
    assert any("empty system message dropped" in n for n in notes)
    assert any("blank1: nothing left to send" in n for n in notes)


def _pending_history() -> list[Message]:
    last = Message(role="assistant", id="last", content=(TextBlock(text="both"), ToolUseBlock(id="t1", name="A"), ToolUseBlock(id="t2", name="B")))
    return [system(), user("go"), *call_and_result("Read", "data", tool_id="t0", file_path="a"), last]


class TestPending:
    def test_pending_are_the_calls_no_message_answers(self) -> None:
        msgs = _pending_history()
        assert pending_tool_calls(msgs) == ["t1", "t2"]
        answered_one = [*msgs, tool_result("t1", "ok")]
        assert pending_tool_calls(answered_one) == ["t2"]
        # An earlier turn's call left unanswered is refused as much as the last turn's.
        assert pending_tool_calls([*answered_one, assistant("done")]) == ["t2"]
        assert pending_tool_calls([user("hi")]) == []

    def test_close_pending_answers_as_interrupted_without_mutating(self) -> None:
        msgs = _pending_history()
        before = copy.deepcopy(msgs)
        closed = close_pending(msgs)
        assert msgs == before
        assert closed[:-1] == msgs
        added = closed[-1]
        assert added.role == "user"
        assert [(b.tool_use_id, b.content, b.is_error) for b in added.content if isinstance(b, ToolResultBlock)] == [
            ("t1", INTERRUPTED, True),
            ("t2", INTERRUPTED, True),
        ]
        assert is_valid_anthropic(closed) and is_valid_openai(closed)
        assert not is_valid_anthropic(msgs)
        assert close_pending(closed) == closed  # idempotent: nothing pending any more

    def test_close_pending_joins_a_following_user_message(self) -> None:
        msgs = [*_pending_history(), tool_result("t1", "ok")]
        closed = close_pending(msgs)
        assert len(closed) == len(msgs)
        assert [b.tool_use_id for b in closed[-1].content if isinstance(b, ToolResultBlock)] == ["t2", "t1"]
        assert is_valid_anthropic(closed)

    @pytest.mark.parametrize("export", [to_anthropic, to_openai], ids=["anthropic", "openai"])
    def test_exporters_note_or_close(self, export: Any) -> None:
        notes: list[str] = []
        body = export(_pending_history(), notes=notes)
        assert any("without a result (t1, t2)" in n for n in notes)
        assert json.dumps(body).count(INTERRUPTED) == 0
        notes.clear()
        closed = export(_pending_history(), notes=notes, close_pending=True)
        assert any("answered as 'interrupted'" in n for n in notes)
        assert json.dumps(closed).count(f'"{INTERRUPTED}"') == 2


# Pieces a real transcript has that the APIs refuse as they are.
_risky = st.sampled_from(["call", "parallel", "text", "system", "boundary", "thinking", "blank_user", "blank_system", "blank_reply", "blank_call_text"])


def _risky_session(pieces: list[str], pending: bool) -> list[Message]:
    msgs: list[Message] = [system(), user("start")]
    for k, piece in enumerate(pieces):
        if piece == "blank_user":
            msgs += [_blank_user(k, ["", " ", "\n\n", "\t "][k % 4])]
        elif piece == "blank_system":
            msgs.append(Message(role="system", id=f"bs{k}", content=(TextBlock(text=" "),)))
        elif piece == "blank_reply":
            msgs += [Message(role="assistant", id=f"br{k}", content=(TextBlock(text="\n"),)), user(f"again {k}")]
        elif piece == "blank_call_text":
            msgs += [
                Message(role="assistant", id=f"bc{k}", content=(TextBlock(text="  "), ToolUseBlock(id=f"bt{k}", name="Bash"))),
                tool_result(f"bt{k}", f"out {k}"),
            ]
        else:
            msgs += _session([piece], start=k)[2:]
    if pending:
        msgs.append(Message(role="assistant", id="end", content=(ToolUseBlock(id="open", name="Bash"),)))
    return msgs


def _no_empty_anthropic(body: dict[str, Any]) -> bool:
    if isinstance(body.get("system"), str) and not body["system"].strip():
        return False
    for m in body["messages"]:
        if not m["content"]:
            return False
        for b in m["content"]:
            if b["type"] == "text" and not b["text"].strip():
                return False
            if b["type"] == "tool_result" and b.get("is_error") and not str(b["content"]).strip():
                return False
    return True


def _no_empty_openai(body: dict[str, Any]) -> bool:
    for m in body["messages"]:
        content = m.get("content")
        if m["role"] == "assistant" and not (content or m.get("tool_calls")):
            return False
        if m["role"] in ("user", "system") and (not content or (isinstance(content, str) and not content.strip())):
            return False
        if isinstance(content, list) and any(p["type"] == "text" and not p["text"].strip() for p in content):
            return False
    return True


@settings(max_examples=80, deadline=None)
@given(st.lists(_risky, max_size=14), st.booleans())
def test_blank_text_never_reaches_the_request_and_closed_exports_are_valid(pieces: list[str], pending: bool) -> None:
    msgs = _risky_session(pieces, pending)
    before = copy.deepcopy(msgs)
    a, o = to_anthropic(msgs, close_pending=True), to_openai(msgs, close_pending=True)
    assert msgs == before
    assert _no_empty_anthropic(a) and _no_empty_openai(o)
    # Whatever blank text was in the way, every pair is kept and the closed request has the shape the API takes.
    ids = {b.id for m in msgs for b in m.content if isinstance(b, ToolUseBlock)}
    assert _pair_ids_anthropic(a) == (ids, ids)
    assert _pair_ids_openai(o) == (ids, ids)
    assert _anthropic_shape_ok(a)
    assert _openai_shape_ok(o)
    if pending:
        assert json.dumps(a).count(f'"{INTERRUPTED}"') == 1


# --- found by tests/formats/test_fuzz_export.py -------------------------------------------------

from lab.core.validate import anthropic_problems, openai_problems  # noqa: E402
from lab.formats.export import EMPTY_OPENING  # noqa: E402
from tests.formats.test_fuzz_export import anthropic_messages, openai_messages  # noqa: E402


def _body_problems(msgs: list[Message]) -> tuple[list[str], list[str]]:
    a = to_anthropic(msgs, close_pending=True)
    o = to_openai(msgs, close_pending=True)
    return anthropic_problems(anthropic_messages(a)), openai_problems(openai_messages(o))


def test_close_pending_sees_a_last_turn_that_ends_in_a_blank_message() -> None:
    # The call's message is not the last assistant message, but the blank one after it is dropped.
    msgs = [user("go"), tool_call("Bash", "t1", command="ls"), Message(role="assistant", id="blank", content=(TextBlock(text=""),))]
    assert pending_tool_calls(msgs) == ["t1"]
    assert _body_problems(msgs) == ([], [])


def test_close_pending_answers_an_earlier_turns_abandoned_call() -> None:
    msgs = [user("go"), tool_call("Bash", "t1", command="ls"), user("never mind"), assistant("ok")]
    a = to_anthropic(msgs, close_pending=True)
    assert a["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "t1", "content": INTERRUPTED, "is_error": True}
    assert _body_problems(msgs) == ([], [])


def test_a_blank_opening_user_message_keeps_a_user_opening() -> None:
    notes: list[str] = []
    msgs = [system("sys"), user(" "), assistant("hi"), user("go")]
    a = to_anthropic(msgs, notes=notes)
    assert a["messages"][0] == {"role": "user", "content": [{"type": "text", "text": EMPTY_OPENING}]}
    assert any("opening user message was empty" in n for n in notes)
    o = to_openai(msgs)
    assert o["messages"][:2] == [{"role": "system", "content": "sys"}, {"role": "user", "content": EMPTY_OPENING}]
    assert _body_problems(msgs) == ([], [])
    assert to_anthropic([user("\n")])["messages"] == [{"role": "user", "content": [{"type": "text", "text": EMPTY_OPENING}]}]
