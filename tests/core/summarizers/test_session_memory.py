"""Session-memory compaction: supplied or extracted memory, the 6000-token cap, the first request."""

from __future__ import annotations

import copy

import pytest

from lab.core.messages import Message, TextBlock
from lab.core.summarizers.base import Summarizer, SummaryRequest
from lab.core.summarizers.session_memory import SessionMemorySummarizer, extract_memory
from lab.core.tokens.base import MiniCodeCounter
from lab.errors import SummaryError
from tests.builders import assistant, call_and_result, system, user

COUNTER = MiniCodeCounter()
FIRST = "Build a CLI that converts CSV to Parquet.\nIt must stream large files."


def history() -> list[Message]:
    msgs = [system(), user(FIRST)]
    msgs += [assistant("We decided to use pyarrow for the conversion. The weather is nice today.")]
    msgs += call_and_result("Read", "def main(): pass\n# we decided nothing here", file_path="cli.py")
    msgs += [user("Never write to the input directory."), assistant("Understood. 我们决定使用流式读取。")]
    return msgs


def run(msgs: list[Message], **kw: object) -> str:
    max_tokens = kw.pop("cap", 6000)
    request = SummaryRequest(messages=msgs, counter=COUNTER, **kw)  # type: ignore[arg-type]
    return SessionMemorySummarizer(max_tokens=max_tokens).summarize(request).text  # type: ignore[arg-type]


class TestFormat:
    def test_minicode_text(self) -> None:
        msgs = history()
        text = run(msgs, tokens_before=9999)
        assert text.startswith(f"[Context compacted via Session Memory] Messages removed: {len(msgs)}. Tokens before: ~9999\n## Project Memory Context\n")
        assert text.endswith("\n--- Recent conversation continues below ---")

    def test_is_a_summarizer(self) -> None:
        s = SessionMemorySummarizer()
        assert isinstance(s, Summarizer)
        assert s.summarize(SummaryRequest(messages=history(), counter=COUNTER)).strategy == "session_memory"


class TestExtraction:
    def test_decisions_and_conventions_found(self) -> None:
        text = run(history())
        assert "- We decided to use pyarrow for the conversion." in text
        assert "- Never write to the input directory." in text
        assert "我们决定使用流式读取。" in text
        assert "weather" not in text

    def test_tool_results_are_not_memory(self) -> None:
        assert "we decided nothing here" not in run(history())

    def test_first_request_verbatim(self) -> None:
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in run(history())

    def test_code_is_not_a_decision(self) -> None:
        items = extract_memory([assistant("```\nalways_use = True  # must\n```\n    never_call()")])
        assert items == []

    def test_duplicates_collapse(self) -> None:
        items = extract_memory([assistant("Always run black."), assistant("Always  run black.")])
        assert [i.text for i in items] == ["Always run black."]

    def test_carried_from_an_earlier_memory_summary(self) -> None:
        first = run(history())
        summary = Message(role="user", id="sum", content=(TextBlock(text=first),), tag="summary")
        second = run([summary, assistant("ok, continuing"), user("next step")])
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in second
        assert "- We decided to use pyarrow for the conversion." in second
        assert "next step" in second


class TestCap:
    def test_extracted_memory_capped_at_6000_tokens(self) -> None:
        msgs = [system(), user(FIRST)]
        for i in range(400):
            msgs.append(assistant(f"Decision {i}: we decided to always use option {i} " + "q" * 120 + "."))
            msgs.append(user(f"fine {i}"))
        text = run(msgs)
        body = text.split("## Project Memory Context\n", 1)[1]
        assert COUNTER.count_text(body) <= 6000 + COUNTER.count_text("--- Recent conversation continues below ---")
        assert COUNTER.count_text(body) > 5000
        # Newest decisions win the budget; the first request is always there.
        assert "Decision 399:" in body and "Decision 0:" not in body
        assert FIRST in body

    def test_smaller_cap(self) -> None:
        msgs = [user("go")] + [assistant(f"We must keep rule {i} " + "r" * 200 + ".") for i in range(50)]
        body = run(msgs, cap=500).split("## Project Memory Context\n", 1)[1]
        assert COUNTER.count_text(body) <= 520

    def test_supplied_memory_is_capped_and_keeps_the_first_request(self) -> None:
        memory = "\n".join(f"- convention {i}: " + "m" * 100 for i in range(1000))
        text = run(history(), memory=memory, cap=1000)
        assert "- convention 0:" in text and "- convention 999:" not in text
        assert f"<primary-request>\n{FIRST}\n</primary-request>" in text


class TestFailures:
    def test_no_memory(self) -> None:
        with pytest.raises(SummaryError, match="no session memory"):
            run([user("hello there"), assistant("Hi! What can I help with?")])

    def test_nothing_to_summarise(self) -> None:
        with pytest.raises(SummaryError, match="nothing to summarise"):
            run([system()])

    def test_bad_cap(self) -> None:
        with pytest.raises(SummaryError):
            SessionMemorySummarizer(max_tokens=0)


class TestContract:
    def test_deterministic_and_pure(self) -> None:
        msgs = history()
        before = copy.deepcopy(msgs)
        assert run(msgs) == run(msgs)
        assert msgs == before
