"""The terminal Pareto plot: points where their scores put them, the front marked, axes with units, and edge cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from lab.errors import ConfigError
from lab.tuning import SCORES, SweepResult
from lab.tuning.text_plot import FRONT, INFEASIBLE, TRIAL, UNITS, pareto_plot, text_plot


def _trial(cost: float | None, recall: float | None, *, pareto: bool = False, feasible: bool = True) -> dict[str, Any]:
    return {"cost": cost, "needed_later_recall": recall, "pareto": pareto, "feasible": feasible}


def _area(plot: str) -> list[str]:
    """The plotting rows (between the title and the x axis), without the y tick gutter."""
    lines = plot.splitlines()
    axis = next(i for i, line in enumerate(lines) if "+--" in line)
    return [line.split("|", 1)[1] for line in lines[1:axis]]


def _where(plot: str, mark: str) -> list[tuple[int, int]]:
    return [(r, c) for r, row in enumerate(_area(plot)) for c, ch in enumerate(row) if ch == mark]


RECORDS = [
    _trial(1.0, 0.80, pareto=True),   # cheapest, lowest recall: bottom left
    _trial(3.0, 1.00, pareto=True),   # dearest, best recall: top right
    _trial(2.0, 0.85),                # dominated: middle, low
    _trial(2.5, 0.90, feasible=False),
    _trial(None, None, feasible=False),  # a failed trial: no scores
]


class TestLayout:
    def test_points_sit_where_their_scores_put_them(self) -> None:
        plot = text_plot(RECORDS, "cost", "needed_later_recall", width=41, height=11)
        assert _where(plot, FRONT) == [(0, 40), (10, 0)]
        assert _where(plot, TRIAL) == [(8, 20)]  # cost 2.0 is halfway; recall 0.85 is a quarter up
        assert _where(plot, INFEASIBLE) == [(5, 30)]
        assert all(len(row) <= 41 for row in _area(plot)) and len(_area(plot)) == 11

    def test_axes_are_labelled_with_units_and_the_better_direction(self) -> None:
        lines = text_plot(RECORDS, "cost", "needed_later_recall", width=41, height=11).splitlines()
        assert lines[0] == "needed_later_recall (share of needed mentions kept, 0-1; higher is better)"
        assert lines[1].startswith("  1 |") and lines[11].startswith("0.8 |") and lines[6].startswith("0.9 |")
        assert lines[13].split() == ["$1", "$2", "$3"]
        assert lines[14].strip() == "cost (dollars; lower is better)"

    def test_legend_counts_each_kind_and_the_failed(self) -> None:
        legend = text_plot(RECORDS, "cost", "needed_later_recall").splitlines()[-1]
        assert legend == "* on the Pareto front (2 trials)   o other feasible (1)   x infeasible (1)   1 failed, not drawn"

    def test_a_shared_cell_shows_the_front(self) -> None:
        same = [_trial(1.0, 0.5, feasible=False), _trial(1.0, 0.5, pareto=True), _trial(1.0, 0.5), _trial(2.0, 0.6, pareto=True)]
        plot = text_plot(same, "cost", "needed_later_recall", width=20, height=5)
        assert _where(plot, FRONT) == [(0, 19), (4, 0)] and not _where(plot, TRIAL) and not _where(plot, INFEASIBLE)

    def test_tokens_are_whole_numbers_with_separators(self) -> None:
        plot = text_plot([{"peak_sent": 12000, "cost": 1.0, "pareto": True}, {"peak_sent": 30500, "cost": 2.0}], "peak_sent", "cost")
        assert plot.splitlines()[-3].split() == ["12,000", "21,250", "30,500"]
        assert "peak_sent (tokens; lower is better)" in plot


class TestEdgeCases:
    def test_one_point_sits_in_the_middle_with_one_tick_per_axis(self) -> None:
        plot = text_plot([_trial(1.5, 0.9, pareto=True)], "cost", "needed_later_recall", width=21, height=5)
        assert _where(plot, FRONT) == [(2, 10)]
        assert plot.splitlines()[3].startswith("0.9 |") and plot.splitlines()[-3].strip() == "$1.5"

    def test_nothing_to_draw_says_so(self) -> None:
        assert text_plot([_trial(None, None)], "cost", "needed_later_recall") == "no trial has both cost and needed_later_recall to plot (1 without them)"

    def test_nan_scores_are_not_drawn(self) -> None:
        plot = text_plot([_trial(1.0, float("nan")), _trial(1.0, 0.5, pareto=True)], "cost", "needed_later_recall")
        assert plot.endswith("1 failed, not drawn") and len(_where(plot, FRONT)) == 1

    @pytest.mark.parametrize(("kwargs", "message"), [({"width": 5}, "width must be >= 20, got 5"), ({"height": 2}, "height must be >= 5, got 2")],
                             ids=["width", "height"])
    def test_a_too_small_area_is_a_config_error(self, kwargs: dict[str, int], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            text_plot(RECORDS, "cost", "needed_later_recall", **kwargs)

    def test_every_score_has_a_unit(self) -> None:
        assert {s.name for s in SCORES} <= set(UNITS)

    @settings(max_examples=60, deadline=None)
    @given(hs.lists(hs.tuples(hs.floats(-1e6, 1e6), hs.floats(-1e6, 1e6), hs.booleans()), min_size=1, max_size=30),
           hs.integers(20, 80), hs.integers(5, 25))
    def test_every_point_is_drawn_inside_the_area(self, pts: list[tuple[float, float, bool]], width: int, height: int) -> None:
        plot = text_plot([_trial(x, y, pareto=p) for x, y, p in pts], "cost", "needed_later_recall", width=width, height=height)
        area = _area(plot)
        assert len(area) == height and all(len(row) <= width for row in area)
        marks = {(r, c) for r, row in enumerate(area) for c, ch in enumerate(row) if ch != " "}
        assert 1 <= len(marks) <= len(pts)
        assert any(ch == FRONT for row in area for ch in row) == any(p for _, _, p in pts)


class TestParetoPlot:
    def _result(self, objectives: list[str]) -> SweepResult:
        records = [{"trial": i, "state": "complete", "feasible": True, "cost": c, "needed_later_recall": r, "peak_sent": 100 * i}
                   for i, (c, r) in enumerate([(1.0, 0.8), (2.0, 0.9), (2.5, 0.85)])]
        return SweepResult(records=records, objectives=objectives, params=[], base={})

    def test_plots_the_first_two_objectives_with_the_front_from_the_result(self) -> None:
        plot = pareto_plot(self._result(["cost", "needed_later_recall"]), width=21, height=5)
        assert plot is not None
        assert plot.splitlines()[0].startswith("needed_later_recall") and "cost (dollars" in plot
        # trial 2 (2.5, 0.85) is dominated by trial 1 (2.0, 0.9)
        assert _where(plot, FRONT) == [(0, 13), (4, 0)] and _where(plot, TRIAL) == [(2, 20)]

    def test_one_objective_has_no_plot(self) -> None:
        assert pareto_plot(self._result(["cost"])) is None
