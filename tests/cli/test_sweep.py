"""``python -m lab sweep``, run in-process through ``lab.cli.main``: end to end, resume, export, and exit 2 on bad input."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lab.cli.main import main
from lab.core.config import load_config
from lab.formats import dump
from lab.generator import GeneratorConfig, generate
from lab.tuning import parse_space, sweep
from lab.tuning.text_plot import pareto_plot

SPACE = "spill.threshold = [1000, 20000]\nsummary.enabled = [true, false]\nwatermark.ratio = [0.5, 0.95]\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    for seed in (1, 2):
        dump(generate(GeneratorConfig(seed=seed, requests=16)), to="lab", path=d / f"s{seed}.lab.json")
    (d / "notes.md").write_text("not a transcript\n", encoding="utf-8")
    return d


@pytest.fixture
def space(tmp_path: Path) -> Path:
    f = tmp_path / "space.toml"
    f.write_text(SPACE, encoding="utf-8")
    return f


def _args(folder: Path, space: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", str(folder), "--space", str(space), "--trials", "6", "--population", "3", "--window", "3000",
            "--preset", "minicode", "--seed", "1", "--out", str(out), *extra]


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("\r")]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


class TestSweep:
    def test_end_to_end_with_export(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out, best = tmp_path / "sweep.parquet", tmp_path / "best.toml"
        rc = main(_args(folder, space, out, "--objective", "cost", "--objective", "needed_later_recall",
                        "--export-best", "1", "--export-to", str(best)))
        assert rc == 0
        captured = capsys.readouterr()
        assert "swept 2 transcript(s) x 6 trial(s)" in captured.out and "pareto front (best first by cost):" in captured.out
        assert "ETA" in captured.err and "sweep: trial 6/6" in captured.err  # the progress line
        df = pd.read_parquet(out)
        assert list(df["trial"]) == list(range(6))
        assert {"cost", "needed_later_recall", "failures", "feasible", "pareto", "spill.threshold", "summary.enabled"} <= set(df.columns)
        front = df[df["pareto"]].sort_values(["cost", "trial"])
        cfg = load_config(best)
        assert cfg.label == f"sweep-trial-{int(front.iloc[0]['trial'])}"
        assert cfg.spill.threshold == front.iloc[0]["spill.threshold"] and cfg.window == 3000
        assert f"exported point 1 of the front (trial {int(front.iloc[0]['trial'])})" in captured.out

    def test_settings_file_bills_every_trial(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        settings = tmp_path / "cheap.json"
        settings.write_text('{"pricing": {"input_per_mtok": 0.01, "output_per_mtok": 0.01, "cache_write_per_mtok": 0.01, "cache_read_per_mtok": 0.01}}',
                            encoding="utf-8")
        plain, cheap = tmp_path / "a.csv", tmp_path / "b.csv"
        assert main([a if a != "6" else "2" for a in _args(folder, space, plain)]) == 0
        assert main([a if a != "6" else "2" for a in _args(folder, space, cheap, "--settings", str(settings))]) == 0
        a, b = pd.read_csv(plain), pd.read_csv(cheap)
        assert (b["cost"] < a["cost"]).all()
        bad = tmp_path / "bad.json"
        bad.write_text('{"cache": {"ttl_seconds": 7}}', encoding="utf-8")
        capsys.readouterr()
        assert main(_args(folder, space, tmp_path / "c.csv", "--settings", str(bad))) == 2
        assert "cache.ttl_seconds" in _one_error_line(capsys)

    def test_a_study_file_resumes(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db, out = tmp_path / "study.db", tmp_path / "sweep.csv"
        args = _args(folder, space, out, "--study", str(db))
        assert main([a if a != "6" else "2" for a in args]) == 0
        assert len(pd.read_csv(out)) == 2
        assert main(args) == 0
        resumed = pd.read_csv(out)
        straight = tmp_path / "straight.csv"
        assert main(_args(folder, space, straight)) == 0
        assert resumed.equals(pd.read_csv(straight))

    def test_prints_the_front_as_a_terminal_plot(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(_args(folder, space, tmp_path / "sweep.json")) == 0
        printed = capsys.readouterr().out
        same = sweep(folder, SPACE, trials=6, population=3, window=3000, base="minicode", seed=1)
        plot = pareto_plot(same)
        assert plot is not None and plot in printed
        assert printed.index("pareto front (best first by cost):") < printed.index(plot)
        assert f"* on the Pareto front ({len(same.pareto)} trials)" in plot

    def test_one_objective_prints_no_plot(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(_args(folder, space, tmp_path / "sweep.json", "--objective", "cost")) == 0
        printed = capsys.readouterr().out
        assert "pareto front (best first by cost):" in printed and "on the Pareto front (" not in printed

    def test_example_space_prints_a_space_that_parses(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["sweep", "--example-space"]) == 0
        assert len(parse_space(capsys.readouterr().out).params) >= 5


class TestBadInput:
    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda a, t: a[:2] + a[4:], "give --space SPACE.toml"),
            (lambda a, t: a[:-1] + [str(t / "sweep.xlsx")], "--out must end in .parquet, .csv or .json"),
            (lambda a, t: a + ["--export-best", "1"], "--export-best N and --export-to FILE go together"),
            (lambda a, t: a + ["--export-best", "1", "--export-to", str(t / "b.txt")], "--export-to must end in .json, .yaml or .toml"),
            (lambda a, t: a + ["--objective", "speed"], "argument --objective: invalid choice"),
            (lambda a, t: a + ["--processes", "2", "--ray", "auto"], "not allowed with argument"),
            (lambda a, t: a + ["--trials", "0"], "must be >= 1"),
            (lambda a, t: ["sweep", str(t / "missing")] + a[2:], "no such file or folder"),
        ],
        ids=["no-space", "out-ext", "export-alone", "export-ext", "objective", "processes-and-ray", "trials", "missing-path"],
    )
    def test_exit_2_with_one_line(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str) -> None:  # noqa: ANN001
        args = change(_args(folder, space, tmp_path / "sweep.parquet"), tmp_path)
        assert main(args) == 2
        assert message in _one_error_line(capsys)
        assert not (tmp_path / "sweep.parquet").exists()

    def test_a_bad_space_names_the_field(self, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text("watermark.ratio = [0.5, 1.5]\n", encoding="utf-8")
        assert main(_args(folder, bad, tmp_path / "sweep.parquet")) == 2
        assert _one_error_line(capsys) == f"error: {bad}: space field watermark.ratio: high 1.5 is above the field's maximum 1.0"

    def test_a_resume_with_another_seed_is_refused(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = tmp_path / "study.db"
        assert main(_args(folder, space, tmp_path / "a.json", "--study", str(db), "--trials", "1")) == 0
        capsys.readouterr()
        assert main(_args(folder, space, tmp_path / "b.json", "--study", str(db), "--seed", "5")) == 2
        assert "was run with a different seed" in _one_error_line(capsys)


class TestSweepTellsWhy:
    def test_no_feasible_trial_prints_the_constraint_where_and_the_fix(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        args = _args(folder, space, tmp_path / "s.csv")
        args[args.index("--window") + 1] = "1000"
        assert main(args) == 0
        out = capsys.readouterr().out.splitlines()
        assert any(x.startswith("swept 2 transcript(s) x 6 trial(s)") and "0 feasible" in x for x in out)
        [why] = [x for x in out if x.startswith("infeasible: ")]
        assert "all 6 trial(s) broke one constraint, failed requests" in why and "1,000-token window" in why and "--allow-failures" in why
        assert pd.read_csv(tmp_path / "s.csv")["broke"].notna().all()

    def test_a_feasible_sweep_prints_no_reason_and_lists_what_it_left_out(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        (folder / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
        args = _args(folder, space, tmp_path / "s.csv")
        args[args.index("--window") + 1] = "64000"
        assert main(args) == 0
        out, err = capsys.readouterr()
        assert "infeasible:" not in out
        assert "2 of 3 swept; 1 unreadable: junk.jsonl (" in out and out.rstrip().count("left out, not transcripts: notes.md") == 1
        assert "warning: skipped junk.jsonl: " in err

    def test_strict_exits_2_naming_the_unreadable_file(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        (folder / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
        assert main([*_args(folder, space, tmp_path / "s.csv"), "--strict"]) == 2
        assert "unreadable (strict): junk.jsonl (" in _one_error_line(capsys)
        assert not (tmp_path / "s.csv").exists()


class TestHeldOut:
    def test_default_holds_each_session_out_and_says_in_sample_and_held_out(self, folder: Path, space: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
        out, chosen_file = tmp_path / "s.csv", tmp_path / "chosen.json"
        assert main([*_args(folder, space, out), "--export-chosen", str(chosen_file)]) == 0
        printed = capsys.readouterr().out
        same = sweep(folder, SPACE, trials=6, population=3, window=3000, base="minicode", seed=1)
        assert same.folds == 2  # two sessions: leave-one-session-out
        assert "held out in 2 folds (each fold's search ran on the other sessions): fold 1: " in printed
        assert same.recommendation() in printed.splitlines()
        df = pd.read_csv(out)
        assert {"fold", "chosen", "cost_heldout", "needed_later_recall_heldout"} <= set(df.columns)
        assert sorted(df["fold"].unique()) == [1, 2] and int(df["chosen"].sum()) == 1 and same.chosen is not None
        picked = df[df["chosen"]].iloc[0]
        assert "in-sample" in same.recommendation() and f"held-out {picked['cost_heldout']:.4g}" in same.recommendation()
        assert load_config(chosen_file).label == f"sweep-trial-{int(picked['trial'])}"
        assert f"exported the recommended trial ({int(picked['trial'])})" in printed

    def test_folds_zero_turns_it_off(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "s.csv"
        assert main([*_args(folder, space, out), "--folds", "0"]) == 0
        printed = capsys.readouterr().out
        assert "held out in" not in printed and "held-out not measured" in printed
        df = pd.read_csv(out)
        assert df["fold"].isna().all() and df["cost_heldout"].isna().all()

    def test_more_folds_than_sessions_exits_2(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main([*_args(folder, space, tmp_path / "s.csv"), "--folds", "3"]) == 2
        assert "folds 3 is more than the 2 session(s)" in _one_error_line(capsys)
        assert not (tmp_path / "s.csv").exists()

    def test_export_chosen_needs_a_config_extension(self, folder: Path, space: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main([*_args(folder, space, tmp_path / "s.csv"), "--export-chosen", str(tmp_path / "c.txt")]) == 2
        assert "--export-chosen must end in .json, .yaml or .toml" in _one_error_line(capsys)
