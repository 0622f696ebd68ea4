"""The lab's own fast token estimator, calibrated against o200k.

Why not one chars-per-token ratio per kind of text? That was the first
design: classify each chunk as prose, code, JSON, CJK, digits or
whitespace-heavy and divide its length by a fitted ratio for that class. On
the corpus it plateaued at 6-7% mean error per transcript (15% on the worst):
real tool output mixes kinds inside every chunk (a JSON envelope around
escaped source, ``cat -n`` numbers before prose) and a hard class boundary
cannot follow that. So the classes moved down to the bytes. The estimate is a
weighted sum of counts, each weight a tokens-per-unit ratio of one class:

    ascii         every ASCII byte: the base ratio
    digit         extra per digit: o200k cuts numbers into 1-3 digit pieces
    punct_word    punctuation then a lowercase letter: a new word piece starts
    space_digit   space then digit: a number piece starts
    space_pairs   pairs of spaces: a run of spaces merges into one token (<= 0)
    letter_pairs  pairs of lowercase letters: long words are cheaper per letter (<= 0)
    two_byte      per accented Latin, Greek, Cyrillic, Hebrew, Arabic character
    cjk           per CJK punctuation, kana or ideograph (U+3000..U+9FFF)
    hangul        per hangul syllable (U+A000..U+DFFF): cheaper than ideographs
    three_byte    per other three-byte character: arrows, box drawing, symbols
    four_byte     per four-byte character: emoji
    punct_pairs   pairs of ASCII punctuation: ``"},``, ``);``, ruler lines merge (<= 0)
    upper_digit   an upper-case letter then a digit: base64, hashes, ids split there
    letter_quads  runs of four lowercase letters: long words, cheaper still (<= 0)
    quote         per double quote: JSON keys and strings close on one
    escaped_quote per backslash-quote: JSON inside JSON (tool calls, MCP results)

Which counts to keep was measured, not guessed: candidate counts were added
one at a time and kept when they lowered the error on sessions left out of
the fit without raising it on generated kinds left out (JSON, base64,
minified code, CJK, Cyrillic, logs, MCP schemas, hex dumps). With the
first ten counts only (the previous estimator), adding those kinds to the
fit pulled the error on held-out sessions from 2.5% to 6.5%: base64 alone
needs the upper_digit count, and ruler lines the punct_pairs one. With all
sixteen it is 1.7%.

Every count is taken in one pass over the string in C (``_features.c``,
built at install; ``IMPLEMENTATION`` says which ran), well over 10x faster
than tiktoken. Without a compiler the same counts come from one
``bytes.translate`` and a ``bytes.count`` per count, about 3-4x tiktoken's
speed: the C pass is what meets the 5x target. Counts are additive over a
text's parts, up to one pair at each seam.

How ``COEFFICIENTS`` were fitted: ``lab.bench.tokens.refit()`` (or ``python
-m lab.bench.tokens`` with ``LAB_CORPUS`` set, which prints the literal
below) runs ``solve`` (least squares with the signs above, each 2 KiB chunk
weighted by 1 / its exact count, target = exact o200k_base counts) over the
block texts of every session of the corpus (11 sessions: Claude Code with MCP
tools, SWE-agent, mini-swe-agent, OpenHands and Codex, sidechains included)
and the generated text of ``lab.bench.tokens.calibration_kinds()`` at seed
0. ``python -m lab bench`` prints the error with each session left out of
the fit, with each generated kind left out, and on generated text the fit
never saw. When these weights were fitted it read: 1.7% mean |error| per
session held out (worst -7.2%, a mini-swe-agent session full of
JSON-escaped heredocs), 1.6% in-sample, 2.0% on unseen text of the fitted
kinds (worst +7.5%, Cline-style JSON-escaped XML), 9.8% on kinds never seen
(worst: runs of one repeated character, which BPE swallows in a token or
two), at about 20x tiktoken's speed.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from collections.abc import Iterable, Sequence
from types import ModuleType
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
    "IMPLEMENTATION",
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
    "hangul",
    "three_byte",
    "four_byte",
    "punct_pairs",
    "upper_digit",
    "letter_quads",
    "quote",
    "escaped_quote",
)
# The sign each weight must have: merges of runs lower the count, everything else raises it.
# Fitting under these signs keeps the estimator monotone in sensible directions on text
# unlike anything it was fitted on (an unconstrained fit traded signs to shave 0.2%).
SIGNS: tuple[int, ...] = (1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, -1, 1, -1, 1, 1)


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
        (0xE3, 0xEA, "k"),  # ... except U+3000..U+9FFF: CJK punctuation, kana, ideographs
        (0xEA, 0xEE, "h"),  # ... and U+A000..U+DFFF: hangul syllables (and rarer scripts)
        (0xF0, 0x100, "e"),  # four bytes
    ):
        for b in range(lo, hi):
            t[b] = ord(cls)
    return bytes(t)


_MAP = _table()

_c: ModuleType | None
try:  # the same counts in one C pass (_features.c), when the extension was built at install
    from . import _features as _c
except ImportError:  # pragma: no cover - depends on the install having had a compiler
    _c = None

# Which implementation runs, shown by the bench next to the counter's speed.
IMPLEMENTATION = "C" if _c is not None else "Python"


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
        # The C path reads a tuple of floats; plain ints from a config would be refused there.
        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURES, self.weights, strict=True))


# Fitted by ``lab.bench.tokens.refit()`` as described in the module docstring (o200k_base target).
COEFFICIENTS = Coefficients(
    weights=(0.41217, 0.22809, 0.85525, 1.06923, -0.58492, -0.33284, 0.22335, 0.66751, 0.53787, 0.96817, 2.99312, -0.75543, 4.28415, -0.74748, 0.24676, 0.33517),
    source="o200k_base fit on the corpus sessions + generated text kinds (seed 0)",
)


def _features_py(text: str) -> tuple[int, ...]:
    raw = text.encode("utf-8", "surrogatepass")
    m = raw.translate(_MAP)
    count = m.count
    if text.isascii():
        two = cjk = hangul = three = four = cont = 0
    else:
        two, cjk, hangul, three, four, cont = count(b"u"), count(b"k"), count(b"h"), count(b"w"), count(b"e"), count(b"x")
    return (
        len(m) - two - cjk - hangul - three - four - cont,
        count(b"0"),
        count(b".a"),
        count(b" 0"),
        count(b"  "),
        count(b"aa"),
        two,
        cjk,
        hangul,
        three,
        four,
        count(b".."),
        count(b"A0"),
        count(b"aaaa"),
        raw.count(b'"'),
        raw.count(b'\\"'),
    )


def features(text: str) -> tuple[int, ...]:
    """The counts of ``text`` in ``FEATURES`` order (every pair count without overlap, as ``bytes.count``)."""
    if _c is not None:
        return _c.features(text)
    return _features_py(text)


def _estimate_py(text: str, weights: tuple[float, ...]) -> int:
    raw = 0.0
    for w, x in zip(weights, _features_py(text), strict=True):
        raw += w * x
    n = len(text.encode("utf-8", "surrogatepass"))
    # A byte-level BPE never needs more tokens than bytes, and never zero for real text.
    return max(1, min(n, round(raw)))


def estimate(text: str, coefficients: Coefficients = COEFFICIENTS) -> int:
    """Estimated o200k tokens of ``text``: at least 1 for any non-empty text, at most its UTF-8 bytes.

    The weighted sum ``weights . features(text)`` rounded half to even, added
    up in ``FEATURES`` order by both implementations so they round alike.
    """
    if not text:
        return 0
    if _c is not None:
        return _c.estimate(text, coefficients.weights)
    return _estimate_py(text, coefficients.weights)


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
        self._weights = coefficients.weights

    def _count(self, text: str) -> int:
        # The hot path of every replay: straight to the C pass when there is one (empty text never gets here).
        if _c is not None:
            return _c.estimate(text, self._weights)
        return _estimate_py(text, self._weights)


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


def solve(rows: Sequence[Sequence[int]], targets: Sequence[float], *, source: str = "fit") -> Coefficients:
    """Least squares of ``targets`` on ``rows`` under ``SIGNS``, each chunk weighted by 1 / its target.

    Weighted so that a chunk's relative error counts, not its absolute one:
    the score is the error of a session's total in percent, and dense chunks
    (base64, CJK) would otherwise outweigh sparse ones (indented code, rulers)
    of the same length. Deterministic: the same rows in the same order give
    the same weights. Needs numpy (installed with pandas).
    """
    if len(rows) < len(FEATURES):
        raise ConfigError(f"fitting needs at least {len(FEATURES)} chunks of text, got {len(rows)}")
    import numpy as np

    signs = np.asarray(SIGNS, dtype=float)
    y = np.asarray(targets, dtype=float)
    scale = 1.0 / np.sqrt(np.maximum(np.abs(y), 1.0))
    x = np.asarray(rows, dtype=float) * signs * scale[:, None]
    weights = _nonnegative_least_squares(x, y * scale) * signs
    return Coefficients(weights=tuple(round(float(w), 5) + 0.0 for w in weights), source=source)


def fit(texts: Iterable[str], exact_counter: TokenCounter, *, chunk_chars: int = 2048, source: str = "fit") -> Coefficients:
    """Weights that make ``estimate`` track ``exact_counter`` on ``texts``.

    A feature that never occurs in ``texts`` gets weight 0, so fit on text
    that has some of every class (see ``lab.bench.tokens.calibration_texts``;
    ``lab.bench.tokens.refit()`` rebuilds the shipped ``COEFFICIENTS``).
    """
    rows, targets = chunk_rows(texts, exact_counter, chunk_chars=chunk_chars)
    return solve(rows, targets, source=source)
