"""Settings of the replay's provider model: clock, prompt cache, prices, retention weights.

They live in ``CompactionConfig`` (as ``replay``) so that one exported file
reproduces a replay exactly; the ``Compactor`` itself ignores them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_PRICE_ROW", "PricingConfig", "CacheConfig", "RetentionWeights", "ReplaySettings"]

# The row of lab.replayer.prices the default numbers below are (a test checks they agree).
DEFAULT_PRICE_ROW = "Claude Sonnet 4.6"


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PricingConfig(_Settings):
    # A name, not a switch: the four numbers are what the replay bills. Configs written before it load as the default row.
    model: str = Field(
        DEFAULT_PRICE_ROW, max_length=200,
        description="The row of the lab's price table these prices were taken from (lab.replayer.prices); empty for prices typed in. "
        "The numbers below are what the replay bills.",
    )
    input_per_mtok: float = Field(3.0, ge=0, le=1000, description="Price of one million uncached input tokens, in dollars.")
    output_per_mtok: float = Field(15.0, ge=0, le=1000, description="Price of one million output tokens, in dollars.")
    cache_write_per_mtok: float = Field(3.75, ge=0, le=1000, description="Price of one million tokens written to the prompt cache (Anthropic: 1.25x input for the 5-minute TTL, 2x for 1 hour).")
    cache_read_per_mtok: float = Field(0.30, ge=0, le=1000, description="Price of one million tokens read from the prompt cache (Anthropic: 0.1x input).")


class CacheConfig(_Settings):
    enabled: bool = Field(True, description="Model the provider's prompt cache.")
    ttl_seconds: Literal[300, 3600] = Field(300, description="How long a cached prefix lives without a hit: 5 minutes or 1 hour.")
    min_cacheable_tokens: int = Field(1024, ge=0, le=100_000, description="Prefixes shorter than this are not cached (Anthropic: 1024 for most models).")


class RetentionWeights(_Settings):
    first_request: float = Field(3.0, ge=0, le=100, description="Weight of keeping the first user request verbatim.")
    user_messages: float = Field(2.0, ge=0, le=100, description="Weight of keeping every user text message (verbatim or in a summary).")
    file_paths: float = Field(1.0, ge=0, le=100, description="Weight of keeping the file paths the agent touched.")
    errors: float = Field(1.0, ge=0, le=100, description="Weight of keeping the first line of each error result.")
    planted_facts: float = Field(2.0, ge=0, le=100, description="Weight of keeping planted facts (generated sessions).")
    recoverable: float = Field(1.0, ge=0, le=100, description="Weight of removed tool output still recoverable from the spill store.")


class ReplaySettings(_Settings):
    recorded_compactions: Literal["undo", "keep"] = Field(
        "undo",
        description="Compactions the original agent recorded in the transcript: 'undo' replays the raw history as if it had never compacted, "
        "so the config alone decides what is sent; 'keep' honours them, dropping what came before each as the agent did.",
    )
    seconds_per_request: float = Field(30.0, ge=0, le=86_400, description="Simulated time between requests when the transcript has no timestamps.")
    use_timestamps: bool = Field(True, description="Take time from message timestamps when the transcript has them.")
    pricing: PricingConfig = Field(default_factory=PricingConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    retention: RetentionWeights = Field(default_factory=RetentionWeights)
