"""Stage 4, microcompact: clear old tool results on a time interval or after an idle gap."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StageConfig

__all__ = ["MicrocompactConfig"]


class MicrocompactConfig(StageConfig):
    mode: Literal["interval", "idle"] = Field("interval", description="'interval': run when this long has passed since the last run (MiniCode). 'idle': run after a gap between requests longer than the cache TTL.")
    interval_seconds: int = Field(3600, ge=0, le=86_400 * 7, description="Seconds between runs (MiniCode 3600), or the idle gap in 'idle' mode.")
    keep_recent: int = Field(5, ge=0, le=1000, description="Newest tool results kept intact (MiniCode 5).")
    clear_text: str = Field("[Old tool result content cleared by time-based microcompact]", min_length=1, max_length=500, description="Text a cleared result gets.")
    exclude_tools: list[str] = Field(default_factory=list, description="Tool names whose results are never cleared.")
