"""Stage 7, reactive recovery after the provider answers prompt-too-long."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StageConfig

__all__ = ["RecoveryConfig"]


class RecoveryConfig(StageConfig):
    strategy: Literal["minicode", "mewcode"] = Field("minicode", description="MiniCode's ladder (full compact, then truncation) or MewCode's emergency path (force spill + summary, retry once).")
    max_attempts: int = Field(3, ge=1, le=10, description="Recovery attempts before giving up (MiniCode 3).")
    blocking_ratio: float = Field(0.97, ge=0.5, le=1.0, description="Blocking limit as a share of the window (MiniCode 97%).")
    accept_ratio: float = Field(0.9, ge=0.1, le=1.0, description="A forced compact is accepted under this share of the blocking limit (MiniCode 0.9).")
    truncate_start: float = Field(0.4, ge=0.05, le=1.0, description="Share of non-system messages kept by the first truncation (MiniCode 0.4, then -0.1 per attempt).")
    truncate_step: float = Field(0.1, ge=0.0, le=0.5, description="How much less each further truncation keeps.")
    truncate_floor: float = Field(0.15, ge=0.0, le=1.0, description="Never keep less than this share (MiniCode 0.15)...")
    truncate_min_messages: int = Field(3, ge=1, le=100, description="...or fewer than this many messages (MiniCode 3).")
    giveup_margin: int = Field(3000, ge=0, le=100_000, description="MewCode: give up when still >= window - this after the forced compaction.")
