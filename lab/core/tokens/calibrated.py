"""The lab's own fast token estimator, calibrated against o200k.

Why not one ratio per kind of text? That was the first design: classify each
chunk as prose, code, JSON, CJK, digits or whitespace-heavy and divide its
length by a fitted chars-per-token ratio for that class. On the corpus it
plateaued at 6-7% mean error per transcript (15% on the worst), because real
tool output is a mix inside every chunk (a JSON envelope around escaped source
code, ``cat -n`` line numbers before prose) and a hard class boundary cannot
follow that. So the classes moved down to the characters: every byte of the
text falls in one character class (lowercase, uppercase, digit, space, tab,
newline, ASCII punctuation, CJK, other non-ASCII, UTF-8 continuation) and each
class has its own tokens-per-character weight, which is exactly a per-class
chars-per-token ratio applied to the class's share of the text. Four boundary
counts add what BPE pre-tokenisation does at class changes: a camelCase hump
starts a new piece, punctuation followed by a word, an indented line, and a
run of punctuation (``----`` or ``})``) that merges into fewer tokens.

Every feature is a ``bytes.count`` over one ``bytes.translate`` of the UTF-8
text, so the estimate runs in C at several times tiktoken's speed. Features
are additive over a text's parts, so long and short texts are treated alike.

How ``COEFFICIENTS`` were fitted: ``fit`` (ordinary least squares on 2 KiB
chunks, target = exact o200k counts) over ``lab.bench.tokens.
calibration_texts()``: the block texts of the nine transcripts of the shared
corpus (Claude Code, SWE-agent, mini-swe-agent, OpenHands, Codex sessions)
plus CPython stdlib sources and docstrings, generated JSON, logs and number
tables, and CJK/Cyrillic/accented prose. ``python -m lab bench`` reports the
resulting error per transcript; because the corpus is part of the fit, its
numbers are in-sample, and the bench also prints a leave-one-out figure.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

from ...errors import ConfigError
from .base import BaseCounter, TokenCounter

__all__ = [
    "FEATURES",
    "COEFFICIENTS",
    "Coefficients",
    "CalibratedCounter",
    "features",
    "estimate",
    "fit",
    "chunk_rows",
    "solve",
]

FEATURES: tuple[str, ...] = (
    "lower",  # a-z
    "upper",  # A-Z
    "digit",
    "space",
    "tab",
    "newline",  # \n and \r
    "punct",  # every other ASCII byte, control characters included
    "cjk",  # lead bytes of U+3000..U+D7FF: CJK, kana, hangul
    "other",  # lead bytes of every other non-ASCII character
    "cont",  # UTF-8 continuation bytes (1-3 per non-ASCII character)
    "camel",  # lowercase followed by uppercase: BPE starts a new piece there
    "punct_word",  # punctuation followed by lowercase: a word piece begins
    "indent",  # newline followed by space: the indentation becomes its own piece
    "punct_pairs",  # non-overlapping pairs of punctuation: runs merge into few tokens
)


def _table() -> bytes:
    t = bytearray(b"." * 256)
    for chars, cls in (
        (string.ascii_lowercase, "a"),
        (string.ascii_uppercase, "A"),
        (string.digits, "0"),
        (" ", " "),
        ("\t", "t"),
        ("\n\r", "n"),
    ):
        for ch in chars:
            t[ord(ch)] = ord(cls)
    for b in range(0x80, 0xC0):
        t[b] = ord("x")
    for b in range(0xC0, 0x100):
        t[b] = ord("u")
    # Three-byte lead bytes E3..ED cover U+3000..U+D7FF (CJK punctuation, kana,
    # ideographs, hangul); E2 (arrows, box drawing, dashes) stays "other".
    for b in range(0xE3, 0xEE):
        t[b] = ord("k")
    return bytes(t)


_MAP = _table()


@dataclass(frozen=True)
class Coefficients:
    """Tokens per unit of each feature, in ``FEATURES`` order."""

    weights: tuple[float, ...]
    # Where these came from, shown in reports.
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise ConfigError(f"calibrated counter needs {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(self.weights)}")
        if not all(math.isfinite(w) for w in self.weights):
            raise ConfigError("calibrated counter weights must be finite numbers")

    @cached_property
    def unrolled(self) -> tuple[float, ...]:
        """The weights rearranged for ``estimate``: the lowercase weight, then each class's excess over it."""
        w = self.weights
        return (w[0],) + tuple(x - w[0] for x in w[1:10]) + w[10:]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURES, self.weights))


# Fitted by ``fit`` as described in the module docstring (o200k_base target).
COEFFICIENTS = Coefficients(
    weights=(0.18494, 0.30022, 0.7974, 0.11461, 0.99007, 0.47761, 0.37814, -0.18565, -0.16937, 0.47199, 0.33413, 0.59193, 0.34883, 0.04947),
    source="o200k_base fit",
)


def features(text: str) -> tuple[int, ...]:
    """The feature counts of ``text`` in ``FEATURES`` order."""
    m = text.encode("utf-8", "surrogatepass").translate(_MAP)
    upper = m.count(b"A")
    digit = m.count(b"0")
    space = m.count(b" ")
    tab = m.count(b"t")
    newline = m.count(b"n")
    punct = m.count(b".")
    if text.isascii():
        cjk = other = cont = 0
    else:
        cjk = m.count(b"k")
        other = m.count(b"u")
        cont = m.count(b"x")
    lower = len(m) - upper - digit - space - tab - newline - punct - cjk - other - cont
    return (
        lower,
        upper,
        digit,
        space,
        tab,
        newline,
        punct,
        cjk,
        other,
        cont,
        m.count(b"aA"),
        m.count(b".a"),
        m.count(b"n "),
        m.count(b".."),
    )


def estimate(text: str, coefficients: Coefficients = COEFFICIENTS) -> int:
    """Estimated o200k tokens of ``text``: at least 1 for any non-empty text, at most its UTF-8 bytes.

    The same sum as ``weights . features(text)``, unrolled: this is the hot path
    of every replay, and a generator over 14 pairs would cost more than the
    counting itself on short texts. ``lower`` is never counted: its weight is
    applied to every byte and the other classes carry the difference.
    """
    if not text:
        return 0
    m = text.encode("utf-8", "surrogatepass").translate(_MAP)
    count = m.count
    n = len(m)
    base, d_upper, d_digit, d_space, d_tab, d_newline, d_punct, d_cjk, d_other, d_cont, camel, punct_word, indent, pairs = (
        coefficients.unrolled
    )
    raw = (
        base * n
        + d_upper * count(b"A")
        + d_digit * count(b"0")
        + d_space * count(b" ")
        + d_tab * count(b"t")
        + d_newline * count(b"n")
        + d_punct * count(b".")
        + camel * count(b"aA")
        + punct_word * count(b".a")
        + indent * count(b"n ")
        + pairs * count(b"..")
    )
    if not text.isascii():
        raw += d_cjk * count(b"k") + d_other * count(b"u") + d_cont * count(b"x")
    # A byte-level BPE never needs more tokens than bytes, and never zero for real text.
    return max(1, min(n, round(raw)))


class CalibratedCounter(BaseCounter):
    """Fast o200k estimate from character-class counts (see the module docstring)."""

    name = "calibrated"

    def __init__(self, coefficients: Coefficients | Sequence[float] | None = None) -> None:
        super().__init__()
        if coefficients is None:
            coefficients = COEFFICIENTS
        elif not isinstance(coefficients, Coefficients):
            coefficients = Coefficients(weights=tuple(float(w) for w in coefficients), source="custom")
        self.coefficients = coefficients

    def _count(self, text: str) -> int:
        return estimate(text, self.coefficients)


def chunk_rows(
    texts: Iterable[str], exact_counter: TokenCounter, *, chunk_chars: int = 2048
) -> tuple[list[tuple[int, ...]], list[int]]:
    """Feature rows and exact counts for ``texts`` cut into ``chunk_chars`` pieces (the input of ``solve``)."""
    if chunk_chars < 16:
        raise ConfigError(f"chunk_chars must be >= 16, got {chunk_chars}")
    rows: list[tuple[int, ...]] = []
    targets: list[int] = []
    for text in texts:
        for i in range(0, len(text), chunk_chars):
            chunk = text[i : i + chunk_chars]
            rows.append(features(chunk))
            targets.append(exact_counter.count_text(chunk))
    return rows, targets


def solve(rows: Sequence[Sequence[int]], targets: Sequence[int], *, source: str = "fit") -> Coefficients:
    """Ordinary least squares of ``targets`` on ``rows``. Needs numpy (installed with pandas)."""
    if len(rows) < len(FEATURES):
        raise ConfigError(f"fitting needs at least {len(FEATURES)} chunks of text, got {len(rows)}")
    import numpy as np

    x = np.asarray(rows, dtype=float)
    y = np.asarray(targets, dtype=float)
    weights, *_ = np.linalg.lstsq(x, y, rcond=None)
    return Coefficients(weights=tuple(round(float(w), 5) for w in weights), source=source)


def fit(texts: Iterable[str], exact_counter: TokenCounter, *, chunk_chars: int = 2048, source: str = "fit") -> Coefficients:
    """Weights that make ``estimate`` track ``exact_counter`` on ``texts``.

    Texts are cut into ``chunk_chars`` pieces first: a least-squares fit on
    whole texts would let a few 40 KB tool outputs decide every weight. A
    feature that never occurs in ``texts`` gets weight 0 (so fit on some CJK).
    """
    rows, targets = chunk_rows(texts, exact_counter, chunk_chars=chunk_chars)
    return solve(rows, targets, source=source)
