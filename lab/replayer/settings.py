"""Replay settings: how the replay's provider model bills and times requests.

    ReplaySettings    clock, prompt cache, prices, retention weights, recorded compactions
    split_config      an agent config plus the replay settings an old file carried
    load_settings     a ReplaySettings file (JSON, YAML or TOML)

They sit beside the agent config (``lab.core.config.CompactionConfig``), not in
it: the ``Compactor`` never reads them, and the config an agent loads holds
only what it runs. One replay, compare or sweep takes one ``settings`` for
every row, so a comparison bills every config alike.

Configs exported before the split hold these under ``replay``. ``split_config``
is what the lab's own loaders use (CLI ``--config``, the app's upload, sweep
base files): the section becomes the settings, with a note saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from ..core.config import MOVED_SECTION, CompactionConfig, ConfigFormat, describe_error, dump_config, parse_config, read_config_data
from ..core.frozen import FrozenModel, with_value
from ..errors import ConfigError

__all__ = [
    "DEFAULT_PRICE_ROW",
    "MOVED_NOTE",
    "PricingConfig",
    "CacheConfig",
    "RetentionWeights",
    "ReplaySettings",
    "SettingsLike",
    "resolve_settings",
    "parse_settings",
    "load_settings",
    "dump_settings",
    "split_config",
    "load_split",
    "settings_relevance",
]

# The row of lab.replayer.prices the default numbers below are (a test checks they agree).
DEFAULT_PRICE_ROW = "Claude Sonnet 4.6"

MOVED_NOTE = f"replay settings moved out of the agent config: read from the file's '{MOVED_SECTION}' section"


class _Settings(FrozenModel):
    """Frozen values, as the agent config is: one is shared by the app's state, its cache keys and the report."""


# The fields of PricingConfig that are prices: naming any of them is choosing the prices.
_PRICE_FIELDS = ("model", "input_per_mtok", "output_per_mtok", "cache_write_per_mtok", "cache_read_per_mtok")


class PricingConfig(_Settings):
    # One rule for the app, the CLI and the library (lab.replayer.prices.session_pricing): while follow_session
    # is on, a replay bills the session's own model's row when the transcript names a model the table knows,
    # else the default row; prices somebody chose (a file or mapping naming any price, a row picked in the app)
    # turn it off, so an explicit setting always wins.
    follow_session: bool = Field(
        True,
        description="Bill at the price-table row of the session's own model when the transcript names one the table knows, else at "
        f"{DEFAULT_PRICE_ROW}'s; the numbers below are then that row's. Off: always bill the numbers below. "
        "Settings that name any price turn it off unless they set it.",
    )
    # A name, not a switch: the four numbers are what the replay bills. Settings written before it load as the default row.
    model: str = Field(
        DEFAULT_PRICE_ROW, max_length=200,
        description="The row of the lab's price table these prices were taken from (lab.replayer.prices); empty for prices typed in. "
        "The numbers below are what the replay bills.",
    )
    input_per_mtok: float = Field(3.0, ge=0, le=1000, description="Price of one million uncached input tokens, in dollars.")
    output_per_mtok: float = Field(15.0, ge=0, le=1000, description="Price of one million output tokens, in dollars.")
    cache_write_per_mtok: float = Field(3.75, ge=0, le=1000, description="Price of one million tokens written to the prompt cache (Anthropic: 1.25x input for the 5-minute TTL, 2x for 1 hour).")
    cache_read_per_mtok: float = Field(0.30, ge=0, le=1000, description="Price of one million tokens read from the prompt cache (Anthropic: 0.1x input).")

    @model_validator(mode="before")
    @classmethod
    def _chosen_prices_win(cls, data: Any) -> Any:
        # Prices given without saying whether to follow the session are prices chosen: they are billed as given.
        if isinstance(data, Mapping) and "follow_session" not in data and any(k in data for k in _PRICE_FIELDS):
            return {**data, "follow_session": False}
        return data


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
    hidden_tokens: int = Field(
        0,
        ge=0,
        le=2_000_000,
        description="Tokens every request carries that the transcript does not hold (system prompt, tool definitions): the provider's "
        "window, bill and reported usage count them; the Compactor sees them only through a usage anchor (watermark.use_usage_anchor), "
        "never in its own counts. 0: the file is the whole prompt.",
    )
    hidden_from_usage: bool = Field(
        False,
        description="Take the hidden tokens from the transcript's recorded usage (report.usage_fit: tokens every request carried beyond "
        "the file) when it records enough requests; hidden_tokens otherwise.",
    )
    seconds_per_request: float = Field(30.0, ge=0, le=86_400, description="Simulated time between requests when the transcript has no timestamps.")
    use_timestamps: bool = Field(True, description="Take time from message timestamps when the transcript has them.")
    pricing: PricingConfig = Field(default_factory=PricingConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    retention: RetentionWeights = Field(default_factory=RetentionWeights)


SettingsLike = ReplaySettings | Mapping[str, Any] | None


def parse_settings(data: Any) -> ReplaySettings:
    """Validated settings from a mapping; every failure is a ``ConfigError`` naming the field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"replay settings must be a mapping, got {type(data).__name__}")
    try:
        return ReplaySettings.model_validate(dict(data))
    except ValidationError as e:
        raise ConfigError(describe_error(e, "replay settings field ")) from None


def resolve_settings(settings: SettingsLike = None, recorded_compactions: str | None = None) -> ReplaySettings:
    """``settings`` as a value (None: the defaults), its recorded-compactions mode overridden when given."""
    if settings is None:
        out = ReplaySettings()
    elif isinstance(settings, ReplaySettings):
        out = settings  # frozen: shared, never changed
    elif isinstance(settings, Mapping):
        out = parse_settings(settings)
    else:
        raise ConfigError(f"settings must be ReplaySettings, a mapping or None, got {type(settings).__name__}")
    if recorded_compactions is not None and recorded_compactions != out.recorded_compactions:
        try:
            out = with_value(out, "recorded_compactions", recorded_compactions)
        except ConfigError:
            raise ConfigError(f"recorded_compactions must be 'undo' or 'keep', got {recorded_compactions!r}") from None
    return out


def load_settings(source: str | Path | bytes, fmt: ConfigFormat | None = None) -> ReplaySettings:
    """Read settings from a path, or from bytes/str content when ``fmt`` is given.

    An old config file works too: its ``replay`` section is taken when it is the only thing that looks like settings.
    """
    data = read_config_data(source, fmt, what="replay settings")
    if isinstance(data, dict) and isinstance(data.get(MOVED_SECTION), dict) and not set(data) & set(ReplaySettings.model_fields):
        data = data[MOVED_SECTION]
    return parse_settings(data)


def dump_settings(settings: ReplaySettings, fmt: ConfigFormat = "json") -> str:
    """Settings as JSON, YAML or TOML text; ``load_settings`` reads it back."""
    # Same writer as the config (TOML drops nulls the same way); a ReplaySettings dumps like any model.
    return dump_config(settings, fmt)


def split_config(data: Any) -> tuple[CompactionConfig, ReplaySettings | None, list[str]]:
    """An agent config, the replay settings an old file carried (None when it had none), and notes on what moved."""
    if not isinstance(data, dict):
        raise ConfigError(f"config must be a mapping, got {type(data).__name__}")
    if MOVED_SECTION not in data:
        return parse_config(data), None, []
    section = data[MOVED_SECTION]
    cfg = parse_config({k: v for k, v in data.items() if k != MOVED_SECTION})
    # An error names the field where the file has it, under replay.
    try:
        settings = ReplaySettings.model_validate(section) if isinstance(section, Mapping) else parse_settings(section)
    except ValidationError as e:
        raise ConfigError(describe_error(e, f"config field {MOVED_SECTION}.")) from None
    return cfg, settings, [MOVED_NOTE]


def load_split(source: str | Path | bytes, fmt: ConfigFormat | None = None) -> tuple[CompactionConfig, ReplaySettings | None, list[str]]:
    """``split_config`` of a file (a path, or bytes/str content when ``fmt`` is given)."""
    return split_config(read_config_data(source, fmt))


def settings_relevance(settings: ReplaySettings) -> dict[str, str]:
    """Dotted path (``"cache.ttl_seconds"``) -> why that setting has no effect under the rest of ``settings``.

    The replay-side half of ``lab.core.relevance.inactive_fields``: with the cache model off,
    ``PromptCache`` never writes or reads, so its TTL, its minimum and the two cache prices bill nothing.
    """
    if settings.cache.enabled:
        return {}
    reason = "The prompt cache model is off: every input token is billed as uncached. Switch cache.enabled on to use it."
    return dict.fromkeys(["cache.ttl_seconds", "cache.min_cacheable_tokens", "pricing.cache_write_per_mtok", "pricing.cache_read_per_mtok"], reason)
