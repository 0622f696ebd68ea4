"""Content recall: did the context sent at request k hold the exact text the recorded response at k went on to use?

Names recall (``recall.py``) counts a name as kept when the name is anywhere
in the context; a stub's names index keeps it while the lines around it are
gone. An edit needs the exact lines it replaces, and a value the agent copies
from an old tool output needs that output. Here the recorded future says which
text the response at request ``k`` (the assistant messages ``raw[p:q]``)
used, as items:

    anchor lines  every line an edit names as the text it replaces: ``old_string``
                  (Claude Code ``Edit``/``MultiEdit``, the aider importer's
                  ``edit`` calls), ``old_str`` (``str_replace_editor``,
                  ``str_replace_based_edit_tool``, OpenHands' file editor), and
                  an ``apply_patch`` body's context and removed lines (the
                  ``*** Update File:`` format, wherever the patch sits: its own
                  input or a shell heredoc); lines under ``MIN_LINE``
                  characters are left out
    copied spans  a run of at least ``MIN_SPAN`` characters of the response's
                  text or tool input (paths and the anchors' own fields left
                  out) that occurs verbatim in one earlier source; a lone
                  token (no space in it) is a name, the names score's

Texts are compared whitespace-normalised (runs of whitespace are one space).
The sources of a history are what the agent saw or wrote: tool results, and
the content it wrote with a write or edit call (``content``, ``new_string``,
``new_str``, ``file_text`` inputs, a patch's added lines). An item is

    needed       when a source before ``p`` holds it (a span is needed by
                 construction)
    kept         when some message of the context sent at ``k`` holds it
    recoverable  when it is not kept but a spill file a stub in the context
                 points to holds it (recall's rule: a result's ``spill_path``
                 or the known path its stub names, a summary naming a path)
    lost         otherwise

and ``content_recall = kept / needed`` (None when nothing is needed). What is
only recoverable costs a re-read: ``reread_tokens`` counts the tokens of each
spill file the agent would read back to recover it, once per request. A
stub's names index (``lab.core.names_index``) is cut out of every stub before
it is read here: a list of names never holds a line, so the index cannot move
content recall. A report with fewer than ``THIN`` needed items is marked too
thin to rank configs by it.

Cost: like recall's ``History``, the transcript's index (``ContentHistory``)
depends on the transcript alone and is shared by every replay of it. It reads
every message once. Copies are found by a rolling hash of ``MIN_SPAN``-character
windows: the sources' windows start their words, a response's are taken after
every non-word character (a copy holds such a window whole unless it has no
word start ``MIN_SPAN`` characters before its end: a copy of a lone token, a
name, is the names score's), and a window found in an earlier source is grown
to the whole run both texts share, from the first source showing it (a copy
whose every window some other output showed first can be found cut short, or
missed). Every message before the last response that needs something is then
scanned once for all the items. Per replay only the requests that need
something look at their context, only the messages a stage wrote (stubs,
summaries) and spill files are scanned, and the context's items are a multiset
kept over the prefix two successive contexts share. The bench prints what it
adds to a first replay (``lab.bench.replay``, target x1.2).

The text work is in C (``_scan.c``, built at install where a compiler is
found): ``normalise`` in one pass per text; the windows rolled once per text
and matched through a bit map and a small hash table (``copies``); the run
around a found window grown (``longest_run``); the items found by a table of
their first characters rolled over each text (``items_table``, ``items_in``).
Without the module, or with a build from before these, the same rules run in
Python: numpy over many texts at once for the windows, an Aho-Corasick
automaton for the items. The two give the same results
(``tests/replayer/test_content_scan.py``); with the Python rules content recall
adds about twice as much to a first replay.
"""

from __future__ import annotations

from functools import cache
from itertools import chain
from operator import itemgetter
from typing import Any
from collections import Counter
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence

import ahocorasick

from ..core.identity import identity_key
from ..core.lru import SharedLRU
from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent, shared_prefix
from ..core.names_index import INDEX_HEADER
from ..core.store import SpillStore
from ..core.tokens.base import TokenCounter
from ..errors import StoreError
from .mentions import COMMAND_KEYS, PATH_KEYS
from .identity_caches import InContext
from .recall import IdentityMap, IdMap, shared_by_identity, spill_refs
from .report import Row

# The text scans in C (``_scan.c``, see "Cost" above), built at install where a compiler is found; without it, or
# with a build from before these were added, the Python rules below serve alone, with the same results
# (tests/replayer/test_content_scan.py holds the two to that).
_normalise_c: Callable[[str], str] | None
_items_table: Callable[[tuple[str, ...]], object] | None
_items_in: Callable[[object, str], frozenset[int]] | None
_windows_c: Callable[[Sequence[str], bool], tuple[bytes, bytes, bytes]] | None
_copies_c: Callable[[Sequence[str], Sequence[int], Sequence[str]], list[tuple[int, int, int]]] | None
_longest_run: Callable[[str, int, str, int, int], tuple[int, int]] | None
try:
    from ._scan import copies as _copies_c
    from ._scan import items_in as _items_in
    from ._scan import items_table as _items_table
    from ._scan import longest_run as _longest_run
    from ._scan import normalise as _normalise_c
    from ._scan import windows as _windows_c
except ImportError:
    _normalise_c = _items_table = _items_in = _windows_c = _copies_c = _longest_run = None

__all__ = [
    "MIN_LINE",
    "MIN_SPAN",
    "THIN",
    "ANCHOR_KEYS",
    "WRITTEN_KEYS",
    "normalise",
    "anchor_lines",
    "patch_lines",
    "ContentHistory",
    "ContentStep",
    "ContentRecall",
    "clear_cache",
    "totals",
    "thin_note",
]

MIN_LINE = 8
MIN_SPAN = 40
# Needed items below which a session's content recall is too thin to rank configs by.
THIN = 30
ANCHOR_KEYS = ("old_string", "old_str")
WRITTEN_KEYS = ("content", "new_string", "new_str", "file_text")
_PATCH_MARKS = ("*** Begin Patch", "*** Update File:", "*** Add File:")
_PATH_KEYS = frozenset(PATH_KEYS)
_PIPELINE_TAGS = ("summary", "memory", "truncation_note")
# Texts of one block are never matched across a block boundary: this is no whitespace, so it survives ``normalise``.
_SEP = "\x00"
# A source's windows start its words (after a space); a response's are looked up after any non-word
# character, so a copy that starts a word of the source is found where the response glued it to a quote or a slash.
# Places of a window in its source a copy is grown from.
_TRIES = 64
# Items are found by their first ``_KEY`` characters, then checked whole.
_KEY = 48
MAX_HISTORIES = 4
MAX_TEXTS = 50_000
# Texts longer than this are remembered by ``ContentHistory.text_hits`` only among the last ``_LONG_TEXTS`` of them.
_MEMO_CHARS = 4_096
_LONG_TEXTS = 8
_HISTORIES: SharedLRU[ContentHistory] = SharedLRU(MAX_HISTORIES)
_NONE: frozenset[int] = frozenset()
_VALUE = itemgetter(1)


def _normalise_py(text: str) -> str:
    return " ".join(text.split())


# What every scan here calls: the C rule when it was built (one pass, no list of words), the Python one otherwise.
_norm: Callable[[str], str] = _normalise_c if _normalise_c is not None else _normalise_py


def normalise(text: str) -> str:
    """``text`` with every run of whitespace one space, and none at either end."""
    return _norm(text)


def anchor_lines(text: str) -> list[str]:
    """The lines of an edit's old text worth counting: normalised, at least ``MIN_LINE`` characters."""
    return [n for line in text.splitlines() if len(n := _norm(line)) >= MIN_LINE]


def patch_lines(text: str) -> tuple[list[str], list[str]]:
    """(the lines an ``apply_patch`` body needs: context and removed lines of ``*** Update File:`` sections and
    their ``@@`` headers; the lines it adds), raw. Everything before ``*** Begin Patch`` (a heredoc's command) is left out."""
    start = text.find("*** Begin Patch")
    body = text[start:] if start >= 0 else text
    needs: list[str] = []
    adds: list[str] = []
    update = False
    for line in body.splitlines():
        if line.startswith("***"):
            update = line.startswith("*** Update File:")
        elif line.startswith("+"):
            adds.append(line[1:])
        elif update and line.startswith(("-", " ")):
            needs.append(line[1:])
        elif update and line.startswith("@@") and line[2:].strip():
            needs.append(line[2:])
    return needs, adds


def _codes(text: str) -> Any:
    """A text's code points as a numpy array."""
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def _starts(text: str, anywhere: bool = False, codes: Any = None) -> Any:
    """Where the words of a normalised text start (0, and after each space or ``_SEP``; ``anywhere``: after any
    ASCII character that is not a word character), leaving out those too near the end to hold a window.

    Found by numpy over the text's code points: no Python step per position (numpy is loaded by the
    replay's counter already).
    """
    import numpy as np

    last = len(text) - MIN_SPAN
    if last <= 0:
        return np.zeros(1 if last == 0 else 0, dtype=np.int64)
    codes = (_codes(text) if codes is None else codes)[:last]
    # Code points past ASCII read as DEL, which is no break.
    breaks = _breaks(anywhere)[np.minimum(codes, 127)]
    return np.concatenate((np.zeros(1, dtype=np.int64), np.flatnonzero(breaks) + 1))


# The rolling hash's base (odd, so invertible modulo 2**64) and its inverse.
_BASE = 0x9E3779B97F4A7C15
_INVERSE = pow(_BASE, -1, 2**64)


# The largest table of powers kept between calls (two uint64 arrays of this many entries: 4 MiB), enough for a chunk.
_KEEP_POWERS = 1 << 18
_POWERS: list[tuple[Any, Any]] = []


def _powers(size: int) -> tuple[Any, Any]:
    """(BASE**j, INVERSE**j) for j < ``size`` at least, modulo 2**64 (uint64 arithmetic wraps). One table is kept,
    grown as texts need, up to ``_KEEP_POWERS``; a longer text gets a table of its own."""
    import numpy as np

    if _POWERS and len(_POWERS[0][0]) >= size:
        return _POWERS[0]
    size = max(size, 1 << 16)
    up = np.ones(size, dtype=np.uint64)
    down = np.ones(size, dtype=np.uint64)
    np.cumprod(np.full(size - 1, _BASE, dtype=np.uint64), out=up[1:])
    np.cumprod(np.full(size - 1, _INVERSE, dtype=np.uint64), out=down[1:])
    if size <= _KEEP_POWERS:
        _POWERS[:] = [(up, down)]
    return up, down


def _hashes(text: str, starts: Any, codes: Any = None) -> Any:
    """A hash of ``text[j:j+MIN_SPAN]`` for each start ``j``: sum(code * BASE**(pos - j)) modulo 2**64."""
    import numpy as np

    codes = (_codes(text) if codes is None else codes).astype(np.uint64)
    n = len(codes)
    # Sizes doubled, so a table is rebuilt a few times per session at most.
    up, down = _powers(1 << (n + 1).bit_length())
    prefix = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(codes * up[:n], out=prefix[1:])
    return (prefix[starts + MIN_SPAN] - prefix[starts]) * down[starts]


def _lookup(keys: Any, needles: Any) -> tuple[Any, Any]:
    """(the indices of the ``needles`` found in the sorted ``keys``, where each is there). A bit table of the keys'
    low bits sorts out most needles first: a binary search of the rest costs less than one of every needle."""
    import numpy as np

    if not len(keys) or not len(needles):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    mask = np.uint64(min(max(1 << 10, 1 << (8 * len(keys)).bit_length()), 1 << 24) - 1)
    table = np.zeros(int(mask) + 1, dtype=bool)
    table[(keys & mask).astype(np.intp)] = True
    maybe = np.flatnonzero(table[(needles & mask).astype(np.intp)])
    at = np.minimum(np.searchsorted(keys, needles[maybe]), len(keys) - 1)
    hit = keys[at] == needles[maybe]
    return maybe[hit], at[hit]


# Texts hashed together, joined by ``_SEP``, up to about this many characters: few numpy calls per session,
# and memory bounded however long the session.
_CHUNK = 1 << 17


def _windows(texts: Sequence[str], anywhere: bool) -> tuple[Any, Any, Any]:
    """Every ``MIN_SPAN``-character window of ``texts`` that ``_starts`` allows and that lies inside its own text:
    (the text's index, the window's position in it, its hash), in text order, positions ascending.

    In C (``_scan.windows``: one rolling pass per text) when it was built, by numpy over chunks otherwise."""
    import numpy as np

    if _windows_c is not None:
        which, where, hashes = _windows_c(texts, anywhere)
        return np.frombuffer(which, np.int64), np.frombuffer(where, np.int64), np.frombuffer(hashes, np.uint64)
    return _windows_np(texts, anywhere)


def _windows_np(texts: Sequence[str], anywhere: bool) -> tuple[Any, Any, Any]:
    """``_windows`` by numpy: texts joined into chunks, each hashed by a few array passes."""
    import numpy as np

    which: list[Any] = []
    where: list[Any] = []
    hashes: list[Any] = []
    i = 0
    while i < len(texts):
        # A chunk: texts from i while they fit (one at least); each with its offset in the joined text.
        j, size = i, 0
        while j < len(texts) and (j == i or size + len(texts[j]) + 1 <= _CHUNK):
            size += len(texts[j]) + 1
            j += 1
        chunk = texts[i:j]
        lengths = np.array([len(t) for t in chunk], dtype=np.int64)
        offsets = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(lengths + 1)[:-1]))
        joined = _SEP.join(chunk)
        codes = _codes(joined)
        at = _starts(joined, anywhere, codes)
        if len(at):
            owner = np.searchsorted(offsets, at, side="right") - 1
            inside = at + MIN_SPAN <= offsets[owner] + lengths[owner]
            at, owner = at[inside], owner[inside]
            which.append(owner + i)
            where.append(at - offsets[owner])
            hashes.append(_hashes(joined, at, codes))
        i = j
    if not hashes:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint64)
    return np.concatenate(which), np.concatenate(where), np.concatenate(hashes)


@cache
def _breaks(anywhere: bool) -> Any:
    """Per ASCII code point, whether a window may start after it (see ``_starts``)."""
    import numpy as np

    return np.array([c in " " + _SEP or (anywhere and not (c.isalnum() or c == "_") and c != "\x7f") for c in map(chr, range(128))])


def _is_patch(text: str) -> bool:
    # Every mark starts "*** ": most strings hold none, and one search tells.
    return "*** " in text and any(mark in text for mark in _PATCH_MARKS)


def _strings(value: object, key: str | None, out: list[tuple[str | None, str, bool]], filed: bool = False) -> None:
    """Every string of a tool input: (the key nearest to it, the string, whether its object also names a path).

    A command given as a list is joined. ``content`` is written content only beside a path (``Write``'s
    ``file_path``): a to-do list's ``content`` is not a file.
    """
    if isinstance(value, str):
        out.append((key, value, filed))
    elif isinstance(value, Mapping):
        here = not _PATH_KEYS.isdisjoint(value)
        for k, v in value.items():
            # A string value, the most common, is taken here: one call fewer per string.
            if isinstance(v, str):
                out.append((str(k), v, here))
            else:
                _strings(v, str(k), out, here)
    elif isinstance(value, (list, tuple)):
        if key in COMMAND_KEYS and value and all(isinstance(v, str) for v in value):
            out.append((key, " ".join(value), filed))
            return
        for v in value:
            _strings(v, key, out, filed)


def _stub_text(block: ToolResultBlock) -> str:
    """A result's text as read here: a compacted one without its names index line."""
    if block.compacted is None or INDEX_HEADER not in block.content:
        return block.content
    return "\n".join(line for line in block.content.split("\n") if not line.startswith(INDEX_HEADER))


@dataclass(slots=True)
class _Parts:
    """One message as content recall reads it: normalised texts, joined by ``_SEP`` within each kind.

    Slotted: the history's build holds one per message of the transcript at once (a per-instance dict was
    most of that build's transient peak on a session of short messages)."""

    source: str = ""
    other: str = ""
    anchors: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()


def _parts(message: Message) -> _Parts:
    # Each string normalised once, whichever lists it goes to (a written file is a source and a candidate).
    source: list[str] = []
    other: list[str] = []
    anchors: list[str] = []
    candidates: list[str] = []
    assistant = message.role == "assistant"
    for b in message.content:
        if isinstance(b, ToolResultBlock):
            source.append(_norm(_stub_text(b)))
        elif isinstance(b, TextBlock):
            n = _norm(b.text)
            other.append(n)
            if assistant:
                candidates.append(n)
        elif isinstance(b, ThinkingBlock):
            other.append(_norm(b.thinking))
        elif isinstance(b, ToolUseBlock):
            found: list[tuple[str | None, str, bool]] = []
            _strings(b.input, None, found)
            for key, s, filed in found:
                if key in ANCHOR_KEYS:
                    anchors += anchor_lines(s)
                    other.append(_norm(s))
                elif _is_patch(s):
                    needs, adds = patch_lines(s)
                    anchors += [n for line in needs if len(n := _norm(line)) >= MIN_LINE]
                    added = _norm("\n".join(adds))
                    source.append(added)
                    candidates.append(added)
                    other.append(_norm(s))
                elif key in WRITTEN_KEYS and (filed or key != "content"):
                    n = _norm(s)
                    source.append(n)
                    candidates.append(n)
                elif key in PATH_KEYS:
                    other.append(_norm(s))
                else:
                    n = _norm(s)
                    candidates.append(n)
                    other.append(n)
    return _Parts(_SEP.join(filter(None, source)), _SEP.join(filter(None, other)), tuple(dict.fromkeys(anchors)),
                  tuple(c for c in candidates if len(c) >= MIN_SPAN))


def _grow(r: str, a: int, t: str, b: int, n: int) -> tuple[int, int]:
    """The run ``r[s:e]`` both texts share around ``r[a:a+n] == t[b:b+n]``, as (s, e)."""
    e, f = a + n, b + n
    # Whole chunks first, then characters: a copied block can be thousands of characters long.
    while r[e : e + 64] == t[f : f + 64] and e + 64 <= len(r) and f + 64 <= len(t):
        e, f = e + 64, f + 64
    while e < len(r) and f < len(t) and r[e] == t[f]:
        e, f = e + 1, f + 1
    s, g = a, b
    while s > 0 and g > 0 and r[s - 1] == t[g - 1]:
        s, g = s - 1, g - 1
    return s, e


def _longest_run_py(text: str, j: int, src: str, n: int) -> tuple[int, int]:
    """The longest run ``text[s:e]`` shares with ``src`` around ``text[j:j+n]``, grown from each of the first ``_TRIES``
    places ``src`` holds that window, as (s, e); (j, j) when it holds none (``_scan.longest_run`` in C)."""
    w = text[j : j + n]
    s, e = j, j
    at = src.find(w)
    for _ in range(_TRIES):
        if at < 0:
            break
        a, b = _grow(text, j, src, at, n)
        if b - a > e - s:
            s, e = a, b
        at = src.find(w, at + 1)
    return s, e


class _Copies:
    """Where each response's candidate texts copy a run of an earlier source (``ContentHistory``'s spans).

    Windows are compared by a rolling hash (``_windows``): the responses' windows (after every non-word
    character) first, then the sources' (at word starts), of which only those a response holds are kept, with
    the first message holding each. A response's window found in a source before it is grown into the run the
    two texts share; a hash met by chance in another text is caught there, when the window is not found in the
    text itself. In C (``_scan.copies``) when it was built, by numpy over many texts at once otherwise.
    """

    def __init__(self, parts: Sequence[_Parts], starts: Sequence[int]) -> None:
        self.parts = parts
        owners = [(i, k) for i, part in enumerate(parts) for k in range(len(part.candidates))]
        texts = [parts[i].candidates[k] for i, k in owners]
        self.found: dict[tuple[int, int], list[tuple[int, int]]] = {}
        if _copies_c is not None:
            # In C (``_scan.copies``): the same windows and hashes, matched by one hash table, no array passes.
            if owners:
                sources = [part.source for part in parts[: max(starts[i] for i, _ in owners)]]
                for c, j, m in _copies_c(texts, [starts[i] for i, _ in owners], sources):
                    self.found.setdefault(owners[c], []).append((j, m))
            return
        self._match(owners, texts, starts)

    def _match(self, owners: Sequence[tuple[int, int]], texts: Sequence[str], starts: Sequence[int]) -> None:
        """``found`` by numpy: the rule without the C module."""
        import numpy as np

        parts = self.parts
        # Every candidate window: its candidate (an index into ``owners``), its position there, its hash.
        which, where, hashes = _windows(texts, anywhere=True)
        # Sorted, duplicates left in: only looked up.
        wanted = np.sort(hashes)
        held_by: list[Any] = []
        held: list[Any] = []
        if len(wanted):
            # Only the messages before the last response with a candidate can be copied from.
            sources = [part.source for part in parts[: max(starts[i] for i, _ in owners)]]
            source_of, _, source_hashes = _windows(sources, anywhere=False)
            keep, _ = _lookup(wanted, source_hashes)
            held, held_by = [source_hashes[keep]], [source_of[keep]]
        keys = np.concatenate(held) if held else np.empty(0, np.uint64)
        # The first message holding each window: ``unique`` gives each value's first index, and sources come in order.
        keys, first = np.unique(keys, return_index=True)
        holders = np.concatenate(held_by)[first] if len(keys) else np.empty(0, np.int64)
        if not len(keys) or not len(hashes):
            return
        found, at = _lookup(keys, hashes)
        holder = holders[at]
        earlier = holder < np.array([starts[i] for i, _ in owners], dtype=np.int64)[which[found]]
        hit = found[earlier]
        for c, j, m in zip(which[hit].tolist(), where[hit].tolist(), holder[earlier].tolist(), strict=True):
            self.found.setdefault(owners[c], []).append((j, m))

    def spans(self, i: int, k: int) -> list[str]:
        """The runs of candidate ``k`` of message ``i``, of at least ``MIN_SPAN`` characters with a space in them,
        that a source before its response holds."""
        text = self.parts[i].candidates[k]
        n = MIN_SPAN
        found: list[str] = []
        done = 0
        for j, m in self.found.get((i, k), ()):
            if j < done:
                continue
            src = self.parts[m].source
            # The first source holding the window: its longest run with the text, grown both ways from each place
            # the window occurs there (a grep output repeats a path on every line).
            s, e = _longest_run(text, j, src, n, _TRIES) if _longest_run is not None else _longest_run_py(text, j, src, n)
            span = text[s:e].strip(" " + _SEP)
            if len(span) >= n and " " in span and _SEP not in span:
                found.append(span)
                done = e
            # Else the first source holding this window shares no more than a name with the text (the same path
            # on another grep line): a later window of the run, found first elsewhere, may grow into the copy.
        return found


class ContentHistory:
    """What one transcript's recorded future needs verbatim, and which of its messages hold each item.

    It depends on the transcript alone, never on a config, so every replay of the same raw history shares
    one, built on first use (``of``).
    """

    def __init__(self, raw: Sequence[Message]) -> None:
        # The messages in the one tuple repair's memo and retention's targets hold too (identity_key), not a copy
        # of them kept to the end of every replay; ``_held`` keeps that tuple findable while this history lives.
        self._held = identity_key(raw)[1]
        self.raw: tuple[Message, ...] = self._held.messages
        parts = [_parts(m) for m in self.raw]
        # The first message of the response each assistant message belongs to: what "before the response" means.
        starts: list[int] = []
        for i, m in enumerate(self.raw):
            starts.append(starts[-1] if i and m.role == "assistant" and self.raw[i - 1].role == "assistant" else i)
        copies = _Copies(parts, starts)
        self.items: list[str] = []
        ids: dict[str, int] = {}

        def item(text: str) -> int:
            found = ids.get(text)
            if found is None:
                found = ids[text] = len(self.items)
                self.items.append(text)
            return found

        # Per response start: its anchor items, and its span items (needed by construction).
        self._anchors: dict[int, set[int]] = {}
        self._spans: dict[int, set[int]] = {}
        for i, (m, part) in enumerate(zip(self.raw, parts, strict=True)):
            if m.role != "assistant" or not (part.anchors or part.candidates):
                continue
            p = starts[i]
            covered = " ".join(part.anchors)
            self._anchors.setdefault(p, set()).update(item(a) for a in part.anchors)
            spans = self._spans.setdefault(p, set())
            for k in range(len(part.candidates)):
                for span in copies.spans(i, k):
                    # What the response's own anchors name is theirs: an edit's new text repeats its old lines.
                    if span not in covered:
                        spans.add(item(span))
        # The items' lookup: the C table when it was built, the Aho-Corasick automaton of the Python rule otherwise.
        self._table = _items_table(tuple(self.items)) if _items_table is not None and _items_in is not None and self.items else None
        self.automaton = self._automaton() if self._table is None else None
        self._texts: dict[str, frozenset[int]] = {}
        self._long: dict[str, frozenset[int]] = {}
        # Which items each raw message holds, by identity (``raw`` keeps every message alive; ``recall.IdMap``, no
        # int object per key), and where a source first holds each item: an anchor is needed when that is before
        # its response.
        self._hits: IdentityMap[frozenset[int]] = IdMap()
        first: dict[int, int] = {}
        # Nothing needed anywhere (no item): no message is looked at again, so none is indexed. Nor is a message at
        # or after the last response that needs something: no context it can be in is asked about.
        limit = max(self._anchors.keys() | self._spans.keys(), default=0) if self.items else 0
        hits = self.text_hits
        for i, (m, part) in enumerate(zip(self.raw[:limit], parts[:limit], strict=True)):
            src = hits(part.source, keep=False) if part.source else _NONE
            if src:
                for x in src:
                    first.setdefault(x, i)
                self._hits.put(m, src | hits(part.other, keep=False) if part.other else src)
            else:
                self._hits.put(m, hits(part.other, keep=False) if part.other else _NONE)
        # A replay's running state takes a raw message's items alone, in one lookup, for the sent ones that can point
        # to no spill file (no compacted result, not written by a pipeline): the others are these few, by id.
        self.special: frozenset[int] = frozenset(id(m) for m in self.raw[:limit] if not is_sent(m) or _may_point(m))
        self._needed: dict[int, tuple[int, ...]] = {}
        for p in sorted(set(self._anchors) | set(self._spans)):
            anchors = {x for x in self._anchors.get(p, ()) if first.get(x, p) < p}
            self._needed[p] = tuple(sorted(anchors | self._spans.get(p, set())))

    def _automaton(self) -> ahocorasick.Automaton | None:
        if not self.items:
            return None
        keys: dict[str, list[int]] = {}
        for x, text in enumerate(self.items):
            keys.setdefault(text[:_KEY], []).append(x)
        automaton = ahocorasick.Automaton()
        for key, xs in keys.items():
            automaton.add_word(key, tuple(xs))
        automaton.make_automaton()
        return automaton

    def text_hits(self, text: str, *, keep: bool = True) -> frozenset[int]:
        """The items a normalised text holds. Kept by text (``keep``): a spill file or a stage's copy holds a text
        again, and the configs of one transcript write the same stubs. The build keeps none: the raw messages'
        items are kept by message, and their normalised texts would be a second copy of the transcript."""
        if not self.items or not text:
            return _NONE
        memo = self._texts if len(text) <= _MEMO_CHARS else self._long
        hit = memo.get(text) if keep else None
        if hit is not None:
            return hit
        if self._table is not None and _items_in is not None:
            hit = _items_in(self._table, text) or _NONE
        else:
            assert self.automaton is not None
            items = self.items
            # The distinct values matched, collected in C (a common short line matches again and again); an item
            # longer than its key is checked whole.
            matched = set(map(_VALUE, self.automaton.iter(text)))
            found = {x for x in set().union(*matched) if len(items[x]) <= _KEY or items[x] in text} if matched else ()
            hit = frozenset(found) if found else _NONE
        if keep:
            # A longer text (a summary, a long file): the last few only (a stage that rewrites a message every request
            # asks again); kept with the rest, every summary's normalised copy lived as long as the history.
            if len(memo) >= (MAX_TEXTS if memo is self._texts else _LONG_TEXTS):
                memo.clear()
            memo[text] = hit
        return hit

    def hits(self, message: Message) -> frozenset[int]:
        """The items a message holds: cached for the raw history's own messages."""
        hit = self._hits.get(message)
        if hit is not None:
            return hit
        if not self.items:
            return _NONE
        part = _parts(message)
        return self.text_hits(part.source) | self.text_hits(part.other)

    def raw_hits(self, message: Message) -> frozenset[int] | None:
        return self._hits.get(message)

    def plain(self, message: Message) -> bool:
        """Whether a message is one of the indexed raw ones, sent and pointing to no spill file: its items are all
        a replay's running state needs of it."""
        return message in self._hits and id(message) not in self.special

    def needed(self, point: int, end: int) -> tuple[int, ...]:
        """The items the response starting at ``point`` needed (``end`` is where it stops; one response starts at ``point``)."""
        return self._needed.get(point, ())

    @property
    def needed_total(self) -> int:
        """Items needed over the whole transcript, response by response."""
        return sum(len(v) for v in self._needed.values())

    @classmethod
    def of(cls, raw: Sequence[Message]) -> ContentHistory:
        """The content history of these raw messages, shared by every replay of the same message objects."""
        return shared_by_identity(_HISTORIES, raw, lambda: cls(raw))


def clear_cache() -> None:
    """Forget every shared content history (the bench measures a first replay this way)."""
    _HISTORIES.clear()


@dataclass(frozen=True)
class ContentStep:
    """One request's content counts: needed = kept + recoverable + lost."""

    needed: int = 0
    kept: int = 0
    recoverable: int = 0
    lost: int = 0
    reread_tokens: int = 0

    @property
    def recall(self) -> float | None:
        return self.kept / self.needed if self.needed else None

    def fields(self) -> dict[str, object]:
        """The Row fields this step fills."""
        return {
            "content_needed": self.needed,
            "content_kept": self.kept,
            "content_recoverable": self.recoverable,
            "content_lost": self.lost,
            "content_recall": self.recall,
            "reread_tokens": self.reread_tokens,
        }


# What a request that needs nothing counts: one frozen step, shared (most requests need nothing).
_NOTHING = ContentStep()


def _may_point(message: Message) -> bool:
    return message.tag in _PIPELINE_TAGS or any(isinstance(b, ToolResultBlock) and b.compacted is not None for b in message.content)


def _text(message: Message) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else b.content for b in message.content if isinstance(b, (TextBlock, ToolResultBlock)))


class ContentRecall:
    """The running state of content recall over one replay; call ``step`` once per request, in order."""

    def __init__(self, raw: Sequence[Message], store: SpillStore | None, spill_paths: Mapping[str, str], counter: TokenCounter | None = None,
                 *, incremental: bool = True) -> None:
        self.store, self.spill_paths, self.counter, self.incremental = store, spill_paths, counter, incremental
        self.history = ContentHistory.of(raw)
        # Only while the message is in the context (``InContext``): the values of every stub and summary, kept.
        self._entries: InContext[tuple[frozenset[int], frozenset[str]]] = InContext()
        self._context: list[Message] = []
        self._added: Counter[int] = Counter()
        self._removed: Counter[int] = Counter()
        self._paths: Counter[str] = Counter()
        self._spilled: dict[str, tuple[frozenset[int], int] | None] = {}
        self._stale = False

    def _refs(self, message: Message) -> frozenset[str]:
        """Spill paths a message points to, as names recall finds them."""
        return spill_refs(message, self.spill_paths)

    def _entry(self, message: Message) -> tuple[frozenset[int], frozenset[str]] | None:
        """(the items a message holds, the spill paths it points to); None for a marker, which is never sent."""
        if not is_sent(message):
            return None
        raw = self.history.raw_hits(message)
        if raw is not None and not _may_point(message):
            return raw, frozenset()
        entry = self._entries.get(message)
        if entry is None:
            entry = self._entries.put(message, (self.history.hits(message), self._refs(message)))
        return entry

    def _spill(self, path: str) -> tuple[frozenset[int], int] | None:
        """(the items a spill file holds, its tokens); None when the store has no such file."""
        if path not in self._spilled:
            found: tuple[frozenset[int], int] | None = None
            if self.store is not None and self.store.exists(path):
                try:
                    text = self.store.read(path)
                except StoreError:
                    text = None
                if text is not None:
                    tokens = self.counter.count_text(text) if self.counter is not None else len(text) // 4
                    found = (self.history.text_hits(_norm(text)), tokens)
            self._spilled[path] = found
        return self._spilled[path]

    def _update(self, context: Sequence[Message], same: int | None) -> None:
        seq = list(context)
        if not self.incremental:
            self._added, self._removed, self._paths = Counter(), Counter(), Counter()
            self._context = []
        k = shared_prefix(self._context, seq) if same is None or not self.incremental else min(same, len(self._context), len(seq))
        raw, special = self.history._hits.get, self.history.special
        gone: list[frozenset[int]] = []
        came: list[frozenset[int]] = []
        for moved, hits, sign in ((self._context[k:], gone, -1), (seq[k:], came, 1)):
            for m in moved:
                # Most messages are raw ones holding nothing: one lookup, nothing counted.
                hit = raw(m)
                if hit is not None and not (special and id(m) in special):
                    if hit:
                        hits.append(hit)
                    continue
                entry = self._entry(m)
                if entry is not None:
                    if entry[0]:
                        hits.append(entry[0])
                    for path in entry[1]:
                        self._paths[path] += sign
        if gone:
            self._removed.update(chain.from_iterable(gone))
        if came:
            self._added.update(chain.from_iterable(came))
        if k < len(self._context):
            self._entries.forget(self._context[k:], seq[k:])
        self._context = seq

    def step(self, point: int, end: int, context: Sequence[Message], *, same: int | None = None) -> ContentStep:
        """Content recall at the request answered by ``raw[point:end]``, whose context is ``context`` (markers allowed).

        ``same``: when the caller knows it, how many leading messages ``context`` shares with the previous step's.
        """
        needed = self.history.needed(point, end)
        if not needed:
            # Nothing to look up: the running state waits for the next request that needs something, which then
            # compares its context with the last one it saw (``same`` speaks of the previous request's).
            self._stale = True
            return _NOTHING
        self._update(context, None if self._stale else same)
        self._stale = False
        added, removed = self._added.get, self._removed.get
        missing = [x for x in needed if added(x, 0) <= removed(x, 0)]
        if not missing:
            return ContentStep(needed=len(needed), kept=len(needed))
        live = sorted(p for p, n in self._paths.items() if n > 0)
        files = [(p, f) for p in live if (f := self._spill(p)) is not None]
        recoverable = 0
        reread: set[str] = set()
        for x in missing:
            # The first live file that holds it is the one read back; each file is read once per request.
            path = next((p for p, (held, _) in files if x in held), None)
            if path is not None:
                recoverable += 1
                reread.add(path)
        tokens = sum(f[1] for p, f in files if p in reread)
        return ContentStep(needed=len(needed), kept=len(needed) - len(missing), recoverable=recoverable,
                           lost=len(missing) - recoverable, reread_tokens=tokens)


def totals(rows: Sequence[Row]) -> dict[str, object]:
    """Report fields over all rows: summed counts, kept / needed, and whether the session is too thin to rank by."""
    needed = sum(r.content_needed for r in rows)
    kept = sum(r.content_kept for r in rows)
    return {
        "content_needed": needed,
        "content_kept": kept,
        "content_recoverable": sum(r.content_recoverable for r in rows),
        "content_lost": sum(r.content_lost for r in rows),
        "content_recall": kept / needed if needed else None,
        "content_thin": needed < THIN,
        "reread_tokens": sum(r.reread_tokens for r in rows),
    }


def thin_note(needed: int) -> str | None:
    """The report's note when its content recall rests on too few items to rank configs by."""
    if needed >= THIN:
        return None
    return (f"content recall rests on {needed} needed item(s), fewer than {THIN}: too thin to rank configs by "
            "(replay more sessions, or generated ones with planted content dependencies)")
