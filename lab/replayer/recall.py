"""Needed-later recall: did the context sent at request k hold what the recorded response at k went on to use?

A replay knows the future: the response the original agent gave at request
``k`` (the assistant messages ``raw[p:q]``, their text and tool calls, not
their thinking) names things (``mentions.py``). Each such mention is

    needed       when it appears in the raw history before ``p`` and not in
                 the system prompt (the agent used something it had seen)
    kept         when a needed mention is in the context sent at ``k``
    recoverable  when it is not, but a spilled file that a stub in the
                 context points to (its ``spill_path``, or a known spill path
                 named in a stub's or summary's text) holds it
    lost         otherwise; lost to "recorded compaction" when every
                 occurrence in the raw history before ``p`` lies before the
                 newest recorded boundary there (a message of the replayed
                 transcript with ``boundary`` set or tagged "boundary": the
                 original agent's own compaction), else to "this config"

so ``needed = kept + recoverable + lost_recorded + lost_config``, and
``needed_later_recall = kept / needed`` (None when nothing is needed). A
report's totals are micro-averages: sum kept / sum needed over requests.

"In the context" is token-level membership (see ``mentions.py``): a mention
is kept when some sent message holds it as a whole token, or, for multi-word
mentions (commands, error lines, URLs), as the same line; a summary or
memory message written by the pipeline also keeps a multi-word mention it
quotes anywhere in its text.

Cost: mentions are looked up, never searched for. What a transcript's
responses name, and where each mention occurs in its raw history, depend on
the transcript alone: a ``History`` holds them, built on the first replay of
those messages and shared by every later one (a compare's configs, a sweep's
trials, a slider's moves; ``History.of`` keeps the last few). Building it
tokenizes every assistant message once, its texts and its calls' strings in
one tokenizer call, and classifies the tokens of a few thousand responses in
one call (``mentions.names_and_held``: only a batch's token sets are held at
once); everything else (thinking, results, a user's
texts) is looked up for the wanted tokens only (``mentions.Lookup``), once
per text. A first replay pays for the build: it is most of recall's cost
there (the bench's "lone first replay" figure). What each response needed
(named, seen before, outside the system prompt) depends on the transcript
alone too (``History.needed``). A history lives as long as its transcript is
replayed, so it is held compactly: hits as sorted tuples shared when equal,
the raw messages' hits in an identity table without an int per key
(``IdMap``, C in ``_scan.c``) for the messages that hold some (the ids of
the rest sorted in an array), the wanted mentions as one sorted tuple
(looked up by bisection) and their positions in two flat arrays. Per replay, only
the messages a stage wrote (stubs, summaries) are looked up, and the
context's hits are a multiset kept over the prefix two successive contexts
share (``incremental=False`` recomputes the union from scratch every
request: the reference the running state matches); a context that a summary
mostly replaced is counted afresh, at what it holds. A summary is searched for
the multiword mentions line by line, each line remembered (``Anchored``):
successive summaries repeat most of their lines, so each costs its new text,
not its length. ``clear_cache`` forgets
the histories and the mention memos (the bench's "first replay" figure).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from itertools import chain
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from hashlib import blake2b
from operator import is_
from typing import Generic, Protocol, TypeVar

from ..core.lru import SharedLRU
from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent, shared_prefix
from ..core.stages.active import system_prompt_length
from ..core.store import SpillStore
from ..errors import StoreError
from .mentions import Lookup, call_texts, is_multiword, kind, mentions_of, names_and_held, tokens_of
from .mentions import clear_cache as clear_mention_cache
from .report import LOST_TO, LostMention, Row, column
from .identity_caches import ByIdentity, InContext

__all__ = ["Anchored", "IdMap", "IdentityMap", "MAX_LOST", "MAX_HISTORIES", "RecallStep", "History", "Recall", "clear_cache", "shared_by_identity", "scan", "message_mentions", "recorded_boundaries", "spill_refs", "totals"]

V = TypeVar("V")


class IdentityMap(Generic[V]):
    """Values by the identity of their keys, which the caller keeps alive; no entry is ever removed.

    The Python table, a dict by ``id()``: ``_scan.IdMap`` (C) is the same without an int object per key (32
    bytes, beside the dict's entry), and recall's index keeps one entry per raw message of a transcript.
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[int, V] = {}

    def get(self, key: object) -> V | None:
        return self._values.get(id(key))

    def put(self, key: object, value: V) -> None:
        self._values[id(key)] = value

    def setdefault(self, key: object, value: V) -> V:
        return self._values.setdefault(id(key), value)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return id(key) in self._values


try:
    from ._scan import IdMap as _IdMapC
except ImportError:  # built without a C compiler, or an older build: the Python table serves
    _IdMapC = None  # type: ignore[assignment, misc]
try:
    # Content recall's item tables (``content.py``): which of a fixed tuple of strings occur in a text, in one C pass.
    from ._scan import items_in as _items_in
    from ._scan import items_table as _items_table
except ImportError:  # as above: ``Anchored`` scans a line in Python
    _items_in = _items_table = None  # type: ignore[assignment]
IdMap: type[IdentityMap] = _IdMapC if _IdMapC is not None else IdentityMap  # type: ignore[assignment]

# Lost mentions listed per row; the counts are exact regardless.
MAX_LOST = 20
RECORDED, CONFIG = LOST_TO
_PIPELINE_TAGS = ("summary", "memory", "truncation_note")
# Histories kept for the raw histories replayed last (a few sessions open at once), and texts per history.
MAX_HISTORIES = 4
MAX_TEXTS = 50_000
# Texts longer than this are remembered by ``History.text_hits`` only among the last ``_LONG_TEXTS`` of them.
_MEMO_CHARS = 4_096
_LONG_TEXTS = 8
# Keyed by the raw messages' identities: a history holds its messages, so no id in a key is reused while it is kept.
_HISTORIES: SharedLRU[History] = SharedLRU(MAX_HISTORIES)


def _blocks(message: Message) -> tuple[list[str], list[str], list[ToolUseBlock]]:
    """(what a message says as a response: an assistant's texts; what else it holds: results, thinking, a user's texts; its calls)."""
    said: list[str] = []
    other: list[str] = []
    calls: list[ToolUseBlock] = []
    assistant = message.role == "assistant"
    for b in message.content:
        if isinstance(b, TextBlock):
            (said if assistant else other).append(b.text)
        elif isinstance(b, ToolResultBlock):
            other.append(b.content)
        elif isinstance(b, ThinkingBlock):
            other.append(b.thinking)
        elif isinstance(b, ToolUseBlock):
            calls.append(b)
    return said, other, calls


def _said(message: Message) -> tuple[list[str], list[ToolUseBlock]]:
    """(an assistant message's texts, its calls): what it says as a response."""
    texts: list[str] = []
    calls: list[ToolUseBlock] = []
    for b in message.content:
        if isinstance(b, TextBlock):
            texts.append(b.text)
        elif isinstance(b, ToolUseBlock):
            calls.append(b)
    return texts, calls


def scan(message: Message) -> tuple[set[str], set[str]]:
    """(what the message names as a response: text and tool calls, not thinking; every token it holds)."""
    said, other, calls = _blocks(message)
    # Per message, not per block: one tokenizer call for what it says, one for the rest.
    held: set[str] = tokens_of(other) if other else set()
    named = mentions_of(said, calls, held) if said or calls else set()
    held |= named
    return named, held


def message_mentions(message: Message) -> set[str]:
    """Every token and mention one message holds, unfiltered: what a needed mention is looked up in."""
    return scan(message)[1]


_NO_REFS: frozenset[str] = frozenset()
# The wanted mentions a message or text holds, sorted: a tuple costs 8 bytes a string, a frozenset 216 bytes at least.
Hits = tuple[str, ...]


def _may_point(message: Message) -> bool:
    """Whether a message can point to a spill file: a compacted result, or a pipeline's text naming a path."""
    return message.tag in _PIPELINE_TAGS or any(isinstance(b, ToolResultBlock) and b.compacted is not None for b in message.content)


def _text(message: Message) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else b.content for b in message.content if isinstance(b, (TextBlock, ToolResultBlock)))


def spill_refs(message: Message, spill_paths: Mapping[str, str]) -> frozenset[str]:
    """The spill files a message points to: a stub's own path (or the path the replay wrote for its call, when the
    stub's text names it, as MewCode's "[saved to] PATH" does), and known paths a summary's text names. Names recall
    and content recall both call what such a file holds recoverable."""
    refs: set[str] = set()
    for b in message.content:
        if isinstance(b, ToolResultBlock) and b.compacted is not None:
            known = spill_paths.get(b.tool_use_id)
            if b.spill_path:
                refs.add(b.spill_path)
            elif known and known in b.content:
                refs.add(known)
    if message.tag in _PIPELINE_TAGS:
        text = _text(message)
        refs |= {p for p in spill_paths.values() if p in text}
    return frozenset(refs)


def recorded_boundaries(raw: Sequence[Message]) -> list[int]:
    """Indices of the original agent's own compactions in a transcript."""
    return [i for i, m in enumerate(raw) if m.boundary is not None or m.tag == "boundary"]


@dataclass(frozen=True)
class RecallStep:
    """One request's recall counts; ``lost`` lists (mention, lost to) in mention order, at most ``MAX_LOST``."""

    needed: int = 0
    kept: int = 0
    recoverable: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    lost: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def recall(self) -> float | None:
        return self.kept / self.needed if self.needed else None

    @property
    def recoverable_share(self) -> float | None:
        return self.recoverable / self.needed if self.needed else None

    def fields(self) -> dict[str, object]:
        """The Row fields this step fills."""
        return {
            "needed_mentions": self.needed,
            "kept_mentions": self.kept,
            "recoverable_mentions": self.recoverable,
            "lost_recorded": self.lost_recorded,
            "lost_config": self.lost_config,
            "needed_later_recall": self.recall,
            "recoverable_share": self.recoverable_share,
            "lost_mentions": [LostMention(mention=m, kind=kind(m), lost_to=to) for m, to in self.lost],
        }


# Positions of one piece in a line past which ``Anchored`` scans the line instead of trying each.
_MAX_TRIES = 8
# Lines per generation of ``Anchored``'s line memo: two generations hold the lines of a few summaries.
_LINES_KEPT = 8_192


class Anchored:
    """Which of a fixed set of strings occur in a text, as ``{w for w in strings if w in text}`` says.

    Why: a summary or another pipeline message is searched for every multiword mention of the transcript's
    recorded future, and their number grows with the transcript, as does the number of summaries: a
    session of many short turns spent most of its replay there. Each string is filed under its rarest
    ``GRAM``-character piece; a text is cut into its pieces once,
    and a string filed under one of them is only tried where that piece occurs, so a try costs the
    string's length, not the text's. A string that occurs in the text holds all its pieces: none is missed.
    Strings shorter than a piece are looked up by every substring of their lengths, so their number costs nothing.
    That is the scan in Python; with the C module, item tables scan a line (``_scan.items_in``), and the
    pieces are never filed.

    A string without a line break occurs in a text exactly when it occurs in one of the text's lines,
    and successive summaries repeat most of their lines (the same user messages, the same file list):
    each line's strings are remembered (two generations of ``_LINES_KEPT`` lines), so a text costs its
    new lines, not its length. The few strings that hold a line break are looked for in the whole text.
    """

    GRAM = 4

    def __init__(self, strings: Sequence[str]) -> None:
        g = self.GRAM
        # Strings spanning lines: rare (a mention is one line or one command), each tried on the whole text.
        self.across = tuple(w for w in strings if "\n" in w)
        # The rest, which a line is scanned for.
        self.one_line = tuple(w for w in strings if "\n" not in w)
        # With the C module, a line is scanned by item tables (``_scan.items_in``), one per band of lengths: a table
        # looks its strings up by their first ``min(length)`` characters, so a band of like lengths keeps that key
        # selective (short strings by their exact length, the rest as 4-7 and 8 or more characters).
        self._tables: tuple[tuple[tuple[str, ...], object], ...] | None = None
        if _items_table is not None and _items_in is not None:
            bands: dict[int, list[str]] = {}
            for w in self.one_line:
                bands.setdefault(len(w) if len(w) < g else g if len(w) < 8 else 8, []).append(w)
            self._tables = tuple((items, _items_table(items)) for items in (tuple(ws) for _, ws in sorted(bands.items())))
        # Without it, by the pieces (``_pieces``), filed on the first line scanned in Python: with the tables
        # they would be built for nothing, and kept as long as the index.
        self._filed: tuple[frozenset[str], list[int], dict[str, str | tuple[str, ...]]] | None = None
        # A line's strings as a tuple (a frozenset cost 216 bytes however few it held), the empty one shared.
        self._lines: dict[str, tuple[str, ...]] = {}
        self._older: dict[str, tuple[str, ...]] = {}

    def _pieces(self) -> tuple[frozenset[str], list[int], dict[str, str | tuple[str, ...]]]:
        """(the strings shorter than a piece, their lengths, each other string filed under its rarest piece)."""
        g = self.GRAM
        one_line = self.one_line
        pieces = [{w[i : i + g] for i in range(len(w) - g + 1)} for w in one_line]
        # How many strings hold each piece: a string is filed under the piece fewest others share.
        share: dict[str, int] = {}
        for held in pieces:
            for piece in held:
                share[piece] = share.get(piece, 0) + 1
        short = frozenset(w for w, held in zip(one_line, pieces, strict=True) if not held)
        # A piece's strings: the string itself when one (the commonest), else a tuple; where the piece starts in
        # each is found again at a try (a tuple per string cost more than the string).
        filed: dict[str, str | tuple[str, ...]] = {}
        for w, held in zip(one_line, pieces, strict=True):
            if held:
                # Any piece finds the string; the rarest is tried least (a tie goes either way, to the same answer).
                piece = min(held, key=share.__getitem__)
                there = filed.get(piece)
                filed[piece] = w if there is None else (there, w) if type(there) is str else (*there, w)
        return short, sorted({len(w) for w in short}), filed

    def within(self, text: str) -> set[str]:
        found = {w for w in self.across if w in text}
        if not self.one_line:
            return found
        lines, older = self._lines, self._older
        parts = text.split("\n")
        # Every line's memo looked up in one C-level pass; only the lines the newest generation lacks take a Python step.
        got: list[tuple[str, ...] | None] = list(map(lines.get, parts))
        for j, hit in enumerate(got):
            if hit is not None:
                continue
            line = parts[j]
            # A line seen earlier in this text was stored meanwhile.
            hit = lines.get(line)
            if hit is None:
                hit = older.get(line)
                if hit is None:
                    hit = self._in_line(line)
                if len(lines) >= _LINES_KEPT:
                    # A new generation: the lines no text used since the last one are forgotten.
                    self._older, older = lines, lines
                    self._lines = lines = {}
                lines[line] = hit
            got[j] = hit
        return found.union(*filter(None, got))

    def _in_line(self, text: str) -> tuple[str, ...]:
        """The strings one line holds (each without a line break), each once."""
        if self._tables is not None:
            hit = [items[x] for items, table in self._tables for x in _items_in(table, text)]
            return tuple(dict.fromkeys(hit)) if hit else ()
        if self._filed is None:
            self._filed = self._pieces()
        short, lengths, filed = self._filed
        found: set[str] = set()
        for n in lengths:
            for i in range(len(text) - n + 1):
                if text[i : i + n] in short:
                    found.add(text[i : i + n])
        if not filed:
            return tuple(found)
        g = self.GRAM
        # Where each filed piece occurs in the line.
        at: dict[str, list[int]] = {}
        for i in range(len(text) - g + 1):
            piece = text[i : i + g]
            if piece in filed:
                at.setdefault(piece, []).append(i)
        starts = text.startswith
        for piece, positions in at.items():
            # A piece the line holds in many places: one scan of the line (in C) beats a try at each.
            tries = len(positions) <= _MAX_TRIES
            strings = filed[piece]
            for w in (strings,) if type(strings) is str else strings:
                if w in found:
                    continue
                if tries:
                    offset = w.index(piece)
                    if any(i >= offset and starts(w, i - offset) for i in positions):
                        found.add(w)
                elif w in text:
                    found.add(w)
        return tuple(found)


class History:
    """What one transcript's recorded future names, and where in its raw history each mention occurs.

    It depends on the transcript alone, never on a config, so every replay of the same raw history (a
    compare's configs, a sweep's trials, a slider's moves) shares one, built on first use (``of``).

    Held compactly, as it lives as long as the transcript: what a response names as a sorted tuple (a
    frozenset costs 216 bytes however few it holds), equal hit sets as one object, the wanted mentions as
    one sorted tuple (``names``, no set beside it), every mention's positions in one flat ``array`` of
    4-byte ints, the messages holding no wanted mention by their sorted ids, and what a request needed in
    a list by its first position.
    """

    def __init__(self, raw: Sequence[Message]) -> None:
        self.raw: tuple[Message, ...] = tuple(raw)
        # The responses' positions; each is read by ``names_and_held`` (its calls walked, then it and its batch
        # tokenized and classified): what it names, and what it holds of what any response names.
        said = array("i", (i for i, m in enumerate(self.raw) if m.role == "assistant"))

        def read() -> Iterator[tuple[list[str], list[ToolUseBlock]]]:
            for i in said:
                yield _said(self.raw[i])

        # A raw message's hits are a sorted tuple (a frozenset costs 216 bytes however few it holds, and a
        # hash table beyond), and equal ones are one object: most messages hold none of the wanted mentions
        # or the same few. The public accessors answer with frozensets.
        self._canon: dict[Hits, Hits] = {(): ()}
        same = self._same
        # Every mention any response names: the only strings worth indexing anywhere.
        self.responses: list[tuple[str, ...]] = [()] * len(self.raw)
        # What each response holds of them, in the order of ``said``: often the very set it names, one object.
        held: list[Hits] = []
        for i, (names, holds) in zip(said, names_and_held(read), strict=True):
            if names:
                self.responses[i] = same(names)
            held.append(self.responses[i] if holds is names else same(holds))
        self.lookup = Lookup(chain.from_iterable(self.responses))
        # Every wanted mention, sorted (the Lookup's own tuple): a mention's index here is where its positions
        # lie in ``_at``. A set of them serves the build alone (``_wanted_in`` asks it of every call's strings).
        self.names: tuple[str, ...] = self.lookup.names
        self._member: frozenset[str] | None = frozenset(self.names)
        self.multiword = tuple(w for w in self.names if is_multiword(w))
        # Built when a pipeline's message is first asked about: a replay that writes none never needs it.
        self._anchor_index: Anchored | None = None
        # The build's texts are remembered only while it runs (a result repeated across the session is looked up
        # once): kept after it, the memo would be an entry per raw text, and the messages' hits are kept anyway.
        self._texts: dict[str, Hits] = {}
        self._long: dict[str, Hits] = {}
        # What a response holds is what it names, its wanted tokens, and the wanted tokens of its thinking
        # (looked up, never tokenized: they name nothing). In the order of ``said``.
        mine: list[Hits] = []
        for i, hit in zip(said, held, strict=True):
            other = _blocks(self.raw[i])[1]
            if other:
                found = set(hit)
                for text in other:
                    found.update(self.text_hits(text))
                hit = same(found)
            mine.append(hit)
        del held
        self._index(said, mine)
        del mine
        # Past the build, the memo and the canonical sets serve only the texts a replay writes.
        self._texts, self._long = {}, {}
        self._canon = {(): ()}
        self._member = None
        lead = self.raw[: system_prompt_length(self.raw)]
        self.system: frozenset[str] = frozenset(chain.from_iterable(self.held(m) for m in lead))
        self.boundaries = recorded_boundaries(self.raw)
        # What each request needed, by its first position (with the end it was asked for): a list and an array
        # sized by the transcript, where a dict by request cost an int key, an entry and a hash slot each.
        self._needed: list[tuple[str, ...]] = [()] * (len(self.raw) + 1)
        self._needed_end = array("i", (-1,)) * (len(self.raw) + 1)
        # The raw messages a replay's running state cannot take from ``raw_hits`` alone: a marker (never sent),
        # and a message that can point to a spill file (a compacted result, or a pipeline's text; a re-imported
        # lab session may hold such messages). Every other raw message is its hits and points nowhere.
        self.special: frozenset[int] = frozenset(id(m) for m in self.raw if not is_sent(m) or _may_point(m))

    def _index(self, said: array[int], mine: list[Hits]) -> None:
        """Every raw message's hits by identity, and where each wanted mention occurs; ``mine``: the hits of the
        responses at ``said``."""
        same = self._same
        # By the raw messages' identities (``IdMap``): ``raw`` keeps each alive, so no other object can have its id.
        # Only the messages holding some wanted mention: most hold none, and those are the sorted ids of
        # ``_empty`` (8 bytes each, where a table slot is 16 at a third to two thirds full), looked up by
        # bisection when the table has no entry (``_raw``).
        self._hits: IdentityMap[Hits] = IdMap()
        hits = self._hits
        empty: list[int] = []
        k, n_said = 0, len(said)
        # Where each wanted mention occurs, positions ascending: "seen before p" and "last seen before p" are
        # one lookup and one bisect. Gathered by mention (one position, the commonest, an int; more an array),
        # then laid out flat (``_lay_out``).
        occurs: dict[str, int | array[int]] = {}
        for i, m in enumerate(self.raw):
            known: Hits | None
            if k < n_said and said[k] == i:
                known = mine[k]
                k += 1
            else:
                known = hits.get(m)
                if known is None:
                    known = same(self._found_in(m))
            if not known:
                empty.append(id(m))
                continue
            # The first entry stays, as the same object met again holds the same.
            hits.setdefault(m, known)
            for x in known:
                occ = occurs.get(x)
                if occ is None:
                    occurs[x] = i
                elif type(occ) is int:
                    occurs[x] = array("i", (occ, i))
                else:
                    occ.append(i)  # type: ignore[union-attr]
        empty.sort()
        self._empty = array("Q", empty)
        self._lay_out(occurs)

    def _lay_out(self, occurs: Mapping[str, int | array[int]]) -> None:
        """Mention ``names[j]`` occurs at ``_at[_starts[j]:_starts[j + 1]]``, ascending: two arrays of 4-byte ints
        for the whole history, where a dict by mention cost an entry and a hash slot each, and an int object or
        an array object per mention beside them."""
        self._starts = starts = array("i", (0,))
        self._at = at = array("i")
        for x in self.names:
            occ = occurs.get(x)
            if occ is not None:
                if type(occ) is int:
                    at.append(occ)
                else:
                    at.extend(occ)  # type: ignore[arg-type]
            starts.append(len(at))

    def _same(self, found: Iterable[str]) -> Hits:
        """The one tuple holding the strings of ``found``, sorted."""
        key = tuple(sorted(found))
        return self._canon.setdefault(key, key)

    @property
    def _anchored(self) -> Anchored:
        if self._anchor_index is None:
            self._anchor_index = Anchored(self.multiword)
        return self._anchor_index

    def _raw(self, message: Message) -> Hits | None:
        """The hits of a message of this raw history; None for any other message object."""
        hit = self._hits.get(message)
        return hit if hit is not None else self._raw_empty(message)

    def _raw_empty(self, message: Message) -> Hits | None:
        """``()`` for a message of this raw history that holds no wanted mention (``_empty``), else None."""
        empty, key = self._empty, id(message)
        j = bisect_left(empty, key)
        return () if j < len(empty) and empty[j] == key else None

    def raw_hits(self, message: Message) -> frozenset[str] | None:
        """The wanted mentions a message of this raw history holds; None for any other message object."""
        hit = self._raw(message)
        return None if hit is None else frozenset(hit)

    def plain(self, message: Message) -> bool:
        """Whether a message is one of this raw history's own, sent and pointing to no spill file: its hits are all
        a replay's running state needs of it."""
        return self._raw(message) is not None and id(message) not in self.special

    def hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions any message holds: cached for the raw history's own messages."""
        return frozenset(self.held(message))

    def held(self, message: Message) -> Hits:
        """``hits`` as a tuple, the raw history's own one object for its messages: what a replay's running state counts."""
        hit = self._raw(message)
        return hit if hit is not None else tuple(self._found_in(message))

    def compute_hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions any message holds (uncached by message; its texts are cached)."""
        return frozenset(self._found_in(message))

    def _found_in(self, message: Message) -> set[str]:
        found = self._wanted_in(message)
        if message.tag in _PIPELINE_TAGS and self.multiword:
            text = _text(message)
            found |= self._anchored.within(text)
        return found

    def _wanted_in(self, message: Message) -> set[str]:
        # What ``scan`` would say, without building the message's token set: only the wanted tokens of its
        # texts are looked for, and of its calls' strings, plus the wanted ones among what its calls name
        # beside their tokens (a command line, a shell argument).
        found: set[str] = set()
        calls: list[ToolUseBlock] = []
        for b in message.content:
            if isinstance(b, ToolResultBlock):
                found.update(self.text_hits(b.content))
            elif isinstance(b, TextBlock):
                found.update(self.text_hits(b.text))
            elif isinstance(b, ThinkingBlock):
                found.update(self.text_hits(b.thinking))
            elif isinstance(b, ToolUseBlock):
                calls.append(b)
        if calls:
            strings, beside = call_texts(calls)
            # Each string on its own: a text's diff headers count only with its own diff (see mentions.JOIN).
            for text in strings:
                found.update(self.text_hits(text))
            member = self._member
            found |= member.intersection(beside) if member is not None else self.lookup.among(beside)
        return found

    def text_hits(self, text: str) -> Hits:
        """The wanted tokens a text holds, sorted."""
        # By text: a spill file, or a stage's copy of a message, holds a raw text again; configs of one
        # transcript write the same stubs again. Started over at MAX_TEXTS, so it stays small.
        if len(text) > _MEMO_CHARS:
            # A summary or a long file: the last few only. A stage that rewrites a message every request asks about
            # its text again; but kept with the rest, every summary of the session (tens of kilobytes each) lived
            # as long as the transcript's history.
            long = self._long
            hit = long.get(text)
            if hit is None:
                if len(long) >= _LONG_TEXTS:
                    long.clear()
                hit = long[text] = self._same(self.lookup.held(text))
            return hit
        hit = self._texts.get(text)
        if hit is None:
            if len(self._texts) >= MAX_TEXTS:
                self._texts.clear()
            hit = self._texts[text] = self._same(self.lookup.held(text))
        return hit

    def used(self, point: int, end: int) -> set[str]:
        """What the response ``raw[point:end]`` names."""
        return set().union(*self.responses[point:end])

    def needed(self, point: int, end: int) -> tuple[str, ...]:
        """What the response ``raw[point:end]`` names that it had seen before, outside the system prompt, sorted.

        A transcript's alone, so kept for every replay of it.
        """
        if self._needed_end[point] == end:
            return self._needed[point]
        first = self.first
        # ``seen_before`` inline: a mention never seen counts as first seen at ``point``, so not before it.
        found = tuple(sorted(x for x in self.used(point, end).difference(self.system) if first(x, point) < point))
        # Most often all the response named, seen before: then its own tuple, one object (kept per request).
        named = self.responses[point] if point < len(self.responses) else ()
        if found == named:
            found = named
        self._needed[point], self._needed_end[point] = found, end
        return found

    @property
    def wanted(self) -> frozenset[str]:
        """Every mention any recorded response names (built when asked: the index keeps them as ``names``)."""
        return frozenset(self.names)

    @property
    def occurs(self) -> dict[str, list[int]]:
        """Every mention that occurs in the raw history, with its positions ascending (built when asked)."""
        return {x: p for x in self.names if (p := self.positions(x))}

    def _span(self, mention: str) -> tuple[int, int]:
        """Where ``mention``'s positions lie in ``_at``: an empty span when it is not wanted or never occurs."""
        names = self.names
        j = bisect_left(names, mention)
        if j < len(names) and names[j] == mention:
            return self._starts[j], self._starts[j + 1]
        return 0, 0

    def first(self, mention: str, default: int) -> int:
        """The first position holding ``mention``; ``default`` when none does."""
        lo, hi = self._span(mention)
        return self._at[lo] if lo < hi else default

    def positions(self, mention: str) -> list[int]:
        """Every position holding ``mention``, ascending."""
        lo, hi = self._span(mention)
        return self._at[lo:hi].tolist()

    def seen_before(self, mention: str, point: int) -> bool:
        return self.first(mention, point) < point

    def last_before(self, mention: str, point: int) -> int:
        """The last position before ``point`` holding a mention ``seen_before`` it."""
        lo, hi = self._span(mention)
        if lo == hi:
            raise KeyError(mention)
        return self._at[max(lo, bisect_left(self._at, point, lo, hi) - 1)]

    @classmethod
    def of(cls, raw: Sequence[Message]) -> History:
        """The history of these raw messages, shared by every replay of the same message objects."""
        return shared_by_identity(_HISTORIES, raw, lambda: cls(raw))


class _HoldsRaw(Protocol):
    @property
    def raw(self) -> tuple[Message, ...]: ...


H = TypeVar("H", bound=_HoldsRaw)


def shared_by_identity(cache: SharedLRU[H], raw: Sequence[Message], build: Callable[[], H]) -> H:
    """The value ``cache`` keeps for these very message objects (``raw``, in order), else ``build()``'s, kept.

    Keyed by a 16-byte digest of their ids rather than the ids (a tuple of them cost 40 bytes a message, as
    long as the value was kept): the value holds its messages (``.raw``), which keeps every id unique, and a
    hit is checked against them object by object, so two sequences sharing a digest never share a value.
    """
    key = blake2b(array("Q", map(id, raw)).tobytes(), digest_size=16).digest()
    found = cache.get(key, build)
    if len(found.raw) == len(raw) and all(map(is_, found.raw, raw)):
        return found
    return build()


def clear_cache() -> None:
    """Forget every shared history and the mention memos (the bench measures a first replay this way).

    Only recall's own memory: the replay's shared counters and per-message caches
    (``identity_caches.clear_shared``) and retention targets (``retention.clear_shared_targets``)
    stay, so a replay with recall and one without start from the same caches.
    """
    _HISTORIES.clear()
    clear_mention_cache()


class Recall:
    """The running state of needed-later recall over one replay; call ``step`` once per request, in order."""

    def __init__(self, raw: Sequence[Message], store: SpillStore | None, spill_paths: Mapping[str, str], *, incremental: bool = True) -> None:
        self.store, self.spill_paths, self.incremental = store, spill_paths, incremental
        self.history = History.of(raw)
        self._hits: ByIdentity[frozenset[str]] = ByIdentity()
        self._refs: ByIdentity[frozenset[str]] = ByIdentity()
        # Only while the message is in the context (``InContext``): the values of every stub and summary, kept.
        self._entries: InContext[tuple[Hits | None, frozenset[str]]] = InContext()
        self._context: list[Message] = []
        self._held = _Multiset()
        self._paths: Counter[str] = Counter()
        self._reach = _Multiset()
        self._spilled: dict[str, Hits | None] = {}

    @property
    def wanted(self) -> frozenset[str]:
        """Every mention any recorded response names."""
        return self.history.wanted

    # -- per message, cached by identity ----------------------------------------------------------

    def hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions one message holds."""
        hit = self.history.raw_hits(message)
        if hit is None:
            hit = self._hits.get(message)
            if hit is None:
                hit = self._hits.put(message, self.history.compute_hits(message))
        return hit

    def _spill_refs(self, message: Message) -> frozenset[str]:
        """Spill paths a message points to: its stubs' ``spill_path`` or the known path a stub's text names
        (MewCode's "[saved to] PATH"), and known paths a summary's text names."""
        hit = self._refs.get(message)
        if hit is None:
            hit = self._refs.put(message, self._find_refs(message))
        return hit

    def _find_refs(self, message: Message) -> frozenset[str]:
        return spill_refs(message, self.spill_paths)

    def _spill_hits(self, path: str) -> Hits | None:
        if path not in self._spilled:
            found: Hits | None = None
            if self.store is not None and self.store.exists(path):
                try:
                    found = self.history.text_hits(self.store.read(path))
                except StoreError:
                    found = None
            self._spilled[path] = found
        return self._spilled[path]

    # -- running state ----------------------------------------------------------------------------

    def _update(self, context: Sequence[Message], same: int | None = None) -> tuple[_Multiset | set[str], _Multiset | set[str]]:
        """(the wanted mentions the sent context holds, those the spill files it points to hold)."""
        if not self.incremental:
            sent = [m for m in context if is_sent(m)]
            held: set[str] = set().union(*(self.hits(m) for m in sent))
            paths: set[str] = set().union(*(self._spill_refs(m) for m in sent))
            reach: set[str] = set().union(*(h for p in paths if (h := self._spill_hits(p)) is not None))
            return held, reach
        seq = list(context)
        k = shared_prefix(self._context, seq) if same is None else min(same, len(self._context), len(seq))
        if len(seq) < len(self._context) - k:
            # More left than the new context holds (a summary replaced most of it): counting the new context
            # from nothing costs what it holds, where taking the old one out costs what the session had sent.
            self._held, self._reach, self._paths = _Multiset(), _Multiset(), Counter()
            self._entries.forget(self._context[k:], seq[k:])
            self._context, k = [], 0
        gone, came = self._moved(self._context[k:], -1), self._moved(seq[k:], 1)
        if gone:
            self._entries.forget(self._context[k:], seq[k:])
        if gone:
            self._held.remove(chain.from_iterable(gone))
        if came:
            self._held.add(chain.from_iterable(came))
        self._context = seq
        return self._held, self._reach

    def _moved(self, messages: Sequence[Message], step: int) -> list[Hits]:
        """The hits of ``messages`` leaving (``step`` -1) or joining (+1) the context, with the spill files they
        point to counted out or in; a file's mentions count once per live file, however many stubs point to it.

        What left and what joined are each counted in one update by the caller: a request moves a few messages,
        and Counter.update's own checks cost more per call than counting a message's mentions. A plain raw
        message (``History.plain``) is its hits alone: one lookup, no spill path to follow.
        """
        history = self.history
        raw_hits, raw_empty, special, live = history._hits.get, history._raw_empty, history.special, self._paths
        out: list[Hits] = []
        for m in messages:
            hit = raw_hits(m)
            if hit is None:
                hit = raw_empty(m)
            if hit is None or (special and id(m) in special):
                hit, refs = self._entry(m)
                if hit is None:
                    continue
                for path in refs:
                    live[path] += step
                    if live[path] == (1 if step > 0 else 0):
                        (self._reach.add if step > 0 else self._reach.remove)(self._spill_hits(path) or ())
            out.append(hit)
        return out

    def _entry(self, message: Message) -> tuple[Hits | None, frozenset[str]]:
        """(the wanted mentions a message holds, the spill paths it points to); (None, none) for a marker,
        which is never sent. For the messages that are not ``History.plain``.

        The entry a message joined the context with is the one it leaves with (the spill paths known grow
        meanwhile), so the running counts take out exactly what they took in.
        """
        entry = self._entries.get(message)
        if entry is None:
            # Computed, not taken from the ``hits`` and ``_spill_refs`` caches: this entry is the message's one cache here.
            entry = self._entries.put(message, (self.history.held(message), self._find_refs(message)) if is_sent(message) else (None, _NO_REFS))
        return entry

    def step(self, point: int, end: int, context: Sequence[Message], *, same: int | None = None) -> RecallStep:
        """Recall at the request answered by ``raw[point:end]``, whose sent context is ``context`` (markers allowed).

        ``same``: when the caller knows it, how many leading messages ``context`` shares with the previous
        step's (a lower bound is enough); else they are compared.
        """
        history = self.history
        held, reach = self._update(context, same)
        needed = history.needed(point, end)
        missing = held.missing(needed) if isinstance(held, _Multiset) else [x for x in needed if x not in held]
        if not missing:
            return RecallStep(needed=len(needed), kept=len(needed))
        at = bisect_left(history.boundaries, point) - 1
        boundary = history.boundaries[at] if at >= 0 else None
        recoverable = 0
        lost: list[tuple[str, str]] = []
        for x in missing:
            if x in reach:
                recoverable += 1
            else:
                recorded = boundary is not None and history.last_before(x, point) < boundary
                lost.append((x, RECORDED if recorded else CONFIG))
        n_recorded = sum(1 for _, to in lost if to == RECORDED)
        return RecallStep(
            needed=len(needed),
            kept=len(needed) - len(missing),
            recoverable=recoverable,
            lost_recorded=n_recorded,
            lost_config=len(lost) - n_recorded,
            lost=tuple(lost[:MAX_LOST]),
        )


class _Multiset:
    """Strings with multiplicities, added and removed as whole iterables; ``x in m`` when added more often than removed.

    Two counters that only ever grow: ``Counter.update`` counts in C, where ``Counter.subtract`` loops in Python.
    """

    __slots__ = ("_added", "_removed")

    def __init__(self) -> None:
        self._added: Counter[str] = Counter()
        self._removed: Counter[str] = Counter()

    def add(self, items: Iterable[str]) -> None:
        self._added.update(items)

    def remove(self, items: Iterable[str]) -> None:
        self._removed.update(items)

    def __contains__(self, x: object) -> bool:
        return self._added.get(x, 0) > self._removed.get(x, 0)  # type: ignore[call-overload]

    def missing(self, items: Iterable[str]) -> list[str]:
        """The items not in the multiset, in order: ``[x for x in items if x not in self]`` without a call per item."""
        added, removed = self._added.get, self._removed.get
        return [x for x in items if added(x, 0) <= removed(x, 0)]


def totals(rows: Sequence[Row]) -> dict[str, object]:
    """Report fields over all rows: summed counts, and micro-averaged shares (sum kept / sum needed)."""
    needed = sum(column(rows, "needed_mentions"))
    kept = sum(column(rows, "kept_mentions"))
    recoverable = sum(column(rows, "recoverable_mentions"))
    return {
        "needed_mentions": needed,
        "kept_mentions": kept,
        "recoverable_mentions": recoverable,
        "lost_recorded": sum(column(rows, "lost_recorded")),
        "lost_config": sum(column(rows, "lost_config")),
        "needed_later_recall": kept / needed if needed else None,
        "recoverable_share": recoverable / needed if needed else None,
    }
