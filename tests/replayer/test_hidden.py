"""Hidden tokens: what every request carries beyond the file (system prompt, tool definitions), which the
provider's window and bill count and the Compactor does not see."""

from __future__ import annotations

from lab.core.messages import Transcript
from lab.replayer import replay
from lab.replayer.settings import ReplaySettings
from tests.replayer.test_overhead import _session, _with_usage


def test_hidden_tokens_make_a_context_that_fits_overflow_and_cost_more() -> None:
    t = Transcript(messages=_session(12))
    plain = replay(t, "minicode", window=200_000)
    assert plain.overflows == 0 and plain.hidden_tokens == 0
    hidden = replay(t, "minicode", window=200_000, settings=ReplaySettings(hidden_tokens=199_000))
    assert hidden.hidden_tokens == 199_000
    # The messages alone never reach the window: only the hidden part makes the provider refuse them.
    assert plain.peak_sent < 200_000 - 1_000 < hidden.peak_sent + 199_000
    assert hidden.overflows > 0
    assert hidden.total_cost_uncompacted > plain.total_cost_uncompacted


def test_hidden_tokens_can_come_from_the_recorded_usage() -> None:
    t = Transcript(messages=_with_usage(_session(12), hidden=30_000, ratio=1.0))
    report = replay(t, "minicode", window=200_000, settings=ReplaySettings(hidden_from_usage=True, hidden_tokens=5))
    assert report.usage_fit is not None and abs(report.hidden_tokens - 30_000) <= 2
    # Without usage to fit, the setting's own number is used.
    assert replay(Transcript(messages=_session(12)), "minicode", settings=ReplaySettings(hidden_from_usage=True, hidden_tokens=5)).hidden_tokens == 5


def _first_compaction(report) -> int | None:  # type: ignore[no-untyped-def]
    return next((r.index for r in report.rows if any(e["stage"] == "summary" for e in r.events)), None)


def test_the_reported_usage_carries_the_hidden_tokens_so_a_usage_anchor_sees_them() -> None:
    t = Transcript(messages=_session(40))
    plain = replay(t, "mewcode", window=64_000)
    hidden = replay(t, "mewcode", window=64_000, settings=ReplaySettings(hidden_tokens=20_000))
    # MewCode anchors its estimate on the provider's usage, which counts the hidden part: it compacts sooner.
    first_plain, first_hidden = _first_compaction(plain), _first_compaction(hidden)
    assert first_hidden is not None and (first_plain is None or first_hidden < first_plain)
    assert not any("counts the messages only" in n for n in hidden.notes)


def test_a_watermark_that_counts_only_the_messages_is_told_it_cannot_see_them() -> None:
    t = Transcript(messages=_session(12))
    report = replay(t, "minicode", window=200_000, settings=ReplaySettings(hidden_tokens=30_000))
    assert any("counts the messages only: the 30,000 tokens" in n for n in report.notes)
    assert not any("counts the messages only" in n for n in replay(t, "minicode", window=200_000).notes)
