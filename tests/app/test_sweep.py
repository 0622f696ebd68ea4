"""The Sweep page: a tiny sweep over a sample runs with progress, draws the front, and a point loads as the current config;
a seeded sweep of a corpus session gives the front lab.sweep gives."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import lab
from lab.ui.sweep import trial_from_selection
from tests.app.conftest import no_exception, switch_to
from tests.conftest import corpus_file

# Two fields, four trials of two per generation: enough for a front, seconds on the small sample.
SPACE = 'spill.threshold = [1000, 20000]\nmicrocompact.enabled = [true, false]\n'


def _run(at: AppTest, trials: int = 4) -> AppTest:
    switch_to(at, "sweep")
    at.text_area(key="sweep.space").set_value(SPACE)
    at.number_input(key="sweep.trials").set_value(trials)
    at.number_input(key="sweep.population").set_value(2)
    at.button(key="sweep.run").click().run()
    no_exception(at)
    return at


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


class TestSweepPage:
    def test_runs_a_sweep_and_draws_the_front(self, bare_app: AppTest) -> None:
        at = _run(bare_app)
        assert not at.error, [e.value for e in at.error]
        front = at.dataframe[0].value
        assert len(front) >= 1
        assert {"trial", "cost", "needed_later_recall", "spill.threshold"} <= set(front.columns)
        traces = {t["name"]: t for t in _charts(at)[0]["data"]}
        assert "Pareto front" in traces
        # every point names its trial, which is what a click hands back
        assert sorted(d[0] for d in traces["Pareto front"]["customdata"]) == sorted(int(t) for t in front["trial"])
        # the progress bar ended full
        assert any(getattr(p, "value", None) == 100 or getattr(p.proto, "value", None) == 100 for p in at.get("progress"))

    def test_a_front_point_loads_as_the_current_config(self, bare_app: AppTest) -> None:
        at = _run(bare_app)
        front = at.dataframe[0].value
        trial = int(front["trial"].iloc[-1])
        at.selectbox(key="sweep.trial").set_value(trial)
        at.button(key="sweep.load").click().run()
        no_exception(at)
        cfg = at.session_state["lab.config"]
        assert cfg.label == f"sweep-trial-{trial}"
        assert cfg.spill.threshold == int(front["spill.threshold"].iloc[-1])
        assert cfg.microcompact.enabled == bool(front["microcompact.enabled"].iloc[-1])
        assert at.success

    def test_a_click_on_a_chart_point_loads_it_once(self, bare_app: AppTest) -> None:
        at = _run(bare_app)
        front = at.dataframe[0].value
        trial = int(front["trial"].iloc[0])
        # What Streamlit stores for a plotly selection: the clicked point with its customdata (the trial number).
        at.session_state["sweep.chart"] = {"selection": {"points": [{"customdata": [trial]}], "point_indices": [0], "box": [], "lasso": []}}
        at.run()
        no_exception(at)
        assert at.session_state["lab.config"].label == f"sweep-trial-{trial}"
        assert [s.value for s in at.success] == [f"trial {trial} is now the current config (see Pipeline)"]
        # The selection persists across reruns; it must not load again (and undo later Pipeline edits).
        at.run()
        assert not at.success

    def test_a_bad_space_is_one_error_and_the_page_keeps_running(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "sweep")
        bare_app.text_area(key="sweep.space").set_value("spill.threshold = [10, 20]\n")
        bare_app.button(key="sweep.run").click().run()
        no_exception(bare_app)
        assert [e.value for e in bare_app.error] == ["space field spill.threshold: low 10 is below the field's minimum 100"]


# A small corpus session whose front trades cost against recall; 30 trials of it take about a second.
CORPUS_SESSION = "openai-chat/swe-agent-marshmallow-1867.traj"
CORPUS_SPACE = "window = { choices = [16000, 32000] }\nspill.threshold = [1000, 20000]\nwatermark.ratio = [0.5, 0.95]\n"


@pytest.mark.corpus(CORPUS_SESSION)
def test_a_seeded_corpus_sweep_gives_the_front_of_lab_sweep(bare_app: AppTest) -> None:
    at = switch_to(bare_app, "sweep")
    at.multiselect(key="sweep.sources").set_value(["corpus/" + CORPUS_SESSION])
    at.text_area(key="sweep.space").set_value(CORPUS_SPACE)
    at.number_input(key="sweep.trials").set_value(30)
    at.number_input(key="sweep.population").set_value(10)
    at.number_input(key="sweep.seed").set_value(7)
    at.button(key="sweep.run").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    # The same inputs through lab.sweep: the file, the space, the seed, and the page's current config as the base.
    expected = lab.sweep(corpus_file(CORPUS_SESSION), CORPUS_SPACE, trials=30, population=10, seed=7,
                         objectives=["cost", "needed_later_recall"], base=at.session_state["lab.config"])
    front = expected.pareto
    assert len(front) >= 2 and front["cost"].nunique() >= 2
    shown = at.dataframe[0].value
    assert [int(t) for t in shown["trial"]] == [int(t) for t in front["trial"]]
    for column in ("cost", "needed_later_recall", "spill.threshold", "window"):
        assert list(shown[column]) == pytest.approx(list(front[column])), column
    stored = at.session_state["lab.sweep_result"]
    assert stored.transcripts == ["corpus/" + CORPUS_SESSION]
    pd.testing.assert_frame_equal(stored.df, expected.df)
    traces = {t["name"]: t for t in _charts(at)[0]["data"]}
    assert sorted(d[0] for d in traces["Pareto front"]["customdata"]) == sorted(int(t) for t in front["trial"])


@pytest.mark.parametrize(
    ("event", "trial"),
    [
        ({"selection": {"points": [{"customdata": [7], "x": 1.0}]}}, 7),
        ({"selection": {"points": [{"customdata": 3}]}}, 3),
        ({"selection": {"points": []}}, None),
        ({}, None),
        (None, None),
    ],
    ids=["list-customdata", "scalar-customdata", "nothing-selected", "no-selection", "no-event"],
)
def test_trial_from_selection(event: object, trial: int | None) -> None:
    assert trial_from_selection(event) == trial


def test_a_sweep_with_no_feasible_trial_says_why(bare_app: AppTest) -> None:
    from lab.core.presets import preset

    switch_to(bare_app, "sweep")
    # A window no request of the sample fits in, even after recovery: every trial fails its requests.
    bare_app.session_state["lab.config"] = preset("minicode").model_copy(update={"window": 1000})
    at = _run(bare_app)
    assert not at.error, [e.value for e in at.error]
    [warning] = [w.value for w in at.warning if "No feasible trial" in w.value]
    assert "broke one constraint, failed requests" in warning and "window of at least" in warning


# Two small generated samples: enough for leave-one-session-out, a second or two for a few trials.
HELD_OUT_SOURCES = ["generated-small.lab.json", "generated-repeat-reads.lab.json"]


def test_held_out_by_default_says_in_sample_and_held_out_and_loads_the_recommended(bare_app: AppTest) -> None:
    at = switch_to(bare_app, "sweep")
    at.multiselect(key="sweep.sources").set_value(HELD_OUT_SOURCES)
    at.text_area(key="sweep.space").set_value(SPACE)
    at.number_input(key="sweep.trials").set_value(4)
    at.number_input(key="sweep.population").set_value(2)
    at.button(key="sweep.run").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    result = at.session_state["lab.sweep_result"]
    assert result.folds == 2 and sorted(n for out in result.held_out for n in out) == sorted(HELD_OUT_SOURCES)
    texts = [t.value for t in at.text]
    assert result.recommendation() in texts and any(t.startswith("Held out in 2 folds") for t in texts)
    chosen = result.chosen
    assert chosen is not None and "in-sample" in result.recommendation() and "held-out" in result.recommendation()
    front = at.dataframe[0].value
    assert {"cost_heldout", "needed_later_recall_heldout", "chosen", "fold"} <= set(front.columns)
    at.button(key="sweep.load_chosen").click().run()
    no_exception(at)
    assert at.session_state["lab.config"].label == f"sweep-trial-{int(chosen['trial'])}"


def test_folds_one_turns_held_out_off_on_the_page(bare_app: AppTest) -> None:
    at = switch_to(bare_app, "sweep")
    at.multiselect(key="sweep.sources").set_value(HELD_OUT_SOURCES)
    at.text_area(key="sweep.space").set_value(SPACE)
    at.number_input(key="sweep.trials").set_value(2)
    at.number_input(key="sweep.population").set_value(2)
    at.number_input(key="sweep.folds").set_value(1)
    at.button(key="sweep.run").click().run()
    no_exception(at)
    result = at.session_state["lab.sweep_result"]
    assert result.folds == 0 and any("held-out not measured" in t.value for t in at.text)
