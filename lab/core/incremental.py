"""Incremental stages: the settled prefix of a history, and caches that can be rolled back.

An agent loop sends the previous request's output plus whatever arrived since.
The ``Compactor`` finds the longest prefix of the new request made of the very
message objects it returned last time, which no stage changed on that request,
and tells the stages its length as ``StageContext.settled``. A stage that keeps
what it learnt from the messages it has seen in a ``StageCache`` then only
examines the messages from there on, so a whole session costs time linear in
its length instead of quadratic.

A cache logs every change it makes to its dicts in a ``Journal``, tagged with
the position of the message that caused it. Rolling back to position p undoes
what the messages at p or later did, so a cache always describes exactly a
prefix of the history, and processing the rest from there gives what a run
from scratch over the whole history would give: decisions are frozen in the
session state, so a message that is processed again is decided the same way.

``settled == 0`` (the default, and any stage called on its own) means "process
everything, keep nothing": that is the reference behaviour the incremental
path is tested against.

``Track`` is the Compactor's side: per trigger path, its last output, running
token totals over it, and the stages' caches.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any, Callable, Hashable, Sequence, TypeVar

from ..errors import TranscriptError
from .messages import Message, is_sent, shared_prefix

if TYPE_CHECKING:  # pragma: no cover
    from .events import StageContext
    from .tokens.base import TokenCounter

__all__ = ["Journal", "StageCache", "Track", "open_cache", "passthrough", "common_prefix", "drop_from", "worth_rolling_back", "is_sent"]

_MISSING = object()
C = TypeVar("C", bound="StageCache")


class Journal:
    """An undo log of dict changes, each tagged with the message position that caused it."""

    def __init__(self) -> None:
        self._log: list[tuple[int, dict, Hashable, Any]] = []

    def set(self, pos: int, target: dict, key: Hashable, value: Any) -> None:
        self._log.append((pos, target, key, target.get(key, _MISSING)))
        target[key] = value

    def delete(self, pos: int, target: dict, key: Hashable) -> None:
        if key in target:
            self._log.append((pos, target, key, target.pop(key)))

    def rollback(self, pos: int) -> None:
        """Undo, newest first, every change made at position ``pos`` or later."""
        log = self._log
        while log and log[-1][0] >= pos:
            _, target, key, old = log.pop()
            if old is _MISSING:
                target.pop(key, None)
            else:
                target[key] = old

    def __len__(self) -> int:
        return len(self._log)


class StageCache:
    """What one stage learnt from ``messages[:upto]`` of the history it was last given."""

    def __init__(self, owner: object) -> None:
        # The stage instance: a cache is only ever reused by the stage (and config) that built it.
        self.owner = owner
        self.upto = 0
        self.journal = Journal()

    def rollback(self, pos: int) -> None:
        """Forget what the messages at ``pos`` and later taught this cache."""
        pos = max(pos, 0)
        self.journal.rollback(pos)
        self._truncate(pos)
        self.upto = min(self.upto, pos)

    def _truncate(self, pos: int) -> None:
        """Drop position-keyed data (other than journalled dicts) at ``pos`` or later."""


def drop_from(items: list, pos: int, key: Callable[[Any], int] | None = None) -> None:
    """Delete the entries of a position-sorted list whose position is ``pos`` or later."""
    if items and (key(items[-1]) if key is not None else items[-1]) >= pos:
        del items[bisect_left(items, pos, key=key) :]


# Undoing a journal costs a dict operation per entry; reading a message again costs several. Past this
# ratio of entries to undo per message to re-read, a cache is dropped and rebuilt from the start instead
# (after a summary, the settled prefix is a message or two and the journal spans the whole old context).
REBUILD_RATIO = 8


def worth_rolling_back(cache: "StageCache", pos: int) -> bool:
    """Whether rolling ``cache`` back to ``pos`` is cheaper than building it again from position 0."""
    return cache.upto - pos <= REBUILD_RATIO * max(pos, 1)


def open_cache(stage: Any, ctx: "StageContext", factory: Callable[[], C]) -> tuple[C, int]:
    """The stage's cache rolled back to the settled prefix, and the first position left to process.

    Without caches in ``ctx`` (a stage called on its own), or with nothing
    settled, a fresh cache is returned and everything is processed.
    """
    caches = ctx.caches
    if caches is None:
        return factory(), 0
    cache = caches.get(stage.name)
    if cache is None or cache.owner is not stage or ctx.settled <= 0 or not worth_rolling_back(cache, min(ctx.settled, cache.upto)):
        cache = factory()
        caches[stage.name] = cache
        return cache, 0
    cache.rollback(min(ctx.settled, cache.upto))
    return cache, cache.upto


def passthrough(messages: Sequence[Message], ctx: "StageContext") -> list[Message]:
    """The input, unchanged, as a stage result.

    In an incremental run the fold owns the list and nobody else holds it, so
    it is handed back as is rather than copied; a stage called on its own
    returns a fresh list, as it always did.
    """
    if ctx.caches is not None and isinstance(messages, list):
        return messages
    return list(messages)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items of ``a`` and ``b`` are the same objects."""
    n = min(len(a), len(b))
    if len(a) == len(b) and isinstance(a, list) and isinstance(b, list) and a == b:
        # C-speed and identity first; a value-equal stand-in behaves the same in every stage.
        return n
    for i in range(n):
        if a[i] is not b[i]:
            return i
    return n


class Track:
    """One trigger path's memory of its last output, for incremental runs.

    Between calls ``out`` is a private copy of the last output (the caller
    gets another; during a call it holds the request); ``out[:valid]`` are
    the messages no stage changed on that call, which the stage caches
    describe. ``totals[i]`` and ``sendable[i]`` are the token counts of
    ``out[:i]`` (all messages, as stages count them; and without boundary
    markers, as the outcome reports them). ``stamps`` holds the positions of
    messages with a timestamp, for the clock.
    """

    def __init__(self, counter: "TokenCounter") -> None:
        self.counter = counter
        self.out: list[Message] = []
        self.valid = 0
        self.totals: list[int] = [0]
        self.sendable: list[int] = [0]
        self.stamps: list[int] = []
        self.caches: dict[str, StageCache] = {}

    def __deepcopy__(self, memo: dict) -> "Track":
        # A copied state (a snapshot, a branch) keeps every decision but starts its speed-up afresh.
        return Track(self.counter)

    def take(self, messages: Sequence[Message]) -> tuple[list[Message], int]:
        """The request as the list the stages will see, and the length of its settled prefix."""
        seq = messages if type(messages) is list else list(messages)
        prev = self.out
        k = min(self.valid, len(prev), len(seq))
        # Turn the private list into the request: keep the settled part, append the rest. Then one
        # comparison of two equal-length lists (in C, identity first, no copy) proves the prefix.
        del prev[k:]
        prev.extend(seq[k:])
        if prev != seq:
            k = shared_prefix(seq, prev, k)
            prev[k:] = seq[k:]
        for i in range(k, len(seq)):
            if not isinstance(seq[i], Message):
                self.__init__(self.counter)  # type: ignore[misc]  # nothing of a rejected request may linger
                raise TranscriptError(f"not a Message: {type(seq[i]).__name__}", where=f"messages[{i}]", expected="lab.core.messages.Message (import the transcript first)")
        for name, cache in list(self.caches.items()):
            if worth_rolling_back(cache, k):
                cache.rollback(k)
            else:
                del self.caches[name]
        self._recount(prev, k)
        return prev, k

    def _recount(self, messages: list[Message], k: int) -> None:
        totals, sendable, count = self.totals, self.sendable, self.counter.count_message
        del totals[k + 1 :], sendable[k + 1 :]
        drop_from(self.stamps, k)
        t, s = totals[-1], sendable[-1]
        for i in range(k, len(messages)):
            m = messages[i]
            n = count(m)
            t += n
            if is_sent(m):
                s += n
            totals.append(t)
            sendable.append(s)
            if m.timestamp is not None:
                self.stamps.append(i)

    def commit(self, messages: list[Message], unchanged: int) -> list[Message]:
        """Record the output (whose first ``unchanged`` messages are the request's); return the caller's copy."""
        if messages is not self.out:
            self.out = messages
        self._recount(messages, unchanged)
        self.valid = unchanged
        return list(messages)

    def tokens(self, messages: Sequence[Message], unchanged: int) -> int:
        """Sendable tokens of ``messages``, whose first ``unchanged`` are the request's."""
        rest = messages[unchanged:]
        return self.sendable[unchanged] + self.counter.count_messages(m for m in rest if is_sent(m))

    def clock(self, messages: Sequence[Message]) -> float | None:
        if self.stamps:
            stamp = messages[self.stamps[-1]].timestamp
            assert stamp is not None
            return stamp.timestamp()
        return None


