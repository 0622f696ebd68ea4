"""Stage 2, tool-result spill (MiniCode's tool budget, MewCode's L1)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StageConfig

__all__ = ["SpillConfig"]


class SpillConfig(StageConfig):
    unit: Literal["chars", "bytes"] = Field("chars", description="Measure result size in characters (MiniCode) or UTF-8 bytes (MewCode).")
    threshold: int = Field(4000, ge=100, le=10_000_000, description="Spill a single tool result larger than this (MiniCode 4000 chars; MewCode 50,000 bytes).")
    message_budget_enabled: bool = Field(False, description="Also spill largest-first when one message's results add up to more than the budget (MewCode).")
    message_budget: int = Field(200_000, ge=1000, le=100_000_000, description="Per-message total of tool results before largest-first spilling (MewCode 200,000 bytes).")
    preview_format: Literal["minicode", "mewcode"] = Field("minicode", description="Stub text: MiniCode's head/tail preview or MewCode's offload notice with its read-the-file instruction.")
    head_lines: int = Field(8, ge=0, le=200, description="MiniCode preview: lines kept from the start.")
    tail_lines: int = Field(3, ge=0, le=200, description="MiniCode preview: lines kept from the end (only when the result has more than head+tail+1 lines).")
    preview_chars: int = Field(500, ge=50, le=20_000, description="MiniCode preview: maximum characters, cut at a line or character boundary.")
    mewcode_preview_lines: int = Field(20, ge=1, le=500, description="MewCode preview: first N lines...")
    mewcode_preview_bytes: int = Field(2048, ge=64, le=100_000, description="...or first N bytes, whichever is shorter.")
    retention_days: float = Field(30, ge=0, le=3650, description="Remove spilled sessions older than this many days (MewCode 30).")
