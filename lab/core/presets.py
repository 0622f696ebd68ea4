"""Named configs: the two reference designs, and configs modelled on other agents.

"minicode" and "mewcode" reproduce every default of the two reference
designs. The others are modelled on other agents'
published defaults; each is a config of this lab's stages that behaves in
the same spirit, not a reimplementation, and its description says so.

``preset(name)`` returns a deep copy, so a caller may change it freely.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .config import CompactionConfig, parse_config

__all__ = ["PRESETS", "PRESET_DESCRIPTIONS", "preset", "preset_description", "preset_names"]


_OFF = {"enabled": False}

_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "minicode": (
        "MiniCode's 7-stage pipeline with its defaults: spill results over 4000 chars behind a head/tail "
        "preview, read dedup, time-based microcompact every 3600 s keeping 5 results, auto-compact above "
        "85% of the window with a 3-failure breaker, session memory then the rule-based full compact "
        "(tail 10k-40k tokens, at least 5 messages), and the reactive recovery ladder.",
        {
            "counter": "minicode",
            "spill": {"unit": "chars", "threshold": 4000, "message_budget_enabled": False, "preview_format": "minicode",
                      "head_lines": 8, "tail_lines": 3, "preview_chars": 500},
            "dedup": {"enabled": True},
            "microcompact": {"enabled": True, "mode": "interval", "interval_seconds": 3600, "keep_recent": 5},
            "watermark": {"mode": "ratio", "ratio": 0.85, "breaker_failures": 3, "use_usage_anchor": False},
            "summary": {"session_memory": True, "summarizer": "rules", "tail_policy": "minicode", "tail_min_tokens": 10_000,
                        "tail_max_tokens": 40_000, "tail_min_messages": 5, "min_saving": 0.05, "memory_max_tokens": 6000},
            "recovery": {"strategy": "minicode", "max_attempts": 3, "blocking_ratio": 0.97, "accept_ratio": 0.9,
                         "truncate_start": 0.4, "truncate_step": 0.1, "truncate_floor": 0.15, "truncate_min_messages": 3},
        },
    ),
    "mewcode": (
        "MewCode's three layers with its defaults: L1 spills results over 50,000 bytes and, largest first, "
        "any message whose results pass 200,000 bytes, with a frozen decision ledger; L2 summarises at "
        "window - 20,000 - 13,000 (167,000 for 200k; skipped at or below 33,000) on a usage-anchored "
        "chars/3.5 estimate, keeping a tail of >= 10,000 tokens and >= 5 messages; L3 forces both and "
        "retries once, giving up within 3,000 tokens of the window. No read dedup, no time-based clearing.",
        {
            "counter": "chars/3.5",
            "spill": {"unit": "bytes", "threshold": 50_000, "message_budget_enabled": True, "message_budget": 200_000,
                      "preview_format": "mewcode", "mewcode_preview_lines": 20, "mewcode_preview_bytes": 2048, "retention_days": 30},
            "dedup": _OFF,
            "microcompact": _OFF,
            "watermark": {"mode": "reserve", "summary_reserve": 20_000, "safety_margin": 13_000, "manual_margin": 3_000,
                          "min_window": 33_000, "breaker_failures": 3, "use_usage_anchor": True},
            "summary": {"session_memory": False, "summarizer": "rules", "tail_policy": "mewcode", "tail_min_tokens": 10_000,
                        "tail_min_messages": 5, "min_saving": 0.0, "attachment_files": 5, "attachment_file_tokens": 5000},
            "recovery": {"strategy": "mewcode", "giveup_margin": 3_000},
        },
    ),
    "codex": (
        "Modelled on the OpenAI Codex CLI's published behaviour, not the real implementation: tool output "
        "over 10 KiB is replaced by a head/tail preview (spilled, so it stays recoverable), history is summarised at 90% of the window, and the "
        "summary keeps the user's own messages verbatim up to 20,000 tokens.",
        {
            "counter": "minicode",
            "spill": {"unit": "bytes", "threshold": 10_240, "preview_format": "minicode", "head_lines": 128, "tail_lines": 128,
                      "preview_chars": 10_000},
            "dedup": _OFF,
            "microcompact": _OFF,
            "watermark": {"mode": "ratio", "ratio": 0.9},
            "summary": {"session_memory": False, "summarizer": "rules", "tail_policy": "mewcode", "keep_user_messages_tokens": 20_000},
        },
    ),
    "openhands-masking": (
        "Modelled on OpenHands' observation-masking condenser, not the real implementation: on every "
        "request, tool results outside the newest 50 (an attention window of about 100 events) are masked; "
        "no summary.",
        {
            "counter": "minicode",
            "spill": _OFF,
            "dedup": _OFF,
            "microcompact": {"enabled": True, "mode": "always", "keep_recent": 50},
            "watermark": _OFF,
            "summary": _OFF,
        },
    ),
    "claude-code": (
        "Modelled on Claude Code's published behaviour, not the real implementation: old tool results are "
        "cleared (keeping the newest 5) after an idle gap of 5 minutes, when the prompt cache has expired "
        "anyway, and history is auto-compacted at window - 13,000 tokens.",
        {
            "counter": "minicode",
            "spill": _OFF,
            "dedup": _OFF,
            "microcompact": {"enabled": True, "mode": "idle", "interval_seconds": 300, "keep_recent": 5,
                             "clear_text": "[Old tool result content cleared]"},
            "watermark": {"mode": "reserve", "summary_reserve": 0, "safety_margin": 13_000, "min_window": 13_000},
            "summary": {"session_memory": False, "summarizer": "rules", "tail_policy": "mewcode"},
        },
    ),
    "anthropic-context-editing": (
        "Modelled on Anthropic's context-editing strategy clear_tool_uses_20250919 with its documented "
        "defaults, not the real implementation: when the context passes 100,000 tokens, the oldest tool "
        "results are cleared, keeping the newest 3 tool uses; no summary.",
        {
            "counter": "minicode",
            "spill": _OFF,
            "dedup": _OFF,
            "microcompact": {"enabled": True, "mode": "token_trigger", "trigger_tokens": 100_000, "keep_recent": 3,
                             "clear_at_least": 0, "clear_tool_inputs": False, "exclude_tools": [],
                             "clear_text": "[Old tool result content cleared]"},
            "watermark": _OFF,
            "summary": _OFF,
        },
    ),
}


def _build(name: str, spec: dict[str, Any]) -> CompactionConfig:
    try:
        return parse_config({"label": name, **spec})
    except ConfigError as e:
        raise ConfigError(f"preset {name!r}: {e}") from None


PRESETS: dict[str, CompactionConfig] = {name: _build(name, spec) for name, (_, spec) in _SPECS.items()}
PRESET_DESCRIPTIONS: dict[str, str] = {name: text for name, (text, _) in _SPECS.items()}


def preset_names() -> list[str]:
    return list(PRESETS)


def _known(name: str) -> str:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return name


def preset(name: str) -> CompactionConfig:
    """A fresh copy of the named preset."""
    return PRESETS[_known(name)].model_copy(deep=True)


def preset_description(name: str) -> str:
    return PRESET_DESCRIPTIONS[_known(name)]
