"""Streamlit drawing of the Diff page: the request navigator, what the compaction wrote, and the paged diff.

The data comes from ``lab.views.diff`` (pure); this module only draws it. As on
every page, transcript text goes to ``st.text``, ``st.code`` or a dataframe
cell, which show it literally; a summary goes through ``safe_markdown`` first.
Widget labels and expander titles hold only the lab's own words and numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Sequence

import streamlit as st

from ..core.messages import Message, block_text
from ..core.tokens.base import TokenCounter, get_counter
from ..errors import LabError
from . import keys
from .navigation import select_request, selected_request
from ..views.diff import (
    BLOCK_LINES,
    ContextDiff,
    DiffRow,
    PageLayout,
    RequestEvents,
    Section,
    clip,
    default_request,
    event_requests,
    step_request,
    text_diff,
)
from ..views.markdown import safe_markdown

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer import Report

__all__ = ["request_navigator", "draw_top", "draw_pages", "block_diff_picker", "report_counter", "PREVIEW_CHARS"]

# A block taller than BLOCK_LINES gets a box of this height (px) that scrolls, so no block fills the screen.
_BLOCK_HEIGHT = 420
_SUMMARY_HEIGHT = 480
# How much of a removed message the folded block's table shows.
PREVIEW_CHARS = 160
_COLOURS = ("blue", "green", "orange", "violet", "red", "gray")


# -- navigating -------------------------------------------------------------------------------


def _go(key: str, k: int) -> None:
    # A callback runs before the script, the one moment a widget's own value may be set.
    st.session_state[key] = k
    select_request(k)


def _picked(key: str, events_key: str) -> None:
    k = st.session_state.get(events_key)
    if k is not None:
        _go(key, int(k))


def request_navigator(report: Report, key: str) -> tuple[int, list[RequestEvents]]:
    """The request picker with previous / next request with events and a list of them; returns (k, events).

    With nothing selected yet in this session, it opens at the first compaction (else the first event).
    """
    n = len(report.rows)
    events = event_requests(report.rows)
    current = selected_request()
    if keys.REQUEST not in st.session_state:
        current = default_request(events)
        select_request(current)
    if key not in st.session_state or int(st.session_state[key]) > n - 1:
        st.session_state[key] = min(current, n - 1)
    pick, prev_col, list_col, next_col = st.columns([2, 2, 5, 2], vertical_alignment="bottom")
    k = int(pick.number_input(f"Request (0 to {n - 1})", min_value=0, max_value=n - 1, step=1, key=key))
    if k != selected_request():
        select_request(k)
    before, after = step_request(events, k, -1), step_request(events, k, 1)
    prev_col.button("◀ previous with events", key=f"{key}.prev", disabled=before is None, on_click=_go, args=(key, before), width="stretch")
    next_col.button("next with events ▶", key=f"{key}.next", disabled=after is None, on_click=_go, args=(key, after), width="stretch")
    labels = {e.index: e.label for e in events}
    events_key = f"{key}.events"
    # Follow the picker: the list shows the current request when it has events, else its placeholder.
    st.session_state[events_key] = k if k in labels else None
    list_col.selectbox(
        f"Requests with events ({len(events)})",
        list(labels),
        index=None,
        format_func=lambda i: labels[i],
        placeholder="no events at this request: pick one" if events else "no request had an event",
        key=events_key,
        on_change=_picked,
        args=(key, events_key),
        disabled=not events,
    )
    return k, events


# -- what the compaction wrote ------------------------------------------------------------------


def draw_top(rows: Sequence[DiffRow]) -> None:
    """The summary (as markdown, escaped) and the boundary this context starts with, above everything else."""
    if not rows:
        return
    with st.container(border=True):
        st.markdown("**What the compaction wrote** (shown first; it stands where the removed messages were)")
        for row in rows:
            m = row.message
            st.text(f"#{row.index} {m.role} · {row.kind} · {m.id}")
            text = "\n\n".join(c.after.text for c in row.blocks if c.after is not None)
            if row.kind == "summary":
                rendered, plain = st.tabs(["rendered", "plain text"])
                with rendered, st.container(height=_SUMMARY_HEIGHT):
                    st.markdown(safe_markdown(text))
                with plain:
                    st.code(text, language=None, wrap_lines=True, height=_SUMMARY_HEIGHT)
            else:
                st.code(clip(text), language=None, wrap_lines=True)


# -- the paged diff -----------------------------------------------------------------------------


def report_counter(report: Report) -> TokenCounter:
    """The replay's own counter, so folded blocks count as the metrics do; never a network counter."""
    name = report.counter if report.counter and report.counter != "anthropic" else "calibrated"
    try:
        return get_counter(name)
    except LabError:
        return get_counter("calibrated")


def _code(text: str) -> None:
    tall = text.count("\n") >= BLOCK_LINES or len(text) > BLOCK_LINES * 70
    st.code(clip(text), language=None, wrap_lines=True, height=_BLOCK_HEIGHT if tall else "content")


def _side(row: DiffRow, side: str) -> None:
    message = row.before if side == "before" else row.after
    if message is None:
        st.caption("removed by the pipeline" if side == "after" else "inserted by the pipeline")
        return
    st.text(f"#{row.index} {message.role} · {row.kind} · {message.id}")
    for change in row.blocks:
        view = change.before if side == "before" else change.after
        if view is None:
            continue
        note = ""
        if side == "after" and change.status == "stub":
            held = f"{view.original_chars:,} chars" if view.original_chars is not None else "its output"
            note = f"stub standing in for {held}" + (f"; full text in {view.spill_path}" if view.spill_path else "")
        elif change.status == "stub":
            # The before side is what the transcript held: the output the stub replaced, not a stub.
            note = "replaced by a stub in the context sent"
        elif change.status != "same":
            note = change.status
        # The label on its own line, wrapped: long tool names (mcp__server__tool) are never cut.
        st.text(view.label + (f"\n{note}" if note else ""))
        _code(view.text)


def _preview(m: Message) -> str:
    text = " ".join(" ".join(block_text(b).split()) for b in m.content)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _removed(section: Section, counter: TokenCounter) -> None:
    messages = [r.before for r in section.rows if r.before is not None]
    tokens = counter.count_messages(messages)
    first, last = section.rows[0].index, section.rows[-1].index
    with st.expander(f"{len(messages)} message(s) removed by the pipeline (#{first} to #{last}), {tokens:,} tokens"):
        st.dataframe(
            {
                "#": [r.index for r in section.rows if r.before is not None],
                "role": [m.role for m in messages],
                "kind": [r.kind for r in section.rows if r.before is not None],
                "tokens": [counter.count_messages([m]) for m in messages],
                "preview": [_preview(m) for m in messages],
            },
            hide_index=True,
        )


def _section(section: Section, counter: TokenCounter) -> None:
    if section.removed:
        _removed(section, counter)
        return
    if section.folded:
        st.caption(f"{len(section.rows)} unchanged message(s) folded (#{section.rows[0].index} to #{section.rows[-1].index})")
        return
    with st.container(border=section.group is not None):
        if section.group is not None:
            st.badge(f"tool pair {section.group}", color=_COLOURS[(section.group - 1) % len(_COLOURS)])  # type: ignore[arg-type]
            st.text("tool call id(s): " + ", ".join(section.tool_ids))
        for row in section.rows:
            st.caption(row.status)
            left, right = st.columns(2)
            with left:
                _side(row, "before")
            with right:
                _side(row, "after")


def draw_pages(layout: PageLayout, counter: TokenCounter, key: str) -> None:
    """One page of the diff (about five screens), with a page picker when there is more than one."""
    pages = layout.pages
    if not pages:
        if not layout.top:
            st.info("Both contexts are empty.")
        return
    page = 1
    if len(pages) > 1:
        if int(st.session_state.get(key, 1)) > len(pages):
            st.session_state[key] = 1
        page = int(st.number_input(f"Page (1 to {len(pages)})", min_value=1, max_value=len(pages), step=1, key=key))
        rows = [r.index for s in pages[page - 1] for r in s.rows]
        st.caption(f"Page {page} of {len(pages)}: messages #{rows[0]} to #{rows[-1]}.")
    left, right = st.columns(2)
    left.markdown("**Before**")
    right.markdown("**Sent**")
    for section in pages[page - 1]:
        _section(section, counter)


def block_diff_picker(diff: ContextDiff, key: str) -> None:
    """A unified text diff of one changed block, picked from a list of short labels."""
    changed = [(r, b) for r in diff.rows for b in r.changes]
    if not changed:
        st.caption("No block changed its text.")
        return
    # Short options (a select box cuts long ones); the full label is drawn below as text.
    options = [f"#{r.index} {b.status}: {b.label.split(' [', 1)[0]}" for r, b in changed]
    picked = int(st.selectbox("Changed block", range(len(options)), format_func=lambda i: options[i], key=key))
    row, change = changed[picked]
    st.text(f"#{row.index} {row.message.role} {row.message.id} · {change.label} ({change.status})")
    before = change.before.text if change.before else ""
    after = change.after.text if change.after else ""
    st.code(text_diff(before, after, before_label="before", after_label="sent") or "(no textual difference)", language="diff")
