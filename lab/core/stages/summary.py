"""Stage 6, summary compaction: session memory first, then the full summary."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StageConfig

__all__ = ["SummaryConfig"]


class SummaryConfig(StageConfig):
    session_memory: bool = Field(True, description="Try session-memory compaction first (MiniCode 6a).")
    memory_text: str | None = Field(None, description="Project memory supplied by the user; when empty it is extracted by rules from the transcript.")
    memory_max_tokens: int = Field(6000, ge=100, le=100_000, description="Cap on the session-memory text (MiniCode 6000 tokens).")
    summarizer: Literal["rules", "anthropic", "openai"] = Field("rules", description="Who writes the full summary: offline rules, or an LLM.")
    tail_policy: Literal["minicode", "mewcode"] = Field("minicode", description="MiniCode: scan back within min..max tokens and at least N messages. MewCode: keep the wider of >= min tokens AND >= N messages.")
    tail_min_tokens: int = Field(10_000, ge=0, le=500_000, description="Minimum tokens in the verbatim tail (both designs 10,000).")
    tail_max_tokens: int = Field(40_000, ge=1000, le=1_000_000, description="Maximum tokens in the verbatim tail (MiniCode 40,000).")
    tail_min_messages: int = Field(5, ge=1, le=200, description="Minimum messages in the verbatim tail (both designs 5).")
    min_saving: float = Field(0.05, ge=0.0, le=0.9, description="Fail the compaction when it saves less than this share (MiniCode 5%).")
    summary_max_tokens: int = Field(20_000, ge=500, le=200_000, description="Budget for the summary text.")
    attachment_files: int = Field(5, ge=0, le=50, description="Recovery attachment: most recently read files (MewCode 5).")
    attachment_file_tokens: int = Field(5000, ge=100, le=100_000, description="Recovery attachment: tokens per file (MewCode 5000).")
