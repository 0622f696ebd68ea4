"""Stage 5, watermark: decide whether auto-compaction runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StageConfig

__all__ = ["WatermarkConfig"]


class WatermarkConfig(StageConfig):
    mode: Literal["ratio", "reserve"] = Field("ratio", description="'ratio': trigger above ratio x window (MiniCode). 'reserve': trigger above window - summary reserve - safety margin (MewCode).")
    ratio: float = Field(0.85, ge=0.1, le=1.0, description="Watermark as a share of the context window (MiniCode 0.85).")
    summary_reserve: int = Field(20_000, ge=0, le=500_000, description="Tokens reserved for the summary output (MewCode 20,000).")
    safety_margin: int = Field(13_000, ge=0, le=500_000, description="Tokens of margin for estimate error (MewCode 13,000).")
    manual_margin: int = Field(3_000, ge=0, le=500_000, description="Margin used by manual compaction (MewCode 3,000).")
    min_window: int = Field(33_000, ge=0, le=1_000_000, description="Skip auto-compaction when the window is at or below this (MewCode 33,000).")
    breaker_failures: int = Field(3, ge=1, le=100, description="Consecutive auto failures before auto-compaction stops (both designs: 3).")
    use_usage_anchor: bool = Field(False, description="Anchor the estimate on the provider's last reported usage plus an estimate of what was added since (MewCode).")
