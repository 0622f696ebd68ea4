"""Provider validity rules on canonical messages (Anthropic and OpenAI chat)."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from lab.core.validate import Validator, anthropic_problems, is_valid_anthropic, is_valid_openai, openai_problems
from tests.builders import assistant, call_and_result, session, system, tool_call, tool_result, user
from tests.conftest import ROOT


def _boundary(mid: str = "b1") -> Message:
    return Message(role="system", content=(), id=mid, tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))


def _parallel(*ids: str) -> list[Message]:
    return [
        Message(role="assistant", id="pa-" + "-".join(ids), content=tuple(ToolUseBlock(id=i, name="Grep") for i in ids)),
        Message(role="user", id="pr-" + "-".join(ids), content=tuple(ToolResultBlock(tool_use_id=i, content="x") for i in ids)),
    ]


# --- valid histories ------------------------------------------------------------------------------


def test_a_normal_session_is_valid_for_both() -> None:
    msgs = session(n_reads=3, size=50)
    assert anthropic_problems(msgs) == [] and openai_problems(msgs) == []
    assert is_valid_anthropic(msgs) and is_valid_openai(msgs)


def test_parallel_calls_and_boundaries_are_fine() -> None:
    msgs = [system(), _boundary(), user("go"), *_parallel("t1", "t2"), assistant("done")]
    assert is_valid_anthropic(msgs) and is_valid_openai(msgs)


def test_boundary_between_call_and_result_is_ignored() -> None:
    call, result = call_and_result("Read", "x", tool_id="t1")
    assert is_valid_anthropic([user("go"), call, _boundary(), result])


# --- shared rules -------------------------------------------------------------------------------------


def test_an_assistant_opening_is_accepted_by_both() -> None:
    # Neither API refuses it any more (see the module docstring of lab.core.validate for the sources).
    msgs = [system(), assistant("hi"), user("hello")]
    assert anthropic_problems(msgs) == [] and openai_problems(msgs) == []


def test_an_assistant_opening_is_left_to_the_repair_which_satisfies_bedrock() -> None:
    # Not a rule here (api.anthropic.com and OpenAI take it); Bedrock refuses it, so what the lab sends opens with the user.
    from lab.core.repair import repair
    from tests.wire_rules import anthropic_wire_problems, literal_anthropic

    msgs = [system(), assistant("hi"), user("hello")]
    assert anthropic_wire_problems(literal_anthropic(msgs), strict=True) != []
    fixed = repair(msgs).messages
    assert [m.role for m in fixed] == ["system", "user", "assistant", "user"]
    assert anthropic_wire_problems(literal_anthropic(fixed), strict=True) == [] and anthropic_problems(fixed) == []


def test_nothing_to_send() -> None:
    assert anthropic_problems([system()]) == ["no user or assistant message to send"]
    assert openai_problems([]) == ["no user or assistant message to send"]


def test_empty_content_and_empty_text_break_anthropic_only() -> None:
    empty = Message(role="user", id="e", content=())
    blank = Message(role="assistant", id="w", content=(TextBlock(text="  "),))
    problems = anthropic_problems([user("go"), blank, empty])
    assert any("id e" in p and "empty content" in p for p in problems)
    assert any("id w" in p and "empty text block" in p for p in problems)
    # Chat Completions takes blank text and empty user content; the exporter drops both anyway.
    assert openai_problems([user("go"), blank, empty]) == []


def test_an_empty_assistant_message_breaks_openai_too() -> None:
    empty = Message(role="assistant", id="ea", content=())
    assert any("id ea" in p and "neither text nor tool calls" in p for p in openai_problems([user("go"), empty, user("?")]))


def test_duplicate_ids_and_misplaced_blocks() -> None:
    bad_user = Message(role="user", id="u9", content=(ToolUseBlock(id="t5", name="X"),))
    msgs = [user("go"), *call_and_result("Read", "x", tool_id="t1"), *call_and_result("Read", "y", tool_id="t1"), bad_user]
    problems = anthropic_problems(msgs)
    assert any("duplicate tool_use id t1" in p for p in problems)
    assert any("duplicate tool_result for t1" in p for p in problems)
    assert any("tool_use t5 outside an assistant message" in p for p in problems)


# --- Anthropic's adjacency rules --------------------------------------------------------------------------


def test_unanswered_tool_use() -> None:
    msgs = [user("go"), tool_call("Read", "t1"), user("never mind")]
    assert anthropic_problems(msgs) == [
        f"message 1 (assistant, id {msgs[1].id}): tool_use t1 is not answered by a tool_result in the next message"
    ]
    assert any("tool call t1 is not answered" in p for p in openai_problems(msgs))


def test_result_one_message_too_late_breaks_anthropic_only() -> None:
    msgs = [user("go"), tool_call("Read", "t1"), user("hurry"), tool_result("t1", "x")]
    problems = anthropic_problems(msgs)
    assert any("tool_use t1 is not answered" in p for p in problems)
    assert any("tool_result t1 does not answer" in p for p in problems)
    # OpenAI: the user text closes the turn before the result arrives.
    assert any("tool call t1 is not answered" in p for p in openai_problems(msgs))


def test_system_between_call_and_result_breaks_both() -> None:
    msgs = [user("go"), tool_call("Read", "t1"), system("note"), tool_result("t1", "x")]
    assert not is_valid_anthropic(msgs)
    # Chat Completions wants the tool messages right after the call (zeph#3235): the system message closes it.
    assert openai_problems(msgs) == [
        f"message 1 (assistant, id {msgs[1].id}): tool call t1 is not answered before the next message",
        f"message 3 (user, id {msgs[3].id}): tool result t1 has no preceding open tool call",
    ]


def test_system_between_two_results_of_one_call_breaks_openai() -> None:
    call = Message(role="assistant", id="a", content=(ToolUseBlock(id="t1", name="A"), ToolUseBlock(id="t2", name="B")))
    msgs = [user("go"), call, tool_result("t1", "1"), system("note"), tool_result("t2", "2")]
    problems = openai_problems(msgs)
    assert any("tool call t2 is not answered before the next message" in p for p in problems)
    assert not any("t1" in p for p in problems)


def test_system_after_the_answers_is_fine_for_openai() -> None:
    msgs = [user("go"), *call_and_result("Read", "x", tool_id="t1"), system("note"), user("next"), assistant("ok")]
    assert is_valid_openai(msgs)
    # Anthropic sends it as "[system] ..." user text: fine there too.
    assert is_valid_anthropic(msgs)


def test_tool_ids_the_apis_refuse_are_the_exporters_to_rewrite() -> None:
    # Canonical ids are the source's: the exporter rewrites them (lab.formats.tool_results), so no rule here.
    long_id = "call_" + "x" * 60
    msgs = [user("go"), *call_and_result("Read", "x", tool_id="toolu.é/1"), *call_and_result("Read", "y", tool_id=long_id)]
    assert is_valid_anthropic(msgs) and is_valid_openai(msgs)


def test_orphan_result() -> None:
    msgs = [user("go"), assistant("ok"), tool_result("ghost", "x")]
    assert any("tool_result ghost does not answer" in p for p in anthropic_problems(msgs))
    assert any("tool result ghost has no preceding open tool call" in p for p in openai_problems(msgs))


# --- OpenAI's turn rules ---------------------------------------------------------------------------------


def test_results_with_user_text_in_the_same_message_are_fine_for_openai() -> None:
    answer = Message(role="user", id="r", content=(ToolResultBlock(tool_use_id="t1", content="x"), TextBlock(text="and also")))
    msgs = [user("go"), tool_call("Read", "t1"), answer]
    assert is_valid_openai(msgs) and is_valid_anthropic(msgs)


def test_results_split_over_two_user_messages_are_fine_for_openai_only() -> None:
    call = Message(role="assistant", id="a", content=(ToolUseBlock(id="t1", name="A"), ToolUseBlock(id="t2", name="B")))
    msgs = [user("go"), call, tool_result("t1", "1"), tool_result("t2", "2")]
    assert is_valid_openai(msgs)
    assert any("tool_use t2 is not answered" in p for p in anthropic_problems(msgs))


def test_thinking_only_assistant_is_empty_for_openai() -> None:
    thought = Message(role="assistant", id="th", content=(ThinkingBlock(thinking="hmm", signature="s"),))
    msgs = [user("go"), thought, user("well?")]
    assert is_valid_anthropic(msgs)
    assert any("neither text nor tool calls" in p for p in openai_problems(msgs))


# --- invariants ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=6), st.data())
def test_removing_any_result_message_is_caught(widths: list[int], data: st.DataObject) -> None:
    msgs: list[Message] = [system(), user("go")]
    for k, width in enumerate(widths):
        msgs += _parallel(*(f"t{k}_{j}" for j in range(width)))
    msgs.append(assistant("done"))
    assert is_valid_anthropic(msgs) and is_valid_openai(msgs)
    result_positions = [i for i, m in enumerate(msgs) if any(isinstance(b, ToolResultBlock) for b in m.content)]
    drop = data.draw(st.sampled_from(result_positions))
    broken = msgs[:drop] + msgs[drop + 1 :]
    assert not is_valid_anthropic(broken) and not is_valid_openai(broken)


# The shapes the rules above turn on, drawn often: system messages among calls and results, empty and
# blank messages, assistant openings. tests/core/test_validate_incremental.py covers random edits at large.
_piece = st.sampled_from(["user", "blank_user", "empty_user", "assistant", "empty_assistant", "system", "boundary", "call2", "result1", "result2"])


def _piece_message(kind: str, k: int) -> Message:
    if kind == "user":
        return user("go")
    if kind == "blank_user":
        return Message(role="user", id=f"bu{k}", content=(TextBlock(text=" "),))
    if kind in ("empty_user", "empty_assistant"):
        return Message(role="user" if kind == "empty_user" else "assistant", id=f"e{k}", content=())
    if kind == "assistant":
        return assistant("ok")
    if kind == "system":
        return system("note")
    if kind == "boundary":
        return _boundary(f"b{k}")
    if kind == "call2":
        return Message(role="assistant", id=f"c{k}", content=(ToolUseBlock(id="t1", name="A"), ToolUseBlock(id="t2", name="B")))
    return tool_result("t1" if kind == "result1" else "t2", "x")


@settings(max_examples=60, deadline=None)
@given(st.lists(_piece, max_size=10), st.lists(st.integers(0, 10), min_size=1, max_size=5))
def test_the_validator_gives_the_full_lists_on_these_shapes(kinds: list[str], cuts: list[int]) -> None:
    history = [_piece_message(kind, k) for k, kind in enumerate(kinds)]
    validator = Validator()
    for n in range(len(history) + 1):
        assert validator.check(history[:n]) == (anthropic_problems(history[:n]), openai_problems(history[:n]))
    for cut in cuts:  # compaction cutting back, then the agent appending again
        shorter = history[: min(cut, len(history))] + [system("again"), tool_result("t2", "y")]
        assert validator.check(shorter) == (anthropic_problems(shorter), openai_problems(shorter))


def test_core_validate_imports_no_formats_or_ui() -> None:
    code = "import sys, lab.core.validate; bad=[m for m in sys.modules if m.startswith(('lab.formats','lab.ui','streamlit','plotly'))]; print(bad); sys.exit(1 if bad else 0)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
