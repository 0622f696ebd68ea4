"""Diff: the context at request k before and after the pipeline, side by side.

Left: the raw history (or the context this request's pipeline started
from); right: what was sent. Tool pairs share one box; stubs sit beside the
output they replaced. All transcript text is drawn with st.text / st.code.
"""

import streamlit as st

from lab.errors import LabError
from lab.ui import state, views
from lab.ui.diff import diff_context

BEFORE = {
    "raw history": "everything the transcript holds up to this request, uncompacted",
    "pipeline input": "the context this request's pipeline started from (what was sent before, plus what arrived since)",
}

st.title("Diff")
transcript = state.require_transcript()
if transcript is not None:
    try:
        report = state.get_report()
    except LabError as e:
        st.error(str(e))
        st.stop()
    if report is None or not report.rows:
        st.info("This transcript has no requests: there is nothing to diff.")
        st.stop()
    k = views.request_picker(len(report.rows), key="lab.diff.request")
    mode = st.radio("Left side", list(BEFORE), horizontal=True, key="lab.diff.before", captions=list(BEFORE.values()))
    try:
        before = report.raw_at(k) if mode == "raw history" else report.input_at(k)
        diff = diff_context(before, report.context_at(k, include_boundaries=True))
    except LabError as e:
        st.error(str(e))
        st.stop()
    row = report.rows[k]
    c = diff.counts
    cols = st.columns(6)
    cols[0].metric("tokens before", f"{row.tokens_before if mode == 'pipeline input' else row.raw_tokens:,}")
    cols[1].metric("tokens sent", f"{row.sent_tokens:,}")
    cols[2].metric("messages removed", c["removed"])
    cols[3].metric("stubs", c["stubs"])
    cols[4].metric("inserted", c["inserted"])
    cols[5].metric("kept", c["kept"])
    if row.boundary_placed:
        st.caption(f"This request placed a compaction boundary. Events: {', '.join(sorted({e['stage'] for e in row.events})) or 'none'}.")
    only = st.toggle("Only changes (fold unchanged messages)", value=True, key="lab.diff.only")
    views.draw_sections(diff, only_changes=only, key="lab.diff.page")
    with st.expander("Text diff of a changed block"):
        views.block_diff_picker(diff, key="lab.diff.block")
