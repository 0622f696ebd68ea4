"""The replay's plumbing: inputs, the clock, and caches keyed by message identity.

Messages are frozen and shared between requests, so anything computed from
one message (its token count, its composition) is computed once and looked
up by object identity afterwards; each entry keeps its message alive, so an
``id()`` can never be reused while the entry lives.

A request's context is mostly the previous one's: ``SentSums`` keeps running
sums over the longest prefix two successive contexts share, so a row costs
time for the messages that changed, not for the whole context.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast
from collections.abc import Sequence

from pydantic import ValidationError

from ..core.compactor import clear_shared_counts
from ..core.config import CompactionConfig, parse_config
from ..core.lru import SharedLRU
from ..core.messages import Message, Transcript, is_sent
from ..core.messages import shared_prefix as same_prefix
from ..core.presets import preset
from ..core.stages.dedup import clear_decoded
from ..core.stats import PARTS, composition
from ..core.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from ..core.summarizers.rules import message_plain_text
from ..core.tokens.base import TokenCounter, get_counter
from ..errors import ConfigError, PromptTooLongError, TranscriptError
from .settings import ReplaySettings

__all__ = [
    "EPOCH",
    "MAX_CACHED",
    "ByIdentity",
    "MAX_SHARED_OWNERS",
    "shared_by_identity",
    "shared_counter",
    "clear_shared",
    "ConfigLike",
    "request_points",
    "resolve_config",
    "with_session_cwd",
    "as_transcript",
    "prompt_too_long_error",
    "RecordingSummarizer",
    "default_summarizer",
    "sendable",
    "MessageCounts",
    "MessageParts",
    "SentSums",
    "same_prefix",
    "ReplayClock",
    "first_request_in",
    "summary_numbers",
]

# 2025-01-01T00:00:00Z: the simulated clock's start, fixed so replays are reproducible.
EPOCH = 1_735_689_600.0

ConfigLike = CompactionConfig | str | dict | None


def request_points(messages: Sequence[Message]) -> list[int]:
    """Indices of assistant messages that answer a request (an assistant after a non-assistant).

    A recorded compaction's summary written as an assistant message (Continue's cn) answered the
    original agent's compaction call, not one of its requests, so it is no request point.
    """
    return [
        i for i in range(1, len(messages))
        if messages[i].role == "assistant" and messages[i - 1].role != "assistant" and messages[i].tag != "summary"
    ]


def resolve_config(config: ConfigLike, window: int | None = None) -> CompactionConfig:
    """A private copy of ``config`` (a config, a preset name, a mapping, or None for the defaults)."""
    if config is None:
        cfg = CompactionConfig()
    elif isinstance(config, CompactionConfig):
        cfg = config.model_copy(deep=True)
    elif isinstance(config, str):
        cfg = preset(config)
    elif isinstance(config, dict):
        cfg = parse_config(config)
    else:
        raise ConfigError(f"config must be a CompactionConfig, a preset name or a mapping, got {type(config).__name__}")
    if window is not None:
        try:
            cfg.window = window
        except ValidationError as e:
            raise ConfigError(f"window: {e.errors()[0]['msg']}") from None
    return cfg


def as_transcript(source: Transcript | str | os.PathLike[str] | Sequence[Message]) -> Transcript:
    """A transcript from a ``Transcript``, a file path (format detected) or a list of messages."""
    if isinstance(source, Transcript):
        return source
    if isinstance(source, (str, os.PathLike)):
        from ..formats import load

        return load(source)
    if isinstance(source, Sequence) and all(isinstance(m, Message) for m in source):
        # str was returned above; mypy's isinstance(Sequence) narrowing brings it back from the declared type.
        return Transcript(messages=list(cast(Sequence[Message], source)))
    raise TranscriptError(f"cannot replay a {type(source).__name__}", expected="a Transcript, a path, or a list of messages")


def prompt_too_long_error(tokens: int, window: int) -> PromptTooLongError:
    """The error Anthropic answers with when a prompt does not fit, body included."""
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return PromptTooLongError(message, body=body, provider="anthropic")


class RecordingSummarizer:
    """Passes calls through and keeps every result, so rows can show summary calls and their usage."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        # The summary stage names the strategy of a failure after the summarizer.
        self.name = getattr(inner, "name", "rules")
        self.calls = 0
        self.results: list[SummaryResult] = []

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        result = self.inner.summarize(request)
        self.results.append(result)
        return result


def default_summarizer(cfg: CompactionConfig, given: Summarizer | None, notes: list[str]) -> Summarizer:
    if given is not None:
        return given
    from ..core.summarizers.rules import RuleSummarizer

    if cfg.summary.summarizer != "rules":
        # A replay reaches a provider only when the caller hands it an LLM summarizer on purpose.
        notes.append(f"config asks for the {cfg.summary.summarizer} summarizer but none was given: rule-based summaries used")
    return RuleSummarizer()


def with_session_cwd(cfg: CompactionConfig, t: Transcript, notes: list[str]) -> CompactionConfig:
    """``cfg`` with read dedup resolving relative paths against the session's recorded working directory.

    Only when the config names no ``dedup.cwd`` and the transcript recorded an
    absolute POSIX one (Claude Code and Codex do): the agent's own config would
    name it, so a replay of its session should resolve paths as it would.
    """
    cwd = t.meta.cwd
    if cfg.dedup.cwd is not None or cwd is None or not cwd.startswith("/"):
        return cfg
    try:
        dedup = type(cfg.dedup).model_validate({**cfg.dedup.model_dump(), "cwd": cwd})
    except ValidationError:
        return cfg
    notes.append(f"read dedup resolves relative paths against the session's working directory {dedup.cwd} (dedup.cwd was not set)")
    return cfg.model_copy(update={"dedup": dedup})


def sendable(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if is_sent(m)]


# Entries in the identity caches before they start over (a stage that rebuilds messages every request
# would otherwise grow them without bound).
MAX_CACHED = 200_000

V = TypeVar("V")


class ByIdentity(Generic[V]):
    """Values computed from one message, looked up by the message object's identity.

    The message is kept alive beside its value, so its ``id()`` cannot be
    reused while the entry lives. Two flat dicts rather than one of (message,
    value) pairs: a replay holds an entry for every message it has seen, and a
    pair object per entry would be one more object for every garbage
    collection to traverse, a cost that grows with the session.
    """

    __slots__ = ("_keep", "_values", "limit")

    def __init__(self, limit: int = MAX_CACHED) -> None:
        self._keep: dict[int, Message] = {}
        self._values: dict[int, V] = {}
        self.limit = limit

    def get(self, message: Message) -> V | None:
        key = id(message)
        # .get, not [key]: a shared cache may be between a put's two stores, or cleared, in another thread.
        return self._values.get(key) if self._keep.get(key) is message else None

    def put(self, message: Message, value: V) -> V:
        if len(self._keep) >= self.limit:
            self._keep.clear()
            self._values.clear()
        self._keep[id(message)] = message
        self._values[id(message)] = value
        return value

    def __len__(self) -> int:
        return len(self._keep)


# Owners (counters) whose identity caches are kept for the next replay; see ``shared_by_identity``.
MAX_SHARED_OWNERS = 4
_SHARED_OWNERS: SharedLRU[dict[str, ByIdentity]] = SharedLRU(MAX_SHARED_OWNERS)
# One counter per name: the registry's names are few, so none is dropped in practice.
_COUNTERS: SharedLRU[TokenCounter] = SharedLRU(64)
_UNSHARED_COUNTERS = frozenset({"anthropic"})


def shared_by_identity(owner: object, kind: str) -> ByIdentity:
    """The process-wide ``ByIdentity`` of ``kind`` for values that are a pure function of a message and ``owner``.

    A slider move replays the same transcript objects with the same counter: a
    message's count, composition or wire keys are the ones the last replay
    computed, which cost a tenth of a replay to compute again. Keyed by the
    owner object (the entry holds it, so its id is not reused while it lives);
    the last ``MAX_SHARED_OWNERS`` owners are kept.
    """
    caches = _SHARED_OWNERS.get(id(owner), dict, holds=owner)
    cache = caches.get(kind)
    # setdefault: two threads asking for a new kind at once get the same one.
    return cache if cache is not None else caches.setdefault(kind, ByIdentity())


def shared_counter(name: str) -> TokenCounter:
    """``get_counter(name)``, one instance per name for every replay that is given no counter.

    A counter holds only its per-text cache, so replays that share one count each
    text once; and its per-message caches (``shared_by_identity``,
    ``core.compactor.shared_counts``) are found again by identity. A counter that
    asks a provider (``anthropic``) is made afresh each time: its client and key
    come from the environment of that replay, and are never kept beyond it.
    """
    if name in _UNSHARED_COUNTERS:
        return get_counter(name)
    return _COUNTERS.get(name, lambda: get_counter(name))


def clear_shared() -> None:
    """Forget the shared counters and identity caches, the Compactor's shared counts and dedup's decoded calls."""
    _SHARED_OWNERS.clear()
    _COUNTERS.clear()
    clear_shared_counts()
    clear_decoded()


class MessageCounts:
    """Message counts, summed per row, through ``counter``.

    The replay hands it the Compactor's ``counts``, which already keeps each message object's count (shared
    between replays, ``core.compactor.shared_counts``): a second cache here would only hold the same numbers.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def __call__(self, message: Message) -> int:
        return self.counter.count_message(message)

    def sum(self, messages: Sequence[Message]) -> int:
        return sum(map(self.counter.count_message, messages))


class MessageParts:
    """Composition per message object, summed per row: ``composition`` is additive over messages."""

    def __init__(self, counter: TokenCounter, *, shared: bool = False) -> None:
        self.counter = counter
        self._cache: ByIdentity[tuple[int, ...]] = shared_by_identity(counter, "parts") if shared else ByIdentity()

    def one(self, message: Message) -> tuple[int, ...]:
        """The composition of one message, as token counts in ``PARTS`` order."""
        hit = self._cache.get(message)
        if hit is None:
            parts = composition([message], self.counter)
            hit = self._cache.put(message, tuple(parts[p] for p in PARTS))
        return hit

    def of(self, messages: Sequence[Message]) -> dict[str, int]:
        total = [0] * len(PARTS)
        for m in messages:
            for j, n in enumerate(self.one(m)):
                total[j] += n
        return dict(zip(PARTS, total, strict=True))


def _has_text(message: Message, text: str) -> bool:
    # The user's words are the message's text blocks joined (``message_plain_text``): a request sent as
    # several blocks (an IDE's attached file, then the typed words) is only found in that join.
    return text in message_plain_text(message)


class SentSums:
    """A context's sent messages and the sums a row reports over them, kept request by request.

    After ``update(messages)``: ``sent`` (boundary markers removed), ``tokens``
    (``MessageCounts.sum(sent)``), ``composition`` (``MessageParts.of(sent)``)
    and ``first_kept`` (``first_request_in(sent, first)``). Each is a running
    sum by position, so an update recomputes only from the first message that
    differs from the previous context's. ``incremental=False`` computes each
    from scratch with those functions: the reference the running sums match.

    Finding that first difference compares the two contexts, a pass over the
    whole context, and other running state of the replay (its prompt cache,
    its recall, its stored contexts) did the same again: with thousands of
    tiny messages in a context those passes were most of a request's time.
    ``update(..., known=n)`` takes the caller's word that the first ``n``
    messages are the previous update's, and ``kept(name)`` hands what every
    update found on to a consumer that saw the same contexts.
    """

    def __init__(self, counts: MessageCounts, parts: MessageParts, first: str | None, *, incremental: bool = True) -> None:
        self.counts, self.parts, self.first, self.incremental = counts, parts, first, incremental
        self._messages: list[Message] = []
        self._sent: list[Message] = []
        # Per position i of the context, sums over its first i messages.
        self._nsent = [0]
        self._tokens = [0]
        self._parts = [(0,) * len(PARTS)]
        self._found = [False]
        # Per consumer of ``kept``: the fewest leading messages any update since its last call kept.
        self._lows: dict[str, int] = {}

    def update(self, messages: Sequence[Message], *, known: int | None = None) -> None:
        """Move to the context ``messages``. ``known``: the caller knows its first ``known`` messages are
        the previous update's (the same objects, or equal ones), so they are not compared again."""
        seq = list(messages)
        if not self.incremental:
            self._messages, self._sent = seq, sendable(seq)
            return
        k = same_prefix(self._messages, seq) if known is None else min(known, len(self._messages), len(seq))
        lows = self._lows
        for name, low in lows.items():
            if k < low:
                lows[name] = k
        self._messages = seq
        for sums in (self._nsent, self._tokens, self._parts, self._found):
            del sums[k + 1 :]
        del self._sent[self._nsent[k] :]
        nsent, tokens, parts, found = self._nsent[k], self._tokens[k], self._parts[k], self._found[k]
        first = self.first
        for m in seq[k:]:
            if is_sent(m):
                self._sent.append(m)
                nsent += 1
                tokens += self.counts(m)
                parts = tuple(a + b for a, b in zip(parts, self.parts.one(m), strict=True))
                found = found or (first is not None and _has_text(m, first))
            self._nsent.append(nsent)
            self._tokens.append(tokens)
            self._parts.append(parts)
            self._found.append(found)

    def kept(self, name: str) -> int | None:
        """For the consumer ``name``, given the current context after each call: how many of its leading
        messages every update since the last call kept, so the context of that call holds them too (a lower
        bound of the prefix the two share). None on the first call, and when not incremental."""
        if not self.incremental:
            return None
        low = self._lows.get(name)
        self._lows[name] = len(self._messages)
        return low

    def kept_sent(self, name: str) -> int | None:
        """``kept``, counted in sent messages (boundary markers left out): for a consumer given ``sent``."""
        low = self.kept(name)
        return None if low is None else self._nsent[low]

    @property
    def sent(self) -> list[Message]:
        return list(self._sent)

    @property
    def tokens(self) -> int:
        return self._tokens[-1] if self.incremental else self.counts.sum(self._sent)

    @property
    def composition(self) -> dict[str, int]:
        return dict(zip(PARTS, self._parts[-1], strict=True)) if self.incremental else self.parts.of(self._sent)

    @property
    def first_kept(self) -> bool | None:
        if not self.incremental:
            return first_request_in(self._sent, self.first)
        return None if self.first is None else self._found[-1]


@dataclass
class ReplayClock:
    settings_use: bool
    seconds_per_request: float
    mode: str = "simulated"
    last: float | None = None

    @classmethod
    def for_transcript(cls, transcript: Transcript, settings: ReplaySettings) -> ReplayClock:
        clock = cls(settings.use_timestamps, settings.seconds_per_request)
        if clock.settings_use and any(m.timestamp is not None for m in transcript.messages):
            clock.mode = "timestamps"
        return clock

    def at(self, k: int, messages: Sequence[Message], start: int, point: int) -> float:
        """The time of request ``k``, sent after ``messages[start:point]`` arrived."""
        if self.mode == "simulated":
            return EPOCH + k * self.seconds_per_request
        # Only the messages new since the last request are searched, so a replay stays linear.
        stamp = next((messages[i].timestamp for i in range(point - 1, start - 1, -1) if messages[i].timestamp is not None), None)
        if stamp is None and self.last is None:
            stamp = messages[point].timestamp or next((m.timestamp for m in messages if m.timestamp is not None), None)
        now = stamp.timestamp() if stamp is not None else (self.last if self.last is not None else EPOCH)
        # Clocks in logs can step back (merged threads, skew); the replay's time never does.
        if self.last is not None and now < self.last:
            now = self.last
        self.last = now
        return now


def first_request_in(context: Sequence[Message], first: str | None) -> bool | None:
    if first is None:
        return None
    return any(_has_text(m, first) for m in context)


def summary_numbers(results: Sequence[SummaryResult], pricing: Any) -> tuple[int, int, float]:
    inp = out = 0
    cost = 0.0
    for r in results:
        if r.usage is None:
            continue
        u = r.usage
        inp += u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        out += u.output_tokens
        cost += (
            u.input_tokens * pricing.input_per_mtok
            + u.cache_write_tokens * pricing.cache_write_per_mtok
            + u.cache_read_tokens * pricing.cache_read_per_mtok
            + u.output_tokens * pricing.output_per_mtok
        ) / 1_000_000
    return inp, out, cost
