"""SweepResult on its own: the front from a table, rebuilding a trial's config, and the Pareto figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import figures
from lab.core.config import CompactionConfig
from lab.errors import ConfigError
from lab.tuning import SweepResult


def _record(trial: int, cost: float, recall: float, *, feasible: bool = True, state: str = "complete", threshold: int = 1000) -> dict:
    return {"trial": trial, "state": state, "feasible": feasible, "error": None, "cost": cost, "needed_later_recall": recall,
            "peak_sent": 100, "retention_score": 0.5, "failures": 0.0 if feasible else 2.0, "invalid_requests": 0.0, "overflows": 0.0,
            "spill.threshold": threshold}


@pytest.fixture
def result() -> SweepResult:
    records = [
        _record(0, 1.0, 0.5, threshold=1000),   # front: cheapest
        _record(1, 2.0, 0.9, threshold=2000),   # front: best recall
        _record(2, 2.5, 0.8, threshold=3000),   # dominated by 1
        _record(3, 0.5, 1.0, feasible=False),   # would dominate all, but broke a constraint
        _record(4, 1.5, 0.7, threshold=4000),   # front: between 0 and 1
    ]
    return SweepResult(records, ["cost", "needed_later_recall"], ["spill.threshold"], CompactionConfig().model_dump(mode="json"))


def test_front_is_feasible_non_dominated_and_best_first(result: SweepResult) -> None:
    assert list(result.pareto["trial"]) == [0, 4, 1]
    assert list(result.df["pareto"]) == [True, True, False, False, True]
    assert list(result.best(2)["trial"]) == [0, 4]


def test_config_of_a_trial_is_the_base_with_its_values(result: SweepResult) -> None:
    cfg = result.config(4)
    assert cfg.spill.threshold == 4000 and cfg.label == "sweep-trial-4"
    assert cfg.model_dump(exclude={"label", "spill"}) == CompactionConfig().model_dump(exclude={"label", "spill"})
    with pytest.raises(ConfigError, match="no trial 9"):
        result.config(9)


def test_json_holds_the_base_objectives_and_front(result: SweepResult, tmp_path: Path) -> None:
    data = json.loads(result.write(tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert data["pareto"] == [0, 4, 1] and data["directions"] == ["minimize", "maximize"]
    assert data["base"]["spill"]["threshold"] == CompactionConfig().spill.threshold
    with pytest.raises(ConfigError, match="use a .csv, .parquet or .json file"):
        result.write(tmp_path / "sweep.xlsx")


def test_pareto_figure_marks_the_front_and_names_trials(result: SweepResult) -> None:
    fig = figures.pareto(result.df, "cost", "needed_later_recall")
    traces = {t.name: t for t in fig.data}
    assert set(traces) == {"Pareto front", "trial", "infeasible (broke a constraint)"}
    assert sorted(c[0] for c in traces["Pareto front"].customdata) == [0, 1, 4]
    assert [c[0] for c in traces["infeasible (broke a constraint)"].customdata] == [3]
    assert "spill.threshold = 1000" in traces["Pareto front"].hovertext[0]
    with pytest.raises(ValueError, match="no column 'speed'"):
        figures.pareto(result.df, "cost", "speed")
