"""Live: the conversations ``lab serve --record DIR`` has recorded, refreshed while they grow, each one a click from the other pages.

It reads the recording folder only (``lab.serve.recording.list_recordings``), so no server process is needed:
a folder copied from another machine reads the same.
"""

import os
from datetime import datetime
from pathlib import Path

import streamlit as st

from lab.errors import LabError
from lab.serve.recording import list_recordings
from lab.ui.navigation import page_path
from lab.ui.transcript import set_transcript
from lab.views.markdown import literal_markdown

# Where the page looks first; ``lab serve --record`` writes wherever it is told.
FOLDER_ENV = "LAB_SERVE_RECORD"

st.title("Live")
st.caption("Sessions recorded by `python -m lab serve --record DIR` (start with `--mode audit`: it changes nothing and records). "
           "Each file is one conversation; open one to replay it under any config on the other pages.")
folder_text = st.text_input("Recording folder", value=os.environ.get(FOLDER_ENV, ""), key="lab.live.folder")
auto = st.toggle("Refresh every 5 s", value=True, key="lab.live.auto")


@st.fragment(run_every=5 if auto else None)
def _listing(folder: Path) -> None:
    sessions = list_recordings(folder)
    if not sessions:
        st.info("No recorded sessions in this folder yet.")
        return
    rows = [{
        "session": s.path.stem,
        "requests": s.requests,
        "api": s.api or "?",
        "saved tokens": s.saved,
        "last request": datetime.fromtimestamp(s.modified).strftime("%Y-%m-%d %H:%M:%S"),
        "size (KB)": round(s.size / 1024, 1),
        "first message": s.first_text or "",
    } for s in sessions]
    st.dataframe(rows, hide_index=True, key="lab.live.table")
    names = [s.path.stem for s in sessions]
    picked = st.selectbox("Session", names, key="lab.live.pick")
    if st.button("Open in the lab", key="lab.live.open", type="primary"):
        from lab.formats import load

        path = folder / f"{picked}.jsonl"
        try:
            transcript = load(path, "http_log")
        except LabError as e:
            st.error(literal_markdown(f"Cannot read {path.name}: {e}"))
            return
        set_transcript(transcript, f"live: {picked}", format="http_log")
        st.switch_page(page_path("session"))


if folder_text.strip():
    _listing(Path(folder_text.strip()).expanduser())
else:
    st.info(f"Enter the folder given to `--record` (or set {FOLDER_ENV}).")
