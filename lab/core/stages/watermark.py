"""Stage 5, watermark: decide whether auto-compaction runs.

The watermark does not rewrite history; it is a gate. ``decide`` estimates
the size of the next request and compares it with the threshold of the
configured design:

- ``ratio`` (MiniCode): compact when the estimate is above ``ratio x window``.
- ``reserve`` (MewCode): compact when the estimate reaches ``window -
  summary_reserve - safety_margin`` (167,000 for a 200k window); a window at
  or below ``min_window`` skips auto-compaction, because the threshold would
  be negative and every request would compact again.

A circuit breaker turns the auto path off after ``breaker_failures``
consecutive failed auto summaries. Manual, emergency and reactive paths pass
the gate unconditionally and never count as failures. The breaker closes
again (MiniCode's published ``AutoCompactDispatcher``, not MewCode's):

- ``breaker_cooldown_seconds`` after the last failure: its
  ``_maybe_auto_recover`` resets the failure count once
  ``circuit_breaker_recovery_seconds`` (300.0) have passed since
  ``_last_failure_time``, so the next request over the watermark tries again;
- after a successful forced compact (``breaker_reset_on_forced``): its
  reactive recovery resets the breaker before its forced full compact, and
  ``_on_success`` keeps it at zero. The Compactor applies this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field

from ..events import Event
from .base import StageConfig
from .contract import Decision, View

__all__ = ["WatermarkConfig", "WatermarkDecision", "BreakerState", "WatermarkStage", "threshold", "estimate", "exceeds"]


class WatermarkConfig(StageConfig):
    mode: Literal["ratio", "reserve"] = Field("ratio", description="'ratio': trigger above ratio x window (MiniCode). 'reserve': trigger above window - summary reserve - safety margin (MewCode).")
    ratio: float = Field(0.85, ge=0.1, le=1.0, description="Watermark as a share of the context window (MiniCode 0.85).")
    summary_reserve: int = Field(20_000, ge=0, le=500_000, description="Tokens reserved for the summary output (MewCode 20,000).")
    safety_margin: int = Field(13_000, ge=0, le=500_000, description="Tokens of margin for estimate error (MewCode 13,000).")
    manual_margin: int = Field(3_000, ge=0, le=500_000, description="Margin used by manual compaction (MewCode 3,000).")
    min_window: int = Field(33_000, ge=0, le=1_000_000, description="Skip auto-compaction when the window is at or below this (MewCode 33,000).")
    breaker_failures: int = Field(3, ge=1, le=100, description="Consecutive auto failures before auto-compaction stops (both designs: 3).")
    breaker_cooldown_seconds: int = Field(300, ge=0, le=86_400 * 7, description="Close the open breaker this long after the last auto failure (MiniCode 300 s; 0 = stays open, as MewCode's).")
    breaker_reset_on_forced: bool = Field(True, description="A successful manual or recovery compact closes the breaker (MiniCode: yes; MewCode's forced path leaves it alone).")
    use_usage_anchor: bool = Field(False, description="Anchor the estimate on the provider's last reported usage plus an estimate of what was added since (MewCode).")

    # The fields whose only effect is the auto threshold (``threshold``): configs that differ in these alone make the
    # same requests while the gate says "below", which lets a replay resume from another (lab.replayer.resume).
    GATE_FIELDS: ClassVar[tuple[str, ...]] = ("ratio", "summary_reserve", "safety_margin", "min_window")


def threshold(config: WatermarkConfig, window: int, path: Literal["auto", "manual"] = "auto") -> int | None:
    """The token count at which compaction triggers, or None when auto-compaction is skipped.

    In reserve mode the manual path only keeps ``manual_margin`` free: the user
    asked for a compaction now, so no look-ahead for the next turn is needed.
    """
    if config.mode == "ratio":
        return int(config.ratio * window)
    if path == "manual":
        return max(window - config.manual_margin, 0)
    if window <= config.min_window:
        return None
    value = window - config.summary_reserve - config.safety_margin
    # A non-positive threshold would compact on every request, forever.
    return value if value > 0 else None


def exceeds(tokens: int, limit: int, mode: str) -> bool:
    # MiniCode triggers strictly above its watermark, MewCode at or above its threshold.
    return tokens > limit if mode == "ratio" else tokens >= limit


def estimate(view: View, config: WatermarkConfig) -> int:
    """Estimated tokens of the view's messages: counted, or the usage anchor plus what was added since.

    The anchor is only trusted while it describes a prefix of the messages
    (``view.anchor_messages`` of them); anything else falls back to counting.
    """
    anchored = config.use_usage_anchor and view.anchor is not None and 0 < view.anchor_messages <= len(view.messages)
    # view.tokens reuses the settled prefix's running total: the same numbers, without recounting.
    if anchored:
        assert view.anchor is not None
        return view.anchor.total + view.tokens(start=view.anchor_messages)
    return view.tokens()


# Slots: a replay keeps one per request for resuming (``Trace.gates``); without a ``__dict__`` each is 40 bytes smaller.
@dataclass(frozen=True, slots=True)
class WatermarkDecision:
    compact: bool
    estimate: int
    threshold: int | None
    # "above", "below", "forced", "disabled", "skipped_small_window", "breaker_open"
    reason: str
    event: Event | None = None


@dataclass
class BreakerState:
    """The circuit breaker: consecutive failed auto summaries, and when the last one failed.

    The watermark reads it (and closes an open breaker once it has cooled
    down); the Compactor counts the summaries' failures and successes into it.
    """

    failures: int = 0
    failed_at: float | None = None


class WatermarkStage:
    """The gate in front of the summary stage."""

    name = "watermark"
    State = BreakerState
    # Consulted even when disabled: a disabled watermark means "no auto-compaction".
    gate = True

    def __init__(self, config: WatermarkConfig) -> None:
        self.config = config
        # The last auto threshold, (config, window, limit): every request's decision holds the same int object
        # instead of a new one (a replay keeps each request's decision).
        self._limit: tuple[WatermarkConfig, int, int | None] | None = None

    def decide(self, view: View, config: WatermarkConfig, state: BreakerState) -> Decision:
        gate, event, after = self._gate(view, config, state)
        return Decision(events=(event,) if event is not None else (), state=after, gate=gate)

    def _gate(self, view: View, cfg: WatermarkConfig, state: BreakerState) -> tuple[WatermarkDecision, Event | None, BreakerState | None]:
        window = view.window
        tokens = estimate(view, cfg)
        if view.trigger != "auto" or view.force:
            limit = threshold(cfg, window, "manual")
            return WatermarkDecision(True, tokens, limit, "forced"), None, None
        if not cfg.enabled:
            return WatermarkDecision(False, tokens, None, "disabled"), None, None
        limit = self._auto_threshold(cfg, window)
        if limit is None:
            ev = self._event(view, tokens, "skipped", False, f"window {window} <= min_window {cfg.min_window}: auto-compaction skipped (threshold would be negative)")
            return WatermarkDecision(False, tokens, None, "skipped_small_window", ev), ev, None
        if not exceeds(tokens, limit, cfg.mode):
            return WatermarkDecision(False, tokens, limit, "below"), None, None
        cooled = self._cooled_down(view, cfg, state)
        after = BreakerState() if cooled is not None else None
        failures = 0 if cooled is not None else state.failures
        if failures >= cfg.breaker_failures:
            ev = self._event(view, tokens, "breaker_open", False, f"circuit breaker open after {failures} consecutive auto failures: auto-compaction off (estimate {tokens} over threshold {limit})")
            return WatermarkDecision(False, tokens, limit, "breaker_open", ev), ev, after
        rel = ">" if cfg.mode == "ratio" else ">="
        reopened = f"; circuit breaker closed {cooled:.0f} s after the last failure" if cooled is not None else ""
        ev = self._event(view, tokens, "threshold", True, f"estimate {tokens} {rel} threshold {limit} ({cfg.mode} mode): auto-compaction triggered{reopened}")
        return WatermarkDecision(True, tokens, limit, "above", ev), ev, after

    def _auto_threshold(self, cfg: WatermarkConfig, window: int) -> int | None:
        last = self._limit
        if last is not None and last[0] is cfg and last[1] == window:
            return last[2]
        limit = threshold(cfg, window, "auto")
        self._limit = (cfg, window, limit)
        return limit

    @staticmethod
    def _cooled_down(view: View, cfg: WatermarkConfig, state: BreakerState) -> float | None:
        """Seconds since the last failure when an open breaker is due to close now, else None."""
        failed_at = state.failed_at
        if not cfg.breaker_cooldown_seconds or state.failures < cfg.breaker_failures or failed_at is None:
            return None
        elapsed = view.now - failed_at
        return elapsed if elapsed >= cfg.breaker_cooldown_seconds else None

    def _event(self, view: View, tokens: int, strategy: str, success: bool, detail: str) -> Event:
        return Event(
            stage=self.name,
            trigger="threshold" if view.trigger == "auto" else view.trigger,
            tokens_before=tokens,
            tokens_after=tokens,
            strategy=strategy,
            success=success,
            detail=detail,
        )
