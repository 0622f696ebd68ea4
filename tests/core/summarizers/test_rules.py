"""The rule-based full summary: MiniCode's sections, the user's words kept, determinism."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
        text = "\n".join(f"line {i:03d} {'w' * 30}" for i in range(200))
        cut = cut_to_tokens(text, 300, COUNTER)
        assert COUNTER.count_text(cut) <= 300
        assert text.startswith(cut) and cut.endswith("w")

    def test_short_text_unchanged(self) -> None:
        assert cut_to_tokens("abc", 10, COUNTER) == "abc"


# -- a shell agent: what a continuing agent needs -------------------------------------

TASK = "Fix the crash of calc.div when b is 0; keep the public API."
FAILURE = (
    "<returncode>2</returncode>\n<output>\n"
    "E       AssertionError: assert 'inf' == 'friendly'\n"
    "FAILED tests/test_cli.py::test_msg - AssertionError\n</output>"
)
TRACEBACK = (
    "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
    '  File "/repo/src/calc.py", line 2, in div\n    return a / b\nZeroDivisionError: division by zero\n</output>'
)


def ok(text: str = "") -> str:
    return f"<returncode>0</returncode>\n<output>\n{text}\n</output>"


def shell_session() -> list[Message]:
    """A mini-swe-agent style session: every action is one bash command answered by a <returncode>."""
    msgs = [system(), user(TASK), assistant("I'll look at the code first.")]
    msgs += call_and_result("bash", ok("def div(a, b):\n    return a / b"), command="cd /repo && sed -n '1,40p' src/calc.py")
    msgs += call_and_result("bash", ok("1:def div(a, b):"), command='grep -n "def div" src/cli.py')
    msgs += call_and_result("bash", TRACEBACK, command="python -m pytest tests/test_calc.py -x")
    msgs += [assistant("The root cause is that div does not check b. I'll add a guard because callers pass 0.")]
    msgs += call_and_result("bash", ok(), command="sed -i 's/return a \\/ b/return a \\/ b if b else 0.0/' src/calc.py")
    msgs += call_and_result("bash", ok(), command="cat > tests/test_zero.py <<'EOF'\nfrom calc import div\n\ndef test_zero():\n    assert div(1, 0) == 0.0\nEOF")
    msgs += [user("Also make sure the CLI prints a friendly message")]
    msgs += call_and_result("Edit", "ok", file_path="src/cli.py", old_string="print(div(a, b))", new_string="print(div(a, b) or 'friendly')")
    msgs += call_and_result("bash", FAILURE, command="python -m pytest -q")
    msgs += [assistant("Next I need to update the CLI test.")]
    msgs += call_and_result("bash", ok("def test_msg(): ..."), command="cat tests/test_cli.py")
    return msgs


def section(text: str, title: str) -> str:
    """The lines of one section, from its title to the next blank line."""
    assert title in text, f"{title!r} missing"
    return text.split(title, 1)[1].split("\n\n", 1)[0]


TITLES = ("**Files changed", "**Files read", "**Commands run", "**Errors seen", "**Last error", "**Decisions and pending work", "**Current step", "**Tools used", "**Files touched", "**Errors encountered", "**User messages")


class TestShellAgent:
    def test_primary_request_and_later_messages_verbatim(self) -> None:
        text = summarize(shell_session())
        assert f"<primary-request>\n{TASK}\n</primary-request>" in text
        assert "<user-message>\nAlso make sure the CLI prints a friendly message\n</user-message>" in text

    def test_minicode_headline_is_kept(self) -> None:
        text = summarize(shell_session())
        assert text.startswith("[Context compacted at 22:13:20 - Full Compact] Original: ~")
        assert "**Tools used:** Edit (1), bash (7)" in text
        assert "**Errors encountered (latest 2 of 2):**\n- ZeroDivisionError: division by zero\n- FAILED tests/test_cli.py::test_msg - AssertionError" in text
        assert "**Topics discussed:**" in text
        assert text.rstrip().endswith("*Continue from where we left off.*")

    def test_files_changed_say_what_changed(self) -> None:
        changed = section(shell_session_text(), "**Files changed (most recent first):**")
        lines = changed.strip().splitlines()
        assert lines[0] == "- src/cli.py — inserted \"or 'friendly'\" after \"print(div(a, b)\""
        assert lines[1] == "- tests/test_zero.py — written: 4 lines from a heredoc"
        assert lines[2] == '- src/calc.py — replaced "b" with "b if b else 0.0"'

    def test_files_read_leave_out_changed_files(self) -> None:
        read = section(shell_session_text(), "**Files read (most recent first):**")
        # /repo/src/calc.py was read, then changed as src/calc.py: it is listed with its change only.
        assert read.strip().splitlines() == ["- tests/test_cli.py"]

    def test_commands_with_outcomes_most_recent_first(self) -> None:
        commands = section(shell_session_text(), "**Commands run (most recent first, 7 in all):**").strip().splitlines()
        assert commands[0] == "- `cat tests/test_cli.py` -> ok"
        assert commands[1] == "- `python -m pytest -q` -> exit 2: FAILED tests/test_cli.py::test_msg - AssertionError"
        assert "- `cat > tests/test_zero.py <<'EOF' [+5 lines]` -> ok" in commands
        assert commands[-1] == "- `cd /repo && sed -n '1,40p' src/calc.py` -> ok"

    def test_errors_with_the_last_one_verbatim(self) -> None:
        text = shell_session_text()
        errors = section(text, "**Errors seen (2 in all, most recent first):**").strip().splitlines()
        assert errors == [
            "- `python -m pytest -q`: FAILED tests/test_cli.py::test_msg - AssertionError",
            "- `python -m pytest tests/test_calc.py -x`: ZeroDivisionError: division by zero",
        ]
        assert f"**Last error (verbatim):** `python -m pytest -q`\n<last-error>\n{FAILURE}\n</last-error>" in text

    def test_decisions_and_current_step(self) -> None:
        text = shell_session_text()
        decisions = section(text, "**Decisions and pending work (the assistant's words, oldest first):**").strip().splitlines()
        assert decisions == ["- I'll look at the code first.", "- The root cause is that div does not check b.", "- I'll add a guard because callers pass 0."]
        step = section(text, "**Current step:**").strip().splitlines()
        assert step == ["- Last assistant message: Next I need to update the CLI test.", "- Last tool call: `cat tests/test_cli.py` -> ok"]

    def test_each_section_once(self) -> None:
        text = shell_session_text()
        for title in TITLES:
            assert text.count(title) == 1, title

    def test_deterministic_across_fresh_sessions(self) -> None:
        # Fresh builders give fresh ids: the text depends on the content only.
        assert summarize(shell_session()) == summarize(shell_session())

    def test_no_mutation(self) -> None:
        msgs = shell_session()
        before = copy.deepcopy(msgs)
        summarize(msgs, max_tokens=300)
        assert msgs == before


def shell_session_text() -> str:
    return summarize(shell_session())


def head_only() -> str:
    """The header, the primary request and the footer: all a summary keeps when nothing else fits."""
    return summarize(shell_session(), max_tokens=1)


class TestShellBudget:
    def test_the_head_alone_when_nothing_else_fits(self) -> None:
        text = head_only()
        assert text.endswith(f"{TASK}\n</primary-request>\n\n*Continue from where we left off.*")
        assert "**" not in text.split("</primary-request>")[1].replace("*Continue", "")

    @pytest.mark.parametrize("max_tokens", [80, 120, 200, 300, 450, 700, 1000])
    def test_within_max_tokens(self, max_tokens: int) -> None:
        assert COUNTER.count_text(head_only()) < 80
        text = summarize(shell_session(), max_tokens=max_tokens)
        assert COUNTER.count_text(text) <= max_tokens
        assert f"<primary-request>\n{TASK}\n</primary-request>" in text
        assert text.rstrip().endswith("*Continue from where we left off.*")

    def test_the_current_step_goes_first(self) -> None:
        for max_tokens in range(80, 700, 20):
            text = summarize(shell_session(), max_tokens=max_tokens)
            if "\n\n**" in text.split("</primary-request>", 1)[1]:
                assert "**Current step:**" in text, max_tokens

    def test_a_tight_budget_drops_the_least_important(self) -> None:
        full = shell_session_text()
        tight = summarize(shell_session(), max_tokens=COUNTER.count_text(full) // 2)
        assert "**Current step:**" in tight and "**Last error (verbatim):**" in tight
        assert "**Topics discussed:**" not in tight

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.integers(min_value=1, max_value=2500))
    def test_any_budget(self, max_tokens: int) -> None:
        text = summarize(shell_session(), max_tokens=max_tokens)
        assert COUNTER.count_text(text) <= max(max_tokens, COUNTER.count_text(head_only()))


class TestShellSummaryOfSummary:
    def again(self, text: str, *tail: Message) -> str:
        summary = Message(role="user", id="sum", content=(TextBlock(text=text),), tag="summary")
        return summarize([summary, *tail])

    def test_carries_every_section_once(self) -> None:
        first = shell_session_text()
        tail = [assistant("Updating the test now.")]
        tail += call_and_result("bash", ok(), command="sed -i 's/inf/friendly/' tests/test_cli.py")
        tail += [user("now add docs")]
        second = self.again(first, *tail)
        assert second.count("<primary-request>") == 1 and f"<primary-request>\n{TASK}\n</primary-request>" in second
        for title in TITLES:
            # The one file read has been changed since: it is listed with its change only.
            assert second.count(title) == (title != "**Files read"), title
        changed = section(second, "**Files changed (most recent first):**")
        assert changed.strip().splitlines()[0] == '- tests/test_cli.py — replaced "inf" with "friendly"'
        assert "- src/calc.py — " in changed
        assert "**Commands run (most recent first, 8 in all):**\n- `sed -i 's/inf/friendly/' tests/test_cli.py` -> ok\n- `cat tests/test_cli.py` -> ok" in second
        assert "**Tools used:** Edit (1), bash (8)" in second
        # Nothing failed since: the earlier last error is still the last one, verbatim.
        assert f"<last-error>\n{FAILURE}\n</last-error>" in second
        assert "- Last assistant message: Updating the test now." in second
        assert "<user-message>\nnow add docs\n</user-message>" in second

    def test_a_fixed_point(self) -> None:
        # Compacting a lone summary again changes nothing but the header: no section grows or repeats.
        second = self.again(shell_session_text())
        third = self.again(second)
        assert second.split("\n", 1)[1] == third.split("\n", 1)[1]
        assert "- Last tool call: `cat tests/test_cli.py` -> ok" in third

    def test_an_older_summary_and_session_memory_are_read_back(self) -> None:
        older = (
            "[Context compacted at 10:00:00 - Full Compact] Original: ~900 tokens, 30 messages\n\n## Conversation Summary\n\n"
            f"**Primary request (verbatim):**\n<primary-request>\n{TASK}\n</primary-request>\n\n"
            "**Tools used:** Bash (4)\n\n**Errors encountered (latest 1 of 5):**\n- KeyError: 'k'\n\n*Continue from where we left off.*"
        )
        memory = f"[Context compacted via Session Memory]\n### User intent\n<primary-request>\n{TASK}\n</primary-request>\n\n### Decisions and conventions\n- We decided to keep div pure."
        msgs = [
            Message(role="user", id="old", content=(TextBlock(text=older),), tag="summary"),
            Message(role="user", id="mem", content=(TextBlock(text=memory),), tag="memory"),
            assistant("go on"),
        ]
        text = summarize(msgs)
        assert "**Tools used:** Bash (4)" in text
        assert "**Errors seen (5 in all, most recent first):**\n- KeyError: 'k'" in text
        assert "- We decided to keep div pure." in section(text, "**Decisions and pending work")
        assert text.count("<primary-request>") == 1


class TestSeedFormat:
    """``summarize_seed``: MiniCode's ``_generate_structured_summary`` rules, applied to the removed messages only."""

    def lines(self, msgs: list[Message]) -> list[str]:
        request = SummaryRequest(messages=msgs, counter=COUNTER, now=NOW, tokens_before=900, messages_before=12)
        result = RuleSummarizer().summarize_seed(request)
        assert result.strategy == "full"
        return result.text.splitlines()

    def test_the_four_lists_by_the_design_rules(self) -> None:
        msgs = [system(), user("short"), user("a" * 150)] + [user(f"topic number {i}") for i in range(9)]
        for i in range(12):
            msgs += call_and_result("Read", "ok", file_path=f"src/z{i:02d}.py")
        msgs += call_and_result("Grep", "hits", path="src/")
        for i in range(4):
            msgs += call_and_result("Bash", f"error {i}: " + "e" * 100, is_error=True, command="make")
        lines = self.lines(msgs)
        assert lines[0] == "[Context compacted at 22:13:20 - Full Compact] Original: ~900 tokens, 12 messages"
        topics = [line[2:] for line in lines[lines.index("**Topics discussed:**") + 2 : lines.index("**Topics discussed:**") + 10]]
        # More than 10 characters, the first 8, cut at 100.
        assert topics == ["a" * 100] + [f"topic number {i}" for i in range(7)]
        assert "**Tools used:** Bash, Grep, Read" in lines
        # Sorted file_path inputs, the first 10 (Grep's path is not a file_path).
        assert "**Files touched:** " + ", ".join(f"src/z{i:02d}.py" for i in range(10)) in lines
        errors = lines[lines.index("**Errors encountered:**") + 2 :]
        assert errors[:3] == [f"- error {i}: " + "e" * 71 for i in range(3)] and errors[3] == ""
        assert lines[-1] == "*Continue from where we left off.*"

    def test_earlier_summaries_do_not_enter_the_lists(self) -> None:
        old = Message(role="user", id="sum1", tag="summary", content=(TextBlock(text="**Tools used:** Edit (3)\n**Files touched:** gone.py"),))
        msgs = [old, *call_and_result("Read", "x", file_path="kept.py")]
        lines = self.lines(msgs)
        assert "**Tools used:** Read" in lines and "**Files touched:** kept.py" in lines
        # Carried whole below the lists, as MiniCode keeps its old summary beside the new one.
        assert lines[lines.index("**Earlier summary:**") + 1 :][:2] == ["**Tools used:** Edit (3)", "**Files touched:** gone.py"]

    def test_placeholders_the_lab_wrote_are_not_topics_but_harness_lines_are(self) -> None:
        from lab.core.tail import repair_roles

        harness = Message(role="user", id="h1", tag="placeholder", content=(TextBlock(text="<local-command-stdout>built</local-command-stdout>"),))
        msgs = repair_roles([assistant("Starting without a task."), harness])
        assert msgs[0].tag == "placeholder"
        lines = self.lines(msgs)
        topics = lines[lines.index("**Topics discussed:**") + 2 : lines.index("**Tools used:** ")]
        assert topics == ["- <local-command-stdout>built</local-command-stdout>"]

    def test_an_earlier_summary_over_budget_is_cut(self) -> None:
        old = Message(role="user", id="sum1", tag="summary", content=(TextBlock(text="old fact\n" * 5000),))
        request = SummaryRequest(messages=[old, user("carry on with the work")], counter=COUNTER, now=NOW, max_tokens=600)
        text = RuleSummarizer().summarize_seed(request).text
        assert COUNTER.count_text(text) <= 600 and "more characters not kept]" in text
