"""Streamlit drawing helpers for the Diff, Summary and Export pages.

One rule runs through all of them: text that comes from a transcript (or
from anything a user typed) is drawn with ``st.text`` or ``st.code``, which
show it literally, never with ``st.markdown``, ``st.caption`` or a widget
label, which would interpret markdown or HTML in it. Markdown is used only
for the lab's own words.
"""

from __future__ import annotations

import streamlit as st

from . import state
from .diff import BlockChange, ContextDiff, DiffRow, Section, clip, text_diff

__all__ = ["request_picker", "draw_sections", "block_diff_picker", "PAGE_SIZE"]

# Sections per page of the diff: enough to read, few enough to draw quickly.
PAGE_SIZE = 40
_COLOURS = ("blue", "green", "orange", "violet", "red", "gray")


def request_picker(n: int, key: str) -> int:
    """A number input for the request, shared with the Timeline through ``state``."""
    current = min(state.selected_request(), n - 1)
    k = st.number_input(f"Request (0 to {n - 1})", min_value=0, max_value=n - 1, value=current, step=1, key=key)
    k = int(k)
    if k != state.selected_request():
        state.select_request(k)
    return k


def _block(view_text: str, label: str, note: str = "") -> None:
    st.text(label + (f"  ·  {note}" if note else ""))
    st.code(clip(view_text), language=None, wrap_lines=True)


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
        elif change.status != "same":
            note = change.status
        _block(view.text, view.label, note)


def _section(section: Section) -> None:
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


def draw_sections(diff: ContextDiff, *, only_changes: bool, key: str) -> None:
    """The side-by-side diff, a page of sections at a time."""
    sections = diff.sections(only_changes=only_changes)
    if not sections:
        st.info("Both contexts are empty.")
        return
    pages = (len(sections) + PAGE_SIZE - 1) // PAGE_SIZE
    page = 1
    if pages > 1:
        page = int(st.number_input(f"Page (1 to {pages})", min_value=1, max_value=pages, value=1, step=1, key=key))
    left, right = st.columns(2)
    left.markdown("**Before**")
    right.markdown("**Sent**")
    for section in sections[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
        _section(section)


def block_diff_picker(diff: ContextDiff, key: str) -> None:
    """A unified text diff of one changed block, picked from a list."""
    changed = diff.changed_blocks()
    if not changed:
        st.caption("No block changed its text.")
        return
    labels = [label for label, _ in changed]
    # Options are shown as plain text; the label of the widget is the lab's own.
    picked = st.selectbox("Changed block", range(len(labels)), format_func=lambda i: labels[i], key=key)
    change: BlockChange = changed[int(picked)][1]
    before = change.before.text if change.before else ""
    after = change.after.text if change.after else ""
    st.code(text_diff(before, after, before_label="before", after_label="sent") or "(no textual difference)", language="diff")
