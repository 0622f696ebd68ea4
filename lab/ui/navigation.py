"""What every page shares to find its way: the selected request, page paths, the empty state, the sidebar.

The selected request is shared by Timeline, Diff, Summary and Export and
mirrored in the URL (``?request=k``), so a link opens the same request; a
click on a chart point selects its request once. ``request_picker`` is the
plain number input the Summary and Export pages (and the probe panel) pick it
with; nothing here puts transcript text in a widget label.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Any

import streamlit as st

from ..core.config import STAGE_FIELDS, CompactionConfig
from ..core.messages import Transcript
from ..errors import LabError
from . import keys
from .settings import changed_fields, config_error, get_config, get_preset_name
from .transcript import ROOT, get_transcript, load_sample, transcript_label

__all__ = [
    "selected_request",
    "select_request",
    "select_from_click",
    "show_request",
    "request_picked",
    "request_picker",
    "page_path",
    "require_transcript",
    "sidebar",
]


# --- request selection ------------------------------------------------------------------------


def selected_request() -> int:
    """The request Timeline and Diff look at: a new ``?request=k`` in the URL wins, else the session's, else 0."""
    raw = st.query_params.get("request")
    if raw is not None and raw != st.session_state.get(keys.REQUEST_URL):
        # A link (or a reload) carrying ?request=k: adopt it once, so later picks are not overridden.
        st.session_state[keys.REQUEST_URL] = raw
        with suppress(ValueError):  # ?request=abc: keep the session's request
            st.session_state[keys.REQUEST] = max(0, int(raw))
    return int(st.session_state.get(keys.REQUEST, 0))


def select_request(k: int) -> None:
    k = max(0, int(k))
    st.session_state[keys.REQUEST] = k
    st.session_state[keys.REQUEST_URL] = str(k)
    st.query_params["request"] = str(k)


def show_request(widget_key: str, k: int) -> None:
    """Set the request picker under ``widget_key`` to ``k`` before it is drawn, so it follows a chart click or a link.

    Writing the key before the widget is drawn is how Streamlit lets a script change a keyed widget's value.
    """
    st.session_state[widget_key] = k


def request_picked(widget_key: str) -> None:
    """``on_change`` of a request picker: select the request the widget under ``widget_key`` now holds."""
    select_request(st.session_state[widget_key])


def request_picker(n: int, key: str) -> int:
    """A number input for the request, shared with the Timeline and Diff through ``selected_request``."""
    current = min(selected_request(), n - 1)
    k = int(st.number_input(f"Request (0 to {n - 1})", min_value=0, max_value=n - 1, value=current, step=1, key=key))
    if k != selected_request():
        select_request(k)
    return k


def select_from_click(points: list[dict[str, Any]], last: int, memo_key: str) -> bool:
    """Select the request of a clicked chart point; True when that changed the selection.

    A plotly chart keeps reporting its selection on every rerun, so a click is
    acted on once (remembered under ``memo_key``); later picks elsewhere win.
    """
    if not points:
        return False
    try:
        clicked = int(points[0]["x"])
    except (KeyError, TypeError, ValueError):
        return False
    if clicked == st.session_state.get(memo_key):
        return False
    st.session_state[memo_key] = clicked
    select_request(min(max(clicked, 0), max(last, 0)))
    return True


# --- page helpers -----------------------------------------------------------------------------


def page_path(name: str) -> Path:
    """Absolute path of a page file, as st.page_link and st.switch_page accept it."""
    return ROOT / "pages" / f"{name}.py"


def require_transcript(*, here: bool = False) -> Transcript | None:
    """The loaded transcript, or None after drawing the empty state with a one-click sample.

    ``here``: drawn on the Session page itself, whose loaders are above (it must not send the user to itself).
    """
    transcript = get_transcript()
    if transcript is not None:
        return transcript
    where = "Upload, pick or generate one above" if here else "Load one on the Session page"
    st.info(f"No session loaded yet. {where}, or start with a sample.")
    if st.button("Load a sample session", key="lab.load_sample", type="primary"):
        try:
            load_sample()
        except LabError as e:
            st.error(str(e))
            return None
        st.rerun()
    return None


def _enabled_stages(cfg: CompactionConfig) -> list[str]:
    return [name for name in STAGE_FIELDS if getattr(cfg, name).enabled]


def sidebar() -> None:
    """The loaded session and the active config, on every page."""
    with st.sidebar:
        st.caption("Session")
        transcript = get_transcript()
        if transcript is None:
            st.text("none loaded")
        else:
            # File names come from the user: st.text never interprets them.
            st.text(f"{transcript_label()}\n{len(transcript.messages)} messages")
        st.caption("Config")
        cfg = get_config()
        changed = changed_fields()
        mark = f" + {len(changed)} change(s)" if changed else ""
        st.text(f"preset {get_preset_name()}{mark}\nwindow {cfg.window:,} | counter {cfg.counter}")
        st.text("stages: " + (", ".join(_enabled_stages(cfg)) or "none"))
        if config_error():
            st.error(config_error())
