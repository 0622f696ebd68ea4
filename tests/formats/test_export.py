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

from lab.formats.tool_results import INTERRUPTED, close_pending, pending_tool_calls  # noqa: E402


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
    def test_exporters_close_by_default_or_note(self, export: Any) -> None:
        # Every request written is one the API takes: pending calls are answered unless the caller asks otherwise.
        notes: list[str] = []
        closed = export(_pending_history(), notes=notes)
        assert any("answered as 'interrupted'" in n for n in notes)
        assert json.dumps(closed).count(f'"{INTERRUPTED}"') == 2
        assert closed == export(_pending_history(), close_pending=True)
        notes.clear()
        body = export(_pending_history(), notes=notes, close_pending=False)
        assert any("without a result (t1, t2)" in n for n in notes)
        assert json.dumps(body).count(INTERRUPTED) == 0


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


# --- tool results where the APIs look for them (issue 11, part 5) --------------------------------------

from lab.formats.tool_results import anthropic_tool_id, export_warnings, openai_tool_id, settle_tool_results  # noqa: E402


def _strict_problems(msgs: list[Message], close: bool = False) -> tuple[list[str], list[str]]:
    a = to_anthropic(msgs, close_pending=close)
    o = to_openai(msgs, close_pending=close)
    return anthropic_problems(anthropic_messages(a)), openai_problems(openai_messages(o))


class TestOrphanResults:
    def _history(self) -> list[Message]:
        # A log cut at its start: the first user message answers a call the file does not hold.
        lost = Message(role="user", id="u0", content=(ToolResultBlock(tool_use_id="toolu_gone", content="file body"), TextBlock(text="go on")))
        return [system("sys"), lost, *call_and_result("Read", "data", tool_id="t1", file_path="a"), assistant("done")]

    def test_an_orphan_becomes_text_in_the_same_user_turn(self) -> None:
        notes: list[str] = []
        body = to_anthropic(self._history(), notes=notes)
        assert body["messages"][0] == {
            "role": "user",
            "content": [
                {"type": "text", "text": "[tool result for toolu_gone, whose call is not in this transcript]\nfile body"},
                {"type": "text", "text": "go on"},
            ],
        }
        assert "1 tool result(s) whose call is not in this transcript sent as text (toolu_gone): the API refuses a result without its call" in notes
        assert export_warnings(notes) == [n for n in notes if "toolu_gone" in n]

    def test_openai_sends_no_tool_message_without_its_call(self) -> None:
        notes: list[str] = []
        body = to_openai(self._history(), notes=notes)
        assert body["messages"][1] == {"role": "user", "content": "[tool result for toolu_gone, whose call is not in this transcript]\nfile body\n\ngo on"}
        assert [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"] == ["t1"]
        assert any("1 tool result(s) whose call" in n for n in notes)

    def test_both_bodies_validate(self) -> None:
        msgs = self._history()
        assert not is_valid_anthropic(msgs) and not is_valid_openai(msgs)
        assert _strict_problems(msgs) == ([], [])

    def test_an_error_orphan_says_so_and_a_repeat_is_text_too(self) -> None:
        call, result = call_and_result("Bash", "1", tool_id="t1", command="ls")
        again = tool_result("t1", "2")
        lost = tool_result("zz", "", is_error=True)
        notes: list[str] = []
        body = to_anthropic([user("go"), call, result, assistant("hm"), again, lost], notes=notes)
        texts = [b["text"] for b in body["messages"][-1]["content"]]
        assert texts == ["[another tool result for t1, whose call was already answered]\n2", "[tool result for zz, whose call is not in this transcript, an error]"]
        assert any(n.startswith("1 repeated tool result(s)") for n in notes) and any(n.startswith("1 tool result(s) whose call") for n in notes)
        assert _strict_problems([user("go"), call, result, assistant("hm"), again, lost]) == ([], [])


class TestMisplacedResults:
    def test_a_late_result_moves_to_the_user_message_after_its_call(self) -> None:
        call = tool_call("Read", "t1", file_path="a")
        msgs = [user("go"), call, user("hurry"), assistant("waiting"), user("still?"), tool_result("t1", "data")]
        notes: list[str] = []
        body = to_anthropic(msgs, notes=notes)
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant", "user"]
        assert body["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "t1", "content": "data"},
            {"type": "text", "text": "hurry"},
        ]
        assert body["messages"][4]["content"] == [{"type": "text", "text": "still?"}]
        assert "1 tool result(s) moved to the user message right after their call (t1): the API wants them there" in notes
        assert not is_valid_anthropic(msgs)
        assert _strict_problems(msgs) == ([], [])

    def test_openai_puts_the_tool_message_before_the_next_turn(self) -> None:
        msgs = [user("go"), tool_call("Read", "t1", file_path="a"), assistant("waiting"), tool_result("t1", "data")]
        body = to_openai(msgs)
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "assistant"]
        assert not is_valid_openai(msgs)
        assert _strict_problems(msgs) == ([], [])

    def test_a_user_message_is_created_when_the_call_is_followed_by_an_assistant_message(self) -> None:
        msgs = [user("go"), tool_call("A", "t1"), tool_call("B", "t2"), tool_result("t1", "1"), tool_result("t2", "2")]
        settled = settle_tool_results(msgs)
        assert [(m.role, [getattr(b, "tool_use_id", None) for b in m.content]) for m in settled] == [
            ("user", [None]),
            ("assistant", [None]),
            ("user", ["t1"]),
            ("assistant", [None]),
            ("user", ["t2"]),
        ]
        assert _strict_problems(msgs) == ([], [])

    def test_a_result_misfiled_in_an_assistant_message_moves_out(self) -> None:
        both = Message(role="assistant", id="a", content=(ToolUseBlock(id="t1", name="A"), ToolResultBlock(tool_use_id="t1", content="x")))
        notes: list[str] = []
        body = to_anthropic([user("go"), both, user("next")], notes=notes)
        assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "t1", "name": "A", "input": {}}]
        assert body["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
        assert any("1 tool result(s) moved" in n for n in notes)
        assert _strict_problems([user("go"), both, user("next")]) == ([], [])

    def test_a_result_before_its_call_is_an_orphan_and_the_call_is_pending(self) -> None:
        msgs = [user("go"), tool_result("t1", "early"), tool_call("A", "t1")]
        notes: list[str] = []
        body = to_anthropic(msgs, notes=notes, close_pending=True)
        assert body["messages"][0]["content"][1]["text"].startswith("[tool result for t1, whose call is not in this transcript]")
        assert body["messages"][-1]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": INTERRUPTED, "is_error": True}]
        assert _strict_problems(msgs, close=True) == ([], [])


class TestToolIds:
    def test_ids_the_provider_refuses_are_rewritten_in_both_blocks(self) -> None:
        long = "call_" + "a" * 60
        msgs = [user("go"), *call_and_result("A", "1", tool_id="mcp:server/read.1"), *call_and_result("B", "2", tool_id=long)]
        notes: list[str] = []
        a = to_anthropic(msgs, notes=notes)
        assert _pair_ids_anthropic(a)[0] == {"mcp_server_read_1", long}
        assert "1 tool id(s) rewritten, repeated or not taken by the API (mcp:server/read.1 -> mcp_server_read_1)" in notes
        o = to_openai(msgs)
        uses, results = _pair_ids_openai(o)
        assert uses == results and "mcp:server/read.1" in uses and all(len(i) <= 40 for i in uses)
        assert _strict_problems(msgs) == ([], [])

    def test_rules(self) -> None:
        assert anthropic_tool_id("toolu_01AbC-x") == "toolu_01AbC-x"
        assert anthropic_tool_id("a.b é") == "a_b__" and anthropic_tool_id("") == "toolu_lab"
        assert openai_tool_id("call_1") == "call_1" and openai_tool_id("") == "call_lab"
        long1, long2 = openai_tool_id("c" * 41), openai_tool_id("c" * 42)
        assert len(long1) == len(long2) == 40 and long1 != long2

    def test_a_repeated_call_id_gets_a_suffix_and_its_results_follow_the_nearest_call(self) -> None:
        msgs = [user("go"), *call_and_result("A", "first", tool_id="t1"), *call_and_result("A", "second", tool_id="t1")]
        notes: list[str] = []
        body = to_anthropic(msgs, notes=notes)
        uses = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
        results = [(b["tool_use_id"], b["content"]) for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
        assert uses == ["t1", "t1_2"] and results == [("t1", "first"), ("t1_2", "second")]
        assert any("t1 -> t1_2" in n for n in notes)
        assert _strict_problems(msgs) == ([], [])

    def test_collisions_after_rewriting_stay_apart(self) -> None:
        msgs = [user("go"), *call_and_result("A", "1", tool_id="t_1"), *call_and_result("A", "2", tool_id="t.1")]
        assert _pair_ids_anthropic(to_anthropic(msgs))[0] == {"t_1", "t_1_2"}


def test_a_tool_call_in_a_user_message_becomes_text() -> None:
    odd = Message(role="user", id="u", content=(TextBlock(text="see"), ToolUseBlock(id="t1", name="Read", input={"p": "é"})))
    msgs = [odd, assistant("ok"), tool_result("t1", "x")]
    notes: list[str] = []
    body = to_anthropic(msgs, notes=notes)
    assert body["messages"][0]["content"][1] == {"type": "text", "text": '[tool call Read (t1) outside an assistant message, input {"p": "é"}]'}
    assert any("1 tool call(s) outside an assistant message" in n for n in notes)
    assert _strict_problems(msgs) == ([], [])


class TestSettle:
    @settings(max_examples=40, deadline=None)
    @given(st.lists(_piece, max_size=10))
    def test_a_valid_history_is_left_as_it_is(self, pieces: list[str]) -> None:
        msgs = [m for m in _session(pieces) if m.boundary is None]
        notes: list[str] = []
        assert settle_tool_results(msgs, notes=notes) == msgs
        assert notes == []

    def test_pure_and_idempotent(self) -> None:
        msgs = [tool_result("x", "lost"), user("go"), tool_call("A", "t1"), assistant("then"), tool_result("t1", "late"), tool_result("t1", "again")]
        before = copy.deepcopy(msgs)
        notes: list[str] = []
        once = settle_tool_results(msgs, notes=notes)
        assert msgs == before
        assert len(notes) == 3
        again: list[str] = []
        assert settle_tool_results(once, notes=again) == once and again == []

    def test_boundaries_are_left_out(self) -> None:
        go, ok = user("go"), assistant("ok")
        assert settle_tool_results([go, _boundary(), ok]) == [go, ok]


def test_export_warnings_picks_what_changed_the_request() -> None:
    notes: list[str] = []
    to_openai([*_pending_history(), tool_result("gone", "x")], notes=notes, close_pending=False)
    warnings = export_warnings(notes)
    assert len(warnings) == 2 and any("without a result (t1, t2)" in w for w in warnings) and any("gone" in w for w in warnings)
    assert export_warnings(["a1: thinking dropped"]) == []


# --- every exported request is one the API takes (issue 27, section 1) ------------------------------------

from lab.core.repair import NO_TASK  # noqa: E402
from tests.wire_rules import anthropic_wire_problems, openai_wire_problems, responses_wire_problems  # noqa: E402


def test_an_assistant_opening_gets_the_task_in_front() -> None:
    # A Managed Agents stream whose task event was not a message, and a history whose task comes second.
    msgs = [system("sys"), assistant("Ready."), user("Add a --verbose flag"), *call_and_result("Read", "data", tool_id="t1"), assistant("Added.")]
    notes: list[str] = []
    a = to_anthropic(msgs, notes=notes)
    assert a["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "Add a --verbose flag"}]}
    assert any("copied in front as the task" in n for n in notes)
    o = to_openai(msgs)
    assert o["messages"][:2] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "Add a --verbose flag"}]
    assert anthropic_wire_problems(a, strict=True, shape=True) == [] and openai_wire_problems(o, strict=True, shape=True) == []


def test_an_assistant_opening_with_no_task_gets_a_placeholder() -> None:
    msgs = [system("sys"), assistant("I will start."), *call_and_result("Read", "data", tool_id="t1"), assistant("Done.")]
    notes: list[str] = []
    a = to_anthropic(msgs, notes=notes)
    assert a["messages"][0] == {"role": "user", "content": [{"type": "text", "text": NO_TASK}]}
    assert any("placeholder user turn" in n for n in notes)
    assert to_openai(msgs)["messages"][1] == {"role": "user", "content": NO_TASK}
    # Said as it is without the fix: Bedrock's rule is what the placeholder answers.
    unfixed = {"messages": a["messages"][1:]}
    assert anthropic_wire_problems(unfixed, strict=True) and not anthropic_wire_problems(a, strict=True)


def test_aborted_calls_export_answered_by_default() -> None:
    msgs = [system(), user("go"), tool_call("Bash", "lost", command="pytest"), user("<turn_aborted>"), *call_and_result("Read", "x", tool_id="t1"),
            assistant("ok"), tool_call("Bash", "last", command="make")]
    from lab.formats.export import to_responses

    for export, check in ((to_anthropic, anthropic_wire_problems), (to_openai, openai_wire_problems), (to_responses, responses_wire_problems)):
        body = export(msgs)
        assert check(body, strict=True, shape=True) == [], export.__name__
        assert check(export(msgs, close_pending=False)), f"{export.__name__}: the unanswered calls are refused"


# --- OpenAI Responses: to_responses, read back by the openai_responses importer -----------------

from lab.core.messages import is_sent  # noqa: E402
from lab.formats.export import to_responses  # noqa: E402
from lab.formats.openai.openai_responses import from_document  # noqa: E402


def _said(msgs: list[Message]) -> list[tuple[Any, ...]]:
    """What a request says, block by block: texts by role, calls, results (thinking and blank text are not sent)."""
    out: list[tuple[Any, ...]] = []
    for m in msgs:
        if not is_sent(m):
            continue
        for b in m.content:
            if isinstance(b, TextBlock) and b.text.strip():
                out.append(("text", m.role, b.text))
            elif isinstance(b, ToolUseBlock):
                out.append(("use", b.id, b.name, dict(b.input)))
            elif isinstance(b, ToolResultBlock):
                out.append(("result", b.tool_use_id, b.content))
            elif isinstance(b, ImageBlock):
                out.append(("image", m.role, b.url))
    return out


def _responses_pairs(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    return calls, outputs


def _responses_order_ok(body: dict[str, Any]) -> bool:
    """Every output after its call, every call answered, and a user message first after the system ones."""
    seen: set[str] = set()
    for item in body["input"]:
        if item.get("type") == "function_call":
            seen.add(item["call_id"])
        elif item.get("type") == "function_call_output" and item["call_id"] not in seen:
            return False
    calls, outputs = _responses_pairs(body)
    first = next((i for i in body["input"] if i.get("role") not in ("system", "developer")), None)
    return set(calls) == set(outputs) and (first is None or first.get("role") == "user")


@settings(max_examples=60, deadline=None)
@given(st.lists(_piece, max_size=12))
def test_responses_round_trip_keeps_messages_and_pairs(pieces: list[str]) -> None:
    msgs = _session(pieces)
    before = copy.deepcopy(msgs)
    body = to_responses(msgs)
    assert msgs == before
    back = from_document(json.loads(json.dumps(body)))
    # The leading system prompt went as instructions and comes back as the first system message.
    assert body["instructions"] == msgs[0].content[0].text  # type: ignore[union-attr]
    assert _said(back.messages) == _said(msgs)
    assert not back.notes.orphan_tool_results and not back.notes.unanswered_tool_uses
    ids = [b.id for m in msgs for b in m.content if isinstance(b, ToolUseBlock)]
    calls, outputs = _responses_pairs(body)
    assert calls == ids and sorted(outputs) == sorted(ids)
    assert _responses_order_ok(body)


@settings(max_examples=60, deadline=None)
@given(st.lists(_risky, max_size=14), st.booleans())
def test_responses_closed_exports_are_valid_and_carry_no_blank_text(pieces: list[str], pending: bool) -> None:
    msgs = _risky_session(pieces, pending)
    body = to_responses(msgs, close_pending=True)
    assert _responses_order_ok(body)
    for item in body["input"]:
        if item.get("type") == "message":
            assert item["content"] and all(p.get("text", "x").strip() for p in item["content"])
    back = from_document(body)
    assert not back.notes.orphan_tool_results and not back.notes.unanswered_tool_uses
    if pending:
        assert json.dumps(body).count(f'"{INTERRUPTED}"') == 1


def test_responses_item_shapes_images_thinking_and_tools() -> None:
    image = ImageBlock(source="url", url="https://example.invalid/shot.png", media_type="image/png")
    msgs = [
        system("sys"),
        Message(role="user", id="u1", content=(TextBlock(text="look"), image)),
        Message(role="assistant", id="a1", content=(ThinkingBlock(thinking="hmm", signature="sig"), TextBlock(text="Reading."),
                                                   ToolUseBlock(id="call_1", name="read", input={"path": "a.py"}))),
        Message(role="user", id="r1", content=(ToolResultBlock(tool_use_id="call_1", content="print(1)", is_error=True),)),
        system("Budget low"),
        assistant("Done."),
    ]
    notes: list[str] = []
    body = to_responses(msgs, [ToolSpec(name="read", description="Read a file", input_schema={"type": "object"})], notes=notes)
    assert body["instructions"] == "sys"
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"},
                                                         {"type": "input_image", "image_url": "https://example.invalid/shot.png", "detail": "auto"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
        {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "print(1)"},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Budget low"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]
    assert body["tools"] == [{"type": "function", "name": "read", "description": "Read a file", "parameters": {"type": "object"}}]
    assert any("a1: thinking dropped" in n for n in notes)
    # Without instructions the system prompt stays an input item (a caller that keeps the request's own instructions).
    kept = to_responses(msgs, instructions=False)
    assert "instructions" not in kept and kept["input"][0]["role"] == "developer"


def test_responses_pending_calls_closed_or_noted_and_assistant_opening() -> None:
    msgs = [system(), user("go"), tool_call("shell", "call_lost", cmd="make")]
    notes: list[str] = []
    closed = to_responses(msgs, notes=notes)
    assert closed["input"][-1] == {"type": "function_call_output", "call_id": "call_lost", "output": INTERRUPTED}
    assert _responses_order_ok(closed) and any("answered as" in n for n in notes)
    open_notes: list[str] = []
    left = to_responses(msgs, notes=open_notes, close_pending=False)
    assert not _responses_order_ok(left) and any("refuses this request" in n for n in open_notes)
    opening = to_responses([system("sys"), assistant("Ready."), user("Add a flag"), assistant("Added.")])
    assert opening["input"][0] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add a flag"}]}


def test_responses_reuse_sends_the_callers_items_in_place_of_a_message() -> None:
    msgs = [user("go"), *call_and_result("shell", "out", tool_id="call_7", cmd="ls"), assistant("ok")]
    raw = [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
           {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "shell", "arguments": '{"cmd":"ls"}'}]
    asked: list[str] = []

    def reuse(m: Message) -> list[dict[str, Any]] | None:
        asked.append(m.id)
        return raw if m.id == msgs[1].id else None

    body = to_responses(msgs, reuse=reuse)
    assert asked == [m.id for m in msgs]
    assert body["input"][1:3] == raw and body["input"][3]["type"] == "function_call_output"
    assert _responses_order_ok(body)


def test_the_responses_reader_refuses_what_the_api_refuses() -> None:
    """The independent reader is not vacuous: each rule it holds the exporter to catches its broken body."""
    user_item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    call = {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"}
    answer = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    assert responses_wire_problems({"input": [user_item, call, answer]}, strict=True, shape=True) == []
    broken = {
        "unanswered": [user_item, call],
        "orphan output": [user_item, answer],
        "output before its call": [user_item, answer, call],
        "answered twice": [user_item, call, answer, answer],
        "input_text in an assistant message": [user_item, {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "x"}]}],
        "empty content": [user_item, {"type": "message", "role": "assistant", "content": []}],
        "arguments not JSON": [user_item, {**call, "arguments": "{"}, answer],
        "duplicate call id": [user_item, call, answer, call, answer],
        "assistant opening": [{"type": "message", "role": "assistant", "content": "hi"}, user_item],
        "no items": [],
    }
    for name, items in broken.items():
        assert responses_wire_problems({"input": items}, strict=True, shape=True), name
