"""Streamlit entry (`streamlit run lab/app.py`): routes to the pages in the top-level ``pages/`` folder.

It only routes and draws the sidebar; every page reads the session state
through ``lab.ui``'s state modules (``transcript``, ``settings``, ``replays``,
``navigation``, ``sweep``), makes one core or replay call, and renders.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    # `streamlit run lab/app.py` puts lab/ first on sys.path, not the project root.
    sys.path.insert(0, str(ROOT))

from lab.ui.navigation import page_path, sidebar  # noqa: E402  (needs the path fix above)

__all__ = ["PAGES", "main"]

# (file in pages/, title, url path); page links (lab.ui.navigation.page_path) and the tests name these files.
PAGES = (
    ("session", "Session", "session"),
    ("pipeline", "Pipeline", "pipeline"),
    ("timeline", "Timeline", "timeline"),
    ("diff", "Diff", "diff"),
    ("summary", "Summary", "summary"),
    ("compare", "Compare", "compare"),
    ("sweep", "Sweep", "sweep"),
    ("export", "Export", "export"),
    ("live", "Live", "live"),
)


def main() -> None:
    st.set_page_config(page_title="Compaction Lab", layout="wide")
    pages = [st.Page(page_path(name), title=title, url_path=url, default=(name == "session")) for name, title, url in PAGES]
    nav = st.navigation(pages)
    sidebar()
    nav.run()


main()
