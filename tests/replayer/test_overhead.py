"""The recorded usage against the counted context: what every request carried beyond the file."""

from __future__ import annotations

import pytest

from lab.core.messages import Boundary, Message, TextBlock, Transcript, Usage, is_sent
from lab.core.tokens import get_counter
from lab.replayer import replay
from lab.replayer.overhead import MIN_REQUESTS, describe_fit, fit_usage
from tests.builders import call_and_result, user

COUNTER = get_counter("minicode")


def _with_usage(messages: list[Message], hidden: int, ratio: float, *, compacted_at: int | None = None) -> list[Message]:
    """Each reply records hidden + ratio x (the counted context before it): what a provider would report."""
    out: list[Message] = []
    context = 0
    for i, m in enumerate(messages):
        if i == compacted_at:
            marker = Message(id="b", role="system", tag="boundary", content=[TextBlock(text="[compacted]")],
                             boundary=Boundary(trigger="auto", strategy="claude_code_compact"))
            out.append(marker)
            context = 0
        if m.role == "assistant":
            m = m.model_copy(update={"usage": Usage(input_tokens=round(hidden + ratio * context), output_tokens=10)})
        out.append(m)
        if is_sent(m):
            context += COUNTER.count_message(m)
    return out


def _session(n: int) -> list[Message]:
    msgs = [user("Please fix the failing test in app/models.py")]
    for i in range(n):
        msgs += call_and_result("Read", f"line {i}\n" * (40 + 13 * i), file_path=f"app/f{i}.py")
    return msgs


def test_the_fit_recovers_what_the_file_does_not_hold() -> None:
    fit = fit_usage(_with_usage(_session(12), hidden=18_000, ratio=1.25), COUNTER)
    assert fit is not None
    assert fit.requests == 12 and fit.counter == COUNTER.name
    assert abs(fit.hidden_tokens - 18_000) <= 2 and fit.ratio == pytest.approx(1.25, abs=0.001) and fit.error < 0.001


def test_a_recorded_compaction_starts_the_context_again() -> None:
    # Counted without the reset, the context would keep growing past the marker and the line would not fit.
    messages = _with_usage(_session(12), hidden=5_000, ratio=1.1, compacted_at=13)
    fit = fit_usage(messages, COUNTER)
    assert fit is not None and abs(fit.hidden_tokens - 5_000) <= 2 and fit.error < 0.001


def test_too_few_requests_or_no_usage_give_no_fit() -> None:
    assert fit_usage(_with_usage(_session(MIN_REQUESTS - 1), hidden=1, ratio=1.0), COUNTER) is None
    assert fit_usage(_session(12), COUNTER) is None
    assert describe_fit(None) is None


def test_a_replay_reports_the_fit_and_says_what_it_means_at_its_window() -> None:
    report = replay(Transcript(messages=_with_usage(_session(12), hidden=40_000, ratio=1.2)), "minicode", window=64_000)
    assert report.usage_fit is not None and abs(report.usage_fit["hidden_tokens"] - 40_000) <= 2
    [line] = [n for n in report.notes if n.startswith("the recorded usage of 12 requests")]
    assert "about 40,000 tokens per request" in line and "62% of it" in line
    assert replay(Transcript(messages=_session(12)), "minicode").usage_fit is None
