"""propose_window: the largest standard window under 60% of the raw peak, the peak as the replay counts it, the reason."""

from __future__ import annotations

import pytest

from lab.core.messages import Message, Transcript
from lab.core.tokens.base import MESSAGE_OVERHEAD, CharsPerTokenCounter
from lab.errors import ConfigError
from lab.replayer import replay
from lab.replayer.window import PEAK_SHARE, STANDARD_WINDOWS, propose_window, raw_peak
from tests import builders as b
from tests.conftest import SAMPLES

# One token per character (plus the per-message overhead): a session's peak is exactly what it is built to be.
EXACT = CharsPerTokenCounter(chars_per_token=1)


def _peaking_at(tokens: int) -> list[Message]:
    """A request whose history before the last request point is exactly ``tokens`` under EXACT."""
    first = b.user("Please fix the failing test.")
    call = b.tool_call("Read", "toolu_w1", file_path="app.py")
    head = [first, call]
    used = sum(EXACT.count_message(m) for m in head)
    body = tokens - used - MESSAGE_OVERHEAD
    assert body > 0
    return [*head, b.tool_result("toolu_w1", "x" * body), b.assistant("Done.")]


def _reads(n_reads: int, size: int) -> list[Message]:
    return b.session(n_reads=n_reads, size=size)


class TestProposal:
    @pytest.mark.parametrize(
        ("peak", "window"),
        [(59_000, 32_000), (110_000, 64_000), (250_000, 128_000), (340_000, 200_000), (500_000, 200_000)],
        ids=["59k->32k", "110k->64k", "250k->128k", "340k->200k", "500k->200k"],
    )
    def test_largest_standard_window_under_60_percent(self, peak: int, window: int) -> None:
        p = propose_window(_peaking_at(peak), EXACT)
        assert p.peak == peak
        assert p.window == window

    @pytest.mark.parametrize("window", STANDARD_WINDOWS, ids=lambda w: f"{w // 1000}k")
    def test_at_exactly_60_percent_the_window_fits_one_token_less_it_does_not(self, window: int) -> None:
        peak = -(-window * 10 // 6)  # the smallest peak whose 60% reaches the window
        assert peak * PEAK_SHARE >= window > (peak - 1) * PEAK_SHARE
        assert propose_window(_peaking_at(peak), EXACT).window == window
        below = propose_window(_peaking_at(peak - 1), EXACT).window
        smaller = [w for w in STANDARD_WINDOWS if w < window]
        assert below == (smaller[0] if smaller else None)

    def test_tiny_session_gets_no_proposal_and_says_which_window_would_act(self) -> None:
        p = propose_window(_peaking_at(30_000), EXACT)
        assert p.window is None and p.peak == 30_000
        assert p.reason.startswith("no window proposed: the raw history peaks at only 30,000 tokens")
        assert "32k, the smallest standard window" in p.reason and "keeps its own window" in p.reason
        assert "18,000 tokens or less" in p.reason

    def test_session_without_requests(self) -> None:
        p = propose_window([b.system(), b.user("hi")], EXACT)
        assert p.window is None and p.peak == 0
        assert "no model request" in p.reason


class TestReason:
    def test_names_the_peak_why_200k_never_fills_and_the_rule(self) -> None:
        p = propose_window(_peaking_at(59_000), EXACT)
        assert p.reason == (
            "proposed 32k: the raw history peaks at 59,000 tokens, so a 200k window would never fill; "
            "32k is the largest standard window under 60% of that peak"
        )

    def test_a_peak_over_200k_does_not_claim_200k_never_fills(self) -> None:
        p = propose_window(_peaking_at(250_000), EXACT)
        assert p.reason.startswith("proposed 128k: the raw history peaks at 250,000 tokens;")
        assert "never fill" not in p.reason

    def test_200k_says_the_largest_window_fills(self) -> None:
        p = propose_window(_peaking_at(500_000), EXACT)
        assert p.reason.startswith("proposed 200k: the raw history peaks at 500,000 tokens, so even the largest")

    def test_names_the_counter(self) -> None:
        assert propose_window(_peaking_at(59_000), "chars/3.5").counter == "chars/3.5"


class TestPeakIsTheReplays:
    @pytest.mark.parametrize("counter", ["minicode", "chars/3.5", "calibrated"])
    def test_peak_is_the_raw_history_at_the_last_request(self, counter: str) -> None:
        messages = _reads(n_reads=12, size=20_000)
        report = replay(messages, {"counter": counter})
        assert raw_peak(messages, counter) == report.rows[-1].raw_tokens == max(r.raw_tokens for r in report.rows)

    @pytest.mark.parametrize("mode", ["undo", "keep"])
    def test_peak_follows_the_recorded_compactions_mode(self, mode: str) -> None:
        path = SAMPLES / "claude-code-compacted.jsonl"
        report = replay(path, "minicode", recorded_compactions=mode)  # type: ignore[arg-type]
        assert raw_peak(path, "minicode", recorded_compactions=mode) == report.rows[-1].raw_tokens  # type: ignore[arg-type]

    def test_accepts_a_transcript_a_path_and_messages(self) -> None:
        messages = _peaking_at(40_000)
        t = Transcript(messages=messages)
        assert raw_peak(t, EXACT) == raw_peak(messages, EXACT) == 40_000
        assert raw_peak(SAMPLES / "generated-small.lab.json") > 0

    def test_unknown_counter_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="unknown token counter"):
            propose_window(_peaking_at(40_000), "no-such-counter")
