"""The price table: published per-token prices of named models, with where and when they were taken.

A replay is billed with ``settings.pricing`` (``ReplaySettings``), four numbers per million
tokens plus ``model``, the name of the row they came from. This table is the
one place those numbers are written down; ``PricingConfig``'s defaults are its
Claude Sonnet 4.6 row (a test checks they agree). Prices change: every row
carries the date it was read and the page it was read from, and the app shows
both beside the cost.

Cache writes: Anthropic bills a write to the prompt cache above the input
price (1.25x for the 5-minute TTL, 2x for 1 hour), so a row has one price per
TTL and ``PriceRow.pricing`` picks the one the replay's cache model uses.
OpenAI caches automatically and bills a write as plain input, so its write
prices equal its input price.

Which row a replay is billed at (``session_pricing``), one rule for ``lab.replay``, ``lab replay`` and
the app: while ``pricing.follow_session`` is on (the default), the row of the session's own model when the
transcript names one the table knows, else the default row (Claude Sonnet 4.6); prices somebody chose
(a settings file or mapping naming any price, a row picked in the app) turn it off and are billed as
given. The report records which (``Report.pricing_source``), and every cost the lab prints names the
row and its prices beside it (``cost_text``), so two costs of the same replay can be told apart.

Matching a transcript's model name (``match_model``): the name is lowercased
and stripped of what deployments add around a model id (a ``provider/``
path, Bedrock's ``us.anthropic.`` prefix and ``-v1:0`` suffix, Vertex's
``@20250929``, a dated snapshot ``-20250929`` or ``-2025-04-14``,
``-latest``, ``[1m]``); then the row whose id is the longest prefix of it at
a ``-`` boundary wins, so ``gpt-5-mini-2025-08-07`` is GPT-5 mini, not GPT-5,
and ``gpt-5.2`` matches nothing rather than GPT-5's older price.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from collections.abc import Mapping

from ..core.messages import Usage
from .settings import DEFAULT_PRICE_ROW, PricingConfig, ReplaySettings

__all__ = ["PriceRow", "PRICE_ROWS", "PRICES_TAKEN", "SOURCES", "price_row", "row_names", "normalize_model", "match_model",
           "pricing_row_matches", "describe_pricing", "describe_settings", "explain_pricing", "with_row", "usage_cost",
           "PricingSource", "session_pricing", "price_tag", "cost_text", "pricing_rule"]

# The day the numbers below were read from the two providers' pricing pages.
PRICES_TAKEN = "2026-12-01"
SOURCES = {
    "anthropic": "https://platform.claude.com/docs/en/docs/about-claude/pricing",
    "openai": "https://developers.openai.com/api/docs/pricing",
}


@dataclass(frozen=True)
class PriceRow:
    """One model's prices in dollars per million tokens."""

    name: str
    provider: str
    ids: tuple[str, ...]
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    taken: str = PRICES_TAKEN

    @property
    def source(self) -> str:
        return SOURCES[self.provider]

    def pricing(self, ttl_seconds: int = 300) -> PricingConfig:
        write = self.cache_write_1h if ttl_seconds >= 3600 else self.cache_write_5m
        return PricingConfig(model=self.name, input_per_mtok=self.input, output_per_mtok=self.output,
                             cache_write_per_mtok=write, cache_read_per_mtok=self.cache_read)


def _claude(name: str, ids: tuple[str, ...], inp: float, out: float, w5: float, w1h: float, read: float) -> PriceRow:
    return PriceRow(name, "anthropic", ids, inp, out, read, w5, w1h)


def _gpt(name: str, ids: tuple[str, ...], inp: float, cached: float, out: float) -> PriceRow:
    return PriceRow(name, "openai", ids, inp, out, cached, inp, inp)


# Columns as the pages print them. Anthropic: input, output, 5m write, 1h write, cache hit. OpenAI: input, cached input, output.
PRICE_ROWS: tuple[PriceRow, ...] = (
    _claude("Claude Opus 4.6", ("claude-opus-4-6",), 5, 25, 6.25, 10, 0.50),
    _claude("Claude Opus 4.5", ("claude-opus-4-5",), 5, 25, 6.25, 10, 0.50),
    _claude("Claude Opus 4.1", ("claude-opus-4-1",), 15, 75, 18.75, 30, 1.50),
    _claude("Claude Opus 4", ("claude-opus-4", "claude-4-opus"), 15, 75, 18.75, 30, 1.50),
    _claude("Claude Sonnet 4.6", ("claude-sonnet-4-6",), 3, 15, 3.75, 6, 0.30),
    _claude("Claude Sonnet 4.5", ("claude-sonnet-4-5",), 3, 15, 3.75, 6, 0.30),
    _claude("Claude Sonnet 4", ("claude-sonnet-4", "claude-4-sonnet"), 3, 15, 3.75, 6, 0.30),
    _claude("Claude Sonnet 3.7", ("claude-3-7-sonnet",), 3, 15, 3.75, 6, 0.30),
    _claude("Claude Haiku 4.5", ("claude-haiku-4-5",), 1, 5, 1.25, 2, 0.10),
    _claude("Claude Haiku 3.5", ("claude-3-5-haiku",), 0.80, 4, 1, 1.6, 0.08),
    _claude("Claude Haiku 3", ("claude-3-haiku",), 0.25, 1.25, 0.30, 0.50, 0.03),
    _gpt("GPT-5", ("gpt-5", "gpt-5-codex", "gpt-5-chat"), 1.25, 0.125, 10),
    _gpt("GPT-5 mini", ("gpt-5-mini",), 0.25, 0.025, 2),
    _gpt("GPT-5 nano", ("gpt-5-nano",), 0.05, 0.005, 0.40),
    _gpt("GPT-4.1", ("gpt-4.1",), 2, 0.50, 8),
    _gpt("GPT-4.1 mini", ("gpt-4.1-mini",), 0.40, 0.10, 1.60),
    _gpt("GPT-4.1 nano", ("gpt-4.1-nano",), 0.10, 0.025, 0.40),
)
_BY_NAME = {row.name: row for row in PRICE_ROWS}
assert DEFAULT_PRICE_ROW in _BY_NAME, "PricingConfig's default must be a row of the table"


def row_names() -> list[str]:
    return list(_BY_NAME)


def price_row(name: str) -> PriceRow | None:
    return _BY_NAME.get(name)


_WRAPPERS = (
    (re.compile(r"^(?:[a-z0-9_.-]+/)+"), ""),                     # openai/gpt-4.1, models/..., a path
    (re.compile(r"^(?:(?:us|eu|apac|global)\.)?anthropic\."), ""),  # Bedrock
    (re.compile(r"@.*$"), ""),                                      # Vertex snapshot
    (re.compile(r"\[[^\]]*\]$"), ""),                               # claude-sonnet-4-5[1m]
    (re.compile(r"-v\d+(?::\d+)?$"), ""),                           # Bedrock -v1:0
    (re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$"), ""),             # dated snapshot
    (re.compile(r"-latest$"), ""),
)


def normalize_model(name: str) -> str:
    """The bare model id inside a deployment's name for it (see the module docstring)."""
    text = name.strip().lower()
    for pattern, repl in _WRAPPERS:
        text = pattern.sub(repl, text)
    return text


def match_model(name: str | None) -> PriceRow | None:
    """The row for a transcript's model name, or None when no row is that model."""
    if not name:
        return None
    model = normalize_model(name)
    best: tuple[int, PriceRow] | None = None
    for row in PRICE_ROWS:
        for ident in row.ids:
            if (model == ident or model.startswith(ident + "-")) and (best is None or len(ident) > best[0]):
                best = (len(ident), row)
    return best[1] if best else None


def _numbers(pricing: PricingConfig) -> tuple[str, float, float, float, float]:
    return (pricing.model, pricing.input_per_mtok, pricing.output_per_mtok, pricing.cache_write_per_mtok, pricing.cache_read_per_mtok)


def pricing_row_matches(pricing: PricingConfig, ttl_seconds: int = 300) -> bool:
    """True when ``pricing`` holds exactly the numbers of the row it names (nobody edited them)."""
    row = price_row(pricing.model)
    return row is not None and _numbers(row.pricing(ttl_seconds)) == _numbers(pricing)


# Where a replay's prices came from: the session's own model, the default row (the session names no model
# the table knows), or the settings (prices somebody chose). "" in a report written before it was recorded.
PricingSource = Literal["session", "default", "settings"]


def session_pricing(settings: ReplaySettings, model: str | None) -> tuple[ReplaySettings, PricingSource]:
    """The settings a replay of a session naming ``model`` bills with, and where their prices came from.

    The one pricing rule (see the module docstring). Settings that already hold the answer are returned
    as they are, so applying the rule twice (the app settles it on load, the replay again) changes nothing.
    """
    if not settings.pricing.follow_session:
        return settings, "settings"
    row = match_model(model)
    source: PricingSource = "session" if row is not None else "default"
    chosen = row if row is not None else _BY_NAME[DEFAULT_PRICE_ROW]
    pricing = chosen.pricing(settings.cache.ttl_seconds).model_copy(update={"follow_session": True})
    if pricing == settings.pricing:
        return settings, source
    return settings.model_copy(update={"pricing": pricing}), source


def pricing_rule(source: str, model: str | None) -> str:
    """Why a replay was billed at its prices, from its ``pricing_source`` and the transcript's model name."""
    if source == "session":
        return f"the session's own model ({model})"
    if source == "default":
        named = f"the session's model {model!r} has no row in the price table" if model else "the session names no model"
        return f"the default row, as {named}"
    if source == "settings":
        return "the replay settings (chosen prices win over the session's model)"
    return "the replay settings"


def _money(x: float) -> str:
    """A per-MTok price as a bill prints it: $3, $0.30, $18.75, $0.125."""
    return f"${x:g}" if x == int(x) else (f"${x:.2f}" if round(x, 2) == x else f"${x:g}")


def price_tag(pricing: PricingConfig) -> str:
    """The prices in one phrase: "Claude Sonnet 4.6: $3/$15 per MTok in/out, cache write $3.75, cache read $0.30"."""
    row = price_row(pricing.model)
    name = row.name if row is not None and _numbers(pricing) in {_numbers(row.pricing(t)) for t in (300, 3600)} else (
        f"custom prices (edited from {row.name})" if row is not None else "custom prices")
    return (f"{name}: {_money(pricing.input_per_mtok)}/{_money(pricing.output_per_mtok)} per MTok in/out, "
            f"cache write {_money(pricing.cache_write_per_mtok)}, cache read {_money(pricing.cache_read_per_mtok)}")


def cost_text(dollars: float, settings: ReplaySettings | Mapping[str, Any]) -> str:
    """A cost with the prices it was billed at beside it: "$0.2274 (Claude Sonnet 4.6: $3/$15 per MTok ...)".

    ``settings``: the replay's settings, or a report's ``settings`` dump.
    """
    return f"${dollars:,.4f} ({price_tag(_settings(settings).pricing)})"


def _usd(x: float) -> str:
    return f"${x:,.2f}" if round(x, 2) == x else f"${x:g}"


def describe_pricing(pricing: PricingConfig, ttl_seconds: int = 300) -> str:
    """One line saying which prices a replay used and where they come from."""
    numbers = (f"input {_usd(pricing.input_per_mtok)}, output {_usd(pricing.output_per_mtok)}, cache write {_usd(pricing.cache_write_per_mtok)}, "
               f"cache read {_usd(pricing.cache_read_per_mtok)} per million tokens")
    row = price_row(pricing.model)
    if row is None:
        return f"Custom prices: {numbers}."
    if pricing_row_matches(pricing, ttl_seconds):
        return f"{row.name} prices ({row.source}, taken {row.taken}): {numbers}."
    return f"Custom prices, edited from {row.name} (taken {row.taken}): {numbers}."


def _settings(settings: ReplaySettings | Mapping[str, Any]) -> ReplaySettings:
    return settings if isinstance(settings, ReplaySettings) else ReplaySettings.model_validate(settings)


def describe_settings(settings: ReplaySettings | Mapping[str, Any]) -> str:
    """``describe_pricing`` for replay settings, or for a report's ``settings`` dump (what Compare and Export hold)."""
    s = _settings(settings)
    return describe_pricing(s.pricing, s.cache.ttl_seconds)


def explain_pricing(settings: ReplaySettings | Mapping[str, Any], model: str | None) -> str:
    """``describe_settings``, plus how the prices relate to ``model``, the transcript's model (``TranscriptMeta.model``)."""
    s = _settings(settings)
    text = describe_pricing(s.pricing, s.cache.ttl_seconds)
    row = match_model(model)
    if row is None:
        why = f"The session's model {model!r} has no row in the price table." if model else "The session does not name its model."
    elif row.name == s.pricing.model:
        return f"{text} The session's model {model!r} is {row.name}."
    else:
        why = f"The session's model {model!r} is {row.name}, not these prices' row."
    return f"{text} {why}"


def with_row(pricing: PricingConfig, name: str, ttl_seconds: int = 300) -> PricingConfig:
    """The named row's prices; an unknown name (or "") keeps the numbers and marks them custom."""
    row = price_row(name)
    if row is None:
        return pricing.model_copy(update={"model": ""})
    return row.pricing(ttl_seconds)


def usage_cost(usage: Usage, pricing: PricingConfig) -> float:
    """Dollars for a usage the provider reported, at these prices: what the bill should say if the prices are right."""
    return (
        usage.input_tokens * pricing.input_per_mtok
        + usage.cache_write_tokens * pricing.cache_write_per_mtok
        + usage.cache_read_tokens * pricing.cache_read_per_mtok
        + usage.output_tokens * pricing.output_per_mtok
    ) / 1_000_000
