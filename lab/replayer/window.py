"""Propose the context window a session should be replayed at, so the config has something to do.

At the 200k default most real sessions never fill the window and no
compaction runs. The proposal is the largest standard window
(``STANDARD_WINDOWS``) at or under ``PEAK_SHARE`` (60%) of the session's raw
peak: the window then fills well before the session ends, so the watermark,
the summary and recovery all get a chance to act.

The raw peak is what the replay's ``raw history`` line reaches: the tokens of
every sent message before the last request point, counted with the config's
counter, in the same recorded-compactions mode. Raw history only grows, so the
last request point is the peak and one pass over the messages is enough.

A tiny session (even 32k is more than 60% of its peak) gets no proposal
(``window is None``): a standard window would not make it compact either, and
moving the config away from its own window for nothing only adds warnings
(MiniCode's tail and MewCode's reserve do not work at 32k). The reason says so
and names the window under which the config would act.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Sequence

from ..core.messages import Message, Transcript
from ..core.tokens.base import TokenCounter, get_counter
from .recorded import RecordedMode, apply_recorded
from .support import as_transcript, request_points, sendable

__all__ = ["STANDARD_WINDOWS", "PEAK_SHARE", "WindowProposal", "raw_peak", "propose_window"]

# Largest first: the proposal is the first that fits.
STANDARD_WINDOWS = (200_000, 128_000, 64_000, 32_000)
PEAK_SHARE = 0.6


@dataclass(frozen=True)
class WindowProposal:
    """A proposed window (None: keep the config's own) for a session whose raw history peaks at ``peak`` tokens."""

    window: int | None
    peak: int
    reason: str
    counter: str = ""


def _k(window: int) -> str:
    return f"{window // 1000}k"


def raw_peak(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    counter: TokenCounter | str = "minicode",
    *,
    recorded_compactions: RecordedMode = "undo",
) -> int:
    """The raw-history tokens at the session's last request point (0 when it has none), as ``replay`` counts them."""
    count = get_counter(counter) if isinstance(counter, str) else counter
    t, _, _ = apply_recorded(as_transcript(transcript), recorded_compactions)
    points = request_points(t.messages)
    if not points:
        return 0
    return sum(count.count_message(m) for m in sendable(t.messages[: points[-1]]))


def _reason(window: int | None, peak: int) -> str:
    if window is None:
        if peak == 0:
            return "no window proposed: the session has no model request, so no window makes it compact; the config keeps its own window"
        return (
            f"no window proposed: the raw history peaks at only {peak:,} tokens, and even {_k(STANDARD_WINDOWS[-1])}, the smallest "
            f"standard window, is more than {PEAK_SHARE:.0%} of that peak; the config keeps its own window "
            f"(pick one of about {int(peak * PEAK_SHARE):,} tokens or less to see it act)"
        )
    because = f"proposed {_k(window)}: the raw history peaks at {peak:,} tokens"
    if window == STANDARD_WINDOWS[0]:
        return f"{because}, so even the largest standard window ({_k(window)}) fills well before the end and the config has to act"
    never = f", so a {_k(STANDARD_WINDOWS[0])} window would never fill" if peak <= STANDARD_WINDOWS[0] else ""
    return f"{because}{never}; {_k(window)} is the largest standard window under {PEAK_SHARE:.0%} of that peak"


def propose_window(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    counter: TokenCounter | str = "minicode",
    *,
    recorded_compactions: RecordedMode = "undo",
) -> WindowProposal:
    """The largest standard window at or under 60% of the raw peak, with one line saying why (see the module docstring)."""
    count = get_counter(counter) if isinstance(counter, str) else counter
    peak = raw_peak(transcript, count, recorded_compactions=recorded_compactions)
    window = next((w for w in STANDARD_WINDOWS if w <= peak * PEAK_SHARE), None)
    return WindowProposal(window=window, peak=peak, reason=_reason(window, peak), counter=count.name)
