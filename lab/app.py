"""Streamlit entry: routes to the pages in the top-level ``pages/`` folder."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    # `streamlit run lab/app.py` puts lab/ first on sys.path, not the project root.
    sys.path.insert(0, str(ROOT))

PAGES = ROOT / "pages"

st.set_page_config(page_title="Compaction Lab", layout="wide")
nav = st.navigation([st.Page(PAGES / "session.py", title="Session", default=True)])
nav.run()
