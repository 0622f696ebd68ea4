"""Session page (placeholder until the app issue lands): load a transcript and see its overview."""

import streamlit as st

st.title("Compaction Lab")
st.info("The lab's pages are being built. Use `python -m lab import PATH --out OUT.json` meanwhile.")
