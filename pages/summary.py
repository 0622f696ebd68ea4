"""Summary: what each compaction wrote, what survived it, and an LLM summary beside the rule-based one."""

import streamlit as st

from lab.errors import LabError
from lab.ui import explain
from lab.ui.navigation import page_path, request_picker, require_transcript, select_request
from lab.ui.replays import get_report
from lab.views.markdown import safe_markdown
from lab.views.summary import PART_HELP, PART_LABELS, compaction_summaries, retention_table

SUMMARY_HEIGHT = 480  # px, as the summary box on the Diff page

st.title("Summary")
transcript = require_transcript()
report = None
if transcript is not None:
    try:
        report = get_report()
    except LabError as e:
        st.error(str(e))

if report is not None:
    st.subheader("Summaries written by the compactions")
    # Every compaction in the Timeline's and the CLI's words: spills and clearings are compactions that write no summary.
    st.caption(f"This replay's compactions: {explain.compactions_text(report)}. {explain.compactions_help(report)}")
    # A preset that skips summaries at this window on purpose says so here, where the summaries would be.
    explain.show_inactive(report.compaction_config)
    items = compaction_summaries(report)
    if not items:
        others = sum(n for kind, n in report.compactions_by_kind.items() if kind != "summary")
        also = f" The {others} other compaction(s) above moved or cleared tool output; none of them writes a summary." if others else ""
        st.info(
            "No compaction wrote a summary in this replay." + also + " Lower the window or the watermark on the "
            "Pipeline page (or pick a bigger session) to see one."
        )
    for i, item in enumerate(items):
        with st.expander(item.title, expanded=i == 0):
            st.text(item.detail)
            rendered, plain = st.tabs(["rendered", "plain text"])
            # The summary quotes the transcript: escaped markdown, so its words render and its HTML never does.
            # A scroll box of Diff's height: a full summary runs to thousands of px and would make the page endless.
            rendered.container(height=SUMMARY_HEIGHT).markdown(safe_markdown(item.text))
            plain.code(item.text, language=None, wrap_lines=True, height=SUMMARY_HEIGHT)
            if item.attachment:
                st.caption("Recovery attachment")
                st.code(item.attachment, language=None, wrap_lines=True, height=SUMMARY_HEIGHT)

    st.subheader("Retention")
    st.caption("What the final context still holds, and where each item went: tail (kept verbatim), summary, spill file, or nowhere.")
    for line in PART_HELP.values():
        st.caption(line)
    parts = report.retention.parts
    if parts:
        cols = st.columns(len(parts) + 1)
        score = report.retention_score
        cols[0].metric("score", "n/a" if score is None else f"{score:.0%}")
        for col, (name, part) in zip(cols[1:], parts.items(), strict=True):
            col.metric(PART_LABELS.get(name, name.replace("_", " ")), f"{part.kept}/{part.total}", help=PART_HELP.get(name))
    table = retention_table(report)
    if table:
        where = st.multiselect("Show", ["tail", "summary", "spill", "nowhere"], default=["summary", "spill", "nowhere"], key="lab.summary.where")
        st.dataframe([r for r in table if r["where"] in where], hide_index=True, column_order=["part", "item", "where", "lost to", "found in"])
        if report.rows:  # noqa: SIM102 - the outer test shows the button, the inner one reads its click
            if st.button("Open the last request in Diff", key="lab.summary.to_diff"):
                select_request(len(report.rows) - 1)
                st.switch_page(page_path("diff"))

st.subheader("LLM summary")
# The provider SDKs take seconds to import: the panel loads them only when asked for.
if st.toggle("Compare with an LLM summary", key="lab.summary.llm", persist_state="session",
             help="Loads the anthropic and openai SDKs on first use, which takes a few seconds."):
    from lab.ui import llm

    settings = llm.llm_panel()
    if report is not None and transcript is not None and report.rows:
        k = request_picker(len(report.rows), key="lab.summary.request")
        llm.llm_summary_section(report, k, transcript, settings)
else:
    st.caption("Off: nothing is imported or sent. Turn it on to summarise a request with an LLM beside the rule-based summary.")

st.subheader("Probe this context")
# Behind its own toggle, as the LLM panel: lab.ui.probe loads the provider SDKs.
if st.toggle("Probe this context", key="lab.summary.probe", persist_state="session",
             help="Asks the LLM above four questions about the session (recall, artifact, continuation, decision) "
                  "with the compacted context at a request; a judge grades each 0-5 against the recorded session."):
    from lab.ui import probe

    if report is not None and transcript is not None:
        probe.probe_panel(report, transcript)
else:
    st.caption("Off: nothing is imported or sent. Turn it on to probe a request's compacted context with an LLM and a judge.")
