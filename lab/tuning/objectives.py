"""What a sweep optimises: a config's scores over a set of transcripts, from the compare table's rows.

One trial replays every transcript; its rows (``lab.replayer.compare.summary_row``)
are folded into one score per measure:

    cost                 sum of total_cost over the set (dollars)          minimise
    peak_sent            largest context sent in any session (tokens)      minimise
    needed_later_recall  mean over the sessions that need anything         maximise
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

__all__ = ["Objective", "OBJECTIVES", "DEFAULT_OBJECTIVES", "SCORES", "objectives", "scores"]

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
        Objective("needed_later_recall", "needed_later_recall", "maximize", "mean", "share of what a later response needed that its context still held"),
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


def _fold(values: Sequence[Any], how: str) -> float | None:
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if how == "sum":
        return sum(present)
    if how == "max":
        return max(present)
    return sum(present) / len(present)


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Every score of one trial from its rows (one per transcript); None where no session has the measure."""
    return {s.name: _fold([r.get(s.column) for r in rows], s.fold) for s in SCORES}
