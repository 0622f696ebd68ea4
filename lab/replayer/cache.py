"""The replay's model of a provider's prompt cache, and what each request costs.

The model, kept simple and stated so that numbers can be checked by hand:

- A request is the sequence of its blocks in order: every sent message's
  blocks (the leading system messages first, as the exporters put them),
  compared by what goes over the wire (text, tool ids and inputs, result
  content), not by the lab's own metadata.
- Each request writes its whole prompt to the cache (one breakpoint on the
  last block), so the next request can read the longest prefix of blocks it
  shares with this one. Optimistic on purpose: a real provider reads only
  prefixes that end at a breakpoint it saw; with one breakpoint per request
  the two agree whenever history is only appended to, which is the case the
  comparison is about.
- The entry expires when the gap since the previous request exceeds the TTL
  (every hit refreshes it, and every request is a hit or a write).
- Prefixes shorter than ``min_cacheable_tokens`` are neither written nor read.
- Tokens: ``cached`` (read) + ``written`` + ``uncached`` = ``sent``, with
  ``written = sent - cached`` whenever the prompt is cacheable at all.
- Cost: uncached x input price + written x cache-write price + cached x
  cache-read price + output x output price, all per million tokens (Anthropic
  prices a 5-minute write at 1.25x input and a read at 0.1x).

A message's total is the counter's, cached there by object identity (messages
are frozen and shared between requests), and the previous prompt's message totals are
kept as running sums: the messages two requests share as the same (or equal)
objects are summed in one lookup, found by C-speed list comparison, and only
from the first differing message on are blocks compared one by one. So
accounting a request costs time for what changed, not for the whole prompt.
``step_append`` is the fast path for an append-only history (the uncompacted
side): its previous prompt is by construction a prefix of the next one.
``PromptCache(..., incremental=False)`` compares every message each time: the
reference the running sums are tested against.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

from ..core.messages import ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, block_text
from .settings import CacheConfig, PricingConfig
from ..core.tokens.base import IMAGE_TOKENS, TokenCounter
from .identity_caches import same_prefix

__all__ = ["CacheStep", "PromptCache", "request_cost", "wire_key"]

_MTOK = 1_000_000


def wire_key(block: Any) -> tuple:
    """What of a block reaches the provider: equal keys mean byte-identical prompt text."""
    if isinstance(block, TextBlock):
        return ("text", block.text)
    if isinstance(block, ToolResultBlock):
        return ("tool_result", block.tool_use_id, block.content, block.is_error)
    if isinstance(block, ToolUseBlock):
        return ("tool_use", block.id, block_text(block))
    if isinstance(block, ThinkingBlock):
        return ("thinking", block.thinking, block.signature)
    if isinstance(block, ImageBlock):
        return ("image", block.media_type, block.size_bytes, block.url)
    return (getattr(block, "type", "?"), repr(block))


def _text(block: Any, key: tuple) -> str:
    """``block_text(block)``, taken from its wire key where that holds it (a tool call's text is a JSON dump)."""
    if isinstance(block, ToolUseBlock):
        return key[-1]
    return block_text(block)


@dataclass(frozen=True)
class CacheStep:
    """The cache's answer for one request."""

    sent: int
    cached: int
    written: int
    uncached: int
    # The previous entry had outlived its TTL (or there was none).
    expired: bool
    # Tokens of the prefix shared with the previous request, cached or not.
    shared: int


def request_cost(step: CacheStep, output_tokens: int, pricing: PricingConfig) -> float:
    """Dollars for one request: input split three ways by the cache, plus output."""
    return (
        step.uncached * pricing.input_per_mtok
        + step.written * pricing.cache_write_per_mtok
        + step.cached * pricing.cache_read_per_mtok
        + output_tokens * pricing.output_per_mtok
    ) / _MTOK


class _Blocks:
    """Per-message wire keys and token counts.

    A message's total is the counter's (the Compactor's counter keeps one per message object); its keys and
    block counts are computed when asked, never kept: only the first message at which two successive prompts
    part is compared block by block, one or two messages a request, and a cache of them per message held a
    tuple of tuples of its texts for every message of the session (half of the file's size again).
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def of(self, message: Message) -> tuple[tuple[tuple, ...], tuple[int, ...], int]:
        keys = tuple((message.role,) + wire_key(b) if j == 0 else wire_key(b) for j, b in enumerate(message.content))
        counts = [IMAGE_TOKENS if isinstance(b, ImageBlock) else self.counter.count_text(_text(b, k)) for b, k in zip(message.content, keys, strict=True)]
        total = self.counter.count_message(message)
        if counts:
            # Role markers and separators ride on the first block, so the blocks sum to the message.
            counts[0] += total - sum(counts)
        return keys, tuple(counts), total

    def total(self, message: Message) -> int:
        return self.counter.count_message(message)


class PromptCache:
    """One session's prompt cache: call ``step`` (or ``step_append``) once per request, in order."""

    def __init__(self, settings: CacheConfig, counter: TokenCounter, *, incremental: bool = True) -> None:
        self.settings = settings
        self.blocks = _Blocks(counter)
        self.incremental = incremental
        self._prev: list[Message] = []
        # _prev_sums[i]: tokens of _prev[:i]; machine ints, not an int object per message of the context.
        self._prev_sums = array("q", [0])
        self._prev_sent = 0
        self._prev_time: float | None = None
        self._prev_written = False

    def fork(self) -> PromptCache:
        """An independent cache holding what this one holds now (a replay resumed at a checkpoint goes on from it)."""
        copy = PromptCache.__new__(PromptCache)
        copy.__dict__.update(self.__dict__)
        # _prev is replaced on every step, never changed in place; the running sums are changed in place.
        copy._prev_sums = array("q", self._prev_sums)
        return copy

    def _expired(self, now: float) -> bool:
        return self._prev_time is None or not self._prev_written or now - self._prev_time > self.settings.ttl_seconds

    def _same(self, messages: Sequence[Message]) -> int:
        """How many leading messages are the previous request's (the same or equal objects)."""
        return same_prefix(self._prev, messages) if self.incremental else 0

    def shared_prefix(self, messages: Sequence[Message]) -> int:
        """Tokens of the longest block prefix ``messages`` shares with the previous request."""
        return self._shared(messages, self._same(messages))

    def _shared(self, messages: Sequence[Message], same: int) -> int:
        """``shared_prefix``, given that the first ``same`` messages equal the previous request's."""
        prev = self._prev
        shared = self._prev_sums[same]
        # The two requests may differ in length: only the common part can be shared.
        for a, b in zip(prev[same:], messages[same:], strict=False):
            if a is b:
                shared += self.blocks.total(b)
                continue
            keys_a, _, _ = self.blocks.of(a)
            keys_b, counts_b, total_b = self.blocks.of(b)
            if keys_a == keys_b:
                # Only the lab's metadata differs (ids, flags): the wire text is the same.
                shared += total_b
                continue
            # The first message that differs: its blocks still match one by one up to the first change.
            for ka, kb, c in zip(keys_a, keys_b, counts_b, strict=False):
                if ka != kb:
                    break
                shared += c
            break
        return shared

    def step(self, messages: Sequence[Message], now: float, *, sent: int | None = None, same: int | None = None) -> CacheStep:
        """Account one request whose sent messages are ``messages`` (boundary markers already removed).

        ``same``: when the caller knows it, how many leading messages are the previous step's (a lower
        bound is enough: the blocks after it are compared one by one); else they are compared.
        """
        if not self.incremental:
            total = sent if sent is not None else sum(self.blocks.total(m) for m in messages)
            result = self._account(total, self._shared(messages, 0), now)
            self._prev = list(messages)
            return result
        same = self._same(messages) if same is None else min(same, len(self._prev), len(messages))
        shared = self._shared(messages, same)
        # The running sums move to this request: its first ``same`` messages are the previous one's.
        sums = self._prev_sums
        del sums[same + 1 :]
        total_so_far = sums[-1]
        for m in messages[same:]:
            total_so_far += self.blocks.total(m)
            sums.append(total_so_far)
        total = sent if sent is not None else sums[-1]
        result = self._account(total, shared, now)
        self._prev = list(messages)
        return result

    def step_append(self, sent: int, now: float) -> CacheStep:
        """Account one request of an append-only history: the whole previous prompt is its prefix."""
        return self._account(sent, min(self._prev_sent, sent), now)

    def _account(self, sent: int, shared: int, now: float) -> CacheStep:
        cfg = self.settings
        expired = self._expired(now)
        if not cfg.enabled:
            step = CacheStep(sent=sent, cached=0, written=0, uncached=sent, expired=True, shared=shared)
        else:
            cacheable = sent >= cfg.min_cacheable_tokens
            cached = shared if (not expired and shared >= cfg.min_cacheable_tokens) else 0
            written = sent - cached if cacheable else 0
            step = CacheStep(sent=sent, cached=cached, written=written, uncached=sent - cached - written, expired=expired, shared=shared)
            self._prev_written = cacheable
        self._prev_sent = sent
        self._prev_time = now
        return step
