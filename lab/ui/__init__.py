"""Streamlit helpers of the app: session state (``state``), its files (``files``), widgets built from config models (``widgets``).

Only the app and its pages import this package; ``lab.core`` never does.
"""

__all__ = ["files", "state", "widgets"]
