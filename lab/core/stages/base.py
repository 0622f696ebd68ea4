"""Shared pieces of stage configs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["StageConfig"]


class StageConfig(BaseModel):
    """Base of every stage's config: a person writes these, so typos fail loudly."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    enabled: bool = Field(True, description="Run this stage.")
