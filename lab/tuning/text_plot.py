"""A sweep's trials as a character scatter for the terminal: two scores, the Pareto front marked.

    print(pareto_plot(result))                                   # the first two objectives
    print(text_plot(result.df.to_dict("records"), "cost", "peak_sent"))

Plain ASCII and no plotting library, so the CLI can print it anywhere and a
README can hold it as text. ``lab.figures.pareto`` is the interactive plot
(plotly) for the app and notebooks; this one draws the same table.

Each trial lands in the character cell nearest its two scores. Where several
share a cell the more telling mark wins: ``*`` (on the front) over ``o``
(feasible) over ``x`` (broke a constraint). Failed trials have no scores and
are only counted in the legend.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from collections.abc import Mapping, Sequence

from ..errors import ConfigError
from ..evaluation.objectives import SCORES

if TYPE_CHECKING:  # pragma: no cover
    from .result import SweepResult

__all__ = ["text_plot", "pareto_plot", "UNITS", "FRONT", "TRIAL", "INFEASIBLE"]

FRONT, TRIAL, INFEASIBLE = "*", "o", "x"
_RANK = {INFEASIBLE: 1, TRIAL: 2, FRONT: 3}
# What each score is measured in, for the axis titles; a test checks every score has one.
UNITS: dict[str, str] = {
    "cost": "dollars",
    "peak_sent": "tokens",
    "needed_later_recall": "share of needed mentions kept, 0-1",
    "content_recall": "share of needed lines and spans kept verbatim, 0-1",
    "reread_tokens": "tokens",
    "retention_score": "weighted share kept, 0-1",
    "failures": "requests",
    "probe_score": "judge's grade, 0-5",
    "invalid_requests": "requests",
    "overflows": "requests",
}
_DIRECTION = {s.name: s.direction for s in SCORES}
_MIN_WIDTH, _MIN_HEIGHT = 20, 5


def _value(record: Mapping[str, Any], key: str) -> float | None:
    v = record.get(key)
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _tick(name: str, v: float) -> str:
    if name == "cost":
        return f"${v:.4g}"
    if name in ("peak_sent", "failures", "invalid_requests", "overflows"):
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _title(name: str) -> str:
    parts = [p for p in (UNITS.get(name), {"minimize": "lower is better", "maximize": "higher is better"}.get(_DIRECTION.get(name, ""))) if p]
    return f"{name} ({'; '.join(parts)})" if parts else name


def _cell(v: float, low: float, high: float, cells: int) -> int:
    # A score that does not vary sits in the middle rather than against an axis.
    if high <= low:
        return (cells - 1) // 2
    return min(cells - 1, max(0, round((v - low) / (high - low) * (cells - 1))))


def _x_labels(low: str, mid: str | None, high: str, width: int) -> str:
    row = [" "] * width
    row[: len(low)] = low
    start = width - len(high)
    if start <= len(low):  # too narrow for both: the high end alone would be misread, so keep both on one line
        return (low + " .. " + high)
    row[start:] = high
    if mid is not None:
        m = (width - len(mid)) // 2
        if m > len(low) + 1 and m + len(mid) < start - 1:
            row[m : m + len(mid)] = mid
    return "".join(row).rstrip()


def text_plot(records: Sequence[Mapping[str, Any]], x: str, y: str, *, width: int = 60, height: int = 16) -> str:
    """The trials (``SweepResult.df`` records: ``feasible``, ``pareto`` and the two scores) as a scatter of ``y`` over ``x``.

    ``width`` x ``height`` is the plotting area in characters. Low values are left and at the bottom; each
    axis title says the unit and which way is better.
    """
    if not isinstance(width, int) or width < _MIN_WIDTH:
        raise ConfigError(f"width must be >= {_MIN_WIDTH}, got {width!r}")
    if not isinstance(height, int) or height < _MIN_HEIGHT:
        raise ConfigError(f"height must be >= {_MIN_HEIGHT}, got {height!r}")
    points: list[tuple[float, float, str]] = []
    undrawn = 0
    for r in records:
        vx, vy = _value(r, x), _value(r, y)
        if vx is None or vy is None:
            undrawn += 1
            continue
        mark = FRONT if r.get("pareto") else TRIAL if r.get("feasible") else INFEASIBLE
        points.append((vx, vy, mark))
    if not points:
        return f"no trial has both {x} and {y} to plot ({undrawn} without them)"
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x_low, x_high, y_low, y_high = min(xs), max(xs), min(ys), max(ys)
    grid = [[" "] * width for _ in range(height)]
    for vx, vy, mark in points:
        col, row = _cell(vx, x_low, x_high, width), height - 1 - _cell(vy, y_low, y_high, height)
        if _RANK[mark] > _RANK.get(grid[row][col], 0):
            grid[row][col] = mark
    mid = (height - 1) // 2
    if y_high > y_low:
        y_ticks = {0: _tick(y, y_high), height - 1: _tick(y, y_low)}
        if height >= 7:
            y_ticks[mid] = _tick(y, y_high - (y_high - y_low) * mid / (height - 1))
    else:
        y_ticks = {mid: _tick(y, y_low)}
    gutter = max(len(t) for t in y_ticks.values())
    lines = [_title(y)]
    for i, cells in enumerate(grid):
        lines.append(f"{y_ticks.get(i, ''):>{gutter}} |" + "".join(cells).rstrip())
    lines.append(" " * gutter + " +" + "-" * width)
    if x_high > x_low:
        x_axis = _x_labels(_tick(x, x_low), _tick(x, (x_low + x_high) / 2), _tick(x, x_high), width)
    else:
        only = _tick(x, x_low)
        x_axis = " " * max(0, (width - len(only)) // 2) + only
    lines.append(" " * (gutter + 2) + x_axis)
    lines.append(" " * (gutter + 2) + _title(x))
    counts = {m: sum(p[2] == m for p in points) for m in (FRONT, TRIAL, INFEASIBLE)}
    legend = (f"{FRONT} on the Pareto front ({counts[FRONT]} trials)   {TRIAL} other feasible ({counts[TRIAL]})   "
              f"{INFEASIBLE} infeasible ({counts[INFEASIBLE]})")
    lines.append(legend + (f"   {undrawn} failed, not drawn" if undrawn else ""))
    return "\n".join(lines)


def pareto_plot(result: SweepResult, *, width: int = 60, height: int = 16) -> str | None:
    """``text_plot`` of a sweep's first two objectives; None when it has only one."""
    if len(result.objectives) < 2:
        return None
    return text_plot(result.df.to_dict("records"), result.objectives[0], result.objectives[1], width=width, height=height)
