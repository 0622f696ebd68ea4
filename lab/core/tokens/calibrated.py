"""The lab's own fast token estimator, calibrated against o200k.

Why not one chars-per-token ratio per kind of text? That was the first
design: classify each chunk as prose, code, JSON, CJK, digits or
whitespace-heavy and divide its length by a fitted ratio for that class. On
the corpus it plateaued at 6-7% mean error per transcript (15% on the worst):
real tool output mixes kinds inside every chunk (a JSON envelope around
escaped source, ``cat -n`` numbers before prose) and a hard class boundary
cannot follow that. So the classes moved down to the bytes. The estimate is a
weighted sum of counts, each weight a tokens-per-unit ratio for one class:

    byte         every UTF-8 byte (the base ratio, about 4.9 bytes per token)
    digit        extra for a digit: o200k cuts numbers into 1-3 digit pieces
    cjk          extra for a lead byte of U+3000..U+D7FF (CJK, kana, hangul)
    other        extra for the lead byte of any other non-ASCII character
    cont         extra for a UTF-8 continuation byte
    punct_word   punctuation then a lowercase letter: a new word piece starts
    indent       newline then space: indentation becomes its own piece
    space_digit  space then digit: a number piece starts
    space_pairs  pairs of spaces: runs of spaces merge into one token

Which counts to keep was measured, not guessed: candidate sets of up to five
boundary counts were fitted and scored on per-transcript error, on
leave-one-transcript-out error, and on held-out kinds of text (code, prose,
logs, tables, hex, JSON). This set was the best of them (1.5% mean error
in-sample, 2.8% leave-one-out, 2.0% on held-out kinds); the ten-count model
with per-class letter, space and punctuation weights it replaced was worse on
all three and slower. Every count is a ``bytes.count`` over one
``bytes.translate`` of the UTF-8 text, so the estimate runs in C, several
times faster than tiktoken. Counts are additive over a text's parts, so long
and short texts are treated alike.

How ``COEFFICIENTS`` were fitted: ``fit`` (ordinary least squares on 2 KiB
chunks, target = exact o200k_base counts) over ``lab.bench.tokens.
calibration_texts(<corpus files>)``: the block texts of the seven transcripts
in the shared corpus (Claude Code, SWE-agent, mini-swe-agent, OpenHands and
Codex sessions, sidechains included) plus CPython stdlib sources and
docstrings, generated logs, number tables, hex commit lists and JSON (pretty
and minified), CPython's CJK test texts and short passages in Chinese,
Japanese, Korean, Russian, German, French and Spanish. Because the corpus is
part of the fit, ``python -m lab bench`` reports its error in-sample and also
refits without each transcript in turn (leave-one-out).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
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
    "byte",
    "digit",
    "cjk",
    "other",
    "cont",
    "punct_word",
    "indent",
    "space_digit",
    "space_pairs",
)


def _table() -> bytes:
    # One class letter per byte value; the counts below look for these letters.
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
    # Non-ASCII characters are classed by their UTF-8 lead byte; continuation bytes
    # ("x") are never counted, their share is in the per-byte weight.
    for lo, hi, cls in (
        (0x80, 0xC0, "x"),
        (0xC0, 0xE0, "u"),  # two bytes: accented Latin, Greek, Cyrillic, Hebrew, Arabic
        (0xE0, 0xF0, "w"),  # three bytes: arrows, box drawing, dashes, symbols, ...
        (0xE3, 0xEE, "k"),  # ... except U+3000..U+D7FF: CJK punctuation, kana, ideographs, hangul
        (0xF0, 0x100, "e"),  # four bytes: emoji and rare scripts
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
        return dict(zip(FEATURES, self.weights))


# Fitted by ``fit`` as described in the module docstring (o200k_base target).
COEFFICIENTS = Coefficients(
    weights=(0.20326, 0.56727, 1.60166, 0.56377, -0.71918, 0.90243, 0.80929, 1.27578, -0.25756),
    source="o200k_base fit on the shared corpus + calibration texts",
)


def features(text: str) -> tuple[int, ...]:
    """The counts of ``text`` in ``FEATURES`` order."""
    m = text.encode("utf-8", "surrogatepass").translate(_MAP)
    count = m.count
    if text.isascii():
        cjk = other = cont = 0
    else:
        cjk, other, cont = count(b"k"), count(b"u"), count(b"x")
    return (len(m), count(b"0"), cjk, other, cont, count(b".a"), count(b"n "), count(b" 0"), count(b"  "))


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
    w_byte, w_digit, w_cjk, w_other, w_cont, w_punct_word, w_indent, w_space_digit, w_space_pairs = coefficients.weights
    raw = (
        w_byte * n
        + w_digit * count(b"0")
        + w_punct_word * count(b".a")
        + w_indent * count(b"n ")
        + w_space_digit * count(b" 0")
        + w_space_pairs * count(b"  ")
    )
    if not text.isascii():
        raw += w_cjk * count(b"k") + w_other * count(b"u") + w_cont * count(b"x")
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
