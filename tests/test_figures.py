"""lab.figures: every trace is drawn from the Report the replay returned."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from itertools import accumulate

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from lab import figures
from lab.core.presets import preset
from lab.evaluation import compare
from lab.replayer import Report, replay
from lab.core.config import with_values
from tests.conftest import ROOT, SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"


@pytest.fixture(scope="module")
def report() -> Report:
    # A ratio low enough that the watermark and summary stages act (and sometimes fail).
    cfg = with_values(preset("minicode"), {"window": 12_000, "watermark.ratio": 0.5})
    return replay(SMALL, cfg)


def _trace(fig: go.Figure, name: str) -> go.Scatter:
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, [t.name for t in fig.data]
    return found[0]


class TestTimeline:
    def test_sent_and_raw_traces_are_the_rows(self, report: Report) -> None:
        fig = figures.timeline(report)
        xs = [r.index for r in report.rows]
        sent, raw = _trace(fig, "sent"), _trace(fig, "raw history")
        assert list(sent.x) == xs and list(sent.y) == [r.sent_tokens for r in report.rows]
        assert list(raw.y) == [r.raw_tokens for r in report.rows]

    def test_window_and_watermark_lines(self, report: Report) -> None:
        fig = figures.timeline(report)
        assert set(_trace(fig, "window").y) == {report.window}
        assert set(_trace(fig, "watermark").y) == {report.watermark_tokens} == {6000}

    def test_one_marker_per_event_coloured_by_stage(self, report: Report) -> None:
        fig = figures.timeline(report)
        event_traces = [t for t in fig.data if t.name.startswith("event: ")]
        events = [(r.index, e) for r in report.rows for e in r.events]
        assert sum(len(t.x) for t in event_traces) == len(events) > 0
        stages = {e["stage"] for _, e in events}
        # Named in the CLI's and the pages' words ("clearing", not "microcompact"), one entry per stage.
        by_label = {figures.stage_label(stage): stage for stage in stages}
        assert {t.name.removeprefix("event: ") for t in event_traces} == set(by_label) and len(by_label) == len(stages)
        for t in event_traces:
            stage = by_label[t.name.removeprefix("event: ")]
            assert t.marker.color == figures.STAGE_COLORS.get(stage, t.marker.color)
            expected = [(i, e["tokens_before"]) for i, e in events if e["stage"] == stage]
            assert list(zip(t.x, t.y, strict=True)) == expected

    def test_hover_names_stage_trigger_and_tokens_freed(self, report: Report) -> None:
        points = figures.event_points(report)
        first_row = next(r for r in report.rows if r.events)
        ev = first_row.events[0]
        text = points[ev["stage"]]["text"][0]
        assert f"stage: {ev['stage']}" in text and f"trigger: {ev['trigger']}" in text
        assert f"tokens freed: {ev['tokens_freed']:,}" in text

    def test_failed_events_are_drawn_as_crosses(self, report: Report) -> None:
        points = figures.event_points(report)
        failed = sum(1 for r in report.rows for e in r.events if not e["success"])
        assert failed > 0
        assert sum(p["symbol"].count("x") for p in points.values()) == failed

    def test_the_legend_says_what_a_cross_means(self, report: Report) -> None:
        key = _trace(figures.timeline(report), figures.FAILED_KEY)
        assert "✗" in key.name and "failed" in key.name
        assert key.marker.symbol == "x" and key.showlegend is not False

    def test_no_failure_key_without_a_failed_event(self) -> None:
        clean = replay(SMALL, preset("minicode"))
        assert all(e["success"] for r in clean.rows for e in r.events)
        assert figures.FAILED_KEY not in {t.name for t in figures.timeline(clean).data}

    def test_selected_request_is_marked(self, report: Report) -> None:
        fig = figures.timeline(report, selected=3)
        assert [s.x0 for s in fig.layout.shapes] == [3]


class TestCompositionAndCost:
    def test_stacked_parts_are_the_row_composition(self, report: Report) -> None:
        fig = figures.composition(report)
        names = [t.name for t in fig.data]
        assert names[:6] == ["system", "user", "assistant", "tool output", "stubs", "summary"]
        assert all(t.stackgroup == "one" for t in fig.data)
        tool = _trace(fig, "tool output")
        assert list(tool.y) == [r.composition.get("tool_output", 0) for r in report.rows]

    def test_cumulative_costs_and_cache_hits(self, report: Report) -> None:
        fig = figures.cost(report)
        compacted, none = _trace(fig, "cost, compacted"), _trace(fig, "cost, no compaction")
        assert list(compacted.y) == pytest.approx(list(accumulate(r.cost for r in report.rows)))
        assert compacted.y[-1] == pytest.approx(report.total_cost)
        assert none.y[-1] == pytest.approx(report.total_cost_uncompacted)
        hits = _trace(fig, "cache-hit ratio")
        assert list(hits.y) == [r.cache_hit_ratio for r in report.rows]


class TestCompare:
    def test_one_sent_line_per_config(self) -> None:
        table = compare(SMALL, ["minicode", "mewcode"])
        fig = figures.compare_timelines(table.reports)
        for label, rep in table.reports.items():
            assert list(_trace(fig, label).y) == [r.sent_tokens for r in rep.rows]
            assert set(_trace(fig, f"{label} watermark").y) == {rep.watermark_tokens}
        assert _trace(fig, "raw history")

    def test_best_per_column_direction(self) -> None:
        df = pd.DataFrame({
            "config": ["a", "b", "c"],
            "peak_sent": [300, 100, 200],
            "cost": [0.2, 0.3, 0.2],
            "retention_score": [0.5, 0.9, None],
            "cache_hit_ratio": [0.1, 0.2, 0.8],
            "compactions": [1, 5, 3],
            "failures": [0, 0, 0],
        })
        best = figures.best_per_column(df)
        assert best == {"peak_sent": 100, "cost": 0.2, "retention_score": 0.9}
        styles = figures.style_compare(df)._compute().ctx
        marked = {(r, c) for (r, c), props in styles.items() if props}
        cols = list(df.columns)
        # ties for the best are all highlighted (both 0.2 costs); a column where all agree (failures) is not
        assert marked == {(1, cols.index("peak_sent")), (0, cols.index("cost")), (2, cols.index("cost")),
                          (1, cols.index("retention_score"))}


class TestHighlightRules:
    def _marked(self, df: pd.DataFrame) -> set[tuple[int, str]]:
        ctx = figures.style_compare(df)._compute().ctx
        return {(r, df.columns[c]) for (r, c), props in ctx.items() if any("background-color" in p for p, _ in props)}

    def test_counts_without_a_better_direction_are_never_ranked(self) -> None:
        # summary_calls 0 for a config that never compacted is not "best"; nor are compactions or cache hits
        df = pd.DataFrame({"config": ["never", "often"], "summary_calls": [0, 4], "compactions": [0, 9],
                           "cache_hit_ratio": [1.0, 0.6], "requests_over_watermark": [12, 3], "window": [32_000, 32_000]})
        assert figures.best_cells(df) == {}
        assert self._marked(df) == set()

    def test_equal_values_have_no_best(self) -> None:
        df = pd.DataFrame({"config": ["a", "b"], "cost": [0.5, 0.5], "peak_sent": [900, 900], "failures": [0, 0]})
        assert figures.best_cells(df) == {}

    def test_one_value_among_missing_ones_is_not_best(self) -> None:
        df = pd.DataFrame({"config": ["a", "b"], "needed_later_recall": [0.7, None]})
        assert figures.best_cells(df) == {}

    def test_failures_invalid_and_breaker_lower_is_better(self) -> None:
        df = pd.DataFrame({"config": ["a", "b", "c"], "failures": [2, 0, 0], "invalid_requests": [0, 3, 0],
                           "overflows": [5, 1, 1], "breaker_open_over_watermark": [4, 0, 7]})
        assert figures.best_cells(df) == {"failures": [1, 2], "invalid_requests": [0, 2], "overflows": [1, 2],
                                          "breaker_open_over_watermark": [1]}

    def test_a_config_with_failed_requests_is_not_best_on_cost_peak_or_retention(self) -> None:
        # refused requests are not billed and never compacted: cheap, small and retentive for the wrong reason
        df = pd.DataFrame({"config": ["fails", "works", "also"], "failures": [17, 0, 0], "cost": [0.12, 0.20, 0.36],
                           "peak_sent": [9_000, 8_500, 11_800], "retention_score": [1.0, 0.85, 0.52]})
        cells = figures.best_cells(df)
        assert cells == {"failures": [1, 2], "cost": [1], "peak_sent": [1], "retention_score": [1]}
        assert (0, "cost") not in self._marked(df)

    def test_when_every_config_failed_they_are_ranked_among_themselves(self) -> None:
        df = pd.DataFrame({"config": ["a", "b"], "failures": [3, 1], "cost": [0.1, 0.2]})
        assert figures.best_cells(df) == {"failures": [1], "cost": [0]}


class TestTableFormat:
    def test_money_shares_and_thousands(self) -> None:
        df = pd.DataFrame({"config": ["a", "b"], "cost": [1234.5, 0.01234], "peak_sent": [36_985, 512],
                           "retention_score": [0.8512, None], "cache_hit_ratio": [1.0, 0.0], "first_request_kept": [True, None],
                           "replay_seconds": [0.01234, 1.5]})
        shown = figures.style_compare(df)._compute()
        text = {(r, df.columns[c]): v["display_value"] for r, row in enumerate(shown._translate(False, False)["body"])
                for c, v in enumerate(x for x in row if x.get("type") == "td")}
        assert text[(0, "cost")] == "$1,234.5000" and text[(1, "cost")] == "$0.0123"
        assert text[(0, "peak_sent")] == "36,985" and text[(1, "peak_sent")] == "512"
        assert text[(0, "retention_score")] == "85.1%" and text[(1, "retention_score")] == "–"
        assert text[(0, "cache_hit_ratio")] == "100.0%"
        assert text[(0, "first_request_kept")] == "yes" and text[(1, "first_request_kept")] == "–"
        assert text[(0, "replay_seconds")] == "0.012"

    def test_labels_are_readable_for_every_column(self) -> None:
        table = compare(SMALL, ["minicode", "mewcode"])
        for col in table.columns:
            label = figures.compare_label(col)
            assert label and "_" not in label and label[0].isupper(), (col, label)
        # The CLI's and the Timeline's words: a tool-budget compaction is a spill, a full one a summary.
        assert figures.compare_label("compactions_tool_budget") == "Spills (tool budget)"
        assert figures.compare_label("compactions_full") == "Summaries (full)"
        assert figures.compare_label("compactions_clear_tool_uses") == "Clearings (clear tool uses)"
        assert figures.compare_label("needed_later_recall") == "Needed-later recall (names)"

    def test_lead_columns_first_and_the_rest_with_config(self) -> None:
        table = compare(SMALL, ["minicode", "mewcode"])
        lead, rest = figures.compare_columns(table.columns)
        assert lead == list(figures.COMPARE_LEAD)
        assert rest[0] == "config" and set(rest[1:]) == set(table.columns) - set(lead)
        assert all(figures.compare_help(c) for c in lead if c != "config")


class TestSmallMultiples:
    @pytest.fixture(scope="class")
    def reports(self) -> dict[str, Report]:
        return compare(SMALL, ["minicode", "mewcode", "codex"], window=12_000).reports

    def test_one_panel_per_config_with_its_rows(self, reports: dict[str, Report]) -> None:
        fig = figures.small_multiples(reports)
        assert [a.text for a in fig.layout.annotations] == list(reports)
        axes = set()
        for label, rep in reports.items():
            line = _trace(fig, label)
            assert list(line.y) == [r.sent_tokens for r in rep.rows]
            axes.add((line.xaxis, line.yaxis))
        assert len(axes) == len(reports)
        raws = [t for t in fig.data if t.name == "raw history"]
        assert [list(t.y) for t in raws] == [[r.raw_tokens for r in rep.rows] for rep in reports.values()]
        # one legend entry per kind of line, however many panels draw it
        assert sum(1 for t in raws if t.showlegend) == 1

    def test_events_and_watermarks_are_the_reports(self, reports: dict[str, Report]) -> None:
        fig = figures.small_multiples(reports)
        events = [t for t in fig.data if (t.name or "").startswith("event: ")]
        assert sum(len(t.x) for t in events) == sum(len(r.events) for rep in reports.values() for r in rep.rows) > 0
        marks = [t for t in fig.data if t.name == "watermark"]
        assert [set(t.y) for t in marks] == [{rep.watermark_tokens} for rep in reports.values()]

    def test_axes_are_shared(self, reports: dict[str, Report]) -> None:
        layout = figures.small_multiples(reports).to_plotly_json()["layout"]
        for axis in ("xaxis", "yaxis"):
            matched = [v.get("matches") for k, v in layout.items() if k.rstrip("0123456789") == axis]
            assert len(matched) == 3 and matched.count(None) == 1 and len(set(matched) - {None}) == 1

    def test_four_configs_make_a_two_by_two_grid(self, reports: dict[str, Report]) -> None:
        four = {**reports, "again": next(iter(reports.values()))}
        layout = figures.small_multiples(four).to_plotly_json()["layout"]
        assert sum(1 for k in layout if k.rstrip("0123456789") == "xaxis") == 4

    def test_titles_are_escaped(self, reports: dict[str, Report]) -> None:
        fig = figures.small_multiples({"<b>x</b>": next(iter(reports.values()))})
        assert fig.layout.annotations[0].text == "&lt;b&gt;x&lt;/b&gt;"

    def test_no_reports_no_panels(self) -> None:
        assert figures.small_multiples({}).data == ()


class TestEdges:
    def test_report_without_rows_draws_empty_figures(self) -> None:
        empty = Report()
        for fn in (figures.timeline, figures.composition, figures.cost):
            assert isinstance(fn(empty), go.Figure)
        assert isinstance(figures.compare_timelines({}), go.Figure)

    def test_per_request_series_go_out_as_typed_arrays_holding_the_rows(self, report: Report) -> None:
        # What st.plotly_chart sends: plotly.io.to_json of the figure. Long series as base64 typed arrays
        # (not a JSON number per point), decoding to exactly the rows' values.
        sent = next(t for t in json.loads(figures.timeline(report).to_json())["data"] if t["name"] == "sent")
        spec = sent["y"]
        assert set(spec) == {"dtype", "bdata"}
        decoded = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=np.dtype(spec["dtype"]))
        assert decoded.tolist() == [r.sent_tokens for r in report.rows]

    def test_figures_never_import_streamlit(self) -> None:
        code = "import sys; import lab.figures; print('streamlit' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "False"


class TestRightAxis:
    """The timeline and cost figures lay out their second y axis by hand, as make_subplots would."""

    def test_the_layout_is_make_subplots_secondary_y(self, report: Report) -> None:
        from plotly.subplots import make_subplots

        reference = make_subplots(specs=[[{"secondary_y": True}]]).layout
        layout = figures.cost(report).layout
        for axis in ("xaxis", "yaxis", "yaxis2"):
            for key in ("anchor", "domain", "overlaying", "side"):
                assert getattr(layout[axis], key) == getattr(reference[axis], key), (axis, key)

    def test_the_cache_hit_bars_sit_on_the_right_axis_and_the_costs_on_the_left(self, report: Report) -> None:
        fig = figures.cost(report)
        axes = {t.name: t.yaxis for t in fig.data}
        assert axes == {"cost, compacted": "y", "cost, no compaction": "y", "cache-hit ratio": "y2"}
        assert tuple(fig.layout.yaxis2.range) == (0, 1) and fig.layout.yaxis.tickprefix == "$"

    def test_the_cost_chart_names_the_row_its_dollars_are_in(self, report: Report) -> None:
        assert report.settings["pricing"]["model"]
        assert f"Cost at {report.settings['pricing']['model']} prices" in figures.cost(report).layout.title.text


class TestRecallLine:
    def test_the_timeline_draws_recall_per_request_on_a_0_to_1_axis(self, report: Report) -> None:
        assert any(r.needed_later_recall is not None for r in report.rows)
        fig = figures.timeline(report)
        line = _trace(fig, "needed-later recall")
        # A request that needed nothing is NaN: a gap in the line (plotly.js draws no point for it).
        expected = [r.needed_later_recall for r in report.rows]
        assert [None if math.isnan(y) else float(y) for y in line.y] == expected
        assert None in expected
        assert line.yaxis == "y2" and tuple(fig.layout.yaxis2.range) == (0, 1.05)

    def test_recall_has_its_own_panel_under_the_tokens_not_an_axis_over_the_window(self, report: Report) -> None:
        layout = figures.timeline(report).layout
        # Not overlaid on the token axis: a panel of its own, below the token panel, on the same requests.
        assert layout.yaxis2.overlaying is None
        assert layout.yaxis2.domain[1] < layout.yaxis.domain[0]
        assert layout.xaxis.anchor == "y2" and layout.yaxis.anchor == layout.yaxis2.anchor == "x"

    def test_without_recall_the_tokens_take_the_whole_height(self, report: Report) -> None:
        empty = report.model_copy(update={"rows": [r.model_copy(update={"needed_later_recall": None}) for r in report.rows]})
        layout = figures.timeline(empty).layout
        assert tuple(layout.yaxis.domain) == (0.0, 1.0) and "yaxis2" not in layout.to_plotly_json()

    def test_no_line_when_nothing_was_needed(self, report: Report) -> None:
        empty = report.model_copy(update={"rows": [r.model_copy(update={"needed_later_recall": None}) for r in report.rows]})
        assert "needed-later recall" not in {t.name for t in figures.timeline(empty).data}

    def test_recall_is_a_higher_is_better_compare_column(self) -> None:
        assert "needed_later_recall" in figures.HIGHER_IS_BETTER


class TestTokenScale:
    """A 200k window over a session that sends 20k: the axis follows the data, the window is named, not drawn at 10x."""

    def test_a_window_far_above_the_data_is_an_annotation_not_the_scale(self, report: Report) -> None:
        wide = report.model_copy(update={"window": report.peak_raw * 20})
        fig = figures.timeline(wide)
        top = fig.layout.yaxis.range[1]
        data_top = max(max(r.raw_tokens for r in wide.rows), max(r.sent_tokens for r in wide.rows))
        assert data_top <= top < wide.window
        assert _trace(fig, "window").visible == "legendonly"
        said = [a.text for a in fig.layout.annotations]
        assert any("window" in text and f"{wide.window:,}" in text for text in said), said

    def test_a_window_near_the_data_is_drawn_as_a_line_inside_the_scale(self, report: Report) -> None:
        fig = figures.timeline(report)
        assert report.window <= report.peak_raw * figures.OFF_SCALE
        assert fig.layout.yaxis.range[1] >= report.window
        assert _trace(fig, "window").visible is not False and _trace(fig, "window").visible != "legendonly"
        assert not [a for a in fig.layout.annotations if "above this scale" in (a.text or "")]
