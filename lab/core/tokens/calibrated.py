"""The lab's own fast token estimator, calibrated against o200k.

Why not one chars-per-token ratio per kind of text? That was the first
design: classify each chunk as prose, code, JSON, CJK, digits or
whitespace-heavy and divide its length by a fitted ratio for that class. On
the corpus it plateaued at 6-7% mean error per transcript (15% on the worst):
real tool output mixes kinds inside every chunk (a JSON envelope around
escaped source, ``cat -n`` numbers before prose) and a hard class boundary
cannot follow that. So the classes moved down to the bytes. The estimate is a
weighted sum of counts, each weight a tokens-per-unit ratio of one class:

    ascii        every ASCII byte: the base ratio
    digit        extra per digit: o200k cuts numbers into 1-3 digit pieces
    punct_word   punctuation then a lowercase letter: a new word piece starts
    space_digit  space then digit: a number piece starts
    space_pairs  pairs of spaces: a run of spaces merges into one token (<= 0)
    letter_pairs pairs of lowercase letters: long words are cheaper per letter (<= 0)
    two_byte     per accented Latin, Greek, Cyrillic, Hebrew, Arabic character
    cjk          per CJK, kana or hangul character (U+3000..U+D7FF)
    three_byte   per other three-byte character: arrows, box drawing, symbols
    four_byte    per four-byte character: emoji

Which counts to keep was measured, not guessed: sets of up to eight counts
were fitted and scored on per-transcript error, leave-one-transcript-out error,
error on other kinds of text (code, prose, logs, tables, JSON, URLs) and on
CPU time. Boundary counts catch most of what BPE pre-tokenisation does, and
each costs one pass. Every count is a ``bytes.count`` over one
``bytes.translate`` of the UTF-8 text, so the estimate runs in C, several
times faster than tiktoken, and counts are additive over a text's parts.

Known weak spots, kept out of the fit on purpose so they do not bend the
weights for real transcripts (``python -m lab bench`` prints them): base64 and
other dense mixed-case blobs are underestimated by 40-50%, punctuation-dense
minified code by up to 30%, and long runs of one repeated character (ruler
lines of ``=`` or padding spaces) are overestimated several times over, since
BPE swallows such a run in a token or two.

How ``COEFFICIENTS`` were fitted: ``fit`` (least squares with the signs above,
on 2 KiB chunks, target = exact o200k_base counts) over ``lab.bench.tokens.
calibration_texts(<corpus files>)``: the block texts of the seven transcripts
in the shared corpus (Claude Code, SWE-agent, mini-swe-agent, OpenHands and
Codex sessions, sidechains included) plus CPython stdlib sources and
docstrings, generated logs, number tables, hex lists, URLs, JSON, padded
tables and ``tree`` listings, CPython's CJK test texts and short passages in
a dozen languages and with emoji. Because the corpus is part of the fit,
``python -m lab bench`` reports its error in-sample and also refits without
each transcript in turn (leave-one-out). When these weights were fitted the
bench read: mean |error| per transcript 1.8% (worst 4.0%) in-sample, 2.5%
(worst 4.6%) leave-one-out, 5.7% per message, about 8x tiktoken's speed.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import ConfigError
from .base import BaseCounter, TokenCounter

__all__ = [
    "FEATURES",
    "SIGNS",
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
    "ascii",
    "digit",
    "punct_word",
    "space_digit",
    "space_pairs",
    "letter_pairs",
    "two_byte",
    "cjk",
    "three_byte",
    "four_byte",
)
# The sign each weight must have: merges of runs lower the count, everything else raises it.
# Fitting under these signs keeps the estimator monotone in sensible directions on text
# unlike anything it was fitted on (an unconstrained fit traded signs to shave 0.2%).
SIGNS: tuple[int, ...] = (1, 1, 1, 1, -1, -1, 1, 1, 1, 1)


def _table() -> bytes:
    # One class letter per byte value; the counts look for these letters.
    t = bytearray(b"." * 256)  # "." = ASCII punctuation and control characters
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
    # Non-ASCII characters are classed by their UTF-8 lead byte.
    for lo, hi, cls in (
        (0x80, 0xC0, "x"),  # continuation bytes
        (0xC0, 0xE0, "u"),  # two bytes
        (0xE0, 0xF0, "w"),  # three bytes ...
        (0xE3, 0xEE, "k"),  # ... except U+3000..U+D7FF: CJK punctuation, kana, ideographs, hangul
        (0xF0, 0x100, "e"),  # four bytes
    ):
        for b in range(lo, hi):
            t[b] = ord(cls)
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

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURES, self.weights, strict=True))


# Fitted by ``fit`` as described in the module docstring (o200k_base target).
COEFFICIENTS = Coefficients(
    weights=(0.36594, 0.38555, 0.70107, 0.46527, -0.44043, -0.49796, 0.31439, 0.76319, 1.05593, 2.52793),
    source="o200k_base fit on the shared corpus + calibration texts",
)


def features(text: str) -> tuple[int, ...]:
    """The counts of ``text`` in ``FEATURES`` order."""
    m = text.encode("utf-8", "surrogatepass").translate(_MAP)
    count = m.count
    if text.isascii():
        two = cjk = three = four = cont = 0
    else:
        two, cjk, three, four, cont = count(b"u"), count(b"k"), count(b"w"), count(b"e"), count(b"x")
    return (
        len(m) - two - cjk - three - four - cont,
        count(b"0"),
        count(b".a"),
        count(b" 0"),
        count(b"  "),
        count(b"aa"),
        two,
        cjk,
        three,
        four,
    )


def estimate(text: str, coefficients: Coefficients = COEFFICIENTS) -> int:
    """Estimated o200k tokens of ``text``: at least 1 for any non-empty text, at most its UTF-8 bytes.

    The same sum as ``weights . features(text)``, unrolled: this is the hot
    path of every replay, and on short texts a generator over the pairs would
    cost more than the counting itself.
    """
    if not text:
        return 0
    m = text.encode("utf-8", "surrogatepass").translate(_MAP)
    count = m.count
    n = len(m)
    w_ascii, w_digit, w_punct_word, w_space_digit, w_space_pairs, w_letter_pairs, w_two, w_cjk, w_three, w_four = coefficients.weights
    raw = (
        w_digit * count(b"0")
        + w_punct_word * count(b".a")
        + w_space_digit * count(b" 0")
        + w_space_pairs * count(b"  ")
        + w_letter_pairs * count(b"aa")
    )
    if text.isascii():
        raw += w_ascii * n
    else:
        two, cjk, three, four = count(b"u"), count(b"k"), count(b"w"), count(b"e")
        ascii_bytes = n - two - cjk - three - four - count(b"x")
        raw += w_ascii * ascii_bytes + w_two * two + w_cjk * cjk + w_three * three + w_four * four
    # A byte-level BPE never needs more tokens than bytes, and never zero for real text.
    return max(1, min(n, round(raw)))


class CalibratedCounter(BaseCounter):
    """Fast o200k estimate from byte-class counts (see the module docstring)."""

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
    """Feature rows and exact counts for ``texts`` cut into ``chunk_chars`` pieces (the input of ``solve``).

    Chunks, because a least-squares fit on whole texts would let a few 40 KB
    tool outputs decide every weight.
    """
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


def _nonnegative_least_squares(a: Any, b: Any) -> Any:
    """Lawson-Hanson active-set NNLS: min |a x - b| subject to x >= 0."""
    import numpy as np

    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 1e-10 * max(1.0, float(np.abs(a).sum(axis=0).max()))
    for _ in range(3 * n + 10):
        gradient = a.T @ (b - a @ x)
        free = ~passive & (gradient > tol)
        if not free.any():
            break
        passive[np.argmax(np.where(free, gradient, -np.inf))] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                break
            # Step back towards x until the first passive weight reaches zero, then drop it.
            shrinking = passive & (z <= 0)
            alpha = float(np.min(x[shrinking] / (x[shrinking] - z[shrinking])))
            x = x + alpha * (z - x)
            passive &= x > tol
        x = z
    return x


def solve(rows: Sequence[Sequence[int]], targets: Sequence[int], *, source: str = "fit") -> Coefficients:
    """Least squares of ``targets`` on ``rows`` under ``SIGNS``. Needs numpy (installed with pandas)."""
    if len(rows) < len(FEATURES):
        raise ConfigError(f"fitting needs at least {len(FEATURES)} chunks of text, got {len(rows)}")
    import numpy as np

    signs = np.asarray(SIGNS, dtype=float)
    x = np.asarray(rows, dtype=float) * signs
    y = np.asarray(targets, dtype=float)
    weights = _nonnegative_least_squares(x, y) * signs
    return Coefficients(weights=tuple(round(float(w), 5) + 0.0 for w in weights), source=source)


def fit(texts: Iterable[str], exact_counter: TokenCounter, *, chunk_chars: int = 2048, source: str = "fit") -> Coefficients:
    """Weights that make ``estimate`` track ``exact_counter`` on ``texts``.

    A feature that never occurs in ``texts`` gets weight 0, so fit on text
    that has some of every class (see ``lab.bench.tokens.calibration_texts``).
    """
    rows, targets = chunk_rows(texts, exact_counter, chunk_chars=chunk_chars)
    return solve(rows, targets, source=source)
