"""The request picker the Summary and Export pages share with the Timeline and Diff (through ``state``).

The Diff page's drawing lives in ``render``; like it, nothing here puts transcript text in a widget label.
"""

from __future__ import annotations

import streamlit as st

from . import state

__all__ = ["request_picker"]


def request_picker(n: int, key: str) -> int:
    """A number input for the request, shared with the Timeline through ``state``."""
    current = min(state.selected_request(), n - 1)
    k = st.number_input(f"Request (0 to {n - 1})", min_value=0, max_value=n - 1, value=current, step=1, key=key)
    k = int(k)
    if k != state.selected_request():
        state.select_request(k)
    return k
