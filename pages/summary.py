"""Summary: what each compaction wrote, what survived it, and an LLM summary beside the rule-based one."""

import streamlit as st

from lab.errors import LabError
from lab.ui import llm, state, views
from lab.ui.summary import compaction_summaries, retention_table

st.title("Summary")
transcript = state.require_transcript()
report = None
if transcript is not None:
    try:
        report = state.get_report()
    except LabError as e:
        st.error(str(e))

if report is not None:
    st.subheader("Summaries written by the compactions")
    items = compaction_summaries(report)
    if not items:
        st.info(
            "No compaction wrote a summary in this replay. Lower the window or the watermark on the "
            "Pipeline page (or pick a bigger session) to see one."
        )
    for item in items:
        with st.expander(item.title):
            st.text(item.detail)
            st.code(item.text, language=None, wrap_lines=True)
            if item.attachment:
                st.caption("Recovery attachment")
                st.code(item.attachment, language=None, wrap_lines=True)

    st.subheader("Retention")
    st.caption("What the final context still holds, and where each item went: tail (kept verbatim), summary, spill file, or nowhere.")
    parts = report.retention.parts
    if parts:
        cols = st.columns(len(parts) + 1)
        score = report.retention_score
        cols[0].metric("score", "n/a" if score is None else f"{score:.0%}")
        for col, (name, part) in zip(cols[1:], parts.items()):
            col.metric(name.replace("_", " "), f"{part.kept}/{part.total}")
    table = retention_table(report)
    if table:
        where = st.multiselect("Show", ["tail", "summary", "spill", "nowhere"], default=["summary", "spill", "nowhere"], key="lab.summary.where")
        st.dataframe([r for r in table if r["where"] in where], hide_index=True)
        if report.rows:
            if st.button("Open the last request in Diff", key="lab.summary.to_diff"):
                state.select_request(len(report.rows) - 1)
                st.switch_page(state.page_path("diff"))

st.subheader("LLM summary")
settings = llm.llm_panel()
if report is not None and transcript is not None and report.rows:
    k = views.request_picker(len(report.rows), key="lab.summary.request")
    llm.llm_summary_section(report, k, transcript, settings)
