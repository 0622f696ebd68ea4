"""The Compare page: 2-4 configs (current, presets, saved) at one window and counter, the deciding table, small multiples."""

from __future__ import annotations

import json
import re

import pandas as pd
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from lab import figures
from lab.core.presets import preset_names
from tests.app.conftest import no_exception, switch_to


def _frame(at: AppTest, key: str):  # noqa: ANN202 - the element
    # A dataframe without selections carries no element id, so its key is not visible here: the page
    # draws the lead table first and the one behind the expander second, and nothing else.
    frames = list(at.dataframe)
    assert len(frames) == 2, len(frames)
    return frames[["compare.table", "compare.table_all"].index(key)]


def _table(at: AppTest, key: str = "compare.table") -> pd.DataFrame:
    return _frame(at, key).value


def _all(at: AppTest) -> pd.DataFrame:
    return _table(at, "compare.table_all")


def _shown(at: AppTest, key: str = "compare.table") -> pd.DataFrame:
    """The table as the user reads it: the Styler's formatted display values."""
    return dataframe_util.convert_arrow_bytes_to_pandas_df(_frame(at, key).proto.arrow_data.styler.display_values)


def _highlighted(at: AppTest, key: str = "compare.table") -> set[tuple[int, str]]:
    """(row, column name) of every cell the Styler paints."""
    frame = _frame(at, key)
    columns = list(frame.value.columns)
    cells: set[tuple[int, str]] = set()
    for selectors, props in re.findall(r"([^{}]+)\{([^}]*)\}", frame.proto.arrow_data.styler.styles):
        if "background-color" in props:
            cells |= {(int(r), columns[int(c)]) for r, c in re.findall(r"row(\d+)_col(\d+)", selectors)}
    return cells


def _labels(at: AppTest, key: str = "compare.table") -> dict[str, str]:
    # "_index" is Streamlit's own entry for the (hidden) index.
    return {col: conf.get("label") for col, conf in json.loads(_frame(at, key).proto.columns).items() if col != "_index"}


def _cfg_key(at: AppTest, field: str) -> str:
    """A Pipeline widget's key in the current widget generation (loading a session may rebuild them)."""
    return f"cfg{at.session_state.get('lab.widget_gen', 0)}:{field}"


def _charts(at: AppTest) -> dict[str, dict]:
    return {str(c.key) if hasattr(c, "key") else "": json.loads(c.proto.spec) for c in at.get("plotly_chart")}


class TestCompare:
    def test_no_session_shows_the_empty_state(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "compare")
        assert bare_app.button(key="lab.load_sample")
        assert not bare_app.dataframe

    def test_default_compares_current_with_another_preset(self, app: AppTest) -> None:
        switch_to(app, "compare")
        table = _table(app)
        assert list(table["config"]) == ["current", "mewcode"]
        assert {"peak_sent", "cost", "retention_score", "failures"} <= set(table.columns)
        # under minicode the small sample spills and clears; mewcode's 50 KB threshold never fires on it
        assert table.loc[0, "peak_sent"] < table.loc[1, "peak_sent"]

    def test_offers_current_every_preset_and_at_most_four(self, app: AppTest) -> None:
        switch_to(app, "compare")
        pick = app.multiselect(key="compare.pick")
        assert pick.options == ["current", *preset_names()]
        assert pick.proto.max_selections == 4

    def test_three_configs(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["minicode", "mewcode", "codex"]).run()
        no_exception(app)
        assert list(_table(app)["config"]) == ["minicode", "mewcode", "codex"]

    def test_fewer_than_two_asks_for_more(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["current"]).run()
        no_exception(app)
        assert any("at least two" in i.value for i in app.info)
        assert not app.dataframe

    def test_saved_config_can_be_compared(self, app: AppTest) -> None:
        switch_to(app, "pipeline")
        app.toggle(key=_cfg_key(app, "spill.enabled")).set_value(False).run()
        switch_to(app, "compare")
        app.text_input(key="compare.save_name").set_value("no spill").run()
        app.button(key="compare.save").click().run()
        no_exception(app)
        assert "saved: no spill" in app.multiselect(key="compare.pick").options
        app.multiselect(key="compare.pick").set_value(["minicode", "saved: no spill"]).run()
        table = _all(app)
        assert list(table["config"]) == ["minicode", "saved: no spill"]
        assert table.loc[0, "compactions_tool_budget"] > 0 and table.loc[1, "compactions_tool_budget"] == 0

    def test_save_without_a_name_is_an_error(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.button(key="compare.save").click().run()
        no_exception(app)
        assert any("needs a name" in e.value for e in app.error)


class TestOneWindowAndCounter:
    def _at_50k_with_chars(self, app: AppTest) -> AppTest:
        # The current config: minicode at 50k counted with chars/3.5; the compared preset: minicode at 200k with minicode.
        switch_to(app, "pipeline")
        app.number_input(key=_cfg_key(app, "window")).set_value(50_000).run()
        app.selectbox(key=_cfg_key(app, "counter")).set_value("chars/3.5").run()
        no_exception(app)
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["current", "minicode"]).run()
        no_exception(app)
        return app

    def test_by_default_every_config_runs_at_the_current_window_and_counter(self, app: AppTest) -> None:
        self._at_50k_with_chars(app)
        assert app.checkbox(key="compare.uniform").value is True
        rows = _all(app)
        assert list(rows["window"]) == [50_000, 50_000]
        # one counter: both raw histories are the same count (mewcode's line can no longer sit above it)
        assert rows.loc[0, "peak_raw"] == rows.loc[1, "peak_raw"]
        assert any("window 50,000 tokens, counted with chars/3.5" in c.value for c in app.caption)

    def test_unticked_each_config_runs_at_its_own(self, app: AppTest) -> None:
        self._at_50k_with_chars(app)
        app.checkbox(key="compare.uniform").uncheck().run()
        no_exception(app)
        rows = _all(app)
        assert list(rows["window"]) == [50_000, 200_000]
        assert rows.loc[0, "peak_raw"] != rows.loc[1, "peak_raw"]
        assert any("minicode 200,000 (minicode)" in t.value for t in app.text)

    def test_the_checkbox_label(self, app: AppTest) -> None:
        switch_to(app, "compare")
        assert app.checkbox(key="compare.uniform").label == "Run every config at the current window and counter"


class TestTable:
    def test_leads_with_the_deciding_columns_and_keeps_the_rest_behind_an_expander(self, app: AppTest) -> None:
        switch_to(app, "compare")
        assert list(_table(app).columns) == list(figures.COMPARE_LEAD)
        assert "breaker_open_over_watermark" in _table(app).columns
        rest = list(_all(app).columns)
        assert rest[0] == "config"
        assert {"summary_calls", "cache_hit_ratio", "window", "peak_raw", "invalid_requests"} <= set(rest)
        assert not set(rest[1:]) & set(figures.COMPARE_LEAD)
        assert "Every column" in [e.label for e in app.expander]

    def test_column_labels_are_readable(self, app: AppTest) -> None:
        switch_to(app, "compare")
        labels = _labels(app)
        assert labels["peak_sent"] == "Peak sent (tokens)" and labels["needed_later_recall"] == "Needed-later recall (names)"
        for key in ("compare.table", "compare.table_all"):
            assert all(label and "_" not in label for label in _labels(app, key).values()), _labels(app, key)

    def test_numbers_are_formatted(self, app: AppTest) -> None:
        switch_to(app, "compare")
        raw, shown = _table(app), _shown(app)
        for i in range(len(raw)):
            assert shown.loc[i, "cost"] == f"${raw.loc[i, 'cost']:,.4f}"
            assert shown.loc[i, "peak_sent"] == f"{raw.loc[i, 'peak_sent']:,}" and "," in shown.loc[i, "peak_sent"]
            assert shown.loc[i, "retention_score"] == f"{raw.loc[i, 'retention_score']:.1%}"
        rest = _shown(app, "compare.table_all")
        assert rest["cache_hit_ratio"].str.endswith("%").all()

    def test_best_is_highlighted_only_where_it_is_better_and_values_differ(self, app: AppTest) -> None:
        switch_to(app, "compare")
        raw, marked = _table(app), _highlighted(app)
        # the small sample at 200k: minicode sends less; nobody fails, so failures has no best
        assert (raw["failures"] == 0).all()
        assert (0, "peak_sent") in marked and (1, "peak_sent") not in marked
        assert not {c for _, c in marked} & {"failures", "compactions", "config", "breaker_open_over_watermark"}
        assert {c for _, c in marked} == set(figures.best_cells(raw))
        # summary calls, cache hits and the window are never ranked
        rest_marked = {c for _, c in _highlighted(app, "compare.table_all")}
        assert not rest_marked & {"summary_calls", "cache_hit_ratio", "window", "requests", "compactions_tool_budget"}


class TestSmallMultiples:
    def test_one_mini_timeline_per_config_on_shared_axes(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["minicode", "mewcode", "codex"]).run()
        no_exception(app)
        charts = _charts(app)
        assert {"compare.chart", "compare.multiples"} <= set(charts)
        spec = charts["compare.multiples"]
        titles = [a["text"] for a in spec["layout"]["annotations"]]
        assert titles == ["minicode", "mewcode", "codex"]
        sent = [t for t in spec["data"] if t.get("name") in titles]
        assert [t["name"] for t in sent] == titles
        assert len({t["xaxis"] for t in sent}) == 3
        for axis in ("xaxis", "yaxis"):
            # shared axes: every panel's axis but one matches that one
            names = [k for k in spec["layout"] if re.fullmatch(axis + r"\d*", k)]
            matched = [spec["layout"][k].get("matches") for k in names]
            assert len(names) == 3 and matched.count(None) == 1 and len(set(matched) - {None}) == 1
        assert ["One per config" in t.label for t in app.tabs] == [False, True]


def test_every_config_breaking_one_constraint_is_a_warning_that_says_where(app: AppTest) -> None:
    from lab.core.presets import preset

    # A window no request fits in, even after recovery: every config fails requests, and the page says why.
    app.session_state["lab.config"] = preset("minicode").model_copy(update={"window": 1000})
    switch_to(app, "compare")
    no_exception(app)
    [warning] = [w.value for w in app.warning if "broke one constraint" in w.value]
    assert warning.startswith("all 2 config") and "failed requests" in warning and "request" in warning and "window of at least" in warning
    assert "error" not in _all(app).columns


def test_the_ranking_shows_each_config_per_objective_with_its_record(app: AppTest) -> None:
    switch_to(app, "compare")
    no_exception(app)
    [table] = list(app.table)
    shown = table.value.reset_index()
    assert set(shown["config"]) == {"current", "mewcode"} and {"needed_later_recall", "cost"} <= set(shown["objective"])
    # One session: no interval, one meeting per pair, and the cheaper config of the compare table ranks first on cost.
    cost = shown[shown["objective"] == "cost"].sort_values("rank")
    assert (cost["sessions"] == 1).all() and (cost["wins"] + cost["losses"] + cost["ties"] == 1).all() and cost["low"].isna().all()
    compared = _table(app)
    assert cost.iloc[0]["config"] == compared.sort_values("cost").iloc[0]["config"]
    assert cost.iloc[0]["mean"] == compared["cost"].min()
    summary = [t.value for t in app.text if t.value.startswith("needed_later_recall (higher is better)")]
    assert len(summary) == 1 and "(no interval: fewer than 2 sessions)" in summary[0]


def test_content_recall_is_a_lead_column_and_a_thin_session_says_so(app: AppTest) -> None:
    switch_to(app, "compare")
    no_exception(app)
    lead = _table(app)
    assert {"content_recall", "content_needed", "reread_tokens", "needed_later_recall"} <= set(lead.columns)
    assert _labels(app)["content_recall"] == "Content recall"
    thin = bool(_all(app)["content_thin"].astype(bool).any())
    said = any("too thin to rank configs" in c.value for c in app.caption)
    assert said == thin


class TestInvalidAndPricesExplained:
    """Issue 31 §2 and §6: the costs name their row and prices; invalid requests come with their reasons, per config."""

    def test_invalid_requests_are_explained_per_config_and_the_prices_named(self, app: AppTest, monkeypatch) -> None:  # noqa: ANN001
        from lab.ui import replays

        real = replays.get_compare

        def marked(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            table = real(*args, **kwargs)
            label, report = next(iter(table.reports.items()))
            rows = list(report.rows)
            rows[3] = rows[3].model_copy(update={"valid_anthropic": False, "problems": ["anthropic: message 3 (assistant, id a3): empty text block"]})
            table.reports[label] = report.model_copy(update={"rows": rows, "invalid_requests": 1})
            return table

        monkeypatch.setattr(replays, "get_compare", marked)
        switch_to(app, "compare")
        warned = [w.value for w in app.warning if "invalid request" in w.value]
        assert len(warned) == 1 and "empty text block \\(Anthropic refuses it\\)\\: request 3;" in warned[0] and warned[0].startswith("current")
        captions = "\n".join(c.value for c in app.caption)
        assert "Costs in dollars at Claude Sonnet 4.5: \\$3/\\$15 per MTok in/out" in captions
        assert "priced at the session's own model" in captions
