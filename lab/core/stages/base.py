"""Shared pieces of stage configs."""

from __future__ import annotations

from pydantic import Field

from ..frozen import FrozenModel

__all__ = ["StageConfig"]


class StageConfig(FrozenModel):
    """Base of every stage's config: a frozen value (change one with ``model_copy`` or ``lab.core.frozen.with_value``)."""

    enabled: bool = Field(True, description="Run this stage.")
