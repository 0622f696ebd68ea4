"""The token counter interface and the two heuristics of the reference designs.

Counts are cached on the block text itself: CPython caches a string's hash, so
recounting an unchanged block is one dict hit, and the cache needs no ids. A
count that costs no more than that hit (a length divided, for ASCII text under
the two heuristics) is never cached: the cache would only keep alive every
string ever counted, the summarizers' drafts included.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from ...errors import ConfigError
from ..messages import ImageBlock, Message, block_text

__all__ = [
    "TokenCounter",
    "BaseCounter",
    "MiniCodeCounter",
    "CharsPerTokenCounter",
    "MESSAGE_OVERHEAD",
    "register_counter",
    "get_counter",
    "counter_names",
]

# Role markers and separators a provider adds around every message.
MESSAGE_OVERHEAD = 4
# Anthropic bills an image by its pixels; without pixels we charge a typical screenshot.
IMAGE_TOKENS = 1600


@runtime_checkable
class TokenCounter(Protocol):
    name: str

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_messages(self, messages: Iterable[Message]) -> int: ...


class BaseCounter:
    """Counts text with ``_count`` and caches per block text."""

    name = "base"
    max_cache = 200_000

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def _count(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        n = self._count(text)
        if len(self._cache) >= self.max_cache:
            self._cache.clear()
        self._cache[text] = n
        return n

    def count_message(self, message: Message) -> int:
        total = MESSAGE_OVERHEAD
        for b in message.content:
            if isinstance(b, ImageBlock):
                total += IMAGE_TOKENS
            else:
                total += self.count_text(block_text(b))
        return total

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


# CJK Unified Ideographs, the range MiniCode's estimate weighs at 1.5 characters per token.
_CJK = re.compile("[\u4e00-\u9fff]")


class MiniCodeCounter(BaseCounter):
    """MiniCode's estimate: CJK characters / 1.5 + other characters / 4."""

    name = "minicode"

    def count_text(self, text: str) -> int:
        # ASCII text holds no CJK: its count is its length divided (``_count``'s sum, 0.0 + x being x), and
        # cheaper than the cache that would keep the text alive. Only the regex pass is worth remembering.
        if text.isascii():
            return math.ceil(len(text) / 4)
        return super().count_text(text)

    def _count(self, text: str) -> int:
        # subn counts the matches in C; a per-character generator was a sixth of a replay's time.
        cjk = _CJK.subn("", text)[1] if not text.isascii() else 0
        other = len(text) - cjk
        return math.ceil(cjk / 1.5 + other / 4)


class CharsPerTokenCounter(BaseCounter):
    """MewCode's estimate: ceil(characters / 3.5)."""

    name = "chars/3.5"

    def __init__(self, chars_per_token: float = 3.5) -> None:
        super().__init__()
        self.chars_per_token = chars_per_token

    def _count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_text(self, text: str) -> int:
        # A length divided: cheaper than a cache hit, and caching would keep every counted string alive
        # (a 30,000-message replay kept each summary's drafts, about half the file's size).
        return math.ceil(len(text) / self.chars_per_token)


_REGISTRY: dict[str, Callable[..., TokenCounter]] = {
    "minicode": MiniCodeCounter,
    "chars/3.5": CharsPerTokenCounter,
}


def register_counter(name: str, factory: Callable[..., TokenCounter]) -> None:
    _REGISTRY[name] = factory


def counter_names() -> list[str]:
    return list(_REGISTRY)


def get_counter(name: str, **kwargs: object) -> TokenCounter:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown token counter {name!r}; choose one of {', '.join(_REGISTRY)}") from None
    try:
        return factory(**kwargs)
    except TypeError as exc:
        # A wrong keyword from a config or the CLI is a config mistake, not a crash.
        raise ConfigError(f"token counter {name!r}: {exc}") from None
