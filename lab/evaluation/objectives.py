"""What a sweep optimises: a config's scores over a set of transcripts, from the compare table's rows.

One trial replays every transcript; its rows (``lab.evaluation.rows.summary_row``)
are folded into one score per measure:

    cost                 sum of total_cost over the set (dollars)          minimise
    peak_sent            largest context sent in any session (tokens)      minimise
    needed_later_recall  mean over the sessions that need anything         maximise
    content_recall       mean over the sessions that need any content      maximise
    reread_tokens        sum of the tokens re-read from spill files        minimise
                         (what only recoverable content costs to read back)
    retention_score      mean over the sessions that have a score          maximise
    failures             sum of failed requests                            minimise
    probe_score          mean probe grade 0-5 (a model answers, a judge    maximise
                         grades; only with a probe model configured)
    invalid_requests     sum of requests the provider would refuse         (a constraint)
    overflows            sum of requests over the window                   (reported)

The sum for cost and counts is what the set costs or suffers as a whole; the
maximum for peak sent is the session that comes closest to the window; the
quality numbers are shares, so a mean keeps them in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from collections.abc import Iterable, Sequence

from ..errors import ConfigError

__all__ = ["Objective", "OBJECTIVES", "DEFAULT_OBJECTIVES", "SCORES", "objectives", "scores", "session_scores", "direction"]

Direction = Literal["minimize", "maximize"]


@dataclass(frozen=True)
class Objective:
    name: str
    column: str  # the summary_row key it folds
    direction: Direction
    fold: Literal["sum", "max", "mean"]
    help: str


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("cost", "cost", "minimize", "sum", "total cost of the set, with the prompt-cache model (dollars)"),
        Objective("peak_sent", "peak_sent", "minimize", "max", "largest context sent to the model in any session (tokens)"),
        Objective("needed_later_recall", "needed_later_recall", "maximize", "mean",
                  "names score: share of the names a later response used that its context still held"),
        # Read from the rows by name: a trial scores it once the replay reports the column (None until then).
        Objective("content_recall", "content_recall", "maximize", "mean",
                  "share of the lines and spans a later response copied or edited that its context still held verbatim"),
        Objective("reread_tokens", "reread_tokens", "minimize", "sum",
                  "tokens of spill files the agent would read back for content only recoverable from them (so spilling is never free)"),
        Objective("retention_score", "retention_score", "maximize", "mean", "weighted share of the first request, user messages, paths and errors kept"),
        Objective("failures", "failures", "minimize", "sum", "requests that overflowed and could not be recovered"),
        Objective("probe_score", "probe_score", "maximize", "mean",
                  "mean LLM-judged probe grade (0-5) at each session's last request; needs a probe model (lab.probe)"),
    )
}
DEFAULT_OBJECTIVES = ("cost", "needed_later_recall")
# Every score a trial records, objectives or not.
SCORES: tuple[Objective, ...] = (
    *OBJECTIVES.values(),
    Objective("invalid_requests", "invalid_requests", "minimize", "sum", "requests the provider would refuse (broken tool pairs, empty turns)"),
    Objective("overflows", "overflows", "minimize", "sum", "requests over the window before recovery"),
)


def objectives(names: Iterable[str] | None) -> list[Objective]:
    """The named objectives, in order; unknown or repeated names are a ConfigError."""
    picked = list(names) if names else list(DEFAULT_OBJECTIVES)
    out: list[Objective] = []
    for name in picked:
        if name not in OBJECTIVES:
            raise ConfigError(f"unknown objective {name!r}; use one of: {', '.join(OBJECTIVES)}")
        if OBJECTIVES[name] in out:
            raise ConfigError(f"objective {name!r} is given twice")
        out.append(OBJECTIVES[name])
    return out


def direction(name: str) -> Direction:
    """Whether a score is better high or low; a ConfigError for a name no objective or score has."""
    for s in SCORES:
        if s.name == name:
            return s.direction
    raise ConfigError(f"unknown score {name!r}; use one of: {', '.join(s.name for s in SCORES)}")


def _number(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if f != f else f  # NaN (a table's empty cell) is no value


def _fold(values: Sequence[Any], how: str, scale_to: int | None = None) -> float | None:
    numbers = [_number(v) for v in values]
    present = [v for v in numbers if v is not None]
    if not present:
        return None
    if how == "sum":
        # Scaled to a set of ``scale_to`` sessions, so a sum over a few held-out sessions reads beside the whole set's.
        return sum(present) if scale_to is None else sum(present) / len(values) * scale_to
    if how == "max":
        return max(present)
    return sum(present) / len(present)


def scores(rows: Sequence[dict[str, Any]], scale_to: int | None = None) -> dict[str, float | None]:
    """Every score of one trial from its rows (one per transcript); None where no session has the measure.

    ``scale_to``: the sums (cost, counts) are given per ``scale_to`` sessions, at the mean per row, so scores of
    a part of the set (a fold's held-out sessions) compare with the whole set's.
    """
    return {s.name: _fold([r.get(s.column) for r in rows], s.fold, scale_to) for s in SCORES}


def session_scores(row: dict[str, Any]) -> dict[str, float | None]:
    """One session's measures, by score name, as plain numbers (kept per session so folds can be scored apart)."""
    return {s.name: _number(row.get(s.column)) for s in SCORES}
