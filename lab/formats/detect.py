"""Which format is this file? Every registered format scores a probe of its head.

The highest positive score wins; on a tie the format registered first wins,
so the order is deterministic. A sniffer that fails counts as a 0: detection
must never crash on a file it cannot read.
"""

from __future__ import annotations

import os

from ..errors import TranscriptError
from .jsonio import make_probe
from .registry import FORMATS, Probe

__all__ = ["detect", "scores"]


def scores(probe: Probe) -> dict[str, int]:
    """Each registered format's confidence (0..100) that the probe is one of its files."""
    out: dict[str, int] = {}
    for name, fmt in FORMATS.items():
        try:
            score = int(fmt.sniff(probe))
        except Exception:  # a sniffer bug must not stop detection; it just does not claim the file
            score = 0
        out[name] = max(0, min(100, score))
    return out


def detect(path: str | os.PathLike[str]) -> str:
    """The name of the format of the file at ``path``; TranscriptError when none claims it."""
    probe = make_probe(path)
    ranked = scores(probe)
    best = max(ranked.values(), default=0)
    if best <= 0:
        known = ", ".join(sorted(FORMATS)) or "none registered"
        raise TranscriptError(
            f"unknown transcript format (read as {probe.shape})",
            file=str(probe.path),
            expected=f"one of the known formats: {known}",
        )
    return next(name for name, score in ranked.items() if score == best)
