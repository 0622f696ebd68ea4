"""Diff: the context at request k before and after the pipeline, side by side.

Left: the raw history (or the context this request's pipeline started
from); right: what was sent. What the compaction wrote comes first, removed
messages fold into one block, tool pairs share one box, stubs sit beside the
output they replaced, and long diffs come in pages. Transcript text is drawn
with st.text / st.code (a summary as escaped markdown).
"""

import streamlit as st

from lab.errors import LabError
from lab.ui import diff_page
from lab.ui.navigation import require_transcript
from lab.ui.replays import get_report
from lab.views.diff import diff_context, page_layout, recall_note

BEFORE = {
    "raw history": "everything the transcript holds up to this request, uncompacted",
    "pipeline input": "the context this request's pipeline started from (what was sent before, plus what arrived since)",
}

st.title("Diff")
transcript = require_transcript()
if transcript is not None:
    try:
        report = get_report()
    except LabError as e:
        st.error(str(e))
        st.stop()
    if report is None or not report.rows:
        st.info("This transcript has no requests: there is nothing to diff.")
        st.stop()
    k, events = diff_page.request_navigator(report, key="lab.diff.request")
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
    here = next((e for e in events if e.index == k), None)
    st.caption(f"What happened: {here.label}." if here else "No stage acted at this request.")
    head, lost = recall_note(row)
    if head is not None:
        st.caption(head)
    if lost:
        st.text("\n".join(lost))
    only = st.toggle("Only changes (fold unchanged messages)", value=True, key="lab.diff.only")
    layout = page_layout(diff, only_changes=only)
    diff_page.draw_top(layout.top)
    diff_page.draw_pages(layout, diff_page.report_counter(report), key="lab.diff.page")
    with st.expander("Text diff of a changed block"):
        diff_page.block_diff_picker(diff, key="lab.diff.block")
