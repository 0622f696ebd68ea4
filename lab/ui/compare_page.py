"""Streamlit drawing of the Compare page's table and what is said beside it, so the page itself stays a short script.

Every sentence about one config (its invalid requests, what it skips by design, its overflows) comes from
``explain``, as on the Timeline; config labels may be the user's (saved configs) and are shown as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from .. import figures
from ..errors import LabError
from ..views.markdown import literal_markdown
from . import explain

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..evaluation import CompareTable

__all__ = ["column_config", "config_notes", "legend", "ranking"]


def column_config(cols: list[str]) -> dict[str, Any]:
    """The table's column headers and their help, in the words of ``lab compare``."""
    return {c: st.column_config.Column(label=figures.compare_label(c), help=figures.compare_help(c)) for c in cols}


def config_notes(table: CompareTable) -> None:
    """The prices every row is in, then per config: invalid requests, what it skips by design, its overflows."""
    # One settings for every row, so one row's prices are every row's: the model and prices beside the costs.
    if table.reports:
        st.caption(explain.prices_caption(next(iter(table.reports.values()))))
    for label, rep in table.reports.items():
        explain.show_invalid(rep, label=label)
        # A config that skips auto-compaction at this window on purpose would read as a bug in the table without this.
        explain.show_inactive(rep.config, label=label)
        overflowed = explain.overflow_text(rep)
        if overflowed is not None:
            st.caption(literal_markdown(f"{label}: {overflowed}."))


def legend(df: pd.DataFrame) -> None:
    """Which way each highlighted column is better, and when content recall rests on too few items to rank by."""
    st.caption(
        "Best value highlighted where it really is better and the configs differ: lower "
        + ", ".join(figures.compare_label(c).lower() for c in figures.LOWER_IS_BETTER) + "; higher "
        + ", ".join(figures.compare_label(c).lower() for c in figures.HIGHER_IS_BETTER)
        + ". A config with failed requests is ranked only on the failure columns."
    )
    # Content recall is a share of what a session's later edits and copies needed: say when it rests on too few items.
    if "content_thin" in df.columns and df["content_thin"].fillna(True).astype(bool).any():
        needed = int(df["content_needed"].fillna(0).max()) if "content_needed" in df.columns else 0
        st.caption(f"Content recall rests on {needed} needed line(s) and span(s) at most here: too thin to rank configs by "
                   "(replay more sessions, or generated ones with planted content dependencies).")


def ranking(table: CompareTable) -> None:
    """The ranking section: per objective, the mean over sessions, its interval and wins / losses / ties."""
    st.subheader("Ranking")
    st.caption(
        "Per config and objective: the mean over sessions (each weighs the same; one with nothing needed is left out and counted), "
        "its 95% bootstrap interval (sessions resampled, seed 0) and wins / losses / ties against every other config, session by "
        "session. One session gives no interval: rank configs on a folder with `python -m lab compare DIR ... --ranking FILE`."
    )
    try:
        ranked = table.ranking()
    except LabError as e:
        st.error(str(e))
    else:
        st.table(ranked.df.set_index(["objective", "rank"]))  # a static table: a handful of rows
        # st.text: config names are the user's, and must not become markdown.
        st.text(ranked.summary())
