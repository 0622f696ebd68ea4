"""Held-out sweeps: folds partition the sessions, each fold's search is told only the other sessions, the held-out
scores are the configs' scores on the sessions held out, and the recommended trial is the best held out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import lab
from lab.errors import ConfigError
from lab.generator import GeneratorConfig, generate
from lab.tuning import SweepResult, non_dominated, sweep
from lab.tuning import folds
from lab.evaluation.objectives import scores as fold_scores

SPACE = "spill.threshold = [1000, 20000]\nsummary.enabled = [true, false]\nwatermark.ratio = [0.5, 0.95]\n"
# Three small sessions at a 4k window: each trial replays in a few milliseconds, and most configs keep 0 failures.
KW: dict[str, Any] = dict(trials=9, population=3, window=4000, seed=2, base="minicode", objectives=["cost", "needed_later_recall"])


@pytest.fixture(scope="module")
def sessions() -> list[lab.Transcript]:
    return [generate(GeneratorConfig(seed=s, requests=14)) for s in (1, 2, 3)]


@pytest.fixture(scope="module")
def names(sessions: list[lab.Transcript]) -> list[str]:
    return [t.meta.title or "" for t in sessions]


@pytest.fixture(scope="module")
def result(sessions: list[lab.Transcript]) -> SweepResult:
    return sweep(sessions, SPACE, **KW)


class TestPlan:
    @pytest.mark.parametrize(("n", "expected"), [(1, 0), (2, 2), (3, 3), (9, 9), (10, 5), (40, 5)])
    def test_default_is_five_folds_from_ten_sessions_one_per_session_below(self, n: int, expected: int) -> None:
        assert folds.count(n, None) == expected

    @pytest.mark.parametrize("off", [0, 1])
    def test_zero_or_one_fold_is_off(self, off: int) -> None:
        assert folds.count(12, off) == 0

    @pytest.mark.parametrize(("n", "k", "message"), [(3, 4, "more than the 3 session(s)"), (1, 2, "more than the 1 session(s)"),
                                                     (5, -1, "folds must be a whole number"), (5, True, "folds must be a whole number")])
    def test_impossible_folds_are_refused(self, n: int, k: Any, message: str) -> None:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            folds.count(n, k)

    @given(n=hs.integers(2, 40), data=hs.data(), seed=hs.integers(0, 2**31))
    @settings(max_examples=60, deadline=None)
    def test_folds_partition_the_sessions(self, n: int, data: hs.DataObject, seed: int) -> None:
        k = data.draw(hs.integers(2, n))
        plan = folds.plan(n, k, seed)
        assert len(plan) == k and all(plan)
        assert sorted(i for fold in plan for i in fold) == list(range(n))  # each session in exactly one fold
        assert max(map(len, plan)) - min(map(len, plan)) <= 1
        assert folds.plan(n, k, seed) == plan  # the seed decides

    def test_the_seed_moves_sessions_between_folds(self) -> None:
        assert len({tuple(map(tuple, folds.plan(12, 3, seed))) for seed in range(6)}) > 1

    @given(trials=hs.integers(1, 500), k=hs.integers(2, 20))
    def test_shares_add_up_to_the_trials(self, trials: int, k: int) -> None:
        got = folds.shares(trials, k)
        assert sum(got) == trials and max(got) - min(got) <= 1


class TestHeldOutSweep:
    def test_leave_one_session_out_below_ten_sessions(self, result: SweepResult, names: list[str]) -> None:
        assert result.folds == 3
        assert sorted(n for out in result.held_out for n in out) == sorted(names) and all(len(out) == 1 for out in result.held_out)
        df = result.df
        assert list(df["trial"]) == list(range(KW["trials"]))  # the total over the folds, numbered through
        assert sorted(df["fold"].value_counts().tolist()) == [3, 3, 3]
        assert {"cost_heldout", "needed_later_recall_heldout", "chosen", "fold"} <= set(df.columns)
        # beside each objective
        cols = list(df.columns)
        assert cols.index("cost_heldout") == cols.index("cost") + 1

    def test_held_out_scores_are_the_scores_on_the_session_held_out(self, result: SweepResult, sessions: list[lab.Transcript]) -> None:
        scored = result.df[result.df["cost_heldout"].notna()]
        assert len(scored) >= 1
        for _, row in scored.head(2).iterrows():
            fold = int(row["fold"])
            out = result.held_out[fold - 1][0]
            session = next(t for t in sessions if t.meta.title == out)
            cfg = result.config(int(row["trial"]))
            replayed = lab.compare(session, [("t", cfg)], settings=lab.ReplaySettings()).rows[0]
            # A sum is per as many sessions as the set: one held-out session's cost, times three.
            assert row["cost_heldout"] == pytest.approx(replayed["cost"] * len(sessions))
            assert row["needed_later_recall_heldout"] == pytest.approx(replayed["needed_later_recall"])

    def test_only_a_folds_own_front_is_scored_held_out(self, result: SweepResult) -> None:
        for f in range(1, result.folds + 1):
            records = [r for r in result.records if r["fold"] == f and "_insample" in r]
            ok = [r for r in records if not r["_insample"]["invalid_requests"] and not r["_insample"]["failures"]]
            points = [[r["_insample"]["cost"], -r["_insample"]["needed_later_recall"]] for r in ok]
            front = {ok[i]["trial"] for i in non_dominated(points)}
            assert {r["trial"] for r in records if r.get("cost_heldout") is not None} == front

    def test_held_out_ranks_place_a_trial_among_all_trials_on_its_held_out_session(self, result: SweepResult) -> None:
        everyone = [r for r in result.records if r.get("_rows")]
        scored = [r for r in everyone if r.get("cost_heldout") is not None]
        for r in scored:
            [i] = [k for k, name in enumerate(result.transcripts) if name in result.held_out[r["fold"] - 1]]
            mine = r["_rows"][i]
            beaten = sum(o["_rows"][i]["cost"] >= mine["cost"] for o in everyone) / len(everyone)
            assert r["cost_heldout_rank"] == pytest.approx(beaten) and 0 < r["cost_heldout_rank"] <= 1
            if mine["needed_later_recall"] is not None:
                assert 0 < r["needed_later_recall_heldout_rank"] <= 1

    def test_the_chosen_trial_is_the_best_held_out(self, result: SweepResult) -> None:
        df = result.df
        assert int(df["chosen"].sum()) == 1
        chosen = df[df["chosen"]].iloc[0]
        candidates = [r for r in result.records if r.get("cost_heldout") is not None and r["_heldout_keeps"]]
        ranks = ("cost_heldout_rank", "needed_later_recall_heldout_rank")
        # No candidate ranks better held out on one objective and at least as well on the other ...
        for r in candidates:
            assert not (all(r[k] >= chosen[k] for k in ranks) and any(r[k] > chosen[k] for k in ranks))
        # ... and of those as good on recall none ranks better on cost, the first objective.
        assert chosen["cost_heldout_rank"] == max(r["cost_heldout_rank"] for r in candidates
                                                  if r["needed_later_recall_heldout_rank"] >= chosen["needed_later_recall_heldout_rank"])
        assert result.chosen is not None and int(result.chosen["trial"]) == int(chosen["trial"])

    def test_a_result_without_ranks_chooses_by_the_raw_held_out_scores(self) -> None:
        base = {"state": "complete", "feasible": True, "_heldout_keeps": True}
        records = [{**base, "trial": 0, "fold": 1, "cost": 1.0, "cost_heldout": 2.0},
                   {**base, "trial": 1, "fold": 2, "cost": 2.0, "cost_heldout": 1.5}]
        got = SweepResult(records, ["cost"], [], lab.CompactionConfig().model_dump(mode="json"), folds=2, held_out=[["a"], ["b"]])
        assert got.chosen is not None and got.chosen["trial"] == 1 and got.pareto["trial"].tolist() == [0]

    def test_says_in_sample_and_held_out(self, result: SweepResult) -> None:
        chosen = result.chosen
        assert chosen is not None
        line = result.recommendation()
        seen = result.insample(int(chosen["trial"]))
        fold = int(chosen["fold"])
        assert line.startswith(f"recommended: trial {int(chosen['trial'])} (best held-out; fold {fold} of 3, searched on 2 of 3 session(s)")
        assert result.held_out[fold - 1][0] in line
        assert f"cost in-sample {seen['cost']:.4g}, held-out {chosen['cost_heldout']:.4g}" in line
        assert f"needed_later_recall in-sample {seen['needed_later_recall']:.4g}, held-out {chosen['needed_later_recall_heldout']:.4g}" in line
        assert result.to_dict()["recommendation"] == line and result.to_dict()["chosen"] == int(chosen["trial"])

    def test_the_chosen_config_exports(self, result: SweepResult, tmp_path: Path) -> None:
        chosen = result.chosen
        assert chosen is not None
        cfg = lab.load_config(result.export_chosen(tmp_path / "chosen.toml"))
        assert cfg.label == f"sweep-trial-{int(chosen['trial'])}" and cfg.spill.threshold == chosen["spill.threshold"]

    def test_same_seed_same_folds_and_choice(self, sessions: list[lab.Transcript], result: SweepResult) -> None:
        again = sweep(sessions, SPACE, **KW)
        assert again.df.equals(result.df) and again.held_out == result.held_out
        other = sweep(sessions, SPACE, **{**KW, "seed": 11})
        assert not other.df[list(result.params)].equals(result.df[list(result.params)])

    def test_folds_zero_is_one_search_without_held_out_scores(self, sessions: list[lab.Transcript]) -> None:
        plain = sweep(sessions, SPACE, **{**KW, "folds": 0})
        assert plain.folds == 0 and plain.df["fold"].isna().all() and plain.df["cost_heldout"].isna().all()
        front = plain.pareto
        assert plain.chosen is not None and int(plain.chosen["trial"]) == int(front.iloc[0]["trial"])
        assert "held-out not measured" in plain.recommendation()

    def test_more_folds_than_sessions_is_an_error(self, sessions: list[lab.Transcript]) -> None:
        with pytest.raises(ConfigError, match="folds 4 is more than the 3 session"):
            sweep(sessions, SPACE, **{**KW, "folds": 4})


class TestNoLeak:
    def test_each_folds_search_is_told_only_the_other_sessions(self, sessions: list[lab.Transcript], tmp_path: Path) -> None:
        import optuna

        db = tmp_path / "study.db"
        got = sweep(sessions, SPACE, **{**KW, "trials": 4, "folds": 2}, study=db)
        assert got.folds == 2
        for f, out in enumerate(got.held_out, 1):
            st = optuna.load_study(study_name=f"lab-sweep-fold-{f}-of-2", storage=f"sqlite:///{db}")
            train = [i for i, t in enumerate(sessions) if (t.meta.title or "") not in out]
            for t in st.get_trials():
                if t.values is None:
                    continue
                told = fold_scores([t.user_attrs["sessions"][i] for i in train])
                assert t.values == pytest.approx([told["cost"], told["needed_later_recall"]])
                # ... and not the whole set's (the held-out session costs something)
                assert t.values[0] < t.user_attrs["scores"]["cost"]

    def test_a_folded_study_file_resumes_to_the_same_sweep(self, sessions: list[lab.Transcript], tmp_path: Path) -> None:
        db = tmp_path / "study.db"
        sweep(sessions, SPACE, **{**KW, "trials": 4}, study=db)
        resumed = sweep(sessions, SPACE, **{**KW, "trials": 6}, study=db)
        straight = sweep(sessions, SPACE, **{**KW, "trials": 6})
        assert resumed.df.equals(straight.df)
