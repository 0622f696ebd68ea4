"""PTL retry: grouping by user turn, the 3-then-20% drop schedule, the sentinel, and a real SDK round."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Message, TextBlock, tool_pairs
from lab.core.providers import ProviderSettings
from lab.core.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from lab.core.summarizers.llm import OpenAISummarizer
from lab.core.summarizers.ptl import (
    PTL_EXHAUSTED_MESSAGE,
    PromptTooLongExhaustedError,
    PTLRetrySummarizer,
    drop_schedule,
    group_by_user_turn,
)
from lab.core.tokens.base import get_counter
from lab.errors import ConfigError, PromptTooLongError, SummaryError
from lab.testing import CANNED_SUMMARY, FakeProvider
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user


def _turns(n: int, calls: int = 1) -> list[Message]:
    """n user turns, each a request, ``calls`` tool round trips and an answer."""
    msgs: list[Message] = []
    for i in range(n):
        msgs.append(user(f"request {i}"))
        for j in range(calls):
            msgs += call_and_result("Read", f"body {i}.{j}", file_path=f"f{i}_{j}.py")
        msgs.append(assistant(f"answer {i}"))
    return msgs


def _request(messages: list[Message]) -> SummaryRequest:
    return SummaryRequest(messages=messages, counter=get_counter("minicode"))


@dataclass
class Scripted:
    """A summarizer that says "too long" while the history has more than ``fits`` messages."""

    fits: int
    name: str = "scripted"
    calls: list[int] = field(default_factory=list)
    seen: list[list[str]] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls.append(len(request.messages))
        self.seen.append([m.id for m in request.messages])
        if len(request.messages) > self.fits:
            raise PromptTooLongError("prompt is too long", body={"type": "error"}, provider="fake")
        return SummaryResult(text="ok", strategy="llm", extra={"inner": True})


class TestGrouping:
    def test_groups_by_user_turn(self) -> None:
        msgs = _turns(3, calls=2)
        groups = group_by_user_turn(msgs)
        assert len(groups) == 3
        assert [g[0].content[0].text for g in groups] == ["request 0", "request 1", "request 2"]  # type: ignore[union-attr]
        assert [m for g in groups for m in g] == msgs

    def test_tool_results_do_not_open_a_turn(self) -> None:
        msgs = [user("go"), *call_and_result("Bash", "out", command="ls"), *call_and_result("Bash", "out2", command="pwd")]
        assert len(group_by_user_turn(msgs)) == 1

    def test_leading_messages_form_their_own_group(self) -> None:
        msgs = [system(), assistant("hello"), *_turns(2)]
        groups = group_by_user_turn(msgs)
        assert len(groups) == 3 and [m.role for m in groups[0]] == ["system", "assistant"]

    def test_user_interjection_inside_a_tool_pair_does_not_split_it(self) -> None:
        call = tool_call("Bash", "toolu_X", command="make")
        msgs = [user("build"), call, user("(user typed while the tool ran)"), tool_result("toolu_X", "built"), user("next"), assistant("ok")]
        groups = group_by_user_turn(msgs)
        assert [len(g) for g in groups] == [4, 2]

    def test_empty(self) -> None:
        assert group_by_user_turn([]) == []

    def test_summary_messages_do_not_open_a_turn(self) -> None:
        prior = Message(role="user", id="s1", content=(TextBlock(text="## Session summary"),), tag="summary")
        msgs = [assistant("x"), prior, assistant("(placeholder)"), *_turns(1)]
        assert len(group_by_user_turn(msgs)) == 2


@st.composite
def _histories(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = []
    open_ids: list[str] = []
    for step in draw(st.lists(st.sampled_from(["user", "call", "result", "answer"]), max_size=30)):
        if step == "user":
            msgs.append(user("u"))
        elif step == "call":
            m = tool_call("Read", file_path="x")
            open_ids.append(m.content[-1].id)  # type: ignore[union-attr]
            msgs.append(m)
        elif step == "result" and open_ids:
            msgs.append(tool_result(open_ids.pop(0), "r"))
        else:
            msgs.append(assistant("a"))
    return msgs


@settings(max_examples=80, deadline=None)
@given(msgs=_histories())
def test_grouping_partitions_in_order_and_never_splits_a_pair(msgs: list[Message]) -> None:
    groups = group_by_user_turn(msgs)
    assert [m for g in groups for m in g] == msgs
    assert all(groups)
    group_of = {m.id: i for i, g in enumerate(groups) for m in g}
    for use, result in tool_pairs(msgs).values():
        if use is not None and result is not None:
            assert group_of[msgs[use].id] == group_of[msgs[result].id]


class TestSchedule:
    @pytest.mark.parametrize(
        ("groups", "expected"),
        [
            (0, []),
            (1, [1]),
            (3, [1, 1, 1]),
            (4, [1, 1, 1, 1]),
            (20, [1, 1, 1, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]),
            (100, [1, 1, 1, 19, 15, 12, 10, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]),
        ],
        ids=["0", "1", "3", "4", "20", "100"],
    )
    def test_three_oldest_then_twenty_percent(self, groups: int, expected: list[int]) -> None:
        assert drop_schedule(groups) == expected
        assert sum(expected) == groups


class TestRetry:
    def test_no_ptl_no_retry(self) -> None:
        inner = Scripted(fits=10**6)
        result = PTLRetrySummarizer(inner).summarize(_request(_turns(4)))
        assert inner.calls == [16]
        assert result.extra == {"inner": True, "ptl_retries": 0, "ptl_dropped_groups": 0, "ptl_dropped_messages": 0, "ptl_groups": 4}

    def test_drops_follow_the_schedule_oldest_first(self) -> None:
        msgs = _turns(20)  # 4 messages per group
        inner = Scripted(fits=4 * 9)
        result = PTLRetrySummarizer(inner).summarize(_request(msgs))
        # Groups left per call: 20, 19, 18, 17, then -3 -> 14, -2 -> 12, -2 -> 10, -2 -> 8 fits.
        assert inner.calls == [4 * g for g in (20, 19, 18, 17, 14, 12, 10, 8)]
        assert result.extra["ptl_retries"] == 7 and result.extra["ptl_dropped_groups"] == 12
        assert result.extra["ptl_dropped_messages"] == 48
        # What is kept is always the newest suffix of the history.
        for seen in inner.seen:
            assert seen == [m.id for m in msgs[len(msgs) - len(seen):]]

    def test_sentinel_when_nothing_is_left(self) -> None:
        msgs = _turns(20)
        inner = Scripted(fits=0)
        with pytest.raises(PromptTooLongExhaustedError, match=PTL_EXHAUSTED_MESSAGE) as info:
            PTLRetrySummarizer(inner).summarize(_request(msgs))
        assert isinstance(info.value, SummaryError) and not isinstance(info.value, PromptTooLongError)
        # One call per schedule step: bounded, never called with an empty history.
        assert len(inner.calls) == len(drop_schedule(20)) and min(inner.calls) > 0
        assert info.value.retries == len(drop_schedule(20)) and info.value.groups == 20

    def test_other_errors_propagate_at_once(self) -> None:
        class Broken:
            name = "broken"
            calls = 0

            def summarize(self, request: SummaryRequest) -> SummaryResult:
                Broken.calls += 1
                raise SummaryError("no summary")

        with pytest.raises(SummaryError, match="no summary"):
            PTLRetrySummarizer(Broken()).summarize(_request(_turns(3)))
        assert Broken.calls == 1

    def test_max_attempts_bounds_the_loop(self) -> None:
        inner = Scripted(fits=0)
        with pytest.raises(PromptTooLongExhaustedError, match="after 2 attempts"):
            PTLRetrySummarizer(inner, max_attempts=2).summarize(_request(_turns(10)))
        assert len(inner.calls) == 2

    def test_request_fields_are_kept_and_input_not_mutated(self) -> None:
        msgs = _turns(5)
        before = [m.model_dump() for m in msgs]
        seen: list[SummaryRequest] = []

        class Capture(Scripted):
            def summarize(self, request: SummaryRequest) -> SummaryResult:
                seen.append(request)
                return super().summarize(request)

        req = SummaryRequest(messages=msgs, counter=get_counter("minicode"), trigger="manual", instructions="keep X", max_tokens=999)
        PTLRetrySummarizer(Capture(fits=9)).summarize(req)
        assert all((r.trigger, r.instructions, r.max_tokens) == ("manual", "keep X", 999) for r in seen)
        assert [m.model_dump() for m in msgs] == before

    def test_wrapper_is_a_summarizer_with_the_inner_name(self) -> None:
        wrapped = PTLRetrySummarizer(Scripted(fits=1))
        assert isinstance(wrapped, Summarizer) and wrapped.name == "scripted"

    @pytest.mark.parametrize(("kwargs", "message"), [({"fraction": 0}, "fraction"), ({"max_attempts": 0}, "max_attempts"), ({"oldest_first": -1}, "oldest_first")])
    def test_validation(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            PTLRetrySummarizer(Scripted(fits=1), **kwargs)


def test_real_sdk_round_trip(fake_provider: FakeProvider) -> None:  # noqa: F811
    """Two real 400 "context_length_exceeded" answers, then a summary of the newest turns."""
    fake_provider.script("ptl", "ptl", "ok")
    settings_ = ProviderSettings(provider="openai", base_url=fake_provider.base_url_openai, api_key="k", timeout=5, max_retries=0)
    msgs = _turns(4)
    result = PTLRetrySummarizer(OpenAISummarizer(settings_)).summarize(_request(msgs))
    assert result.text == CANNED_SUMMARY
    assert result.extra["ptl_retries"] == 2 and result.extra["ptl_dropped_groups"] == 2
    prompts = [r.prompt_text() for r in fake_provider.generation_requests]
    assert len(prompts) == 3
    assert "request 0" in prompts[0] and "request 0" not in prompts[1]
    assert "request 1" in prompts[1] and "request 1" not in prompts[2]
    assert "request 3" in prompts[2]
    # Every tool result that was sent still has its call.
    assert prompts[2].count("[tool call Read") == prompts[2].count("[tool result for Read")
