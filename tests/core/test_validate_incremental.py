"""``Validator``: successive histories checked incrementally give exactly the full checks' lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from lab.core.validate import Validator, anthropic_problems, openai_problems
from tests.builders import call_and_result, session, system, tool_call, user

# A small alphabet, so that every rule fires often: few tool ids, blank text, misplaced blocks.
_IDS = ("t1", "t2", "t3", "t4")
_block = st.one_of(
    st.sampled_from(("go", "  ", "done")).map(lambda t: TextBlock(text=t)),
    st.sampled_from(_IDS).map(lambda i: ToolUseBlock(id=i, name="Read")),
    st.sampled_from(_IDS).map(lambda i: ToolResultBlock(tool_use_id=i, content="x")),
    st.just(ThinkingBlock(thinking="hmm", signature="s")),
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    mid = f"m{draw(st.integers(0, 10_000))}"
    if draw(st.integers(0, 9)) == 0:
        return Message(role="system", content=(), id=mid, tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))
    role = draw(st.sampled_from(("user", "assistant", "user", "assistant", "system")))
    return Message(role=role, content=tuple(draw(st.lists(_block, max_size=3))), id=mid)


# An edit turns one request's history into the next one's, the ways an agent loop and compaction do.
_edit = st.one_of(
    st.tuples(st.just("append"), st.lists(_message(), min_size=1, max_size=4)),
    st.tuples(st.just("cut"), st.integers(0, 40), st.lists(_message(), max_size=3)),
    st.tuples(st.just("replace"), st.integers(0, 40), _message()),
    st.tuples(st.just("copy"), st.integers(0, 40)),
    st.tuples(st.just("same"),),
)


def _apply(history: list[Message], edit: tuple) -> list[Message]:
    kind = edit[0]
    if kind == "append":
        return history + edit[1]
    if kind == "cut":
        return history[: min(edit[1], len(history))] + edit[2]
    if kind == "replace" and history:
        i = edit[1] % len(history)
        return history[:i] + [edit[2]] + history[i + 1 :]
    if kind == "copy" and history:
        # An equal message that is another object: the prefix holds on values, not identity.
        i = edit[1] % len(history)
        return history[:i] + [history[i].model_copy()] + history[i + 1 :]
    return list(history)


def _full(history: list[Message]) -> tuple[list[str], list[str]]:
    return anthropic_problems(history), openai_problems(history)


# --- equivalence with the full checks --------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.lists(_message(), max_size=8), st.lists(_edit, min_size=1, max_size=12))
def test_every_request_gets_the_full_checks_lists(start: list[Message], edits: list[tuple]) -> None:
    validator = Validator()
    history = start
    assert validator.check(history) == _full(history)
    for edit in edits:
        history = _apply(history, edit)
        assert validator.check(history) == _full(history)


@settings(max_examples=40, deadline=None)
@given(st.lists(_message(), max_size=30), st.data())
def test_any_history_after_any_other(first: list[Message], data: st.DataObject) -> None:
    # No shared structure assumed: a history unrelated to the previous one is checked from its start.
    second = data.draw(st.lists(_message(), max_size=30))
    validator = Validator()
    validator.check(first)
    assert validator.check(second) == _full(second)
    assert validator.check(first) == _full(first)


# --- the cases the incremental bookkeeping has to get right --------------------------------------------------


def test_a_call_answered_by_the_next_request_stops_being_a_problem() -> None:
    # The look-ahead of the last message is settled only when the next message arrives.
    call, result = call_and_result("Read", "x", tool_id="t1")
    validator = Validator()
    a, o = validator.check([user("go"), call])
    assert any("tool_use t1 is not answered" in p for p in a)
    assert any("tool call t1 is not answered" in p for p in o)
    assert validator.check([user("go"), call, result]) == ([], [])


def test_a_result_cut_away_by_compaction_is_reported_again() -> None:
    base = [system(), user("go"), *call_and_result("Read", "x", tool_id="t1"), *call_and_result("Read", "y", tool_id="t2")]
    validator = Validator()
    assert validator.check(base) == ([], [])
    broken = base[:-1]
    assert validator.check(broken) == _full(broken) != ([], [])
    assert validator.check(base) == ([], [])


def test_duplicate_ids_are_forgotten_with_the_messages_that_made_them() -> None:
    first = [user("go"), *call_and_result("Read", "x", tool_id="t1")]
    again = [*first, *call_and_result("Read", "y", tool_id="t1")]
    validator = Validator()
    assert any("duplicate tool_use id t1" in p for p in validator.check(again)[0])
    # The second t1 is gone: its id must no longer count as seen.
    redo = [*first, tool_call("Grep", "t2")]
    assert validator.check(redo) == _full(redo)


def test_a_changed_first_message_changes_the_head_problem() -> None:
    validator = Validator()
    opened_by_user = [user("go"), tool_call("Read", "t1")]
    validator.check(opened_by_user)
    opened_by_assistant = [tool_call("Read", "t1"), user("go")]
    assert validator.check(opened_by_assistant) == _full(opened_by_assistant)
    assert validator.check([system()]) == (["no user or assistant message to send"], ["no user or assistant message to send"])


def test_a_long_session_checked_request_by_request() -> None:
    msgs = session(n_reads=40, size=20)
    validator = Validator()
    for n in range(1, len(msgs) + 1):
        assert validator.check(msgs[:n]) == _full(msgs[:n])


def test_check_does_not_keep_the_callers_list() -> None:
    history = [user("go"), tool_call("Read", "t1")]
    validator = Validator()
    validator.check(history)
    history.append(user("late"))
    # The validator compared against its own copy, so the in-place append is seen as new.
    assert validator.check(history) == _full(history)
