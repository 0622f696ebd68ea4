"""Tail selection, pair adjustment by ids, role repair and recovery truncation."""

from __future__ import annotations

import copy
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.core.tail import (
    ASSISTANT_PLACEHOLDER,
    LEAD_USER_PLACEHOLDER,
    USER_PLACEHOLDER,
    adjust_for_pairs,
    leading_system_messages,
    repair_roles,
    select_tail,
    truncate_keep,
)
from lab.core.tokens.base import MESSAGE_OVERHEAD, MiniCodeCounter
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import ConfigError
from tests.builders import assistant, call_and_result, session, system, tool_call, tool_result, user

COUNTER = MiniCodeCounter()


def words(tokens: int) -> str:
    # MiniCode counts 4 ASCII characters per token; the overhead is per message.
    return "abcd" * (tokens - MESSAGE_OVERHEAD)


def turns(n: int, tokens: int) -> list[Message]:
    """A system prompt and n alternating user/assistant turns of exactly ``tokens`` each."""
    out = [system()]
    for i in range(n):
        out.append(user(words(tokens)) if i % 2 == 0 else assistant(words(tokens)))
    return out


def split_pairs(messages: list[Message], start: int) -> list[str]:
    return [k for k, (u, r) in tool_pairs(messages).items() if u is not None and r is not None and u < start <= r]


class TestSelectTailMiniCode:
    def test_fills_up_to_max_tokens(self) -> None:
        msgs = turns(30, 3000)
        start = select_tail(msgs, COUNTER, "minicode", 10_000, 40_000, 5)
        # 13 x 3000 = 39,000 fits under 40,000; a 14th would pass it.
        assert len(msgs) - start == 13
        assert COUNTER.count_messages(msgs[start:]) <= 40_000

    def test_min_messages_beat_max_tokens(self) -> None:
        msgs = turns(12, 15_000)
        start = select_tail(msgs, COUNTER, "minicode", 10_000, 40_000, 5)
        assert len(msgs) - start == 5

    def test_min_tokens_beat_max_tokens(self) -> None:
        msgs = turns(20, 1000)
        start = select_tail(msgs, COUNTER, "minicode", 10_000, 5_000, 1)
        assert len(msgs) - start == 10

    def test_huge_last_message_is_kept(self) -> None:
        msgs = turns(12, 1000) + [assistant(words(60_000))]
        start = select_tail(msgs, COUNTER, "minicode", 10_000, 40_000, 5)
        # Over the maximum already, so only the minimum message count is added.
        assert len(msgs) - start == 5

    def test_short_history_keeps_everything_after_system(self) -> None:
        msgs = turns(4, 100)
        assert select_tail(msgs, COUNTER, "minicode", 10_000, 40_000, 5) == 1

    def test_never_includes_leading_system(self) -> None:
        msgs = [system(), system("more rules")] + turns(3, 100)[1:]
        assert select_tail(msgs, COUNTER, "minicode", 0, 1000, 1) >= 2
        assert leading_system_messages(msgs) == 2


class TestSelectTailMewCode:
    def test_stops_when_both_minimums_hold(self) -> None:
        msgs = turns(30, 3000)
        start = select_tail(msgs, COUNTER, "mewcode", 10_000, 40_000, 5)
        # 4 messages give 12,000 >= 10,000, but 5 messages are required: the wider wins.
        assert len(msgs) - start == 5

    def test_tokens_wider_than_messages(self) -> None:
        msgs = turns(30, 1000)
        start = select_tail(msgs, COUNTER, "mewcode", 10_000, 40_000, 5)
        assert len(msgs) - start == 10

    def test_no_maximum(self) -> None:
        msgs = turns(10, 30_000)
        start = select_tail(msgs, COUNTER, "mewcode", 10_000, 40_000, 5)
        assert COUNTER.count_messages(msgs[start:]) == 150_000


class TestSelectTailValidation:
    def test_unknown_policy(self) -> None:
        with pytest.raises(ConfigError, match="unknown tail policy"):
            select_tail(turns(3, 100), COUNTER, "claude", 1, 2, 3)  # type: ignore[arg-type]

    def test_negative_limits(self) -> None:
        with pytest.raises(ConfigError, match=">= 0"):
            select_tail(turns(3, 100), COUNTER, "mewcode", -1, 2, 3)


class TestAdjustForPairs:
    def test_cut_between_use_and_result_moves_back_to_the_call(self) -> None:
        msgs = [system(), user("go"), *call_and_result("Read", "x", tool_id="t1", file_path="a"), assistant("done")]
        # Index 3 is the result of the call at index 2.
        assert adjust_for_pairs(msgs, 3) == 2
        assert split_pairs(msgs, 2) == []

    def test_closed_cut_is_unchanged(self) -> None:
        msgs = [system(), user("go"), *call_and_result("Read", "x", tool_id="t1"), assistant("done")]
        assert adjust_for_pairs(msgs, 4) == 4
        assert adjust_for_pairs(msgs, 2) == 2

    def test_multi_tool_message(self) -> None:
        call = Message(
            role="assistant",
            id="a-multi",
            content=(TextBlock(text="reading both"), ToolUseBlock(id="m1", name="Read", input={}), ToolUseBlock(id="m2", name="Grep", input={})),
        )
        results = Message(
            role="user",
            id="r-multi",
            content=(ToolResultBlock(tool_use_id="m1", content="1"), ToolResultBlock(tool_use_id="m2", content="2")),
        )
        msgs = [system(), user("go"), call, results, assistant("ok")]
        assert adjust_for_pairs(msgs, 3) == 2

    def test_results_spread_over_messages_are_closed_transitively(self) -> None:
        # A result of an older call rides in the same message as a newer one: the cut keeps moving back.
        c1 = tool_call("Read", "p1")
        c2 = Message(role="assistant", id="a-c2", content=(ToolUseBlock(id="p2", name="Read", input={}),))
        mixed = Message(
            role="user",
            id="r-mixed",
            content=(ToolResultBlock(tool_use_id="p1", content="1"), ToolResultBlock(tool_use_id="p2", content="2")),
        )
        msgs = [system(), user("go"), c1, c2, mixed, assistant("ok")]
        assert adjust_for_pairs(msgs, 4) == 2

    def test_pairs_are_matched_by_id_not_text(self) -> None:
        # The assistant text mentions "tool_use", which fooled MiniCode's text search.
        msgs = [system(), user("go"), assistant("I will emit a tool_use soon"), user("fine"), *call_and_result("Bash", "out", tool_id="b1")]
        assert adjust_for_pairs(msgs, 3) == 3

    def test_orphan_results_at_the_tail_start_are_skipped(self) -> None:
        msgs = [system(), user("go"), tool_result("ghost", "no call anywhere"), assistant("ok"), user("next")]
        assert adjust_for_pairs(msgs, 2) == 3

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.sampled_from(["text", "call1", "call2"]), min_size=1, max_size=25), st.data())
    def test_never_splits_a_pair(self, shape: list[str], data: st.DataObject) -> None:
        msgs = [system(), user("start")]
        for k, kind in enumerate(shape):
            if kind == "text":
                msgs += [assistant(f"a{k}"), user(f"u{k}")]
            else:
                ids = [f"t{k}-{j}" for j in range(1 if kind == "call1" else 2)]
                msgs.append(Message(role="assistant", id=f"c{k}", content=tuple(ToolUseBlock(id=i, name="Read", input={}) for i in ids)))
                msgs.append(Message(role="user", id=f"r{k}", content=tuple(ToolResultBlock(tool_use_id=i, content="x") for i in ids)))
        cut = data.draw(st.integers(0, len(msgs)))
        start = adjust_for_pairs(msgs, cut)
        assert start <= cut
        assert split_pairs(msgs, start) == []


class TestRepairRoles:
    def test_summary_then_user_tail_gets_assistant_placeholder(self) -> None:
        summary = Message(role="user", id="sum", content=(TextBlock(text="summary"),), tag="summary")
        out = repair_roles([system(), summary, user("next question"), assistant("answer")])
        assert [m.role for m in out] == ["system", "user", "assistant", "user", "assistant"]
        assert out[2].tag == "placeholder"
        assert out[2].content == (TextBlock(text=ASSISTANT_PLACEHOLDER),)

    def test_leading_assistant_gets_a_user_turn(self) -> None:
        out = repair_roles([system(), assistant("hi"), user("q")])
        assert out[1].role == "user" and out[1].content[0].text == LEAD_USER_PLACEHOLDER  # type: ignore[union-attr]

    def test_two_assistants_get_a_minimal_user_turn(self) -> None:
        out = repair_roles([user("q"), assistant("a"), assistant("b")])
        assert [m.role for m in out] == ["user", "assistant", "user", "assistant"]
        assert out[2].content[0].text == USER_PLACEHOLDER  # type: ignore[union-attr]

    def test_never_separates_a_call_from_its_result(self) -> None:
        msgs = [user("q"), *call_and_result("Read", "x", tool_id="k1"), user("more")]
        out = repair_roles(msgs)
        i = next(i for i, m in enumerate(out) if m.content and isinstance(m.content[0], ToolUseBlock))
        assert isinstance(out[i + 1].content[0], ToolResultBlock)
        assert anthropic_problems(out) == [] and openai_problems(out) == []

    def test_placeholder_ids_are_deterministic_and_repair_is_idempotent(self) -> None:
        msgs = [system(), user("a"), user("b"), assistant("c"), assistant("d")]
        once = repair_roles(msgs)
        assert [m.id for m in once] == [m.id for m in repair_roles(msgs)]
        assert repair_roles(once) == once

    def test_does_not_mutate_and_keeps_objects(self) -> None:
        msgs = [user("a"), user("b")]
        before = copy.deepcopy(msgs)
        out = repair_roles(msgs)
        assert msgs == before
        assert out[0] is msgs[0] and out[2] is msgs[1]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.sampled_from(["user", "assistant", "system", "pair"]), max_size=20))
    def test_output_alternates_and_validates(self, roles: list[str]) -> None:
        msgs: list[Message] = [system()]
        for k, r in enumerate(roles):
            if r == "pair":
                msgs += call_and_result("Read", "x", tool_id=f"h{k}")
            elif r == "user":
                msgs.append(user(f"u{k}"))
            elif r == "assistant":
                msgs.append(assistant(f"a{k}"))
        msgs.append(user("final"))
        out = repair_roles(msgs)
        assert anthropic_problems(out) == []
        assert openai_problems(out) == []
        convo = [m for m in out if m.role != "system"]
        for a, b in pairwise(convo):
            # Same-role neighbours only where a tool_result message follows (merged by the exporters).
            assert a.role != b.role or any(isinstance(x, ToolResultBlock) for x in b.content)


class TestTruncateKeep:
    def test_keeps_share_and_system(self) -> None:
        msgs = turns(20, 100)
        out = truncate_keep(msgs, 0.4, 0.15, 3)
        assert out[0] is msgs[0]
        assert [m.id for m in out[1:]] == [m.id for m in msgs[-8:]]

    def test_floors(self) -> None:
        def kept(out: list[Message]) -> int:
            return sum(1 for m in out if m.role != "system" and m.tag != "placeholder")

        assert kept(truncate_keep(turns(20, 100), 0.05, 0.15, 3)) == 3
        assert kept(truncate_keep(turns(10, 100), 0.1, 0.15, 4)) == 4
        assert kept(truncate_keep(turns(40, 100), 0.05, 0.15, 3)) == 6

    def test_tail_starting_with_assistant_gets_a_user_turn(self) -> None:
        out = truncate_keep(turns(20, 100), 0.05, 0.15, 3)
        assert out[1].role == "user" and out[1].tag == "placeholder"

    def test_pairs_kept_and_roles_repaired(self) -> None:
        msgs = session(n_reads=8, size=100)
        out = truncate_keep(msgs, 0.3, 0.15, 3)
        assert anthropic_problems(out) == [] and openai_problems(out) == []
        assert len(out) < len(msgs)

    def test_nothing_to_drop_returns_same_objects(self) -> None:
        msgs = turns(3, 100)
        out = truncate_keep(msgs, 0.4, 0.15, 3)
        assert out == msgs and out is not msgs and all(a is b for a, b in zip(out, msgs, strict=True))

    def test_bad_ratio(self) -> None:
        with pytest.raises(ConfigError):
            truncate_keep(turns(3, 100), 1.5, 0.15, 3)


class TestThirdTail:
    """MiniCode 6b: the newest min(n // 3, max) conversation turns, by count only."""

    @settings(max_examples=60, deadline=None)
    @given(st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=8), st.booleans())
    def test_keeps_a_third_capped(self, n: int, cap: int, marker: bool) -> None:
        from lab.core.tail import is_turn, third_tail_start

        msgs = [system()] + [user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(n)]
        if marker and n > 2:
            # A pipeline-written message is not a turn: it neither counts nor shifts the cut.
            msgs.insert(2, Message(role="user", content=(TextBlock(text="summary"),), id="s-x", tag="summary"))
        start = third_tail_start(msgs, cap)
        kept = [m for m in msgs[start:] if is_turn(m)]
        assert len(kept) == min(n // 3, cap)
        assert start >= 1 and (start == len(msgs) or is_turn(msgs[start]))

    def test_negative_cap_is_a_config_error(self) -> None:
        from lab.core.tail import third_tail_start

        with pytest.raises(ConfigError, match="max_messages must be >= 0"):
            third_tail_start([system(), user("x")], -1)


def _round(i: int, results: int = 2) -> list[Message]:
    """One assistant turn calling ``results`` tools, answered by one user message holding every result."""
    uses = tuple(ToolUseBlock(id=f"c{i}_{k}", name="Read", input={"file_path": f"f{i}_{k}.py"}) for k in range(results))
    res = tuple(ToolResultBlock(tool_use_id=f"c{i}_{k}", content=f"content {i} {k}") for k in range(results))
    return [Message(role="assistant", content=uses, id=f"call{i}"), Message(role="user", content=res, id=f"res{i}")]


class TestSeedMessageCount:
    """MiniCode's own list: each tool result an entry, its summaries and notes system messages."""

    def test_counts_as_minicode_lists_them(self) -> None:
        from lab.core.tail import seed_message_count

        call, results = _round(0, 3)
        mixed = Message(role="user", content=(TextBlock(text="a"), ToolResultBlock(tool_use_id="x", content="r"), TextBlock(text="b")), id="m")
        harness = Message(role="user", content=(TextBlock(text="<local-command-stdout>ok</local-command-stdout>"),), id="h1", tag="placeholder")
        [lead, placeholder] = repair_roles([assistant("hi"), assistant("again")])[:2]
        summary = Message(role="user", content=(TextBlock(text="summary"),), id="s1", tag="summary")
        note = Message(role="user", content=(TextBlock(text="note"),), id="n1", tag="truncation_note")
        counts = [seed_message_count(m) for m in (system(), call, results, mixed, harness, summary, note, lead, placeholder)]
        # A pipeline placeholder (repair_roles) is nothing MiniCode writes; an importer's tagged harness line is.
        assert lead.tag == "placeholder" and counts == [0, 1, 3, 3, 1, 0, 0, 0, 1]

    def test_third_tail_counts_minicode_messages_and_keeps_pairs_whole(self) -> None:
        from lab.core.tail import count_units, third_tail_start

        msgs = [system(), user("Fix the parser")] + [m for i in range(6) for m in _round(i)] + [assistant("done")]
        # len(non_system) = 1 + 6 x (1 call + 2 results) + 1 = 20; MiniCode keeps min(20 // 3, 5) = 5 of them.
        assert count_units(msgs[1:], "minicode_messages") == 20
        start = third_tail_start(msgs, 5, "minicode_messages")
        # The 5th entry from the end is a result of round 4: its message starts the count...
        assert msgs[start].id == "res4"
        # ...and the cut moves back only to the call those results answer.
        cut = adjust_for_pairs(msgs, start)
        assert msgs[cut].id == "call4" and cut == start - 1
        assert not anthropic_problems(msgs[:1] + repair_roles(msgs[cut:]))

    def test_results_count_one_by_one_where_turns_count_the_message(self) -> None:
        from lab.core.tail import third_tail_start

        msgs = [system(), user("Fix the parser")] + [m for i in range(6) for m in _round(i, 3)] + [assistant("done")]
        # MiniCode: 26 entries, keep 5 = done + 3 results + their call. Turns: 14, keep 4, reaching back into round 4.
        seed = adjust_for_pairs(msgs, third_tail_start(msgs, 5, "minicode_messages"))
        turns = adjust_for_pairs(msgs, third_tail_start(msgs, 5, "turns"))
        assert [m.id for m in msgs[seed:]] == ["call5", "res5", msgs[-1].id]
        assert [m.id for m in msgs[turns:]] == ["call4", "res4", "call5", "res5", msgs[-1].id]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=3), max_size=15), st.integers(min_value=0, max_value=8))
    def test_the_tail_holds_the_newest_units_and_no_more_messages(self, shape: list[int], keep: int) -> None:
        from lab.core.tail import count_units, newest_units_start

        msgs = [system(), user("task")]
        for i, n in enumerate(shape):
            msgs += _round(i, n) if n else [assistant(f"a{i}"), user(f"u{i}")]
        start = newest_units_start(msgs, keep, "minicode_messages")
        total = count_units(msgs, "minicode_messages")
        if keep == 0:
            assert start == len(msgs)
        elif keep >= total:
            assert start == leading_system_messages(msgs)
        else:
            assert count_units(msgs[start:], "minicode_messages") >= keep > count_units(msgs[start + 1 :], "minicode_messages")

    def test_unknown_unit_is_a_config_error(self) -> None:
        from lab.core.tail import count_units

        with pytest.raises(ConfigError, match="unknown tail unit"):
            count_units([user("x")], "tokens")  # type: ignore[arg-type]
