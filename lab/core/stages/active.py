"""Stage 1, active context: only what follows the last compaction boundary is processed."""

from __future__ import annotations

from pydantic import Field

from .base import StageConfig

__all__ = ["ActiveContextConfig"]


class ActiveContextConfig(StageConfig):
    enabled: bool = Field(True, description="Process only the messages after the last compaction boundary.")
