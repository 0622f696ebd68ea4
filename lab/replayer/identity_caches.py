"""Values computed from one message, kept by the message object's identity, and the running sums a row reads.

Messages are frozen and shared between requests, so anything computed from
one message (its token count, its composition) is computed once and looked
up by object identity afterwards; each entry keeps its message alive, so an
``id()`` can never be reused while the entry lives. Some of these caches are
shared by every replay in the process (``shared_by_identity``,
``shared_counter``): the next replay of the same messages (a slider's move, a
compare's next config) finds them again; ``clear_shared`` forgets them. A
cache keeps two generations of entries (``ByIdentity``), and the compositions'
generations follow the context in use: the values of the messages a replay
still asks about, not of every message the session ever had.

A request's context is mostly the previous one's: ``SentSums`` keeps running
sums over the longest prefix two successive contexts share, so a row costs
time for the messages that changed, not for the whole context.
"""

from __future__ import annotations

from array import array
from typing import Generic, TypeVar
from collections.abc import Sequence

from ..core.compactor import clear_shared_counts
from ..core.lru import SharedLRU
from ..core.messages import Message, is_sent
from ..core.messages import shared_prefix as same_prefix
from ..core.stages.dedup import clear_decoded
from ..core.stats import PARTS, composition
from ..core.tokens.base import TokenCounter, get_counter
from .inputs import first_request_in, message_has_text, sendable

__all__ = [
    "MAX_CACHED",
    "MIN_GENERATION",
    "ByIdentity",
    "InContext",
    "MAX_SHARED_OWNERS",
    "shared_by_identity",
    "shared_counter",
    "clear_shared",
    "MessageCounts",
    "MessageParts",
    "SentSums",
    "same_prefix",
]


# Entries in a generation of an identity cache (a stage that rebuilds messages every request would
# otherwise grow them without bound), and the smallest generation of a cache that follows a context (``fit``).
MAX_CACHED = 200_000
MIN_GENERATION = 1024

V = TypeVar("V")


class InContext(Generic[V]):
    """Values computed from one message, looked up by its identity, kept while the message is in the context.

    Each entry holds its message, so no other object takes its id while the entry lives. The owner drops the
    entries of the messages that left (``forget``): a running count takes a message's value in when it joins
    and out when it leaves, and must take out what it took in, so a value is never recomputed while its
    message stays; and a pipeline's message (a stub, a summary) that left is never asked about again, so
    keeping it would only keep every stub and summary of a session alive to the end.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Message, V]] = {}

    def get(self, message: Message) -> V | None:
        held = self._entries.get(id(message))
        return held[1] if held is not None and held[0] is message else None

    def put(self, message: Message, value: V) -> V:
        self._entries[id(message)] = (message, value)
        return value

    def forget(self, left: Sequence[Message], kept: Sequence[Message]) -> None:
        """Drop the entries of the messages of ``left`` that are not in ``kept`` (they left the context)."""
        entries = self._entries
        if not entries:
            return
        staying = {id(m) for m in kept}
        for m in left:
            key = id(m)
            if key not in staying:
                held = entries.get(key)
                if held is not None and held[0] is m:
                    del entries[key]


class ByIdentity(Generic[V]):
    """Values computed from one message, looked up by the message object's identity.

    Every message with an entry is kept alive (a list of them), so while the
    entry lives no other object can have its ``id()``: the value is looked up
    by the id alone. One dict of values and a list rather than a second dict
    of id -> message: a replay holds an entry for every message it has seen,
    and the second dict (its entries and a second int per key) cost as much as
    the first; rather than one dict of (message, value) pairs, for the pair
    object per entry every garbage collection would traverse.

    Entries live in two generations: when the young one holds ``limit`` entries
    it becomes the old one, and the old one is let go, messages and values
    together; a value found in the old generation moves to the young one. So a
    cache holds at most ``2 * limit`` entries, and one whose ``limit`` follows
    the context in use (``fit``) holds the messages a replay still asks about,
    not every message of the session.
    """

    __slots__ = ("_table", "limit")

    def __init__(self, limit: int = MAX_CACHED) -> None:
        # (young values, young messages, old values, old messages), swapped whole: a thread that reads meanwhile (a
        # shared cache, Streamlit's threads) sees a pair of generations whose values' messages are all held.
        self._table: tuple[dict[int, V], list[Message], dict[int, V], list[Message]] = ({}, [], {}, [])
        self.limit = limit

    def fit(self, messages: int) -> None:
        """Make a generation hold at least twice ``messages`` entries (the length of a context in use)."""
        if 2 * messages > self.limit:
            self.limit = 2 * messages

    def get(self, message: Message) -> V | None:
        young, _, old, _ = self._table
        key = id(message)
        hit = young.get(key)
        if hit is None:
            hit = old.get(key)
            if hit is not None:
                self.put(message, hit)
        return hit

    def put(self, message: Message, value: V) -> V:
        table = self._table
        values, keep = table[0], table[1]
        if len(values) >= self.limit:
            values, keep = {}, []
            self._table = (values, keep, table[0], table[1])
        key = id(message)
        if key not in values:
            # Kept before its value is stored: an id found in another thread meanwhile has its message held.
            keep.append(message)
        values[key] = value
        return value

    def __len__(self) -> int:
        """Entries held, a value moved to the young generation counted in both."""
        return len(self._table[0]) + len(self._table[2])


# Owners (counters) whose identity caches are kept for the next replay; see ``shared_by_identity``.
MAX_SHARED_OWNERS = 4
_SHARED_OWNERS: SharedLRU[dict[str, ByIdentity]] = SharedLRU(MAX_SHARED_OWNERS)
# One counter per name: the registry's names are few, so none is dropped in practice.
_COUNTERS: SharedLRU[TokenCounter] = SharedLRU(64)
_UNSHARED_COUNTERS = frozenset({"anthropic"})


def shared_by_identity(owner: object, kind: str, *, limit: int = MAX_CACHED) -> ByIdentity:
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
    return cache if cache is not None else caches.setdefault(kind, ByIdentity(limit))


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
        # Generations that follow the context (``fit``): a message asked about again is one of a context in use,
        # and one of the session's early messages, long summarized away, is let go with its value.
        self._cache: ByIdentity[tuple[int, ...]] = (shared_by_identity(counter, "parts", limit=MIN_GENERATION) if shared
                                                    else ByIdentity(MIN_GENERATION))
        # Equal compositions are one tuple: a session of many short messages repeats the same few.
        self._same: dict[tuple[int, ...], tuple[int, ...]] = {}

    def one(self, message: Message) -> tuple[int, ...]:
        """The composition of one message, as token counts in ``PARTS`` order."""
        hit = self._cache.get(message)
        if hit is None:
            parts = composition([message], self.counter)
            found = tuple(parts[p] for p in PARTS)
            hit = self._cache.put(message, self._same.setdefault(found, found))
        return hit

    def fit(self, messages: int) -> None:
        """A context of ``messages`` is in use: keep at least twice that many compositions (``ByIdentity.fit``)."""
        self._cache.fit(messages)

    def of(self, messages: Sequence[Message]) -> dict[str, int]:
        total = [0] * len(PARTS)
        for m in messages:
            for j, n in enumerate(self.one(m)):
                total[j] += n
        return dict(zip(PARTS, total, strict=True))


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
        # Per position i of the context, sums over its first i messages: machine ints, not an int object (and a
        # tuple of them for the composition) per position of a context of thousands of tiny messages.
        self._nsent = array("q", [0])
        self._tokens = array("q", [0])
        # The composition's running sums, len(PARTS) per position, one after another.
        self._parts = array("q", (0,) * len(PARTS))
        self._found = bytearray(1)
        # Per consumer of ``kept``: the fewest leading messages any update since its last call kept.
        self._lows: dict[str, int] = {}

    def update(self, messages: Sequence[Message], *, known: int | None = None) -> None:
        """Move to the context ``messages``. ``known``: the caller knows its first ``known`` messages are
        the previous update's (the same objects, or equal ones), so they are not compared again."""
        seq = list(messages)
        self.parts.fit(len(seq))
        if not self.incremental:
            self._messages, self._sent = seq, sendable(seq)
            return
        k = same_prefix(self._messages, seq) if known is None else min(known, len(self._messages), len(seq))
        lows = self._lows
        for name, low in lows.items():
            if k < low:
                lows[name] = k
        self._messages = seq
        width = len(PARTS)
        for sums in (self._nsent, self._tokens, self._found):
            del sums[k + 1 :]
        del self._parts[width * (k + 1) :]
        del self._sent[self._nsent[k] :]
        nsent, tokens, found = self._nsent[k], self._tokens[k], self._found[k]
        parts = tuple(self._parts[width * k :])
        first = self.first
        for m in seq[k:]:
            if is_sent(m):
                self._sent.append(m)
                nsent += 1
                tokens += self.counts(m)
                parts = tuple(a + b for a, b in zip(parts, self.parts.one(m), strict=True))
                found = found or (first is not None and message_has_text(m, first))
            self._nsent.append(nsent)
            self._tokens.append(tokens)
            self._parts.extend(parts)
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
        return dict(zip(PARTS, self._parts[-len(PARTS) :], strict=True)) if self.incremental else self.parts.of(self._sent)

    @property
    def first_kept(self) -> bool | None:
        if not self.incremental:
            return first_request_in(self._sent, self.first)
        return None if self.first is None else bool(self._found[-1])
