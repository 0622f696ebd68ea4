"""Session: upload, pick or generate a transcript, then see what it is made of."""

import streamlit as st

from lab.errors import LabError
from lab.ui import session_view
from lab.ui.navigation import require_transcript
from lab.ui.replays import get_stats
from lab.ui.transcript import get_transcript, transcript_format, transcript_label

st.title("Session")
upload_tab, sample_tab, generate_tab = st.tabs(["Upload", "Sample", "Generate"])
with upload_tab:
    session_view.upload_tab()
with sample_tab:
    session_view.sample_tab()
with generate_tab:
    session_view.generate_tab()

transcript = get_transcript()
if transcript is None:
    require_transcript(here=True)
    st.stop()

try:
    stats = get_stats()
except LabError as e:
    st.error(str(e))
    st.stop()

st.header("Overview")
st.text(f"{transcript_label()}  |  detected format: {transcript_format()}")
session_view.session_picker(transcript.notes)
session_view.window_proposal()
session_view.usage_fit()
session_view.counts(stats)
session_view.recorded_compactions()

st.subheader("Tokens per counter")
st.caption("Share of the tokens that is tool output (results and their stubs), measured on this session.")
session_view.tokens_per_counter(stats)

st.subheader("Tool calls per tool")
session_view.tool_calls_per_tool(stats)

st.subheader("Import notes")
session_view.import_notes(transcript.notes, stats)
