"""Plotly figures drawn from replay data; the app and a notebook show the same charts.

    from lab.replay import replay
    from lab import figures
    report = replay("session.jsonl", "mewcode")
    figures.timeline(report).show()

Every number on a chart comes from the ``Report`` (or its rows) as the replay
returned it; nothing is recomputed here except running sums. This module never
imports streamlit.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pandas.io.formats.style import Styler

    from .replay import Report

__all__ = [
    "STAGE_COLORS",
    "PART_COLORS",
    "LOWER_IS_BETTER",
    "HIGHER_IS_BETTER",
    "timeline",
    "composition",
    "cost",
    "compare_timelines",
    "event_points",
    "best_per_column",
    "style_compare",
]

STAGE_COLORS: dict[str, str] = {
    "active": "#7f7f7f",
    "spill": "#1f77b4",
    "dedup": "#17becf",
    "microcompact": "#ff7f0e",
    "watermark": "#bcbd22",
    "summary": "#2ca02c",
    "recovery": "#d62728",
}
PART_COLORS: dict[str, str] = {
    "system": "#7f7f7f",
    "user": "#9467bd",
    "assistant": "#8c564b",
    "tool_output": "#1f77b4",
    "stubs": "#aec7e8",
    "summary": "#2ca02c",
}
_PARTS = tuple(PART_COLORS)
_OTHER_COLOR = "#e377c2"
# Legend under the x-axis title, so it never covers the chart's title however many rows it takes.
_LEGEND = {"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0}
_MARGIN = {"t": 50, "b": 110}
# Compare-table columns where the smaller (or larger) value is the better one.
LOWER_IS_BETTER = ("peak_sent", "requests_over_watermark", "invalid_requests", "overflows", "failures", "cost", "summary_calls")
HIGHER_IS_BETTER = ("retention_score", "cache_hit_ratio")


def _xs(report: "Report") -> list[int]:
    return [row.index for row in report.rows]


def _hline(name: str, y: float, xs: Sequence[int], color: str, dash: str, group: str | None = None) -> go.Scatter:
    # A two-point trace rather than a layout shape: it gets a legend entry and a hover, and tests can read it.
    lo, hi = (xs[0], xs[-1]) if xs else (0, 0)
    return go.Scatter(
        x=[lo, hi], y=[y, y], mode="lines", name=name, legendgroup=group,
        line={"color": color, "dash": dash, "width": 1}, hovertemplate=f"{name}: %{{y:,}} tokens<extra></extra>",
    )


def event_points(report: "Report") -> dict[str, dict[str, list[Any]]]:
    """Per stage: the x (request), y (tokens before the stage acted) and hover text of each event."""
    out: dict[str, dict[str, list[Any]]] = {}
    for row in report.rows:
        for ev in row.events:
            stage = str(ev.get("stage", "?"))
            pts = out.setdefault(stage, {"x": [], "y": [], "text": [], "symbol": []})
            pts["x"].append(row.index)
            pts["y"].append(ev.get("tokens_before", row.sent_tokens))
            freed = ev.get("tokens_freed", ev.get("tokens_before", 0) - ev.get("tokens_after", 0))
            status = "" if ev.get("success", True) else " (failed)"
            pts["text"].append(
                f"request {row.index}<br>stage: {stage}{status}<br>trigger: {ev.get('trigger')}"
                f"<br>strategy: {ev.get('strategy') or '-'}<br>tokens freed: {freed:,}"
            )
            pts["symbol"].append("circle" if ev.get("success", True) else "x")
    return out


def timeline(report: "Report", *, selected: int | None = None, title: str | None = None) -> go.Figure:
    """Tokens sent per request against the raw history, the window and watermark lines, and one marker per event."""
    xs = _xs(report)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=xs, y=[r.raw_tokens for r in report.rows], name="raw history", mode="lines",
        line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>raw: %{y:,} tokens<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=xs, y=[r.sent_tokens for r in report.rows], name="sent", mode="lines+markers",
        line={"color": "#1f3b73"}, marker={"size": 5},
        customdata=[[r.index, r.sent_messages] for r in report.rows],
        hovertemplate="request %{x}<br>sent: %{y:,} tokens in %{customdata[1]} messages<extra></extra>",
    ))
    if report.window:
        fig.add_trace(_hline("window", report.window, xs, "#d62728", "solid"))
    if report.watermark_tokens is not None:
        fig.add_trace(_hline("watermark", report.watermark_tokens, xs, "#ff7f0e", "dash"))
    for stage, pts in event_points(report).items():
        fig.add_trace(go.Scatter(
            x=pts["x"], y=pts["y"], mode="markers", name=f"event: {stage}", text=pts["text"],
            marker={"color": STAGE_COLORS.get(stage, _OTHER_COLOR), "size": 10, "symbol": pts["symbol"],
                    "line": {"width": 1, "color": "white"}},
            hovertemplate="%{text}<extra></extra>",
        ))
    if selected is not None and report.rows:
        fig.add_vline(x=selected, line_width=1, line_dash="dot", line_color="#444")
    fig.update_layout(
        title=title or f"Tokens sent per request (config {report.label}, counter {report.counter})",
        xaxis_title="request", yaxis_title="tokens", hovermode="closest", legend=_LEGEND,
        margin=_MARGIN,
    )
    return fig


def composition(report: "Report") -> go.Figure:
    """A stacked area of what each request's context is made of."""
    xs = _xs(report)
    parts = list(_PARTS) + sorted({p for r in report.rows for p in r.composition} - set(_PARTS))
    fig = go.Figure()
    for part in parts:
        fig.add_trace(go.Scatter(
            x=xs, y=[r.composition.get(part, 0) for r in report.rows], name=part.replace("_", " "),
            mode="lines", stackgroup="one", line={"width": 0.5, "color": PART_COLORS.get(part, _OTHER_COLOR)},
            hovertemplate=f"{part}: %{{y:,}} tokens<extra></extra>",
        ))
    fig.update_layout(title="What the context is made of", xaxis_title="request", yaxis_title="tokens",
                      legend=_LEGEND, margin=_MARGIN)
    return fig


def cost(report: "Report") -> go.Figure:
    """Cumulative cost with and without compaction, and the prompt-cache hit ratio per request."""
    xs = _xs(report)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(
        x=xs, y=list(accumulate(r.cost for r in report.rows)), name="cost, compacted", mode="lines",
        line={"color": "#1f3b73"}, hovertemplate="request %{x}<br>$%{y:.4f}<extra></extra>",
    ), secondary_y=False)
    fig.add_trace(go.Scatter(
        x=xs, y=list(accumulate(r.cost_uncompacted for r in report.rows)), name="cost, no compaction",
        mode="lines", line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>$%{y:.4f}<extra></extra>",
    ), secondary_y=False)
    fig.add_trace(go.Bar(
        x=xs, y=[r.cache_hit_ratio for r in report.rows], name="cache-hit ratio", opacity=0.35,
        marker={"color": "#2ca02c"}, hovertemplate="request %{x}<br>cache hits: %{y:.0%}<extra></extra>",
    ), secondary_y=True)
    fig.update_yaxes(title_text="cumulative cost", tickprefix="$", secondary_y=False)
    fig.update_yaxes(title_text="cache-hit ratio", range=[0, 1], tickformat=".0%", tickvals=[0, 0.25, 0.5, 0.75, 1],
                     showgrid=False, secondary_y=True)
    fig.update_layout(title="Cost and prompt-cache hits", xaxis_title="request", legend=_LEGEND,
                      margin=_MARGIN)
    return fig


_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def compare_timelines(reports: Mapping[str, "Report"] | Iterable[tuple[str, "Report"]]) -> go.Figure:
    """Tokens sent per request under each config, over the raw history of the first, with each watermark."""
    items = list(reports.items()) if isinstance(reports, Mapping) else list(reports)
    fig = go.Figure()
    if items:
        first = items[0][1]
        fig.add_trace(go.Scatter(
            x=_xs(first), y=[r.raw_tokens for r in first.rows], name="raw history", mode="lines",
            line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>raw: %{y:,}<extra></extra>",
        ))
    for i, (label, report) in enumerate(items):
        color = _PALETTE[i % len(_PALETTE)]
        fig.add_trace(go.Scatter(
            x=_xs(report), y=[r.sent_tokens for r in report.rows], name=label, legendgroup=label, mode="lines",
            line={"color": color}, hovertemplate=f"{label}<br>request %{{x}}<br>sent: %{{y:,}}<extra></extra>",
        ))
        if report.watermark_tokens is not None:
            fig.add_trace(_hline(f"{label} watermark", report.watermark_tokens, _xs(report), color, "dash", group=label))
    fig.update_layout(title="Tokens sent per request, by config", xaxis_title="request", yaxis_title="tokens",
                      legend=_LEGEND, margin=_MARGIN)
    return fig


def best_per_column(df: "pd.DataFrame") -> dict[str, Any]:
    """The best value of each column where better has a direction (see LOWER_/HIGHER_IS_BETTER) and values differ."""
    best: dict[str, Any] = {}
    for col in (*LOWER_IS_BETTER, *HIGHER_IS_BETTER):
        if col in df.columns:
            values = df[col].dropna()
            # A column where every config scores the same has no best one.
            if values.nunique() > 1 or len(values) == 1:
                best[col] = values.min() if col in LOWER_IS_BETTER else values.max()
    return best


def style_compare(df: "pd.DataFrame", color: str = "#c6efce") -> "Styler":
    """The compare table with the best value of each directed column highlighted (ties all highlighted)."""
    best = best_per_column(df)

    def _mark(column: "pd.Series") -> list[str]:
        if column.name not in best:
            return [""] * len(column)
        return [f"background-color: {color}; font-weight: bold" if v == best[column.name] else "" for v in column]

    return df.style.apply(_mark, axis=0)
