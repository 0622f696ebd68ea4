"""How far a sweep has got, and an ETA, for whoever is watching: a terminal line, the app's bar, a notebook.

A sweep calls ``progress(SweepProgress)`` after every replay (one transcript
under one trial's config). ``StderrLine`` is the CLI's and the notebook's
default: a single line on stderr, rewritten in place.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO
from collections.abc import Callable

__all__ = ["SweepProgress", "ProgressCallback", "StderrLine", "format_eta"]


@dataclass(frozen=True)
class SweepProgress:
    trials_done: int  # trials finished in the study, resumed ones included
    trials_total: int  # the trials the study is to hold at the end
    jobs_done: int  # replays finished in this run
    jobs_total: int  # replays this run has to do
    elapsed: float  # seconds since this run started

    @property
    def fraction(self) -> float:
        return 1.0 if self.jobs_total == 0 else min(1.0, self.jobs_done / self.jobs_total)

    @property
    def eta(self) -> float | None:
        """Seconds left, from this run's pace so far; None before the first replay."""
        if self.jobs_done == 0:
            return None
        return self.elapsed / self.jobs_done * (self.jobs_total - self.jobs_done)

    def text(self) -> str:
        return (f"sweep: trial {self.trials_done}/{self.trials_total}, replays {self.jobs_done}/{self.jobs_total} "
                f"({self.fraction:.0%}), {format_eta(self.elapsed)} elapsed, ETA {format_eta(self.eta)}")


ProgressCallback = Callable[[SweepProgress], object]


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class StderrLine:
    """One progress line, rewritten with a carriage return; ``close`` ends it with a newline."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._width = 0
        self._open = False

    def __call__(self, p: SweepProgress) -> None:
        line = p.text()
        self._stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self._stream.flush()
        self._width = len(line)
        self._open = True

    def close(self) -> None:
        if self._open:
            self._stream.write("\n")
            self._stream.flush()
            self._open = False
