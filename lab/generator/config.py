"""``GeneratorConfig``: the knobs of the synthetic session generator.

A person sets these (in the app, from widgets built out of the field bounds
and descriptions, or in a file), so unknown keys and out-of-range values fail
loudly. ``parse_generator_config`` turns a validation failure into the lab's
``ConfigError`` naming the field.
"""

from __future__ import annotations

from datetime import datetime, UTC
from typing import Any
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError

__all__ = ["GeneratorConfig", "parse_generator_config", "DEFAULT_START"]

# A fixed start, so two runs with one seed give byte-identical timestamps.
DEFAULT_START = datetime(2025, 3, 3, 9, 0, 0, tzinfo=UTC)


class GeneratorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    seed: int = Field(0, ge=0, le=2**32 - 1, description="Random seed: the same seed and knobs give the same session, byte for byte.")
    requests: int = Field(40, ge=1, le=10_000, description="Model requests, i.e. assistant messages, in the session.")

    read_weight: float = Field(4.0, ge=0, le=100, description="Relative weight of Read calls (file reads with line numbers).")
    grep_weight: float = Field(2.0, ge=0, le=100, description="Relative weight of Grep calls (matches with paths and line numbers).")
    bash_weight: float = Field(3.0, ge=0, le=100, description="Relative weight of Bash calls (pytest, git, logs, installs).")
    edit_weight: float = Field(1.5, ge=0, le=100, description="Relative weight of Edit and Write calls (an Edit changes later reads of that file).")
    list_weight: float = Field(0.8, ge=0, le=100, description="Relative weight of Glob and LS calls (file listings).")

    typical_output_chars: int = Field(2_500, ge=50, le=200_000, description="Median size in characters of a Read/Grep/Bash/Glob output (log-normal around it).")
    max_output_chars: int = Field(60_000, ge=200, le=2_000_000, description="Largest tool output in characters; sizes are capped here.")
    huge_output_rate: float = Field(0.02, ge=0, le=1, description="Share of tool outputs drawn between 30% and 100% of the maximum size.")
    repeat_read_rate: float = Field(0.2, ge=0, le=1, description="Share of reads that re-read an earlier file (identical output unless it was edited since).")
    error_rate: float = Field(0.08, ge=0, le=1, description="Share of tool results that are errors (is_error, a realistic error text).")
    parallel_rate: float = Field(0.1, ge=0, le=1, description="Share of tool turns that make 2-3 tool calls at once.")
    thinking_rate: float = Field(0.3, ge=0, le=1, description="Share of assistant messages that start with a thinking block.")
    cjk_share: float = Field(0.0, ge=0, le=1, description="Share of user/assistant text written in Chinese; half of it again for comments in file content.")

    user_turns: int = Field(3, ge=0, le=5_000, description="Extra user messages along the way (after the task request); at most requests - 1.")
    planted_facts: int = Field(4, ge=0, le=40, description="Facts planted in user messages and tool outputs, listed in meta.planted_facts.")
    content_dependencies: int = Field(0, ge=0, le=5_000, description="Tool turns that plant a content dependency: an edit of lines read "
                                      "earlier, a quote of an earlier output line, an edit of a file the session wrote (listed by "
                                      "lab.generator.generate_planted, for content recall).")

    seconds_between_requests: float = Field(20.0, ge=0.1, le=86_400, description="Mean seconds between model requests (seeded spacing).")
    long_pause_rate: float = Field(0.02, ge=0, le=1, description="Share of requests preceded by a 1-3 hour pause (lets time-based microcompact fire).")
    start: datetime = Field(DEFAULT_START, description="Timestamp of the first message.")
    model: str = Field("claude-sonnet-4-5", min_length=1, max_length=100, description="Model name recorded in the session (usage numbers are simulated).")

    @model_validator(mode="after")
    def _check(self) -> GeneratorConfig:
        weights = (self.read_weight, self.grep_weight, self.bash_weight, self.edit_weight, self.list_weight)
        if sum(weights) <= 0:
            raise ValueError("at least one tool weight must be > 0, got all 0")
        if self.typical_output_chars > self.max_output_chars:
            raise ValueError(
                f"typical_output_chars must be <= max_output_chars, got {self.typical_output_chars} > {self.max_output_chars}"
            )
        return self

    @field_validator("start")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        # A naive start would dump differently from an aware one; pin it to UTC.
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def parse_generator_config(data: GeneratorConfig | Mapping[str, Any] | None = None, **overrides: Any) -> GeneratorConfig:
    """Validate knobs from a mapping (or copy a config with overrides); errors become ``ConfigError``."""
    if data is None:
        base: dict[str, Any] = {}
    elif isinstance(data, GeneratorConfig):
        base = data.model_dump()
    elif isinstance(data, Mapping):
        base = dict(data)
    else:
        raise ConfigError(f"generator config must be a mapping, got {type(data).__name__}")
    base.update(overrides)
    try:
        return GeneratorConfig.model_validate(base)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "<root>"
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise ConfigError(f"generator field {loc}: {first['msg']}{more}") from None
