"""Propose the context window a session should be replayed at, so the config really summarizes.

At the model's 200k most real sessions never fill the window and no summary
runs. A proposal from the raw history alone was not enough: the config's own
spills and clearing keep what is sent far below the raw peak (a Claude Code
session's raw 59k was sent as 37k), and the provider's window also holds what
the file does not (system prompt, tool definitions: the ``hidden`` tokens the
recorded usage reveals, ``overhead.fit_usage``), which can be larger than a
window proposed from the file. So the proposal is measured, not guessed:

1. replay the session under the config at the model's window, with the hidden
   tokens counted; its peak of sent messages is ``peak``;
2. try windows of ``hidden + share * peak`` for each share of ``SHARES``
   (largest first, rounded down to 1,000): each leaves the messages less room
   than they reach, so the config has to act;
3. propose the first whose replay writes at least one summary with no failed
   request: a window a real agent could run at, where compaction is seen.

A window is never proposed with less than ``MIN_ROOM`` tokens of room beside
the hidden part, nor at or above the model's window. When no share works (a
tiny session, or one the config already summarizes at the model's window) the
proposal is ``window is None`` and its reason says why. ``raw_peak`` is kept:
it is the ``raw history`` line's peak, what ``replay`` reports as ``peak_raw``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.config import CompactionConfig, with_value
from ..core.messages import Message, Transcript
from ..core.presets import preset
from ..core.tokens.base import TokenCounter, get_counter
from .overhead import fit_usage
from .recorded import RecordedMode, apply_recorded
from .report import Report
from .settings import ReplaySettings, resolve_settings
from .inputs import as_transcript, request_points, sendable
from .engine import replay

__all__ = ["SHARES", "SUMMARY_STRATEGIES", "MIN_ROOM", "WindowProposal", "raw_peak", "summaries", "propose_window", "counts_hidden", "settings_for"]

# Shares of the sent peak the messages are given room for, largest first: the first that summarizes wins.
SHARES = (0.9, 0.8, 0.7, 0.6, 0.5)
# The strategies that write a summary (the rest spill, clear or truncate).
SUMMARY_STRATEGIES = ("full", "session_memory", "llm")
_ROUND = 1000
# The least room a proposed window leaves the messages beside the hidden part, or the config's summary tail
# (summary.tail_min_tokens) when larger: with less, the kept tail alone fills the window and a summary
# replaces next to nothing, so nothing is learnt (and the small samples keep the model's window).
MIN_ROOM = 4000


@dataclass(frozen=True)
class WindowProposal:
    """A proposed window (None: keep the config's own), the replay it rests on, and one line saying why.

    ``peak``: the messages sent at the peak under the config at ``model_window``; ``hidden``: the tokens
    every request carries beyond the file, counted in the proposal's replays; ``summaries``: the summaries
    the replay at ``window`` wrote.
    """

    window: int | None
    peak: int
    reason: str
    counter: str = ""
    hidden: int = 0
    model_window: int = 200_000
    summaries: int = 0


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


def summaries(report: Report) -> int:
    """How many summaries a replay wrote (spills, clearing and truncation are not summaries)."""
    return sum(n for s, n in report.compactions_by_strategy.items() if s in SUMMARY_STRATEGIES)


def _reason(window: int | None, peak: int, hidden: int, model_window: int, done: int, room: int, overflows: int = 0) -> str:
    plus = f" + {hidden:,} hidden (system prompt, tools)" if hidden else ""
    if window is not None:
        # A watermark that counts the file only sees the hidden part when the provider refuses: said, not hidden.
        how = (f"; the summary came only after the provider refused {overflows} request(s), as the config's watermark "
               "counts the file alone and cannot see the hidden part") if overflows else ""
        return (f"window {window:,} proposed so this session compacts ({done} summar{'y' if done == 1 else 'ies'}): its peak is "
                f"{peak:,} tokens sent{plus}, which the model's {model_window:,} never fills{how}")
    if peak == 0:
        return "no window proposed: the session has no model request, so no window makes it compact; the config keeps its own window"
    if done:
        return f"no window proposed: the config already summarizes at the model's {model_window:,} (peak {peak:,} tokens sent{plus})"
    if peak * SHARES[0] < room:
        return (f"no window proposed: the session peaks at only {peak:,} tokens sent{plus}, too few for a window that leaves "
                f"{room:,} tokens of room beside the hidden part (the summary's kept tail) to fill; the config keeps its own window")
    return (f"no window proposed: the session peaks at {peak:,} tokens sent{plus}, and no window up to "
            f"{int(hidden + SHARES[0] * peak):,} that leaves {room:,} tokens of room beside the hidden part makes the config "
            f"summarize without a failed request; the config keeps its own window")


def propose_window(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    counter: TokenCounter | str | None = None,
    *,
    recorded_compactions: RecordedMode | None = None,
    config: CompactionConfig | str | None = None,
    settings: ReplaySettings | Mapping[str, Any] | None = None,
    hidden: int | None = None,
) -> WindowProposal:
    """The largest window that makes ``config`` (default: the minicode preset) summarize this session, hidden part counted.

    ``counter`` overrides the config's counter. ``hidden``: the tokens every request carries beyond the file; None
    takes them from ``settings`` (``hidden_tokens``) or else from the recorded usage (``fit_usage``), 0 without either.
    The config's own window is the model's. See the module docstring for the steps.
    """
    cfg = preset(config) if isinstance(config, str) else (config if config is not None else preset("minicode"))
    count: TokenCounter | None = None
    if isinstance(counter, str):
        cfg = with_value(cfg, "counter", counter)
        count = get_counter(counter)
    elif counter is not None:
        count = counter
    rs = resolve_settings(settings, recorded_compactions)
    t = as_transcript(transcript)
    counter_name = count.name if count is not None else cfg.counter
    if hidden is None:
        fit = fit_usage(t.messages, count if count is not None else get_counter(cfg.counter))
        hidden = rs.hidden_tokens or (max(0, fit.hidden_tokens) if fit is not None else 0)
    rs = with_value(rs, "hidden_tokens", hidden).model_copy(update={"hidden_from_usage": False})
    model_window = cfg.window

    def run(window: int) -> Report:
        return replay(t, cfg, settings=rs, window=window, counter=count, recall=False)

    room = max(MIN_ROOM, cfg.summary.tail_min_tokens)
    base = run(model_window)
    peak = base.peak_sent
    if peak == 0 or summaries(base):
        return WindowProposal(None, peak, _reason(None, peak, hidden, model_window, summaries(base), room), counter_name, hidden, model_window)
    for share in SHARES:
        window = int((hidden + share * peak) // _ROUND * _ROUND)
        if window - hidden < room or window >= model_window:
            continue
        report = run(window)
        done = summaries(report)
        if done and report.failures <= base.failures:
            return WindowProposal(window, peak, _reason(window, peak, hidden, model_window, done, room, report.overflows), counter_name, hidden, model_window, done)
    return WindowProposal(None, peak, _reason(None, peak, hidden, model_window, 0, room), counter_name, hidden, model_window)


def counts_hidden(proposal: WindowProposal, settings: ReplaySettings) -> bool:
    """Whether replays at ``proposal``'s window must count the hidden part from the recorded usage: the app, the
    notebook and ``lab replay --window proposed`` share this rule.

    A window measured with the hidden part counted (larger than one fitted to the file alone) is only filled
    when the replays count it too, unless the settings name their own ``hidden_tokens``; without a proposed
    window nothing is asked.
    """
    return proposal.window is not None and bool(proposal.hidden) and not settings.hidden_tokens


def settings_for(proposal: WindowProposal, settings: ReplaySettings) -> ReplaySettings:
    """The replay settings to replay at ``proposal``'s window (``counts_hidden`` turns ``hidden_from_usage`` on)."""
    if counts_hidden(proposal, settings) and not settings.hidden_from_usage:
        return settings.model_copy(update={"hidden_from_usage": True})
    return settings
