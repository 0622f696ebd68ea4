"""The degenerate-import rules (lab.formats.sanity), one concern a group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lab.core.messages import Boundary, ImportNotes, Message, TextBlock, Transcript
from lab.formats.sanity import DROPPED_WARNING, MIN_DROPPED, MIN_RECORDS, MISREAD_PREFIX, MOSTLY_EMPTY, MOSTLY_SYSTEM, SKIPPED_WARNING, check, misread_warnings


def _t(roles: list[str], *, empty: int = 0, notes: ImportNotes | None = None) -> Transcript:
    msgs = [Message(role=r, content=() if i < empty else (TextBlock(text="x"),), id=f"m{i}") for i, r in enumerate(roles)]  # type: ignore[arg-type]
    return Transcript(messages=msgs, notes=notes or ImportNotes())


_ROLES = st.lists(st.sampled_from(["system", "user", "assistant"]), max_size=30)


@given(_ROLES)
def test_a_result_without_a_user_turn_is_never_usable(roles: list[str]) -> None:
    if "user" not in roles:
        assert not check(_t(roles)).ok


@given(_ROLES)
def test_a_full_conversation_with_few_system_messages_is_usable(roles: list[str]) -> None:
    roles = ["user", "assistant", *roles]
    verdict = check(_t(roles))
    assert verdict.ok == (roles.count("system") <= MOSTLY_SYSTEM * len(roles))
    assert verdict.warnings == ()


@given(st.integers(1, 20), st.integers(0, 20))
def test_mostly_empty_messages_are_a_problem(n: int, empty: int) -> None:
    empty = min(empty, 2 * n)
    verdict = check(_t(["user", "assistant"] * n, empty=empty))
    assert verdict.ok == (empty <= MOSTLY_EMPTY * 2 * n)


def test_the_issue_misread_is_named_with_its_numbers() -> None:
    verdict = check(_t(["system"] * 175))
    assert verdict.problems == ("175 of 175 messages are system messages, no user or assistant turn",)
    assert not verdict.tolerable


def test_user_only_is_a_warning_and_empty_or_reply_only_are_tolerable() -> None:
    assert check(_t(["user", "user"])).ok and "no assistant turn" in check(_t(["user"])).warnings[0]
    assert check(_t([])).tolerable and check(_t(["assistant"])).tolerable
    assert not check(_t(["assistant"], empty=1)).tolerable  # two problems: not something a real file shows


def test_boundaries_are_not_system_messages() -> None:
    marker = Message(role="system", id="b", tag="boundary", boundary=Boundary(trigger="import", strategy="x"))
    t = _t(["user", "assistant"])
    t.messages[:0] = [marker] * 5
    assert check(t).ok


def test_skipped_records_need_enough_records_to_count() -> None:
    few = ImportNotes(records_read=MIN_RECORDS - 1, skipped={"notice": MIN_RECORDS - 1})
    assert check(_t(["user", "assistant"], notes=few)).ok
    many = ImportNotes(records_read=100, skipped={"event": 85})
    assert check(_t(["user", "assistant"], notes=many)).warnings == ("85 of 100 records skipped (event 85)",)
    most = ImportNotes(records_read=100, skipped={"event": 96, "other": 1})
    assert check(_t(["user", "assistant"], notes=most)).problems == ("97 of 100 records skipped (event 96, other 1)",)


def test_misread_warnings_picks_the_prefixed_ones() -> None:
    notes = ImportNotes(warnings=["line 3: repaired", MISREAD_PREFIX + "no assistant turn"])
    assert misread_warnings(notes) == [MISREAD_PREFIX + "no assistant turn"]


def test_a_reader_that_dropped_another_formats_tool_calls_misread_the_file() -> None:
    from lab.core.messages import ImportNotes, Message, TextBlock, ToolUseBlock, Transcript

    notes = ImportNotes()
    notes.skip("block:toolRequest")
    notes.skip("block:toolResponse")
    said = [Message(id="u", role="user", content=[TextBlock(text="fix it")]), Message(id="a", role="assistant", content=[TextBlock(text="on it")])]
    verdict = check(Transcript(messages=said, notes=notes))
    assert not verdict.ok and any("tool calls dropped" in p for p in verdict.problems)
    # The same skips beside a tool call the reader did read are no sign of a misread.
    called = said + [Message(id="c", role="assistant", content=[ToolUseBlock(id="t1", name="Bash", input={"command": "ls"})])]
    assert not any("tool calls dropped" in p for p in check(Transcript(messages=called, notes=notes)).problems)


def test_content_a_reader_could_not_read_is_a_warning_past_a_small_share() -> None:
    # A Cline task whose texts were numbers kept 12 of 145 messages with exit 0 and nothing said.
    notes = ImportNotes(records_read=145, skipped={"block:text": 12, "empty_message": 12, "say:checkpoint_created": 40})
    verdict = check(_t(["user", "assistant"] * 6, notes=notes))
    assert verdict.ok
    assert verdict.warnings == ("24 records or blocks could not be read and were dropped (block:text 12, empty_message 12), against 145 records read",)


@given(st.integers(0, 400), st.integers(0, 40))
def test_the_dropped_content_warning_follows_its_threshold(read: int, dropped: int) -> None:
    notes = ImportNotes(records_read=read, skipped={"tool:invalid": dropped})
    verdict = check(_t(["user", "assistant"], notes=notes))
    warned = any("could not be read" in w for w in verdict.warnings)
    # Most records skipped is the louder rule, said instead.
    if not (read >= MIN_RECORDS and dropped >= SKIPPED_WARNING * read):
        assert warned == (dropped >= MIN_DROPPED and dropped > DROPPED_WARNING * read)


def test_records_skipped_by_design_are_not_dropped_content() -> None:
    notes = ImportNotes(records_read=10, skipped={"file-history-snapshot": 3, "block:mystery": 3, "say:api_req_finished": 3})
    assert check(_t(["user", "assistant"], notes=notes)).warnings == ()
