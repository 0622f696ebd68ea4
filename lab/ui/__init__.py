"""Streamlit helpers of the app: session state (``state``) and widgets built from config models (``widgets``).

Only the app and its pages import this package; ``lab.core`` never does.
"""

__all__ = ["state", "widgets"]
