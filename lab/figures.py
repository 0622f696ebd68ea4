"""Plotly figures drawn from replay data; the app and a notebook show the same charts.

    from lab.replayer import replay
    from lab import figures
    report = replay("session.jsonl", "mewcode")
    figures.timeline(report).show()

Every number on a chart comes from the ``Report`` (or its rows) as the replay
returned it; nothing is recomputed here except running sums. This module never
imports streamlit.
"""

from __future__ import annotations

import html
import numbers
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots  # small multiples only: see _with_right_axis
from .replayer.report import STAGE_LABELS, COMPACTION_KINDS, STRATEGY_KINDS, column
from .replayer.content import THIN

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pandas.io.formats.style import Styler

    from .replayer import Report

__all__ = [
    "STAGE_COLORS",
    "FAILED_KEY",
    "PART_COLORS",
    "LOWER_IS_BETTER",
    "HIGHER_IS_BETTER",
    "OFF_SCALE",
    "timeline",
    "stage_label",
    "composition",
    "cost",
    "compare_timelines",
    "event_points",
    "small_multiples",
    "best_cells",
    "best_per_column",
    "style_compare",
    "COMPARE_LEAD",
    "compare_label",
    "compare_help",
    "compare_columns",
    "content_metric",
    "pareto",
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
# The timeline's legend entry for event markers drawn as ✗.
FAILED_KEY = "✗ = the stage failed"
_MARGIN = {"t": 50, "b": 110}
# Compare-table columns where the smaller (or larger) value is really the better one. Counts that are
# neither have no best: compactions and summary calls (a config that never compacted has 0 and is not
# better for it), requests over a watermark (each config counts against its own), and the cache-hit
# ratio (a config that never compacts always wins it; cost already counts what the cache saves).
LOWER_IS_BETTER = ("cost", "peak_sent", "failures", "invalid_requests", "overflows", "breaker_open_over_watermark", "reread_tokens")
HIGHER_IS_BETTER = ("content_recall", "needed_later_recall", "retention_score")


# Per-request series are numpy arrays, not lists: plotly validates and copies an array in one step (a
# list element by element, nested lists recursively), and sends it as a typed array (base64) rather than
# as JSON numbers. On a 2,000-request replay that made the Timeline page's figures several times faster;
# the values, and so the charts, are the same.


# A series is one field of every row, read as a column (``report.column``): a Row built per request and
# series cost the Timeline page a third of a second on a 2,000-request replay, ten series at a time.


def _col(report: Report, attr: str) -> list[Any]:
    return column(report.rows, attr)


def _ints(report: Report, attr: str) -> np.ndarray:
    return np.fromiter(_col(report, attr), dtype=np.int64, count=len(report.rows))


def _floats(values: Iterable[float | None], n: int) -> np.ndarray:
    """Floats, None as NaN: a gap in a line (plotly.js draws no point for a NaN)."""
    return np.fromiter((np.nan if v is None else v for v in values), dtype=np.float64, count=n)


def _xs(report: Report) -> np.ndarray:
    return _ints(report, "index")


def _with_right_axis() -> go.Figure:
    """An empty figure with a second y axis on the right (traces on it say ``yaxis="y2"``).

    The layout ``make_subplots(specs=[[{"secondary_y": True}]])`` builds, written out: building its
    grid cost ~20 ms a figure, two figures on every Timeline redraw, for four axis settings.
    """
    return go.Figure(layout={
        "xaxis": {"anchor": "y", "domain": [0.0, 0.94]},
        "yaxis": {"anchor": "x", "domain": [0.0, 1.0]},
        "yaxis2": {"anchor": "x", "overlaying": "y", "side": "right"},
    })


def _hline(name: str, y: float, xs: Sequence[int] | np.ndarray, color: str, dash: str, group: str | None = None) -> go.Scatter:
    # A two-point trace rather than a layout shape: it gets a legend entry and a hover, and tests can read it.
    lo, hi = (int(xs[0]), int(xs[-1])) if len(xs) else (0, 0)
    return go.Scatter(
        x=[lo, hi], y=[y, y], mode="lines", name=name, legendgroup=group,
        line={"color": color, "dash": dash, "width": 1}, hovertemplate=f"{name}: %{{y:,}} tokens<extra></extra>",
    )


def stage_label(stage: str) -> str:
    """A stage's events as the legend names them, in the words the CLI and the pages use (``report.COMPACTION_KINDS``)."""
    return STAGE_LABELS.get(stage, stage)


def event_points(report: Report) -> dict[str, dict[str, list[Any]]]:
    """Per stage: the x (request), y (tokens before the stage acted) and hover text of each event."""
    out: dict[str, dict[str, list[Any]]] = {}
    for index, sent, events in zip(_col(report, "index"), _col(report, "sent_tokens"), _col(report, "events"), strict=True):
        for ev in events:
            stage = str(ev.get("stage", "?"))
            pts = out.setdefault(stage, {"x": [], "y": [], "text": [], "symbol": []})
            pts["x"].append(index)
            pts["y"].append(ev.get("tokens_before", sent))
            freed = ev.get("tokens_freed", ev.get("tokens_before", 0) - ev.get("tokens_after", 0))
            status = "" if ev.get("success", True) else " (failed)"
            pts["text"].append(
                f"request {index}<br>{stage_label(stage)} (stage: {stage}){status}<br>trigger: {ev.get('trigger')}"
                f"<br>strategy: {ev.get('strategy') or '-'}<br>tokens freed: {freed:,}"
            )
            pts["symbol"].append("circle" if ev.get("success", True) else "x")
    return out


# A window or watermark line above the data by more than this share of it is off the scale: drawn, it
# pressed a 20k-token session into the bottom tenth of a 200k axis. It is named in an annotation instead.
OFF_SCALE = 1.25
# The token panel's and the recall panel's share of the timeline's height (recall gets its own 0-100% panel,
# never a second axis over the window line).
_TOKENS_DOMAIN, _RECALL_DOMAIN = (0.30, 1.0), (0.0, 0.20)


def _timeline_layout(with_recall: bool) -> go.Figure:
    """The token panel on top and, with recall, a recall panel under it on the same x axis."""
    if not with_recall:
        return go.Figure(layout={"xaxis": {"anchor": "y"}, "yaxis": {"anchor": "x", "domain": [0.0, 1.0]}})
    return go.Figure(layout={
        "xaxis": {"anchor": "y2"},
        "yaxis": {"anchor": "x", "domain": list(_TOKENS_DOMAIN)},
        "yaxis2": {"anchor": "x", "domain": list(_RECALL_DOMAIN)},
    })


def _token_scale(report: Report, points: Mapping[str, Mapping[str, list[Any]]]) -> tuple[float, dict[str, float]]:
    """The token axis's top, scaled to the data, and the limit lines (window, watermark) too far above it to draw."""
    tops = [max(_col(report, "raw_tokens"), default=0), max(_col(report, "sent_tokens"), default=0)]
    tops += [max((y for y in pts["y"] if y is not None), default=0) for pts in points.values()]
    data_top = max(tops) or 1
    lines = {"window": report.window or None, "watermark": report.watermark_tokens}
    shown = [v for v in lines.values() if v is not None and v <= data_top * OFF_SCALE]
    off = {name: float(v) for name, v in lines.items() if v is not None and v > data_top * OFF_SCALE}
    return max([data_top, *shown]) * 1.05, off


def timeline(report: Report, *, selected: int | None = None, title: str | None = None) -> go.Figure:
    """Tokens sent per request against the raw history, the window and watermark lines, and one marker per event.

    The token axis is scaled to the data: a window or watermark far above it is named in an annotation (its
    line stays in the legend, hidden) rather than squeezing the data into the bottom of the chart. Needed-later
    recall, when the replay measured it, has its own 0-100% panel under the tokens, on the same requests.
    """
    xs = _xs(report)
    with_recall = any(v is not None for v in _col(report, "needed_later_recall"))
    fig = _timeline_layout(with_recall)
    fig.add_trace(go.Scatter(
        x=xs, y=_ints(report, "raw_tokens"), name="raw history", mode="lines",
        line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>raw: %{y:,} tokens<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=xs, y=_ints(report, "sent_tokens"), name="sent", mode="lines+markers",
        line={"color": "#1f3b73"}, marker={"size": 5},
        customdata=np.column_stack([xs, _ints(report, "sent_messages")]),
        hovertemplate="request %{x}<br>sent: %{y:,} tokens in %{customdata[1]} messages<extra></extra>",
    ))
    points = event_points(report)
    top, off_scale = _token_scale(report, points)
    if report.window:
        fig.add_trace(_hline("window", report.window, xs, "#d62728", "solid"))
    if report.watermark_tokens is not None:
        fig.add_trace(_hline("watermark", report.watermark_tokens, xs, "#ff7f0e", "dash"))
    for line in fig.data:
        if line.name in off_scale:
            line.visible = "legendonly"
    if off_scale:
        said = "; ".join(f"{name} {value:,.0f} tokens" for name, value in off_scale.items())
        fig.add_annotation(text=f"▲ above this scale: {said}", xref="paper", yref="y domain", x=1, y=1, xanchor="right",
                           yanchor="bottom", showarrow=False, font={"size": 11, "color": "#d62728"})
    for stage, pts in points.items():
        fig.add_trace(go.Scatter(
            x=pts["x"], y=pts["y"], mode="markers", name=f"event: {stage_label(stage)}", text=pts["text"],
            marker={"color": STAGE_COLORS.get(stage, _OTHER_COLOR), "size": 10, "symbol": pts["symbol"],
                    "line": {"width": 1, "color": "white"}},
            hovertemplate="%{text}<extra></extra>",
        ))
    if any("x" in pts["symbol"] for pts in points.values()):
        # The legend shows a stage's colour, not what its ✗ markers mean: one key entry says it, for every stage.
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=FAILED_KEY, hoverinfo="skip",
            marker={"color": "#444444", "size": 10, "symbol": "x"},
        ))
    if with_recall:
        _recall_line(fig, report)
    if selected is not None and report.rows:
        fig.add_vline(x=selected, line_width=1, line_dash="dot", line_color="#444")
    fig.update_layout(
        title=title or f"Tokens sent per request (config {report.label}, counter {report.counter})",
        xaxis_title="request", yaxis={"title_text": "tokens", "range": [0, top]}, hovermode="closest", legend=_LEGEND,
        margin=_MARGIN,
    )
    return fig


def content_metric(report: Report) -> tuple[str, str]:
    """The Timeline page's content recall metric: (its value, its help), saying what it rests on and whether that is too thin."""
    value = "n/a" if report.content_recall is None else f"{report.content_recall:.0%}"
    names = "n/a" if report.needed_later_recall is None else f"{report.needed_later_recall:.0%}"
    help_text = (f"{report.content_kept} of {report.content_needed} needed lines and spans held verbatim, "
                 f"{report.content_recoverable} only in a spill file ({report.reread_tokens:,} tokens to re-read), {report.content_lost} lost. "
                 f"Names recall (needed_later_recall): {names}.")
    if report.content_needed < THIN:
        help_text += f" Fewer than {THIN} needed items: too thin to rank configs by."
    return value, help_text


def _recall_line(fig: go.Figure, report: Report) -> None:
    """Needed-later recall per request in the timeline's own 0..1 panel (``yaxis2``); requests that needed nothing are gaps."""
    recall = _col(report, "needed_later_recall")
    if all(v is None for v in recall):
        return
    fig.add_trace(go.Scatter(
        x=_xs(report), y=_floats(recall, len(recall)), name="needed-later recall",
        mode="lines+markers", connectgaps=False, line={"color": "#9467bd", "width": 1.5}, marker={"size": 4},
        customdata=np.column_stack([_ints(report, "kept_mentions"), _ints(report, "needed_mentions"), _ints(report, "recoverable_mentions")]),
        hovertemplate="request %{x}<br>recall: %{y:.0%} (%{customdata[0]} of %{customdata[1]} kept, "
                      "%{customdata[2]} recoverable)<extra></extra>",
        xaxis="x", yaxis="y2",
    ))
    fig.update_layout(yaxis2={"title_text": "recall", "range": [0, 1.05], "tickmode": "array", "tickvals": [0, 0.5, 1.0],
                              "tickformat": ".0%"})


def composition(report: Report) -> go.Figure:
    """A stacked area of what each request's context is made of."""
    xs = _xs(report)
    made_of = _col(report, "composition")
    parts = list(_PARTS) + sorted({p for c in made_of for p in c} - set(_PARTS))
    fig = go.Figure()
    for part in parts:
        fig.add_trace(go.Scatter(
            x=xs, y=np.fromiter((c.get(part, 0) for c in made_of), dtype=np.int64, count=len(xs)), name=part.replace("_", " "),
            mode="lines", stackgroup="one", line={"width": 0.5, "color": PART_COLORS.get(part, _OTHER_COLOR)},
            hovertemplate=f"{part}: %{{y:,}} tokens<extra></extra>",
        ))
    fig.update_layout(title="What the context is made of", xaxis_title="request", yaxis_title="tokens",
                      legend=_LEGEND, margin=_MARGIN)
    return fig


def cost(report: Report) -> go.Figure:
    """Cumulative cost with and without compaction, and the prompt-cache hit ratio per request."""
    xs = _xs(report)
    fig = _with_right_axis()
    n = len(xs)
    # cumsum adds in order, as a running total does: the same sums as itertools.accumulate.
    fig.add_trace(go.Scatter(
        x=xs, y=np.cumsum(_floats(_col(report, "cost"), n)), name="cost, compacted", mode="lines",
        line={"color": "#1f3b73"}, hovertemplate="request %{x}<br>$%{y:.4f}<extra></extra>", xaxis="x", yaxis="y",
    ))
    fig.add_trace(go.Scatter(
        x=xs, y=np.cumsum(_floats(_col(report, "cost_uncompacted"), n)), name="cost, no compaction",
        mode="lines", line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>$%{y:.4f}<extra></extra>",
        xaxis="x", yaxis="y",
    ))
    fig.add_trace(go.Bar(
        x=xs, y=_floats(_col(report, "cache_hit_ratio"), n), name="cache-hit ratio", opacity=0.35,
        marker={"color": "#2ca02c"}, hovertemplate="request %{x}<br>cache hits: %{y:.0%}<extra></extra>",
        xaxis="x", yaxis="y2",
    ))
    fig.update_layout(
        yaxis={"title_text": "cumulative cost", "tickprefix": "$"},
        yaxis2={"title_text": "cache-hit ratio", "range": [0, 1], "tickformat": ".0%", "tickvals": [0, 0.25, 0.5, 0.75, 1], "showgrid": False},
    )
    # The row the dollars are in, as every cost the lab shows names it (lab.replayer.prices.price_tag).
    model = (report.settings.get("pricing") or {}).get("model") or "custom"
    fig.update_layout(title=f"Cost at {html.escape(model)} prices, and prompt-cache hits", xaxis_title="request", legend=_LEGEND,
                      margin=_MARGIN)
    return fig


_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def compare_timelines(reports: Mapping[str, Report] | Iterable[tuple[str, Report]]) -> go.Figure:
    """Tokens sent per request under each config, over the raw history of the first, with each watermark."""
    items = list(reports.items()) if isinstance(reports, Mapping) else list(reports)
    fig = go.Figure()
    if items:
        first = items[0][1]
        fig.add_trace(go.Scatter(
            x=_xs(first), y=_ints(first, "raw_tokens"), name="raw history", mode="lines",
            line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>raw: %{y:,}<extra></extra>",
        ))
    for i, (label, report) in enumerate(items):
        color = _PALETTE[i % len(_PALETTE)]
        fig.add_trace(go.Scatter(
            x=_xs(report), y=_ints(report, "sent_tokens"), name=label, legendgroup=label, mode="lines",
            line={"color": color}, hovertemplate=f"{label}<br>request %{{x}}<br>sent: %{{y:,}}<extra></extra>",
        ))
        if report.watermark_tokens is not None:
            fig.add_trace(_hline(f"{label} watermark", report.watermark_tokens, _xs(report), color, "dash", group=label))
    fig.update_layout(title="Tokens sent per request, by config", xaxis_title="request", yaxis_title="tokens",
                      legend=_LEGEND, margin=_MARGIN)
    return fig


def small_multiples(reports: Mapping[str, Report] | Iterable[tuple[str, Report]], *, columns: int | None = None) -> go.Figure:
    """One mini timeline per config (sent, raw history, watermark, events), on shared axes so they read side by side.

    ``columns`` defaults to one row for up to three configs and a 2 x 2 grid for four (no empty panel).
    """
    items = list(reports.items()) if isinstance(reports, Mapping) else list(reports)
    if not items:
        return go.Figure()
    cols = max(1, min(columns or (len(items) if len(items) <= 3 else 2), len(items)))
    rows = -(-len(items) // cols)
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes="all", shared_yaxes="all",
                        subplot_titles=[html.escape(label) for label, _ in items], horizontal_spacing=0.06, vertical_spacing=0.12)
    shown: set[str] = set()

    def once(name: str) -> bool:
        # One legend entry per kind of line, not one per panel.
        first = name not in shown
        shown.add(name)
        return first

    for i, (label, report) in enumerate(items):
        at = {"row": i // cols + 1, "col": i % cols + 1}
        xs = _xs(report)
        fig.add_trace(go.Scatter(
            x=xs, y=_ints(report, "raw_tokens"), name="raw history", legendgroup="raw", showlegend=once("raw"),
            mode="lines", line={"color": "#c7c7c7", "dash": "dot"}, hovertemplate="request %{x}<br>raw: %{y:,}<extra></extra>",
        ), **at)
        fig.add_trace(go.Scatter(
            x=xs, y=_ints(report, "sent_tokens"), name=label, mode="lines", line={"color": _PALETTE[i % len(_PALETTE)]},
            hovertemplate=f"{label}<br>request %{{x}}<br>sent: %{{y:,}}<extra></extra>",
        ), **at)
        if report.watermark_tokens is not None:
            line = _hline("watermark", report.watermark_tokens, xs, "#ff7f0e", "dash", group="watermark")
            line.showlegend = once("watermark")
            fig.add_trace(line, **at)
        for stage, pts in event_points(report).items():
            fig.add_trace(go.Scatter(
                x=pts["x"], y=pts["y"], mode="markers", name=f"event: {stage_label(stage)}", legendgroup=stage, showlegend=once(stage),
                text=pts["text"], hovertemplate="%{text}<extra></extra>",
                marker={"color": STAGE_COLORS.get(stage, _OTHER_COLOR), "size": 6, "symbol": pts["symbol"]},
            ), **at)
    fig.update_xaxes(title_text="request", row=rows)
    fig.update_yaxes(title_text="tokens", col=1)
    fig.update_layout(title="One timeline per config (shared axes)", height=160 + 240 * rows, legend=_LEGEND, margin=_MARGIN)
    return fig


# --- the compare table ---------------------------------------------------------------------------

# What a user decides by, in the order read; the rest of the table goes behind an expander.
COMPARE_LEAD = ("config", "cost", "peak_sent", "content_recall", "content_needed", "needed_later_recall", "reread_tokens", "retention_score",
                "compactions", "failures", "breaker_open_over_watermark")
_LABELS = {
    "transcript": "Transcript", "config": "Config", "window": "Window", "requests": "Requests",
    "peak_sent": "Peak sent (tokens)", "peak_raw": "Peak raw history (tokens)",
    "requests_over_watermark": "Requests over watermark", "breaker_open_over_watermark": "Breaker open over watermark",
    "compactions": "Compactions", "summary_calls": "Summary calls", "invalid_requests": "Invalid requests",
    "overflows": "Overflows", "failures": "Failed requests", "first_request_kept": "First request kept",
    "recorded_compactions": "Recorded compactions", "recorded_compactions_mode": "Recorded compactions mode",
    "retention_score": "Retention", "needed_later_recall": "Needed-later recall (names)", "recoverable_share": "Recoverable share",
    "content_recall": "Content recall", "content_needed": "Content items needed", "content_thin": "Content too thin to rank",
    "reread_tokens": "Re-read tokens",
    "cost": "Cost", "cost_uncompacted": "Cost without compaction", "cache_hit_ratio": "Cache hits",
    "cache_hit_ratio_uncompacted": "Cache hits without compaction", "replay_seconds": "Replay time (s)",
}
_HELP = {
    "cost": "What the session's requests cost under this config, prompt cache and summary calls included.",
    "peak_sent": "The largest request this config sent.",
    "needed_later_recall": "Names score (needed_later_recall): of the names later requests mention, the share the context still held "
                           "anywhere when they needed them.",
    "content_recall": "Of the exact lines later edits replace and the spans they copy from earlier output, the share the context "
                      "held verbatim when they needed them.",
    "content_needed": "How many needed lines and spans content recall rests on; a session with too few is marked too thin to rank "
                      "configs by (Content too thin to rank).",
    "reread_tokens": "Tokens of spilled files the agent would read back for content only a spill file still held.",
    "retention_score": "The weighted share of the session's facts the final context still holds (verbatim, summarised or spilled).",
    "compactions": "Compaction events of every kind: summaries, spills, clearings, read dedups, truncations (one column each, per strategy).",
    "failures": "Requests still over the window after recovery: the provider would have refused them.",
    "breaker_open_over_watermark": "Requests over the watermark while the circuit breaker kept compaction off.",
}
_MONEY = ("cost", "cost_uncompacted")
_SHARES = ("retention_score", "needed_later_recall", "content_recall", "recoverable_share", "cache_hit_ratio", "cache_hit_ratio_uncompacted")


def compare_label(column: str) -> str:
    """The table's readable header for a compare column (``compactions_<strategy>`` included)."""
    if column in _LABELS:
        return _LABELS[column]
    if column.startswith("compactions_"):
        # In the words of the CLI and the Timeline: the kind first ("Spills"), the strategy after it.

        strategy = column.removeprefix("compactions_")
        kind = COMPACTION_KINDS[STRATEGY_KINDS.get(strategy, "summary")][1].capitalize()
        return f"{kind} ({strategy.replace('_', ' ')})"
    return column.replace("_", " ").capitalize()


def compare_help(column: str) -> str | None:
    """One line on what a lead column measures, for its header tooltip."""
    return _HELP.get(column)


def compare_columns(columns: Iterable[str]) -> tuple[list[str], list[str]]:
    """The lead columns present, and the rest (with ``config`` kept first, so a row can be told apart)."""
    present = list(columns)
    lead = [c for c in COMPARE_LEAD if c in present]
    rest = [c for c in present if c not in lead]
    return lead, (["config"] if "config" in present else []) + rest


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _formatter(column: str) -> Any:
    def fmt(value: Any) -> str:
        if _missing(value):
            return "–"
        if isinstance(value, bool) or column == "first_request_kept":
            return "yes" if value else "no"
        if column in _MONEY:
            return f"${value:,.4f}"
        if column in _SHARES:
            return f"{value:.1%}"
        if column == "replay_seconds":
            return f"{value:.3f}"
        if isinstance(value, numbers.Real):  # numpy scalars included
            return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
        return str(value)

    return fmt


# Columns that count what went wrong: every config is ranked on them. On the others a config whose
# requests failed is not: it is cheap, small and retentive only because the provider refused it.
_FAILURE_COLUMNS = ("failures", "invalid_requests", "overflows", "breaker_open_over_watermark")


def best_cells(df: pd.DataFrame) -> dict[str, list[int]]:
    """Per directed column, the row positions holding its best value (ties all); absent where the configs do not differ.

    Rows of configs with failed requests compete only on the failure columns, as long as some config had none.
    """
    import pandas as pd

    failures = pd.to_numeric(df["failures"], errors="coerce").fillna(0) if "failures" in df.columns else None
    clean = (failures == 0) if failures is not None and (failures == 0).any() else pd.Series(True, index=df.index)
    out: dict[str, list[int]] = {}
    for col in (*LOWER_IS_BETTER, *HIGHER_IS_BETTER):
        if col not in df.columns:
            continue
        values = pd.to_numeric(df[col], errors="coerce")
        ranked = values if col in _FAILURE_COLUMNS else values[clean]
        # Where every config scores the same (or only one has a value) no config is better.
        if ranked.dropna().nunique() < 2:
            continue
        best = ranked.min() if col in LOWER_IS_BETTER else ranked.max()
        out[col] = [i for i, (idx, v) in enumerate(values.items()) if idx in ranked.index and v == best]
    return out


def best_per_column(df: pd.DataFrame) -> dict[str, Any]:
    """The best value of each directed column (LOWER_/HIGHER_IS_BETTER) where the configs differ; see ``best_cells``."""
    return {col: df[col].iloc[rows[0]] for col, rows in best_cells(df).items()}


def style_compare(df: pd.DataFrame, color: str = "#c6efce") -> Styler:
    """The compare table formatted ($, %, thousands) with each directed column's best cells highlighted."""
    cells = best_cells(df)

    def _mark(column: pd.Series) -> list[str]:
        marked = set(cells.get(str(column.name), ()))
        return [f"background-color: {color}; font-weight: bold" if i in marked else "" for i in range(len(column))]

    return df.style.format({c: _formatter(str(c)) for c in df.columns}).apply(_mark, axis=0)


def pareto(result_df: pd.DataFrame, x: str, y: str) -> go.Figure:
    """A sweep's trials on two of its scores (``SweepResult.df``): the Pareto front marked, infeasible trials in grey.

    Each point carries its trial number as ``customdata``, so a selection in the app names the trial to load.
    """
    for col in ("trial", "state", "feasible", "pareto", x, y):
        if col not in result_df.columns:
            raise ValueError(f"no column {col!r} in the sweep table (pass SweepResult.df)")
    done = result_df[result_df["state"] == "complete"]
    on_front, feasible = done["pareto"].astype(bool), done["feasible"].astype(bool)
    # The swept fields: dotted config paths, plus the top-level ones a space may name.
    params = [c for c in done.columns if ("." in c or c in ("window", "counter")) and c not in (x, y)]
    fig = go.Figure()
    groups = (
        ("infeasible (broke a constraint)", ~feasible, "#bbbbbb", 7),
        ("trial", feasible & ~on_front, "#9ecae1", 8),
        ("Pareto front", feasible & on_front, "#d62728", 11),
    )
    for name, mask, color, size in groups:
        part = done[mask]
        if part.empty:
            continue
        hover = [
            html.escape(f"trial {int(r['trial'])}") + "<br>" + "<br>".join(html.escape(f"{c} = {r[c]}") for c in params)
            for _, r in part.iterrows()
        ]
        fig.add_trace(go.Scatter(
            x=part[x], y=part[y], mode="markers", name=name, marker=dict(color=color, size=size),
            customdata=[[int(t)] for t in part["trial"]], hovertext=hover,
            hovertemplate=f"{html.escape(compare_label(x))}: %{{x}}<br>{html.escape(compare_label(y))}: %{{y}}<br>%{{hovertext}}<extra></extra>",
        ))
    fig.update_layout(
        title="Sweep: every trial, the Pareto front in red", xaxis_title=compare_label(x), yaxis_title=compare_label(y),
        clickmode="event+select", legend=dict(orientation="h", y=-0.2),
    )
    return fig
