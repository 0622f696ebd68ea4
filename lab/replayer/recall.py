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
reads every assistant message once, its texts and its calls' strings in one
tokenizer call, and classifies the transcript's tokens in one call
(``mentions.mentions_of_each``); everything else (thinking, results, a user's
texts) is looked up for the wanted tokens only (``mentions.Lookup``), once
per text. A first replay pays for the build: it is most of recall's cost
there (the bench's "lone first replay" figure). What each response needed
(named, seen before, outside the system prompt) depends on the transcript
alone too (``History.needed``). Per replay, only
the messages a stage wrote (stubs, summaries) are looked up, and the
context's hits are a multiset kept over the prefix two successive contexts
share (``incremental=False`` recomputes the union from scratch every
request: the reference the running state matches). ``clear_cache`` forgets
the histories and the mention memos (the bench's "first replay" figure).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from itertools import chain
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping, Sequence

from ..core.lru import SharedLRU
from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent, shared_prefix
from ..core.stages.active import system_prompt_length
from ..core.store import SpillStore
from ..errors import StoreError
from .mentions import Lookup, call_texts, is_multiword, kind, mentions_of, mentions_of_each, tokens_of
from .mentions import clear_cache as clear_mention_cache
from .report import LOST_TO, LostMention, Row, column
from .identity_caches import ByIdentity

__all__ = ["Anchored", "MAX_LOST", "MAX_HISTORIES", "RecallStep", "History", "Recall", "clear_cache", "scan", "message_mentions", "recorded_boundaries", "spill_refs", "totals"]

# Lost mentions listed per row; the counts are exact regardless.
MAX_LOST = 20
RECORDED, CONFIG = LOST_TO
_PIPELINE_TAGS = ("summary", "memory", "truncation_note")
# Histories kept for the raw histories replayed last (a few sessions open at once), and texts per history.
MAX_HISTORIES = 4
MAX_TEXTS = 50_000
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


# Positions of one piece in a text past which ``Anchored`` scans the text instead of trying each.
_MAX_TRIES = 8


class Anchored:
    """Which of a fixed set of strings occur in a text, as ``{w for w in strings if w in text}`` says.

    Why: a summary or another pipeline message is searched for every multiword mention of the transcript's
    recorded future, and their number grows with the transcript, as does the number of summaries: a
    session of many short turns spent most of its replay there. Each string is filed under its rarest
    ``GRAM``-character piece (and where in the string it starts); a text is cut into its pieces once,
    and a string filed under one of them is only tried where that piece occurs, so a try costs the
    string's length, not the text's. A string that occurs in the text holds all its pieces: none is missed.
    """

    GRAM = 4

    def __init__(self, strings: Sequence[str]) -> None:
        g = self.GRAM
        pieces = [{w[i : i + g] for i in range(len(w) - g + 1)} for w in strings]
        # How many strings hold each piece: a string is filed under the piece fewest others share.
        share: dict[str, int] = {}
        for held in pieces:
            for piece in held:
                share[piece] = share.get(piece, 0) + 1
        self.short = tuple(w for w, held in zip(strings, pieces, strict=True) if not held)
        self.by_piece: dict[str, list[tuple[str, int]]] = {}
        for w, held in zip(strings, pieces, strict=True):
            if held:
                piece = min(held, key=lambda p: (share[p], p))
                self.by_piece.setdefault(piece, []).append((w, w.index(piece)))

    def within(self, text: str) -> set[str]:
        g = self.GRAM
        found = {w for w in self.short if w in text}
        filed = self.by_piece
        if not filed:
            return found
        # Where each filed piece occurs in the text.
        at: dict[str, list[int]] = {}
        for i in range(len(text) - g + 1):
            piece = text[i : i + g]
            if piece in filed:
                at.setdefault(piece, []).append(i)
        starts = text.startswith
        for piece, positions in at.items():
            # A piece the text holds in many places: one scan of the text (in C) beats a try at each.
            tries = len(positions) <= _MAX_TRIES
            for w, offset in filed[piece]:
                if w not in found and (any(i >= offset and starts(w, i - offset) for i in positions) if tries else w in text):
                    found.add(w)
        return found


class History:
    """What one transcript's recorded future names, and where in its raw history each mention occurs.

    It depends on the transcript alone, never on a config, so every replay of the same raw history (a
    compare's configs, a sweep's trials, a slider's moves) shares one, built on first use (``of``).
    """

    def __init__(self, raw: Sequence[Message]) -> None:
        self.raw: tuple[Message, ...] = tuple(raw)
        # Each response is read once (``mentions_of_each``: the transcript's tokens classified at once): what
        # it names, and every token it holds beside its thinking.
        said: list[tuple[int, list[str]]] = []
        read: list[tuple[Sequence[str], Sequence[ToolUseBlock]]] = []
        for i, m in enumerate(self.raw):
            if m.role == "assistant":
                texts, other, calls = _blocks(m)
                said.append((i, other))
                read.append((texts, calls))
        named = mentions_of_each(read)
        # Equal sets are one object: most messages hold none of the wanted mentions or the same few, and a
        # frozenset costs 216 bytes however few it holds (a set per message was a third of the file's size).
        self._canon: dict[frozenset[str], frozenset[str]] = {_NO_REFS: _NO_REFS}
        same = self._same
        # Every mention any response names: the only strings worth indexing anywhere.
        self.responses: list[frozenset[str]] = [_NO_REFS] * len(self.raw)
        for (i, _), (names, _) in zip(said, named, strict=True):
            self.responses[i] = same(frozenset(names))
        self.wanted: frozenset[str] = frozenset().union(*self.responses)
        self.lookup = Lookup(self.wanted)
        self.multiword = sorted(w for w in self.wanted if is_multiword(w))
        self._anchored = Anchored(self.multiword)
        self._texts: dict[str, frozenset[str]] = {}
        # By the raw messages' identities: ``raw`` keeps each alive, so no other object can have its id.
        self._hits: dict[int, frozenset[str]] = {}
        hits = self._hits
        # What a response holds is what it names, its wanted tokens, and the wanted tokens of its thinking
        # (looked up, never tokenized: they name nothing).
        for (i, other), (names, toks) in zip(said, named, strict=True):
            hit = self.wanted.intersection(toks).union(names)
            for text in other:
                hit |= self.text_hits(text)
            hits.setdefault(id(self.raw[i]), same(hit))
        # Where each wanted mention occurs, positions ascending: "seen before p" and "last seen before p"
        # are one lookup and one bisect.
        occurs: defaultdict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(self.raw):
            known = hits.get(id(m))
            if known is None:
                known = hits[id(m)] = same(self.compute_hits(m))
            for x in known:
                occurs[x].append(i)
        self.occurs: dict[str, list[int]] = dict(occurs)
        self._first = {x: occ[0] for x, occ in self.occurs.items()}
        lead = self.raw[: system_prompt_length(self.raw)]
        self.system: frozenset[str] = frozenset().union(*(self.hits(m) for m in lead))
        self.boundaries = recorded_boundaries(self.raw)
        # By ``point * (len(raw) + 1) + end``: one int per request, not a tuple of two.
        self._needed: dict[int, tuple[str, ...]] = {}
        # What a replay's running state asks of a raw message, in one lookup: (its hits, the spill paths it
        # points to). Only for the sent ones that can point to none, whatever the replay has spilled: no
        # compacted result, not written by a pipeline (a re-imported lab session may hold such messages).
        # One entry per distinct set of hits, shared by the messages holding it.
        pairs: dict[frozenset[str], tuple[frozenset[str], frozenset[str]]] = {}
        self.entries: dict[int, tuple[frozenset[str], frozenset[str]]] = {
            id(m): pairs.setdefault(hits[id(m)], (hits[id(m)], _NO_REFS)) for m in self.raw if is_sent(m) and not _may_point(m)
        }

    def _same(self, found: frozenset[str]) -> frozenset[str]:
        """The one object holding the set ``found``."""
        return self._canon.setdefault(found, found)

    def raw_hits(self, message: Message) -> frozenset[str] | None:
        """The wanted mentions a message of this raw history holds; None for any other message object."""
        return self._hits.get(id(message))

    def hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions any message holds: cached for the raw history's own messages."""
        hit = self._hits.get(id(message))
        return hit if hit is not None else self.compute_hits(message)

    def compute_hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions any message holds (uncached by message; its texts are cached)."""
        found = self._wanted_in(message)
        if message.tag in _PIPELINE_TAGS and self.multiword:
            text = _text(message)
            found |= self._anchored.within(text)
        return frozenset(found)

    def _wanted_in(self, message: Message) -> set[str]:
        # What ``scan`` would say, without building the message's token set: only the wanted tokens of its
        # texts are looked for, and of its calls' strings, plus the wanted ones among what its calls name
        # beside their tokens (a command line, a shell argument).
        found: set[str] = set()
        calls: list[ToolUseBlock] = []
        for b in message.content:
            if isinstance(b, ToolResultBlock):
                found |= self.text_hits(b.content)
            elif isinstance(b, TextBlock):
                found |= self.text_hits(b.text)
            elif isinstance(b, ThinkingBlock):
                found |= self.text_hits(b.thinking)
            elif isinstance(b, ToolUseBlock):
                calls.append(b)
        if calls:
            strings, beside = call_texts(calls)
            # Each string on its own: a text's diff headers count only with its own diff (see mentions.JOIN).
            for text in strings:
                found |= self.text_hits(text)
            found |= self.wanted.intersection(beside)
        return found

    def text_hits(self, text: str) -> frozenset[str]:
        # By text: a spill file, or a stage's copy of a message, holds a raw text again; configs of one
        # transcript write the same stubs again. Started over at MAX_TEXTS, so it stays small.
        hit = self._texts.get(text)
        if hit is None:
            if len(self._texts) >= MAX_TEXTS:
                self._texts.clear()
            hit = self._texts[text] = self._same(frozenset(self.lookup.held(text)))
        return hit

    def used(self, point: int, end: int) -> set[str]:
        """What the response ``raw[point:end]`` names."""
        return set().union(*self.responses[point:end])

    def needed(self, point: int, end: int) -> tuple[str, ...]:
        """What the response ``raw[point:end]`` names that it had seen before, outside the system prompt, sorted.

        A transcript's alone, so kept for every replay of it.
        """
        key = point * (len(self.raw) + 1) + end
        found = self._needed.get(key)
        if found is None:
            first = self._first.get
            # ``seen_before`` inline: a mention never seen counts as first seen at ``point``, so not before it.
            found = self._needed[key] = tuple(sorted(x for x in self.used(point, end).difference(self.system) if first(x, point) < point))
        return found

    def seen_before(self, mention: str, point: int) -> bool:
        return self._first.get(mention, point) < point

    def last_before(self, mention: str, point: int) -> int:
        """The last position before ``point`` holding a mention ``seen_before`` it."""
        occ = self.occurs[mention]
        return occ[bisect_left(occ, point) - 1]

    @classmethod
    def of(cls, raw: Sequence[Message]) -> History:
        """The history of these raw messages, shared by every replay of the same message objects."""
        return _HISTORIES.get(tuple(map(id, raw)), lambda: cls(raw))


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
        self._entries: ByIdentity[tuple[frozenset[str] | None, frozenset[str]]] = ByIdentity()
        self._context: list[Message] = []
        self._held = _Multiset()
        self._paths: Counter[str] = Counter()
        self._reach = _Multiset()
        self._spilled: dict[str, frozenset[str] | None] = {}

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

    def _spill_hits(self, path: str) -> frozenset[str] | None:
        if path not in self._spilled:
            found: frozenset[str] | None = None
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
        raw_entries = self.history.entries
        live = self._paths
        # What left and what joined, each counted in one update: a request moves a few messages, and
        # Counter.update's own checks cost more per call than counting a message's mentions.
        gone: list[frozenset[str]] = []
        for m in self._context[k:]:
            hit, refs = raw_entries.get(id(m)) or self._entry(m)
            if hit is None:
                continue
            gone.append(hit)
            for path in refs:
                live[path] -= 1
                if live[path] == 0:
                    self._reach.remove(self._spill_hits(path) or ())
        came: list[frozenset[str]] = []
        for m in seq[k:]:
            hit, refs = raw_entries.get(id(m)) or self._entry(m)
            if hit is None:
                continue
            came.append(hit)
            for path in refs:
                live[path] += 1
                if live[path] == 1:
                    # A file's mentions count once per live file, however many stubs point to it.
                    self._reach.add(self._spill_hits(path) or ())
        if gone:
            self._held.remove(chain.from_iterable(gone))
        if came:
            self._held.add(chain.from_iterable(came))
        self._context = seq
        return self._held, self._reach

    def _entry(self, message: Message) -> tuple[frozenset[str] | None, frozenset[str]]:
        """(the wanted mentions a message holds, the spill paths it points to); (None, none) for a marker,
        which is never sent. For the messages ``History.entries`` does not hold."""
        entry = self._entries.get(message)
        if entry is None:
            # Computed, not taken from the ``hits`` and ``_spill_refs`` caches: this entry is the message's one cache here.
            entry = self._entries.put(message, (self.history.hits(message), self._find_refs(message)) if is_sent(message) else (None, _NO_REFS))
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
