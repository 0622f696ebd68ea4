"""Incremental stages: the settled prefix of a history, and the memos that let stages skip it.

An agent loop sends the previous request's output plus whatever arrived since.
The ``Compactor`` finds the longest prefix of the new request made of the very
message objects it returned last time, which no stage changed on that request:
the *settled* prefix. Messages are frozen, so a prefix of the same objects is
a prefix of the same decisions.

A stage decides per message (or per tool pair) over its frozen state. What
those decisions leave for later messages (where the boundaries are, which
results may still be cleared, the dedup index) the stage notes with its *note
passes*, through ``View.note`` (``lab.core.stages.contract``). The Compactor
owns the rest: ``remember`` keeps one ``Memo`` per stage and trigger path,
rolls it back to the settled prefix and runs the passes over the messages
after it only, so a whole session costs time linear in its length instead of
quadratic. A stage never sees where its memo lives or which prefix is settled.

A memo logs every change to its tables in a ``Journal``, tagged with the
position of the message being noted. Rolling back to position p undoes what
the messages at p or later did, so a memo always describes exactly a prefix
of the history, and noting the rest from there gives what a run from scratch
over the whole history would give: decisions are frozen in the stages'
states, so a message that is noted again is decided the same way. A pass that
finds its earlier notes may be wrong raises ``Rescan``: everything is noted
again from position 0.

``settled == 0`` (the default, and any stage run on its own) means "note
everything, keep nothing": that is the reference behaviour the incremental
path is tested against.

Every stage keeps its memo here; none measured a reason to keep a cache of its
own. (Dedup also remembers the parse of each tool call by identity, a pure
function of the call that survives rewrites; see ``DedupStage._decode``.)

``Track`` is the Compactor's side: per trigger path, its last output, running
token totals over it, and the stages' memos.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import TranscriptError
from .messages import Message, is_sent, shared_prefix

if TYPE_CHECKING:  # pragma: no cover
    from .tokens.base import TokenCounter

__all__ = ["Journal", "Memo", "Note", "Rescan", "Track", "remember", "run_passes", "common_prefix", "drop_from", "worth_rolling_back", "is_sent"]

_MISSING = object()


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


Note = Callable[["Memo", int, Message], None]


def _position(entry: Any) -> int:
    return entry if isinstance(entry, int) else entry[0]


class Rescan(Exception):
    """Raised by a note pass when what it noted about earlier messages may be wrong: note everything again."""


class Memo:
    """What one stage's decisions about ``messages[:upto]`` leave for the messages after them.

    A stage decides per message (its note passes, run by ``remember``) and
    keeps here only what later decisions need: ``tables`` (dicts whose every
    change is journalled at the position being noted, ``pos``) and ``marks``
    (position-sorted lists of ints or of tuples that start with the position).
    Rolling back to position p undoes the tables' changes made at p or later
    and cuts the marks at p, so the memo always describes exactly a prefix.
    """

    def __init__(self, owner: object) -> None:
        # The stage instance: a memo is only ever reused by the stage (and config) that built it.
        self.owner = owner
        self.upto = 0
        # Where the current run of note passes started (0: everything is noted afresh).
        self.start = 0
        self.pos = 0
        self.journal = Journal()
        self.tables: dict[str, dict] = {}
        self.marks: dict[str, list] = {}

    def table(self, name: str, initial: dict | None = None) -> dict:
        """The journalled dict ``name``, created with ``initial`` on first use."""
        table = self.tables.get(name)
        if table is None:
            table = self.tables[name] = dict(initial or {})
        return table

    def marked(self, name: str) -> list:
        """The position-sorted list ``name``; append in position order, or replace it whole with ``mark_all``."""
        items = self.marks.get(name)
        if items is None:
            items = self.marks[name] = []
        return items

    def mark_all(self, name: str, items: list) -> None:
        self.marks[name] = items

    def set(self, table: dict, key: Hashable, value: Any) -> None:
        self.journal.set(self.pos, table, key, value)

    def delete(self, table: dict, key: Hashable) -> None:
        self.journal.delete(self.pos, table, key)

    def rollback(self, pos: int) -> None:
        """Forget what the messages at ``pos`` and later taught this memo."""
        pos = max(pos, 0)
        self.journal.rollback(pos)
        for items in self.marks.values():
            drop_from(items, pos, _position)
        self.upto = min(self.upto, pos)


def drop_from(items: list, pos: int, key: Callable[[Any], int] | None = None) -> None:
    """Delete the entries of a position-sorted list whose position is ``pos`` or later."""
    if items and (key(items[-1]) if key is not None else items[-1]) >= pos:
        del items[bisect_left(items, pos, key=key) :]


# Undoing a journal costs a dict operation per entry; reading a message again costs several. Past this
# ratio of entries to undo per message to re-read, a memo is dropped and rebuilt from the start instead
# (after a summary, the settled prefix is a message or two and the journal spans the whole old context).
REBUILD_RATIO = 8


def worth_rolling_back(memo: Memo, pos: int) -> bool:
    """Whether rolling ``memo`` back to ``pos`` is cheaper than building it again from position 0."""
    return memo.upto - pos <= REBUILD_RATIO * max(pos, 1)


def run_passes(memo: Memo, messages: Sequence[Message], passes: Sequence[Note]) -> None:
    """Run every pass, in turn, over ``messages[memo.start:]``; the memo then describes all of ``messages``."""
    # Each pass sees every new message before the next pass starts (a stage that needs all calls before any result).
    for note in passes:
        for i in range(memo.start, len(messages)):
            memo.pos = i
            note(memo, i, messages[i])
    memo.upto = len(messages)


def remember(memos: dict[str, Memo] | None, key: str, owner: object, messages: Sequence[Message], settled: int, passes: Sequence[Note]) -> Memo:
    """The incremental driver (the Compactor's side): the memo of ``owner`` under ``key``, brought up to date.

    The memo kept in ``memos`` is rolled back to the settled prefix (or rebuilt
    when that is cheaper, or when another owner built it), then every pass runs,
    in turn, over the messages after it; ``memo.start`` is where they started.
    Without ``memos`` a fresh memo notes everything and nothing is kept. A pass
    that raises ``Rescan`` makes the driver note everything again from
    position 0 in a fresh memo.
    """
    memo = memos.get(key) if memos is not None else None
    if memo is None or memo.owner is not owner or settled <= 0 or not worth_rolling_back(memo, min(settled, memo.upto)):
        memo = Memo(owner)
        if memos is not None:
            memos[key] = memo
    else:
        memo.rollback(min(settled, memo.upto))
    memo.start = memo.upto
    try:
        run_passes(memo, messages, passes)
    except Rescan:
        memo = Memo(owner)
        if memos is not None:
            memos[key] = memo
        run_passes(memo, messages, passes)
    return memo


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
    the messages no stage changed on that call, which the stages' memos
    describe. ``totals[i]`` and ``sendable[i]`` are the token counts of
    ``out[:i]`` (all messages, as stages count them; and without boundary
    markers, as the outcome reports them). ``stamps`` holds the positions of
    messages with a timestamp, for the clock.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.out: list[Message] = []
        self.valid = 0
        self.totals: list[int] = [0]
        self.sendable: list[int] = [0]
        self.stamps: list[int] = []
        self.memos: dict[str, Memo] = {}

    def __deepcopy__(self, memo: dict) -> Track:
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
        for name, memo in list(self.memos.items()):
            if worth_rolling_back(memo, k):
                memo.rollback(k)
            else:
                del self.memos[name]
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


