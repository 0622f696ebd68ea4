"""A sweep with no feasible trial says why (the constraint every trial broke, where, the fix); every file is accounted for."""

from __future__ import annotations

from pathlib import Path

import pytest

import lab
from lab.errors import TranscriptError
from lab.formats import dump
from lab.generator import GeneratorConfig, generate
from lab.tuning import SweepResult, sweep

SPACE = "spill.threshold = [1000, 20000]\n"
# At a 1k window every request of these sessions is over the window after recovery: no config can pass.
# folds=0: the draws of one search over both sessions (with folds, fold 2 draws a threshold low enough to pass).
TIGHT = dict(trials=4, population=2, window=1000, seed=1, base="minicode", folds=0)


@pytest.fixture(scope="module")
def sessions() -> list[lab.Transcript]:
    return [generate(GeneratorConfig(seed=s, requests=8)) for s in (1, 2)]


@pytest.fixture(scope="module")
def tight(sessions: list[lab.Transcript]) -> SweepResult:
    return sweep(sessions, SPACE, **TIGHT)


class TestNoFeasibleTrial:
    def test_says_which_constraint_where_and_the_fix(self, tight: SweepResult) -> None:
        df = tight.df
        assert not df["feasible"].any() and (df["state"] == "complete").all() and (df["failures"] > 0).all()
        why = tight.infeasible
        assert why is not None and why.startswith(f"all {len(df)} trial(s) broke one constraint, failed requests")
        assert "Generated session" in why and "request " in why and "1,000-token window" in why
        assert "a window of at least" in why and "--allow-failures" in why

    def test_each_infeasible_trial_says_what_it_broke(self, tight: SweepResult) -> None:
        for _, row in tight.df.iterrows():
            assert row["broke"].startswith(f"failures {int(row['failures'])} (Generated session")

    def test_the_reason_is_in_the_written_json(self, tight: SweepResult, tmp_path: Path) -> None:
        import json

        data = json.loads(tight.write(tmp_path / "s.json").read_text(encoding="utf-8"))
        assert data["infeasible"] == tight.infeasible and data["pareto"] == []

    def test_allowing_failures_makes_them_feasible_and_says_nothing(self, sessions: list[lab.Transcript]) -> None:
        allowed = sweep(sessions, SPACE, **TIGHT, allow_failures=True)
        assert allowed.df["feasible"].all() and allowed.infeasible is None and allowed.df["broke"].isna().all()

    def test_a_feasible_sweep_has_no_reason(self, sessions: list[lab.Transcript]) -> None:
        roomy = sweep(sessions, SPACE, **{**TIGHT, "window": 64_000})
        assert roomy.df["feasible"].any() and roomy.infeasible is None

    def test_every_trial_failing_names_the_error(self, sessions: list[lab.Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        from lab.evaluation.grid import Cell
        from lab.tuning import study as study_module

        def broken(transcripts, configs, **kwargs):  # noqa: ANN001, ANN003, ANN202
            return [[Cell(i, j, None, "stage blew up") for j in range(len(transcripts))] for i in range(len(configs))]

        monkeypatch.setattr(study_module, "run_grid", broken)
        result = sweep(sessions, SPACE, **TIGHT)
        assert result.infeasible == "all 4 trial(s) failed; the most common error: stage blew up"


class TestEveryFile:
    @pytest.fixture
    def folder(self, tmp_path: Path) -> Path:
        d = tmp_path / "in"
        d.mkdir()
        dump(generate(GeneratorConfig(seed=1, requests=6)), to="lab", path=d / "s1.lab.json")
        (d / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
        (d / "notes.md").write_text("# notes\n", encoding="utf-8")
        return d

    def test_an_unreadable_file_is_said_in_the_summary(self, folder: Path) -> None:
        result = sweep(folder, SPACE, trials=2, population=2, window=64_000, base="minicode")
        assert result.listed == ["junk.jsonl", "s1.lab.json"] and result.left_out == ["notes.md"]
        assert result.summary().startswith("1 of 2 swept; 1 unreadable: junk.jsonl (")
        assert result.summary().endswith("left out, not transcripts: notes.md")

    def test_strict_refuses_before_any_trial(self, folder: Path) -> None:
        with pytest.raises(TranscriptError, match=r"unreadable \(strict\): junk\.jsonl"):
            sweep(folder, SPACE, trials=2, population=2, base="minicode", strict=True)
