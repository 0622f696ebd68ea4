"""propose_window: a window, measured by replays with the hidden part counted, at which the config really summarizes."""

from __future__ import annotations

import pytest

from lab.core.messages import Message, Transcript
from lab.core.presets import preset
from lab.core.tokens.base import CharsPerTokenCounter
from lab.errors import ConfigError
from lab.formats import load
from lab.replayer import replay
from lab.replayer.window import MIN_ROOM, SHARES, propose_window, raw_peak, summaries
from tests import builders as b
from tests.conftest import SAMPLES, corpus_path

# One token per character (plus the per-message overhead): a session's size is what it is built to be.
EXACT = CharsPerTokenCounter(chars_per_token=1)
ATTIO = "claude-code/attio-mcp-server-session.jsonl"  # 70k hidden tokens (MCP tools) per request
GRPC = "claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl"


def _reads(n_reads: int, size: int) -> list[Message]:
    return b.session(n_reads=n_reads, size=size)


def _at(proposal_window: int, source: object, config: str = "minicode", hidden: int = 0) -> int:
    """Summaries the replay at the proposed window writes, the hidden part counted as the proposal counted it."""
    return summaries(replay(source, config, window=proposal_window, settings={"hidden_tokens": hidden}, recall=False))  # type: ignore[arg-type]


class TestProposal:
    @pytest.mark.parametrize("config", ["minicode", "lab", "mewcode"])
    def test_the_proposed_window_summarizes_and_the_models_does_not(self, config: str) -> None:
        messages = _reads(n_reads=40, size=3_500)
        p = propose_window(messages, config=config, hidden=0)
        assert p.window is not None and p.model_window == preset(config).window
        assert _at(p.window, messages, config) == p.summaries >= 1
        assert _at(p.model_window, messages, config) == 0
        assert p.window < p.model_window and p.window % 1000 == 0

    def test_the_hidden_part_is_counted_the_window_is_larger_than_it(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        bare = propose_window(messages, hidden=0)
        hidden = 30_000
        p = propose_window(messages, hidden=hidden)
        assert p.hidden == hidden and p.window is not None and bare.window is not None
        assert p.window - hidden >= max(MIN_ROOM, preset("minicode").summary.tail_min_tokens)
        assert p.window > bare.window
        assert _at(p.window, messages, hidden=hidden) >= 1
        assert f"+ {hidden:,} hidden" in p.reason

    def test_hidden_comes_from_the_settings_before_the_recorded_usage(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        assert propose_window(messages, settings={"hidden_tokens": 25_000}).hidden == 25_000

    def test_the_largest_share_that_summarizes_is_taken(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        p = propose_window(messages, hidden=0)
        assert p.window is not None
        larger = [int(s * p.peak) // 1000 * 1000 for s in SHARES if int(s * p.peak) // 1000 * 1000 > p.window]
        assert all(_at(w, messages) == 0 for w in larger)

    def test_tiny_session_gets_no_proposal_and_says_why(self) -> None:
        p = propose_window(_reads(n_reads=2, size=500), hidden=0)
        assert p.window is None and 0 < p.peak < MIN_ROOM * 3
        assert p.reason.startswith(f"no window proposed: the session peaks at only {p.peak:,} tokens sent")
        assert "keeps its own window" in p.reason

    def test_session_without_requests(self) -> None:
        p = propose_window([b.system(), b.user("hi")], EXACT)
        assert p.window is None and p.peak == 0
        assert "no model request" in p.reason

    def test_names_the_counter(self) -> None:
        assert propose_window(_reads(n_reads=3, size=500), "chars/3.5").counter == "chars/3.5"

    def test_unknown_counter_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="unknown token counter"):
            propose_window(_reads(n_reads=3, size=500), "no-such-counter")


class TestReason:
    def test_says_window_peak_hidden_and_the_models_window(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        p = propose_window(messages, hidden=5_000)
        assert p.window is not None
        assert p.reason.startswith(f"window {p.window:,} proposed so this session compacts (")
        assert f"its peak is {p.peak:,} tokens sent + 5,000 hidden" in p.reason
        assert "the model's 200,000 never fills" in p.reason


@pytest.mark.corpus(ATTIO)
class TestRealSessions:
    @pytest.mark.parametrize("name", [ATTIO, GRPC])
    @pytest.mark.parametrize("config", ["minicode", "lab"])
    def test_a_claude_code_session_with_mcp_tools_compacts_at_the_proposal(self, name: str, config: str) -> None:
        t = load(corpus_path(name))
        p = propose_window(t, config=config)
        # the hidden part (MCP tool schemas) is counted, and the window leaves room beyond it
        assert p.hidden > 10_000 and p.window is not None and p.window > p.hidden
        report = replay(t, config, window=p.window, settings={"hidden_from_usage": True}, recall=False)
        assert summaries(report) >= 1 and report.failures == 0
        assert report.hidden_tokens == p.hidden
        # a summary that came only after the provider refused a request says so
        assert ("the summary came only after the provider refused" in p.reason) == (report.overflows > 0)


class TestPeakIsTheReplays:
    @pytest.mark.parametrize("counter", ["minicode", "chars/3.5", "calibrated"])
    def test_raw_peak_is_the_raw_history_at_the_last_request(self, counter: str) -> None:
        messages = _reads(n_reads=12, size=20_000)
        report = replay(messages, {"counter": counter})
        assert raw_peak(messages, counter) == report.rows[-1].raw_tokens == max(r.raw_tokens for r in report.rows)

    @pytest.mark.parametrize("mode", ["undo", "keep"])
    def test_raw_peak_follows_the_recorded_compactions_mode(self, mode: str) -> None:
        path = SAMPLES / "claude-code-compacted.jsonl"
        report = replay(path, "minicode", recorded_compactions=mode)  # type: ignore[arg-type]
        assert raw_peak(path, "minicode", recorded_compactions=mode) == report.rows[-1].raw_tokens  # type: ignore[arg-type]

    def test_peak_is_the_sent_peak_at_the_models_window(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        p = propose_window(messages, hidden=0)
        assert p.peak == replay(messages, "minicode", recall=False).peak_sent

    def test_accepts_a_transcript_a_path_and_messages(self) -> None:
        messages = _reads(n_reads=40, size=3_500)
        assert propose_window(Transcript(messages=messages), hidden=0) == propose_window(messages, hidden=0)
        assert propose_window(SAMPLES / "generated-small.lab.json").peak > 0
