"""lab.figures: every trace is drawn from the Report the replay returned."""

from __future__ import annotations

import subprocess
import sys
from itertools import accumulate

import pandas as pd
import plotly.graph_objects as go
import pytest

from lab import figures
from lab.core.presets import preset
from lab.replay import Report, compare, replay
from tests.conftest import ROOT, SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"


@pytest.fixture(scope="module")
def report() -> Report:
    cfg = preset("minicode")
    cfg.window = 12_000
    cfg.watermark.ratio = 0.5  # low enough that the watermark and summary stages act (and sometimes fail)
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
        assert {t.name.removeprefix("event: ") for t in event_traces} == stages
        for t in event_traces:
            stage = t.name.removeprefix("event: ")
            assert t.marker.color == figures.STAGE_COLORS.get(stage, t.marker.color)
            expected = [(i, e["tokens_before"]) for i, e in events if e["stage"] == stage]
            assert list(zip(t.x, t.y)) == expected

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
        assert best == {"peak_sent": 100, "cost": 0.2, "retention_score": 0.9, "cache_hit_ratio": 0.8}
        html = figures.style_compare(df).to_html()
        # ties for the best are all highlighted (both 0.2 costs); a column where all agree (failures) is not
        assert html.count("font-weight: bold") >= 1
        styles = figures.style_compare(df)._compute().ctx
        marked = {(r, c) for (r, c), props in styles.items() if props}
        cols = list(df.columns)
        assert marked == {(1, cols.index("peak_sent")), (0, cols.index("cost")), (2, cols.index("cost")),
                          (1, cols.index("retention_score")), (2, cols.index("cache_hit_ratio"))}


class TestEdges:
    def test_report_without_rows_draws_empty_figures(self) -> None:
        empty = Report()
        for fn in (figures.timeline, figures.composition, figures.cost):
            assert isinstance(fn(empty), go.Figure)
        assert isinstance(figures.compare_timelines({}), go.Figure)

    def test_figures_never_import_streamlit(self) -> None:
        code = "import sys; import lab.figures; print('streamlit' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "False"
