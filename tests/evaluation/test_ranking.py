"""The ranking: session-weighted means with a seeded bootstrap interval, paired differences, wins / losses / ties."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from lab.errors import ConfigError
from lab.formats import dump
from lab.generator import GeneratorConfig, generate
from lab.evaluation import compare_folder
from lab.evaluation.ranking import RANKING_COLUMNS, rank


def _table(values: dict[str, list[float | None]], cost: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """One row per session x config, recall from ``values`` (None: nothing needed), cost from ``cost`` (default 1)."""
    rows = []
    n = len(next(iter(values.values())))
    for s in range(n):
        for config, vals in values.items():
            rows.append({"transcript": f"s{s}.jsonl", "config": config, "needed_later_recall": vals[s],
                         "cost": (cost or {}).get(config, [1.0] * n)[s], "failures": 0, "invalid_requests": 0, "error": None})
    return pd.DataFrame(rows)


def _row(ranking, objective: str, config: str) -> dict:  # noqa: ANN001
    return next(r for r in ranking.rows if r["objective"] == objective and r["config"] == config)


class TestMeansAndIntervals:
    @given(values=hs.lists(hs.floats(0, 1), min_size=2, max_size=30), seed=hs.integers(0, 2**31))
    @settings(max_examples=40, deadline=None)
    def test_the_interval_contains_the_mean(self, values: list[float], seed: int) -> None:
        r = _row(rank(_table({"a": list(values)}), ["needed_later_recall"], seed=seed, resamples=500), "needed_later_recall", "a")
        assert r["mean"] == pytest.approx(float(np.mean(values)))
        assert r["low"] <= r["mean"] + 1e-12 and r["mean"] <= r["high"] + 1e-12
        assert min(values) - 1e-12 <= r["low"] and r["high"] <= max(values) + 1e-12

    def test_each_session_weighs_the_same_and_nothing_needed_is_left_out_and_counted(self) -> None:
        ranking = rank(_table({"a": [None, None, 0.5, 1.0, 0.9, 0.6, 0.8, 0.7, 1.0]}))
        r = _row(ranking, "needed_later_recall", "a")
        assert r["sessions"] == 7 and r["left_out"] == 2
        assert r["mean"] == pytest.approx((0.5 + 1.0 + 0.9 + 0.6 + 0.8 + 0.7 + 1.0) / 7)
        assert "mean over 7 session(s); 2 with nothing needed left out" in ranking.summary()
        cost = _row(ranking, "cost", "a")
        assert cost["sessions"] == 9 and cost["left_out"] == 0

    def test_the_same_seed_gives_the_same_intervals(self) -> None:
        rnd = random.Random(3)
        table = _table({"a": [rnd.random() for _ in range(12)], "b": [rnd.random() for _ in range(12)]})
        first, again, other = rank(table, seed=5), rank(table, seed=5), rank(table, seed=6)
        assert first.df.equals(again.df) and first.pairs.equals(again.pairs)
        assert not first.df[["low", "high"]].equals(other.df[["low", "high"]])
        assert first.df["mean"].equals(other.df["mean"])  # the seed moves the intervals, never the means

    def test_a_single_session_has_no_interval(self) -> None:
        ranking = rank(_table({"a": [0.5], "b": [0.7]}))
        r = _row(ranking, "needed_later_recall", "a")
        assert r["low"] is None and r["high"] is None and "no interval" in ranking.summary()


class TestPairs:
    def test_identical_configs_are_not_distinguishable(self) -> None:
        rnd = random.Random(1)
        vals = [rnd.random() for _ in range(10)]
        ranking = rank(_table({"a": vals, "b": list(vals)}))
        p = ranking.pair("needed_later_recall", "a", "b")
        assert p["difference"] == 0 and not p["distinguishable"] and p["ties"] == 10
        assert _row(ranking, "needed_later_recall", "a")["low"] == _row(ranking, "needed_later_recall", "b")["low"]
        assert "not distinguishable: a and b" in ranking.summary()

    def test_a_config_better_on_every_session_wins_all(self) -> None:
        rnd = random.Random(2)
        base = [rnd.uniform(0.3, 0.8) for _ in range(8)]
        ranking = rank(_table({"worse": base, "better": [v + 0.1 for v in base], "mid": [v + 0.05 for v in base]}))
        best = _row(ranking, "needed_later_recall", "better")
        assert best["rank"] == 1 and best["wins"] == 2 * 8 and best["losses"] == 0 and best["ties"] == 0
        assert _row(ranking, "needed_later_recall", "worse")["losses"] == 16
        p = ranking.pair("needed_later_recall", "better", "worse")
        assert p["distinguishable"] and p["low"] > 0 and p["difference"] == pytest.approx(0.1)
        assert ("better", "worse") not in ranking.indistinguishable("needed_later_recall")

    def test_lower_cost_wins(self) -> None:
        ranking = rank(_table({"a": [1.0] * 5, "b": [1.0] * 5}, cost={"a": [1, 2, 3, 4, 5], "b": [2, 3, 4, 5, 6]}))
        assert _row(ranking, "cost", "a")["rank"] == 1 and _row(ranking, "cost", "a")["wins"] == 5
        assert ranking.pair("cost", "a", "b")["high"] < 0

    def test_a_pair_and_its_reverse_mirror(self) -> None:
        rnd = random.Random(4)
        ranking = rank(_table({"a": [rnd.random() for _ in range(9)], "b": [rnd.random() for _ in range(9)]}))
        ab, ba = ranking.pair("needed_later_recall", "a", "b"), ranking.pair("needed_later_recall", "b", "a")
        assert ab["difference"] == pytest.approx(-ba["difference"])
        assert (ab["low"], ab["high"]) == pytest.approx((-ba["high"], -ba["low"]))
        assert (ab["wins"], ab["losses"]) == (ba["losses"], ba["wins"])

    def test_sessions_with_nothing_needed_are_left_out_of_the_pair(self) -> None:
        ranking = rank(_table({"a": [None, 0.5, 0.7], "b": [0.9, None, 0.6]}))
        p = ranking.pair("needed_later_recall", "a", "b")
        assert p["sessions"] == 1 and p["wins"] == 1 and p["difference"] == pytest.approx(0.1)


class TestInputs:
    def test_error_rows_are_not_scored_and_failed_sessions_are_said(self) -> None:
        table = _table({"a": [0.5, 0.6, 0.7], "b": [0.6, 0.7, 0.8]})
        table.loc[0, "failures"] = 2
        table = pd.concat([table, pd.DataFrame([{"transcript": "bad.jsonl", "config": "a", "error": "cannot read"}])], ignore_index=True)
        ranking = rank(table)
        assert _row(ranking, "needed_later_recall", "a")["sessions"] == 3 and ranking.sessions == 3
        assert _row(ranking, "cost", "a")["broken_sessions"] == 1
        assert "1 session(s) with failed or invalid requests" in ranking.summary()

    def test_content_recall_is_ranked_when_the_table_has_it(self) -> None:
        table = _table({"a": [0.5, 0.6], "b": [0.6, 0.7]})
        assert {r["objective"] for r in rank(table).rows} == {"needed_later_recall", "cost"}
        table["content_recall"] = [0.4, 0.5, 0.6, 0.7]
        assert [o for o in dict.fromkeys(r["objective"] for r in rank(table).rows)] == ["needed_later_recall", "content_recall", "cost"]

    @pytest.mark.parametrize(("kwargs", "message"), [({"objectives": ["speed"]}, "no column 'speed'"),
                                                     ({"objectives": ["config"]}, "unknown score 'config'"),
                                                     ({"resamples": 5}, "resamples must be"), ({"level": 1.5}, "level must be")])
    def test_bad_arguments_are_config_errors(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            rank(_table({"a": [0.5, 0.6]}), **kwargs)

    def test_writes_csv_and_json(self, tmp_path: Path) -> None:
        ranking = rank(_table({"a": [0.5, 0.6, 0.9], "b": [0.5, 0.6, 0.9]}))
        csv = pd.read_csv(ranking.write(tmp_path / "r.csv"))
        assert list(csv.columns) == RANKING_COLUMNS and len(csv) == 4
        data = json.loads(ranking.write(tmp_path / "r.json").read_text(encoding="utf-8"))
        assert "not distinguishable: a and b" in data["summary"] and len(data["pairs"]) == 4


def test_a_compare_table_ranks_itself(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        dump(generate(GeneratorConfig(seed=seed, requests=10)), to="lab", path=tmp_path / f"s{seed}.lab.json")
    table = compare_folder(tmp_path, ["minicode", ("again", "minicode"), "lab"], processes=1, window=4000)
    ranking = table.ranking(["needed_later_recall", "cost"], seed=1)
    for objective in ("needed_later_recall", "cost"):
        a, b = _row(ranking, objective, "minicode"), _row(ranking, objective, "again")
        assert a["mean"] == b["mean"] and a["wins"] == b["wins"]
        assert ("minicode", "again") in ranking.indistinguishable(objective) or ("again", "minicode") in ranking.indistinguishable(objective)
    assert ranking.df.equals(table.ranking(["needed_later_recall", "cost"], seed=1).df)
