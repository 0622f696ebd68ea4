"""``GET /stats``: what the proxy did, per conversation and in total.

Tokens are the config's counter's: as the agent sent them and as they went
upstream, so ``saved`` is what the compaction took out. The cache-hit ratio
is the upstream's own usage (cache reads over all input tokens), so a lost
prompt-cache prefix shows here first. No key, header or message text is kept.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ConversationStats", "Stats", "usage_tokens"]


def usage_tokens(usage: Any) -> tuple[int, int, int]:
    """(input, cache read, cache write) tokens from an Anthropic or OpenAI usage object; zeros when absent."""
    if not isinstance(usage, dict):
        return 0, 0, 0

    def num(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if "prompt_tokens" in usage or "input_tokens_details" in usage or "prompt_tokens_details" in usage:
        # OpenAI: the prompt count includes the cached part.
        total = num(usage.get("prompt_tokens", usage.get("input_tokens")))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        cached = num(details.get("cached_tokens")) if isinstance(details, dict) else 0
        return max(total - cached, 0), cached, 0
    return num(usage.get("input_tokens")), num(usage.get("cache_read_input_tokens")), num(usage.get("cache_creation_input_tokens"))


@dataclass
class ConversationStats:
    api: str
    requests: int = 0
    tokens_agent: int = 0
    tokens_upstream: int = 0
    compactions: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    failures: int = 0
    fail_open: int = 0
    recoveries: int = 0
    resets: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["saved"] = self.tokens_agent - self.tokens_upstream
        data["savings"] = round(data["saved"] / self.tokens_agent, 4) if self.tokens_agent else 0.0
        seen = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        data["cache_hit_ratio"] = round(self.cache_read_tokens / seen, 4) if seen else None
        return data


class Stats:
    """Thread-safe counters; ``snapshot`` is the JSON ``/stats`` returns."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._lock = threading.Lock()
        self._items: dict[str, ConversationStats] = {}
        self.passthrough = 0

    def _of(self, key: str, api: str) -> ConversationStats:
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = ConversationStats(api)
        return item

    def request(self, key: str, api: str, *, tokens_agent: int, tokens_upstream: int, stages: dict[str, int], reset: bool = False,
                requests: int = 1) -> None:
        with self._lock:
            item = self._of(key, api)
            item.requests += requests
            item.tokens_agent += tokens_agent
            item.tokens_upstream += tokens_upstream
            item.resets += int(reset)
            for stage, n in stages.items():
                item.compactions[stage] = item.compactions.get(stage, 0) + n

    def usage(self, key: str, api: str, usage: Any) -> None:
        fresh, read, write = usage_tokens(usage)
        with self._lock:
            item = self._of(key, api)
            item.input_tokens += fresh
            item.cache_read_tokens += read
            item.cache_write_tokens += write

    def bump(self, key: str, api: str, what: str) -> None:
        """Count one ``failures``, ``fail_open`` or ``recoveries``."""
        with self._lock:
            item = self._of(key, api)
            setattr(item, what, getattr(item, what) + 1)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            conversations = {k: v.as_dict() for k, v in self._items.items()}
        totals: dict[str, Any] = {}
        for name in ("requests", "tokens_agent", "tokens_upstream", "failures", "fail_open", "recoveries", "resets",
                     "input_tokens", "cache_read_tokens", "cache_write_tokens"):
            totals[name] = sum(c[name] for c in conversations.values())
        totals["saved"] = totals["tokens_agent"] - totals["tokens_upstream"]
        seen = totals["input_tokens"] + totals["cache_read_tokens"] + totals["cache_write_tokens"]
        totals["cache_hit_ratio"] = round(totals["cache_read_tokens"] / seen, 4) if seen else None
        return {"mode": self.mode, "conversations": conversations, "totals": totals, "passthrough": self.passthrough}
