"""One seeded 30-trial sweep over the whole corpus: the same trials and Pareto front in process, with 2 processes,
on local Ray and through the CLI.

Replays are deterministic and the sampler is seeded per trial, so where a trial runs must change nothing.
The space is three numeric fields at a fixed 32k window: at the lab preset's own 200k window most corpus
sessions never reach a summary and nearly every trial ties, while at 32k the space acts and the front
holds several distinct points. One run takes about 10-15 s on the project's 2-core machine; the four
runs (Ray's start-up included) about a minute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from lab.cli.main import main
from lab.tuning import SweepResult, sweep
from lab.formats.session_choice import several
from tests.conftest import CORPUS, CORPUS_FILES

pytestmark = [pytest.mark.corpus(), pytest.mark.slow]

SPACE = """\
spill.threshold = [1000, 20000]
watermark.ratio = [0.5, 0.95]
summary.tail_window_share = [0.0, 0.5]
"""
TRIALS, WINDOW, SEED = 30, 32_000, 0
KW: dict[str, Any] = dict(trials=TRIALS, window=WINDOW, seed=SEED, objectives=["cost", "needed_later_recall"])


@pytest.fixture(scope="module")
def in_process() -> SweepResult:
    return sweep(CORPUS, SPACE, **KW)  # type: ignore[arg-type]  # the corpus mark skips before this without a corpus


def _sessions() -> int:
    """The corpus's sessions as a sweep reads them: a file's, or each of a file that holds several (an evaluation output.jsonl)."""
    return sum(len(found.sessions) if (found := several(f)) is not None else 1 for f in CORPUS_FILES)


def _same(got: SweepResult, expected: SweepResult) -> None:
    pd.testing.assert_frame_equal(got.df, expected.df)
    pd.testing.assert_frame_equal(got.pareto, expected.pareto)
    assert got.transcripts == expected.transcripts


def test_the_in_process_sweep_covers_the_corpus_and_has_a_front(in_process: SweepResult) -> None:
    df = in_process.df
    assert list(df["trial"]) == list(range(TRIALS)) and (df["state"] == "complete").all()
    assert len(in_process.transcripts) == _sessions() and not in_process.skipped
    front = in_process.pareto
    assert len(front) >= 2 and front["cost"].nunique() >= 2, "the space should trade cost against recall at this window"
    assert front["feasible"].all() and (front["invalid_requests"] == 0).all()
    assert list(front["cost"]) == sorted(front["cost"])


def test_two_processes_give_the_same_trials_and_front(in_process: SweepResult) -> None:
    _same(sweep(CORPUS, SPACE, **KW, processes=2), in_process)  # type: ignore[arg-type]


@pytest.mark.ray
def test_local_ray_gives_the_same_trials_and_front(ray_runtime: Any, in_process: SweepResult) -> None:
    _same(sweep(CORPUS, SPACE, **KW, ray="auto"), in_process)  # type: ignore[arg-type]


def test_the_cli_writes_the_same_trials_and_prints_the_front(in_process: SweepResult, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    space, out = tmp_path / "space.toml", tmp_path / "sweep.parquet"
    space.write_text(SPACE, encoding="utf-8")
    rc = main(["sweep", str(CORPUS), "--space", str(space), "--trials", str(TRIALS), "--window", str(WINDOW), "--seed", str(SEED),
               "--objective", "cost", "--objective", "needed_later_recall", "--out", str(out)])
    assert rc == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), in_process.df)
    printed = capsys.readouterr().out
    front = in_process.pareto
    assert f"swept {_sessions()} transcript(s) x {TRIALS} trial(s)" in printed
    assert f"{len(front)} on the Pareto front" in printed
    table = printed.split("pareto front (best first by cost):\n", 1)[1].splitlines()
    assert [int(line.split("|")[0]) for line in table[1 : 1 + min(len(front), 10)]] == [int(t) for t in front["trial"].head(10)]
    # The terminal plot follows the table, its legend counting the same front.
    assert "needed_later_recall (share of needed mentions kept, 0-1; higher is better)" in printed
    assert f"* on the Pareto front ({len(front)} trials)" in printed
