"""Content recall's text scans in C (``lab/replayer/_scan.c``) against its Python rules (``lab/replayer/content.py``).

The C functions are built at install where a compiler is found; without them content recall runs its Python
rules. Both paths must give the same items, the same needed sets and the same report figures: each C function is
held to its Python rule on arbitrary texts, and whole histories and replays to the fallback's.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.presets import preset
from lab.generator import generate_planted
from lab.replayer import clear_caches, replay
from lab.replayer import content as c

_C_NAMES = ("_normalise_c", "_items_table", "_items_in", "_windows_c", "_copies_c", "_longest_run")


def _built() -> None:
    if any(getattr(c, name) is None for name in _C_NAMES):
        pytest.skip("lab.replayer._scan was built without content recall's scans (or not at all): the Python rules serve alone")


@pytest.fixture
def python_rules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Content recall as an install without the C module runs it."""
    for name in _C_NAMES:
        monkeypatch.setattr(c, name, None)
    monkeypatch.setattr(c, "_norm", c._normalise_py)
    clear_caches()
    yield
    clear_caches()


# Whitespace of every kind str.split() knows (ASCII, Latin-1, wide), the block separator, word and non-word
# characters, and characters of every width, so texts come in all three of CPython's kinds.
_ALPHABET = list("ab_Z09 .,/'\"-()\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\x00\x7féß中😀\u2028\u3000\u200b")
_text = st.lists(st.sampled_from(_ALPHABET) | st.characters(), max_size=120).map("".join)
_words = st.sampled_from(["alpha beta", "gamma_delta", " ", "/", "é", "中文", "😀", "x" * 9, "\x00", "'", "ab"])
_phrase = st.lists(_words, max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_normalise_in_c_is_the_python_rule(text: str) -> None:
    _built()
    assert c._normalise_c is not None
    got = c._normalise_c(text)
    want = c._normalise_py(text)
    # Equal strings, and built at their narrowest kind: a hash and a dict lookup agree with the Python rule's.
    assert got == want and hash(got) == hash(want) and {want: 1}.get(got) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(_phrase.filter(bool), max_size=8), st.lists(_phrase, max_size=4))
def test_the_item_table_finds_what_in_finds(items: list[str], texts: list[str]) -> None:
    _built()
    assert c._items_table is not None and c._items_in is not None
    items = list(dict.fromkeys(items))
    table = c._items_table(tuple(items))
    # Texts that hold some items whole, some cut short, and some not at all.
    for text in [*texts, " ".join(items), "".join(x[:-1] for x in items), texts[0] + "".join(items[:2]) if texts else ""]:
        assert c._items_in(table, text) == frozenset(x for x, item in enumerate(items) if item in text)


# Items over a few characters, so many share their first characters (one word, one bucket of the table) and some
# hold others; wide characters fold to the byte of another ("Š" and "𐁠" to that of "a", "ā" to that of "\x00").
_crowded = st.text(st.sampled_from("ab/ \x00Šā𐁠é"), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_crowded, max_size=200), st.lists(st.text(st.sampled_from("ab/ \x00Šā𐁠éxyz"), max_size=300), max_size=4))
def test_a_crowded_item_table_finds_what_in_finds(items: list[str], texts: list[str]) -> None:
    _built()
    assert c._items_table is not None and c._items_in is not None
    table = c._items_table(tuple(items))
    # Each text asked twice: what a call marks as found is cleared for the next one.
    for text in [*texts, "".join(items), "".join(items[::2]), *texts]:
        assert c._items_in(table, text) == frozenset(x for x, item in enumerate(items) if item in text)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 9])
def test_a_large_item_table_finds_what_in_finds(width: int) -> None:
    _built()
    assert c._items_table is not None and c._items_in is not None
    rnd = random.Random(width)
    letters = "abcdefgh_/.0"
    # Thousands of items, the shortest `width` characters long (the table's key), duplicates and an empty one
    # among them; then texts of all three kinds that hold some of them whole and some cut short.
    items = ["".join(rnd.choice(letters) for _ in range(rnd.randint(width, width + 30))) for _ in range(6000)]
    items += ["x" * width, items[17], "", "é" * width + "ab", "😀" + items[3], "中" + "a" * width]
    table = c._items_table(tuple(items))
    picked = rnd.sample(items, 300)
    texts = [
        " ".join(picked),
        " ".join(x[:-1] for x in picked),
        "é".join(picked[:100]) + "😀",
        "中 ".join(picked[100:200]),
        "😀" + "".join(rnd.choice(letters) for _ in range(20_000)),
        "",
        "a" * (width - 1),
    ]
    for text in texts * 2:
        want = frozenset(x for x, item in enumerate(items) if item in text)
        assert c._items_in(table, text) == want
    assert len(c._items_in(table, texts[0])) >= 300


@settings(max_examples=200, deadline=None)
@given(st.lists(_phrase, max_size=6), st.booleans())
def test_windows_in_c_are_the_numpy_windows(texts: list[str], anywhere: bool) -> None:
    _built()
    got = c._windows(texts, anywhere)
    want = c._windows_np(texts, anywhere)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]


def test_windows_of_texts_longer_than_a_numpy_chunk() -> None:
    _built()
    # The numpy rule joins texts into chunks of about _CHUNK characters: texts across and beyond a chunk's end.
    line = "def compute_total(items): return sum(x.price for x in items) \u2014 "
    texts = [line * (c._CHUNK // len(line) + 3), "short", line * 50 + "😀" + line * 50, line * (c._CHUNK // len(line) - 1)]
    for anywhere in (False, True):
        got = c._windows(texts, anywhere)
        want = c._windows_np(texts, anywhere)
        assert [x.tolist() for x in got] == [x.tolist() for x in want]


@settings(max_examples=200, deadline=None)
@given(st.lists(_phrase, min_size=1, max_size=5), st.lists(_phrase, max_size=5), st.data())
def test_copies_in_c_are_the_numpy_matches(candidates: list[str], sources: list[str], data: st.DataObject) -> None:
    _built()
    assert c._copies_c is not None
    # Candidates copy runs of the sources, or not; each candidate's limit says which sources come before it.
    candidates = [x + (data.draw(st.sampled_from(sources)) if sources else "") + x for x in candidates]
    limits = data.draw(st.lists(st.integers(0, len(sources) + 1), min_size=len(candidates), max_size=len(candidates)))
    parts = [c._Parts(source=s) for s in sources] + [c._Parts(candidates=(x,)) for x in candidates]
    starts = list(range(len(sources))) + limits
    owners = [(len(sources) + k, 0) for k in range(len(candidates))]
    fallback = c._Copies.__new__(c._Copies)
    fallback.parts, fallback.found = parts, {}
    fallback._match(owners, candidates, starts)
    got: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, j, m in c._copies_c(candidates, limits, [p.source for p in parts[: max(limits, default=0)]]):
        got.setdefault(owners[k], []).append((j, m))
    assert got == fallback.found


@settings(max_examples=300, deadline=None)
@given(_phrase, _phrase, st.data())
def test_longest_run_in_c_is_the_python_rule(text: str, src: str, data: st.DataObject) -> None:
    _built()
    assert c._longest_run is not None
    n = min(c.MIN_SPAN, len(text))
    j = data.draw(st.integers(0, len(text) - n))
    # A source that holds the window, often more than once, with other text around it.
    src = data.draw(st.sampled_from([src, src + text[j : j + n] + src, text + src + text[max(0, j - 3) :]]))
    assert c._longest_run(text, j, src, n, c._TRIES) == c._longest_run_py(text, j, src, n)


def _history(raw: list) -> tuple:
    h = c.ContentHistory(raw)
    # Messages are compared by position: the two histories index the same message objects.
    return h.items, h._needed, [h.raw_hits(m) for m in h.raw], [h.plain(m) for m in h.raw]


def _corpus_transcripts() -> list:
    corpus = os.environ.get("LAB_CORPUS")
    if not corpus or not Path(corpus).is_dir():
        return []
    from lab.formats import load

    return [load(p) for p in sorted(Path(corpus).rglob("*")) if p.is_file() and p.suffix in (".jsonl", ".json", ".traj")]


def _transcripts() -> list:
    generated = [generate_planted(seed=seed, requests=120, content_dependencies=40)[0] for seed in (2, 5)]
    return generated + _corpus_transcripts()


def test_a_history_is_the_same_with_the_python_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    _built()
    transcripts = _transcripts()
    with_c = [_history(t.messages) for t in transcripts]
    for name in _C_NAMES:
        monkeypatch.setattr(c, name, None)
    monkeypatch.setattr(c, "_norm", c._normalise_py)
    assert [_history(t.messages) for t in transcripts] == with_c
    assert sum(len(h[0]) for h in with_c) > 100


_FIELDS = ("content_needed", "content_kept", "content_recoverable", "content_lost", "content_recall", "reread_tokens")


def _figures() -> list[list[tuple]]:
    t, _ = generate_planted(seed=7, requests=150, content_dependencies=50)
    out = []
    for name, window in (("lab", 16_000), ("mewcode", 32_000), ("claude-code", 16_000)):
        clear_caches()
        report = replay(t, preset(name), window=window, resume=False)
        out.append([tuple(getattr(row, f) for f in _FIELDS) for row in report.rows])
    return out


@pytest.fixture(scope="module")
def c_figures() -> list[list[tuple]]:
    if any(getattr(c, name) is None for name in _C_NAMES):
        pytest.skip("lab.replayer._scan was built without content recall's scans: the Python rules serve alone")
    return _figures()


def test_a_replay_counts_the_same_with_the_python_rules(c_figures: list[list[tuple]], python_rules: None) -> None:
    assert _figures() == c_figures
    assert any(row[0] for rows in c_figures for row in rows) and any(row[3] or row[2] for rows in c_figures for row in rows)


def test_ci_builds_content_recalls_scans() -> None:
    # The install makes the module optional, so a build that failed would only make content recall slower: CI says so.
    if not os.environ.get("CI"):
        pytest.skip("checked in CI, where the install must have built lab.replayer._scan")
    assert all(getattr(c, name) is not None for name in _C_NAMES), "lab.replayer._scan lacks content recall's scans: see the pip install output"
