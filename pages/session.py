"""Session: upload, pick or generate a transcript, then see what it is made of."""

import pandas as pd
import streamlit as st

from lab.errors import LabError
from lab.formats.archive import MAX_UNPACKED_BYTES
from lab.formats.sanity import misread_warnings
from lab.generator import GeneratorConfig, parse_generator_config
from lab.replayer.overhead import describe_fit
from lab.ui import state, widgets
from lab.ui.files import several_sessions
from lab.ui.markdown import literal_markdown

st.title("Session")
upload_tab, sample_tab, generate_tab = st.tabs(["Upload", "Sample", "Generate"])

with upload_tab:
    uploaded = st.file_uploader(
        "A transcript in any format the importers read (detected from the content)",
        key="session.upload",
        help="A transcript file (JSON, JSONL, Markdown, ...); an agent's session store: Goose's sessions.db or "
        "OpenCode's opencode.db (the most recently updated session is read); or, as a browser cannot upload a "
        "folder, a .zip or .tar.gz of a session folder: a Cline / Roo Code task folder, an OpenHands V1 conversation "
        f"folder, OpenCode's storage/ folder. An archive may unpack to at most {MAX_UNPACKED_BYTES // 2**20} MiB.",
    )
    if uploaded is not None:
        with st.spinner(f"Importing {uploaded.name}..."):
            loaded = state.accept_upload(uploaded.name, uploaded.getvalue(), uploaded.file_id)
        if loaded is not None:
            st.rerun()  # so the sidebar, drawn before this page, shows the new session
    if state.upload_error():
        st.error(state.upload_error())

with sample_tab:
    name = st.selectbox("Sample session", state.sample_files(), key="session.sample")
    if st.button("Load sample", key="session.load_sample"):
        try:
            state.load_sample(name)
            st.rerun()
        except LabError as e:
            st.error(str(e))

with generate_tab:
    with st.form("session.generate"):
        values = widgets.render_fields(widgets.field_specs(GeneratorConfig), {}, key_prefix="gen", columns=3)
        submitted = st.form_submit_button("Generate session")
    if submitted:
        try:
            with st.spinner("Generating..."):
                state.generate_session(parse_generator_config(values))
            st.rerun()
        except LabError as e:
            st.error(str(e))

transcript = state.get_transcript()
if transcript is None:
    state.require_transcript()
    st.stop()

try:
    stats = state.get_stats()
except LabError as e:
    st.error(str(e))
    st.stop()

st.header("Overview")
st.text(f"{state.transcript_label()}  |  detected format: {state.transcript_format()}")
choices = state.session_choices()
if choices is not None:
    # A file of several sessions: the picker lists every one (what the reader's warning named), as plain text.
    state.show_session("session.pick")
    st.selectbox("Session", choices.ids, format_func=choices.label, key="session.pick", on_change=state.session_picked,
                 args=("session.pick",), help="The sessions this file holds, newest first: title, id, messages, last update. "
                 "Another one replaces the transcript (its replays are its own); the config stays.")
    st.text(choices.describe())
else:
    # A store of many sessions gives its newest: said where it is seen (the text quotes titles, so escaped).
    for several in several_sessions(transcript.notes):
        st.info(literal_markdown(several))
if state.session_pick_error():
    st.error(state.session_pick_error())
# The proposal was applied on load; it is shown again (with the current counter) so the user knows why.
try:
    proposal = state.get_window_proposal()
except LabError as e:
    st.warning(f"No window proposed: {e}")
else:
    window = state.get_config().window
    note = "" if proposal.window in (None, window) else f" The window is now {window:,}; pick any on the Pipeline page."
    st.info(f"Window: {proposal.reason}.{note}")
    if proposal.window is not None and proposal.window != window:  # noqa: SIM102 - the outer test shows the button, the inner one reads its click
        if st.button(f"Use the proposed window ({proposal.window:,})", key="session.use_proposed_window"):
            state.set_session_window(proposal.window)
            st.rerun()
# What the provider saw beyond the file (system prompt, tool definitions), from the recorded usage: it
# counts against the real window, so it is said where the window is chosen.
fit = state.get_usage_fit()
fit_line = describe_fit(fit, state.get_config().window)
if fit is not None and fit_line is not None:
    said = fit_line[0].upper() + fit_line[1:] + "."
    if fit.hidden_tokens >= 0.1 * state.get_config().window:
        st.warning(said)
    else:
        st.caption(said)
cols = st.columns(5)
cols[0].metric("Messages", stats.messages)
cols[1].metric("Tool calls", stats.tool_calls)
cols[2].metric("Tool errors", stats.tool_errors)
cols[3].metric("Images", stats.images)
cols[4].metric("Sidechains", stats.sidechains)

recorded = state.get_recorded()
if recorded:
    undo = state.recorded_mode() == "undo"
    agents = ", ".join(sorted({c.agent for c in recorded}))
    where = ", ".join(f"message {c.index}" for c in recorded[:8]) + (" ..." if len(recorded) > 8 else "")
    how = "replayed from the raw history" if undo else "honoured, as the agent did"
    st.info(f"This session contains {len(recorded)} recorded compaction(s) by {agents} (at {where}); {how}.")
    for c in recorded:
        st.caption(c.describe())
    if st.toggle(
        "Undo the agent's recorded compactions",
        value=undo,
        key="session.undo_recorded",
        help="On: replay the raw history as if the agent had never compacted, so the config alone decides what is sent. "
        "Off: honour the agent's own compactions; everything before each is dropped whatever the config does.",
    ) != undo:
        state.set_recorded_mode("keep" if undo else "undo")
        st.rerun()

st.subheader("Tokens per counter")
st.caption("Share of the tokens that is tool output (results and their stubs), measured on this session.")
tokens = pd.DataFrame(
    {
        "counter": list(stats.tokens),
        "tokens": list(stats.tokens.values()),
        "tool output share": [stats.tool_output_share[c] for c in stats.tokens],
    }
)
share_cols = st.columns(len(stats.tokens))
for col, (counter, share) in zip(share_cols, stats.tool_output_share.items(), strict=True):
    col.metric(f"Tool output ({counter})", f"{share:.0%}", help=f"{stats.tokens[counter]:,} tokens in all")
st.dataframe(tokens, hide_index=True, column_config={
    "tokens": st.column_config.NumberColumn(format="localized"),
    "tool output share": st.column_config.NumberColumn(format="percent"),
})

st.subheader("Tool calls per tool")
if stats.tool_calls_by_tool:
    by_tool = pd.DataFrame({"tool": list(stats.tool_calls_by_tool), "calls": list(stats.tool_calls_by_tool.values())})
    # A table with in-cell bars: a chart's axis cuts long tool names (mcp__github__a...), a text column does not.
    most = int(by_tool["calls"].max())
    st.dataframe(by_tool.sort_values("calls", ascending=False), hide_index=True, key="session.tools", column_config={
        "tool": st.column_config.TextColumn(width="large"),
        "calls": st.column_config.ProgressColumn(format="%d", min_value=0, max_value=most),
    })
else:
    st.text("No tool calls in this session.")

st.subheader("Import notes")
notes = transcript.notes
# A possible misread (lab.formats.sanity) is said loudly; the text names files and skipped kinds from
# the transcript, so markdown is escaped to show it as written.
for misread in misread_warnings(notes):
    st.warning(literal_markdown(misread), icon="⚠️")
roles = ", ".join(f"{n:,} {role}" for role, n in stats.by_role.items()) or "none"
st.caption(f"{notes.records_read:,} records read; messages by role: {roles}")
if notes.skipped:
    st.dataframe(pd.DataFrame({"skipped record kind": list(notes.skipped), "count": list(notes.skipped.values())}), hide_index=True)
problems = (
    [("dropped", d) for d in notes.dropped]
    + [("warning", w) for w in notes.warnings]
    + [("orphan tool result", i) for i in notes.orphan_tool_results]
    + [("unanswered tool call", i) for i in notes.unanswered_tool_uses]
)
if problems:
    st.dataframe(pd.DataFrame(problems, columns=["note", "detail"]), hide_index=True)
if not notes.skipped and not problems:
    st.text("Nothing was skipped or dropped.")
