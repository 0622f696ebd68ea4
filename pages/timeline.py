"""Timeline: what every request sent under the active config, and what each stage did."""

import pandas as pd
import streamlit as st

from lab import figures
from lab.core.presets import preset
from lab.errors import LabError
from lab.replayer.prices import explain_pricing
from lab.replayer.report import raw_peak_note
from lab.ui import explain, session_view, widgets
from lab.ui.navigation import page_path, request_picked, require_transcript, select_from_click, selected_request, show_request
from lab.ui.replays import get_report
from lab.ui.settings import baseline_settings, changed_fields, config_error, get_config, get_preset_name, get_settings, widget_generation
from lab.ui.alerts import show_alerts

# Quick knobs beside the chart; the Pipeline page has every setting.
TUNE = ("window", "watermark.ratio", "spill.threshold", "microcompact.keep_recent")

st.title("Timeline")
if require_transcript() is None:
    st.stop()
try:
    report = get_report()
except LabError as e:
    st.error(str(e))
    st.stop()
if not report.rows:
    st.info("This session has no model requests (no assistant message follows anything), so there is nothing to replay.")
    st.stop()

with st.expander("Tune (the same settings as the Pipeline page)"):
    widgets.config_fields(
        get_config(), TUNE, key_prefix=f"tl{widget_generation()}", settings=get_settings(),
        changed=changed_fields(), baseline=preset(get_preset_name()), baseline_settings=baseline_settings(),
        on_change=widgets.update_config, columns=len(TUNE),
    )
    if config_error():
        st.error(config_error())

show_alerts(report)
# What the provider counted beyond this file (the recorded usage's fit): loud when it is a real share of the window.
notice = session_view.fit_notice(report.usage_fit, report.window, applied=report.hidden_tokens)
if notice is not None:
    said, loud = notice
    (st.info if loud else st.caption)(said + " Replay settings on the Pipeline page: hidden tokens.")

last = len(report.rows) - 1
k = min(selected_request(), last)

cols = st.columns(6)
cols[0].metric("Peak sent", f"{report.peak_sent:,}", help=raw_peak_note(report))
cols[1].metric("Over watermark", report.requests_over_watermark, help=f"of {report.requests} requests")
# Summaries apart from spills and clearing: a spill moves a tool result to a file, it writes no summary.
by_kind = report.compactions_by_kind
cols[2].metric("Summaries", by_kind["summary"], help=explain.compactions_help(report))
# A request sent over the watermark because the breaker is open is a failure too, though nothing overflowed.
failures = report.failures + report.breaker_open_over_watermark
cols[3].metric("Overflows / failures / invalid", f"{report.overflows} / {failures} / {report.invalid_requests}",
               help=f"failures: {report.failures} not sent, {report.breaker_open_over_watermark} over the watermark with the breaker open. "
                    + explain.invalid_help(report))
explain.cost_metric(cols[4], report)
cols[5].metric("Cache hits", f"{report.cache_hit_ratio:.0%}", help=f"without compaction: {report.cache_hit_ratio_uncompacted:.0%}")
# The cost names the row and prices it was billed at, as `lab replay` prints it; then every compaction in words.
st.caption(explain.cost_caption(report))
st.caption(f"Compactions: {explain.compactions_text(report)}.")
# What the config skips at this window on purpose, next to the counts it explains (a peak above a larger window's).
explain.show_inactive(report.compaction_config)
explain.show_invalid(report)
# Content recall beside the names score: the exact lines and spans later requests used, and what re-reading spills costs.
content_value, content_help = figures.content_metric(report)
recall_cols = st.columns(6)
recall_cols[0].metric("Content recall", content_value, help=content_help)
recall_cols[1].metric("Content items needed", f"{report.content_needed:,}", help="too thin to rank configs by" if report.content_thin else None)
recall_cols[2].metric("Names recall", "n/a" if report.needed_later_recall is None else f"{report.needed_later_recall:.0%}",
                      help="needed_later_recall: the names later requests used that the context held anywhere")
recall_cols[3].metric("Re-read tokens", f"{report.reread_tokens:,}", help="spill files the agent would read back for content only they held")

chart = st.plotly_chart(
    figures.timeline(report, selected=k), key="timeline.chart", on_select="rerun", selection_mode="points"
)
if select_from_click(chart.selection.points if chart and chart.selection else [], last, "timeline.last_click"):
    st.rerun()

show_request("timeline.request", k)
pick, link = st.columns([1, 2])
pick.number_input("Request", min_value=0, max_value=last, step=1, key="timeline.request",
                  on_change=request_picked, args=("timeline.request",))
row = report.rows[k]
with link:
    st.text(f"request {k}: {row.sent_tokens:,} tokens sent of {row.raw_tokens:,} raw, {len(row.events)} event(s)")
    st.page_link(page_path("diff"), label=f"Open request {k} in Diff", query_params={"request": str(k)})
if row.events:
    cols_shown = ["stage", "trigger", "strategy", "success", "tokens_before", "tokens_after", "tokens_freed", "detail"]
    st.dataframe(pd.DataFrame(row.events).reindex(columns=cols_shown), hide_index=True)

left, right = st.columns(2)
left.plotly_chart(figures.composition(report), key="timeline.composition")
right.plotly_chart(figures.cost(report), key="timeline.cost")
right.caption((explain_pricing(report.settings, report.meta.get("model")) + " Pick another row or edit the prices on the Pipeline page (Replay, Pricing).")
              .replace("$", "\\$"))
