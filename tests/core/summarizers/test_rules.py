"""The rule-based full summary: MiniCode's sections, the user's words kept, determinism."""

from __future__ import annotations

import copy

import pytest

from lab.core.messages import Message, TextBlock
from lab.core.summarizers.base import Summarizer, SummaryRequest
from lab.core.summarizers.rules import RuleSummarizer, cut_to_tokens, first_user_request, user_texts
from lab.core.tokens.base import MiniCodeCounter
from lab.errors import SummaryError
from tests.builders import assistant, call_and_result, system, tool_result, user

COUNTER = MiniCodeCounter()
NOW = 1_700_000_000.0  # 22:13:20 UTC
FIRST = "Refactor the error handling of the whole project.\nKeep the public API stable, and:\n  - log every retry\n" + "x" * 400


def history() -> list[Message]:
    msgs = [system(), user(FIRST)]
    msgs += call_and_result("Read", "content of a", file_path="src/a.py")
    msgs += call_and_result("Grep", "hits", path="src/")
    msgs += call_and_result("Bash", "Traceback: ZeroDivisionError in retry loop at line 12 of src/a.py, while computing backoff", is_error=True, command="pytest")
    msgs += [assistant("I will use a retry decorator."), user("Also cover the HTTP client retries in src/http.py")]
    msgs += call_and_result("Edit", "ok", file_path="src/http.py")
    return msgs


def summarize(msgs: list[Message], **kw: object) -> str:
    request = SummaryRequest(messages=msgs, counter=COUNTER, now=NOW, **kw)  # type: ignore[arg-type]
    return RuleSummarizer().summarize(request).text


class TestFormat:
    def test_header_uses_the_given_clock(self) -> None:
        text = summarize(history(), tokens_before=12345, messages_before=42)
        assert text.startswith("[Context compacted at 22:13:20 - Full Compact] Original: ~12345 tokens, 42 messages")

    def test_header_defaults_to_the_summarised_part(self) -> None:
        msgs = history()
        text = summarize(msgs)
        assert f"Original: ~{COUNTER.count_messages(msgs)} tokens, {len(msgs)} messages" in text

    def test_clock_fallback(self) -> None:
        request = SummaryRequest(messages=history(), counter=COUNTER)
        text = RuleSummarizer(clock=lambda: NOW + 3600).summarize(request).text
        assert "compacted at 23:13:20" in text

    def test_sections(self) -> None:
        text = summarize(history())
        assert "**Topics discussed:**" in text
        assert "**Tools used:** Bash (1), Edit (1), Grep (1), Read (1)" in text
        assert "**Files touched (most recent first):** src/http.py, src/, src/a.py" in text
        assert "- Traceback: ZeroDivisionError in retry loop at line 12 of src/a.py, while computi..." in text
        assert text.rstrip().endswith("*Continue from where we left off.*")

    def test_topics_are_cut_at_100_chars_and_exclude_tool_results(self) -> None:
        text = summarize(history())
        topics = text.split("**Topics discussed:**")[1].split("\n\n")[0].strip().splitlines()
        assert len(topics) == 2
        assert all(len(t) <= len("- ") + 100 + len("...") for t in topics)
        assert "content of a" not in "\n".join(topics)

    def test_at_most_8_topics_10_files_3_errors(self) -> None:
        msgs = [system(), user("start")]
        for i in range(12):
            msgs += call_and_result("Read", "boom", is_error=True, file_path=f"f{i}.py")
            msgs += [assistant("next"), user(f"request number {i}")]
        text = summarize(msgs)
        topics = text.split("**Topics discussed:**")[1].split("\n\n")[0].strip().splitlines()
        assert len(topics) == 8
        files = text.split("**Files touched (most recent first):** ")[1].splitlines()[0]
        assert files.startswith("f11.py, f10.py") and files.endswith("(+2 more)")
        assert "latest 3 of 12" in text

    def test_is_a_summarizer(self) -> None:
        assert isinstance(RuleSummarizer(), Summarizer)
        assert RuleSummarizer().summarize(SummaryRequest(messages=history(), counter=COUNTER)).strategy == "full"


class TestUserWords:
    def test_first_request_verbatim_even_over_budget(self) -> None:
        big = "Do this exact thing: " + "word " * 3000
        text = summarize([user(big), assistant("ok"), user("then this")], max_tokens=500)
        assert big in text

    def test_every_user_message_verbatim_when_it_fits(self) -> None:
        text = summarize(history())
        assert FIRST in text
        assert "<user-message>\nAlso cover the HTTP client retries in src/http.py\n</user-message>" in text

    def test_oldest_are_cut_first_when_over_budget(self) -> None:
        msgs = [user("first")]
        for i in range(6):
            msgs += [assistant("ok"), user(f"message {i} " + "y" * 2000)]
        text = summarize(msgs, max_tokens=1500)
        assert "message 5 " + "y" * 2000 in text
        assert 'truncated="' in text or "older user message(s) omitted" in text
        assert "message 0 " + "y" * 2000 not in text

    def test_tool_results_and_placeholders_are_not_user_words(self) -> None:
        placeholder = Message(role="assistant", id="p", content=(TextBlock(text="(continue)"),), tag="placeholder")
        msgs = [tool_result("t", "tool output"), user("real"), placeholder]
        assert [t.text for t in user_texts(msgs)] == ["real"]


class TestSummaryOfSummary:
    def test_first_request_survives_a_second_compaction(self) -> None:
        first_text = summarize(history())
        summary = Message(role="user", id="sum1", content=(TextBlock(text=first_text),), tag="summary")
        again = [summary, assistant("continuing"), user("now add tests"), assistant("done")]
        assert first_user_request(again) == FIRST
        second = summarize(again)
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in second
        assert "Also cover the HTTP client retries in src/http.py" in second
        assert "now add tests" in second
        # The old header is not repeated as a user topic.
        assert "- [Context compacted" not in second

    def test_request_carried_by_a_truncation_note(self) -> None:
        note_text = f"[Context aggressively truncated for recovery - attempt 2]\n<primary-request>\n{FIRST}\n</primary-request>"
        note = Message(role="user", id="n", content=(TextBlock(text=note_text),), tag="truncation_note")
        text = summarize([note, assistant("ok"), user("go on")])
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in text
        assert "- [Context aggressively" not in text

    def test_foreign_summary_is_carried(self) -> None:
        llm = Message(role="user", id="s", content=(TextBlock(text="## Session summary\nThe user wants X."),), tag="summary")
        text = summarize([llm, assistant("ok"), user("go on")])
        assert "**Earlier summary:**" in text and "The user wants X." in text


class TestInstructions:
    def test_focus_is_stated_and_biases_sections(self) -> None:
        msgs = history() + [assistant("The backoff uses jitter.\nUnrelated line.")]
        text = summarize(msgs, instructions="keep the backoff decisions")
        assert "**Focus requested by the user:** keep the backoff decisions" in text
        focus = text.split("**Lines relevant to the requested focus:**")[1]
        assert "- The backoff uses jitter." in focus
        assert "Unrelated line." not in focus


class TestContract:
    def test_deterministic(self) -> None:
        assert summarize(history()) == summarize(history())

    def test_no_mutation(self) -> None:
        msgs = history()
        before = copy.deepcopy(msgs)
        summarize(msgs, instructions="retry")
        assert msgs == before

    @pytest.mark.parametrize("msgs", [[], [system()]], ids=["empty", "system-only"])
    def test_nothing_to_summarise(self, msgs: list[Message]) -> None:
        with pytest.raises(SummaryError, match="nothing to summarise"):
            summarize(msgs)

    def test_respects_budget_apart_from_the_first_request(self) -> None:
        msgs = [user("short first")]
        for i in range(40):
            msgs += [assistant("ok"), user(f"m{i} " + "z" * 800)]
        text = summarize(msgs, max_tokens=2000)
        assert COUNTER.count_text(text) <= 2000


class TestCutToTokens:
    def test_fits_and_prefers_line_ends(self) -> None:
        text = "\n".join("line %03d %s" % (i, "w" * 30) for i in range(200))
        cut = cut_to_tokens(text, 300, COUNTER)
        assert COUNTER.count_text(cut) <= 300
        assert text.startswith(cut) and cut.endswith("w")

    def test_short_text_unchanged(self) -> None:
        assert cut_to_tokens("abc", 10, COUNTER) == "abc"
