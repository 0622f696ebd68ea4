"""The sweep: seeded and repeatable, constrained, a true Pareto front, resumable from its study file, exportable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import lab
from lab.core.config import load_config
from lab.errors import ConfigError
from lab.generator import GeneratorConfig, generate
from lab.evaluation.grid import Cell
from lab.tuning import SweepProgress, SweepResult, non_dominated, sweep
from lab.tuning import study as study_module

SPACE = """
spill.threshold = [1000, 20000]
microcompact.enabled = [true, false]
summary.enabled = [true, false]
watermark.ratio = [0.5, 0.95]
"""
# At a 2k window a config without summaries overflows: some trials fail, so the constraint has work to do.
# folds=0: these test the search itself (batching, seeding, resume); held-out folds are tested in test_folds.py.
KW: dict[str, Any] = dict(trials=8, population=4, window=2000, seed=3, base="minicode", objectives=["cost", "needed_later_recall"], folds=0)


@pytest.fixture(scope="module")
def sessions() -> list[lab.Transcript]:
    return [generate(GeneratorConfig(seed=s, requests=16)) for s in (1, 2)]


@pytest.fixture(scope="module")
def result(sessions: list[lab.Transcript]) -> SweepResult:
    return sweep(sessions, SPACE, **KW)


def _signs(r: SweepResult) -> list[float]:
    return [1.0 if d == "minimize" else -1.0 for d in r.directions]


def _dominates(a: dict, b: dict, r: SweepResult) -> bool:
    pa = [s * a[o] for s, o in zip(_signs(r), r.objectives, strict=True)]
    pb = [s * b[o] for s, o in zip(_signs(r), r.objectives, strict=True)]
    return all(x <= y for x, y in zip(pa, pb, strict=True)) and any(x < y for x, y in zip(pa, pb, strict=True))


class TestRepeatable:
    def test_same_seed_same_sweep(self, sessions: list[lab.Transcript], result: SweepResult) -> None:
        again = sweep(sessions, SPACE, **KW)
        assert again.df.equals(result.df)
        assert len(result.df) == KW["trials"]

    def test_another_seed_draws_other_configs(self, sessions: list[lab.Transcript], result: SweepResult) -> None:
        other = sweep(sessions, SPACE, **{**KW, "seed": 4, "trials": 4})
        assert list(other.df["spill.threshold"]) != list(result.df["spill.threshold"].head(4))

    def test_two_processes_give_the_same_sweep(self, sessions: list[lab.Transcript], result: SweepResult) -> None:
        assert sweep(sessions, SPACE, **KW, processes=2).df.equals(result.df)


class TestConstraints:
    def test_failing_configs_are_infeasible_and_off_the_front(self, result: SweepResult) -> None:
        df = result.df
        assert (df["failures"] > 0).any(), "the space should produce failing configs at this window"
        assert (~df.loc[df["failures"] > 0, "feasible"]).all()
        assert (df.loc[(df["failures"] == 0) & (df["invalid_requests"] == 0), "feasible"]).all()
        assert not df.loc[~df["feasible"], "pareto"].any()
        assert (result.pareto["failures"] == 0).all()

    def test_allow_failures_keeps_them_feasible(self, sessions: list[lab.Transcript]) -> None:
        allowed = sweep(sessions, SPACE, **KW, allow_failures=True)
        df = allowed.df
        assert df.loc[df["failures"] > 0, "feasible"].all() and (df["failures"] > 0).any()


class TestPareto:
    def test_front_is_non_dominated_and_dominates_the_rest(self, result: SweepResult) -> None:
        feasible = [r for r in result.df.to_dict("records") if r["feasible"]]
        front = [r for r in feasible if r["pareto"]]
        assert front
        for p in front:
            assert not any(_dominates(q, p, result) for q in feasible)
        for r in feasible:
            if not r["pareto"]:
                assert any(_dominates(p, r, result) for p in front)

    def test_front_is_ordered_best_first(self, result: SweepResult) -> None:
        costs = list(result.pareto["cost"])
        assert costs == sorted(costs)
        assert result.best(2).equals(result.pareto.head(2))

    @settings(max_examples=50, deadline=None)
    @given(hs.lists(hs.tuples(hs.integers(0, 5), hs.integers(0, 5)), min_size=1, max_size=12))
    def test_non_dominated(self, points: list[tuple[int, int]]) -> None:
        keep = set(non_dominated(points))
        for i, p in enumerate(points):
            beaten = any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)
            assert (i in keep) == (not beaten)


class TestResume:
    def test_an_interrupted_sweep_continues_to_the_same_result(self, sessions: list[lab.Transcript], result: SweepResult, tmp_path: Path) -> None:
        db = tmp_path / "study.db"
        first = sweep(sessions, SPACE, **{**KW, "trials": 3}, study=db)
        assert len(first.df) == 3

        def stop(p: SweepProgress) -> None:
            if p.jobs_done == 3:  # halfway through the second trial of the next generation
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            sweep(sessions, SPACE, **KW, study=db, progress=stop)
        resumed = sweep(sessions, SPACE, **KW, study=db)
        assert resumed.df.equals(result.df)
        assert list(resumed.df["trial"]) == list(range(KW["trials"]))

    def test_a_finished_study_is_read_back_without_new_trials(self, sessions: list[lab.Transcript], tmp_path: Path) -> None:
        db = tmp_path / "study.db"
        done = sweep(sessions, SPACE, **{**KW, "trials": 2}, study=db)
        calls: list[SweepProgress] = []
        again = sweep(sessions, SPACE, **{**KW, "trials": 2}, study=db, progress=calls.append)
        assert again.df.equals(done.df) and not calls

    def test_a_resume_with_other_settings_is_refused(self, sessions: list[lab.Transcript], tmp_path: Path) -> None:
        db = tmp_path / "study.db"
        sweep(sessions, SPACE, **{**KW, "trials": 1}, study=db)
        with pytest.raises(ConfigError, match="was run with a different seed"):
            sweep(sessions, SPACE, **{**KW, "trials": 2, "seed": 9}, study=db)
        with pytest.raises(ConfigError, match="was run with a different space"):
            sweep(sessions, "spill.threshold = [1000, 2000]", **{**KW, "trials": 2}, study=db)


class TestExport:
    @pytest.mark.parametrize("ext", ["toml", "json", "yaml"])
    def test_export_best_writes_a_loadable_config(self, result: SweepResult, tmp_path: Path, ext: str) -> None:
        target = result.export_best(1, tmp_path / f"best.{ext}")
        cfg = load_config(target)
        best = result.pareto.iloc[0]
        assert cfg.label == f"sweep-trial-{int(best['trial'])}"
        assert cfg.spill.threshold == best["spill.threshold"] and cfg.summary.enabled == best["summary.enabled"]
        assert cfg.window == KW["window"] and cfg.counter == lab.preset("minicode").counter
        # the exported config replays to the scores the sweep recorded
        assert cfg == result.config(int(best["trial"]))

    def test_export_rank_out_of_range(self, result: SweepResult, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="--export-best must be between 1 and"):
            result.export_best(len(result.pareto) + 1, tmp_path / "x.toml")

    @pytest.mark.parametrize("ext", ["parquet", "csv", "json"])
    def test_write_by_extension(self, result: SweepResult, tmp_path: Path, ext: str) -> None:
        import pandas as pd

        target = result.write(tmp_path / f"sweep.{ext}")
        if ext == "parquet":
            back = pd.read_parquet(target)
        elif ext == "csv":
            back = pd.read_csv(target)
        else:
            back = pd.DataFrame(pd.read_json(target, typ="series")["trials"])
        assert list(back["trial"]) == list(result.df["trial"]) and list(back["pareto"]) == list(result.df["pareto"])


class TestScheduling:
    def _fake_grid(self, calls: list[dict], error: str | None = None) -> Any:
        def run_grid(transcripts: Any, configs: Any, *, names: Any, labels: Any, progress: Any, processes: int = 1, ray: str | None = None,
                     probe: Any = None, settings: Any = None) -> Any:
            calls.append({"processes": processes, "ray": ray, "configs": len(configs), "probe": probe, "settings": settings})
            row = {"cost": 1.0, "peak_sent": 1, "needed_later_recall": 1.0, "retention_score": 1.0, "failures": 0, "invalid_requests": 0, "overflows": 0}
            return [[Cell(i, j, None if error else row, error) for j in range(len(transcripts))] for i in range(len(configs))]

        return run_grid

    def test_ray_and_processes_are_passed_to_run_grid(self, sessions: list[lab.Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        calls: list[dict] = []
        monkeypatch.setattr(study_module, "run_grid", self._fake_grid(calls))
        sweep(sessions, SPACE, **{**KW, "trials": 5}, ray="auto")
        assert [c["ray"] for c in calls] == ["auto", "auto"] and [c["configs"] for c in calls] == [4, 1]
        sweep(sessions, SPACE, **{**KW, "trials": 2}, processes=2)
        assert calls[-1]["processes"] == 2

    def test_one_settings_reaches_every_grid_call(self, sessions: list[lab.Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        calls: list[dict] = []
        monkeypatch.setattr(study_module, "run_grid", self._fake_grid(calls))
        sweep(sessions, SPACE, **{**KW, "trials": 5}, settings={"pricing": {"input_per_mtok": 0.5}})
        assert len(calls) == 2 and all(c["settings"].pricing.input_per_mtok == 0.5 for c in calls)

    def test_processes_and_ray_are_exclusive(self, sessions: list[lab.Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(study_module, "run_grid", self._fake_grid([]))
        with pytest.raises(ConfigError, match="processes or ray, not both"):
            sweep(sessions, SPACE, **KW, ray="auto", processes=2)

    def test_a_replay_error_fails_the_trial_not_the_sweep(self, sessions: list[lab.Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(study_module, "run_grid", self._fake_grid([], error="internal error: boom"))
        r = sweep(sessions, SPACE, **{**KW, "trials": 3})
        assert list(r.df["state"]) == ["failed"] * 3 and set(r.df["error"]) == {"internal error: boom"}
        assert r.pareto.empty
        with pytest.raises(ConfigError, match="no feasible trial"):
            r.export_best(1, "best.toml")

    def test_progress_counts_every_replay_with_an_eta(self, sessions: list[lab.Transcript]) -> None:
        seen: list[SweepProgress] = []
        sweep(sessions, SPACE, **{**KW, "trials": 2}, progress=seen.append)
        jobs = [p.jobs_done for p in seen]
        assert jobs == sorted(jobs) and seen[-1].jobs_done == seen[-1].jobs_total == 2 * len(sessions)
        assert seen[-1].trials_done == 2 and seen[-1].eta == 0
        assert "ETA" in seen[0].text()

    def test_lab_sweep_is_the_same_function(self, sessions: list[lab.Transcript], result: SweepResult) -> None:
        import lab.tuning as package

        assert lab.sweep is package.sweep
        assert lab.sweep(sessions, SPACE, **KW).df.equals(result.df)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"trials": 0}, "trials must be >= 1"),
            ({"population": 1}, "population must be >= 2"),
            ({"objectives": ["speed"]}, "unknown objective 'speed'"),
            ({"objectives": ["cost", "cost"]}, "objective 'cost' is given twice"),
        ],
        ids=["trials", "population", "objective", "repeated"],
    )
    def test_bad_arguments(self, sessions: list[lab.Transcript], kwargs: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            sweep(sessions, SPACE, **{**KW, **kwargs})
