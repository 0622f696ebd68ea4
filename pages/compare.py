"""Compare: the loaded session replayed under 2-4 configs at one window and counter, for deciding between them."""

import streamlit as st

from lab import figures
from lab.errors import LabError
from lab.ui import explain, state
from lab.ui.markdown import literal_markdown

st.title("Compare")
if state.require_transcript() is None:
    st.stop()

with st.expander("Save the current config under a name, to compare it later"):
    name = st.text_input("Name", key="compare.save_name", max_chars=60)
    if st.button("Save current config", key="compare.save"):
        try:
            st.success(f"saved as {state.save_config(name)!r}")
        except LabError as e:
            st.error(str(e))

choices = state.compare_choices()
other = "mewcode" if state.get_preset_name() != "mewcode" else "minicode"
picked = st.multiselect(
    "Configs to compare (2-4): the current config, presets, saved configs",
    choices, default=[state.CURRENT, other], max_selections=4, key="compare.pick",
)
cfg = state.get_config()
uniform = st.checkbox(
    "Run every config at the current window and counter", value=True, key="compare.uniform",
    help=f"On: every config runs at window {cfg.window:,} with the {cfg.counter} counter, so the rows differ only in what "
    "they compact. Off: each config at its own window and counter (a smaller window then wins peak sent by itself).",
)
if len(picked) < 2:
    st.info("Pick at least two configs.")
    st.stop()

try:
    table = state.get_compare(picked, uniform=uniform)
except LabError as e:
    st.error(str(e))
    st.stop()

if uniform:
    st.caption(f"Every config at window {cfg.window:,} tokens, counted with {cfg.counter}.")
else:
    # st.text: saved configs are named by the user, and their names must not become markdown.
    st.text("Each config at its own window and counter: " + ", ".join(
        f"{label} {rep.window:,} ({rep.counter})" for label, rep in table.reports.items()) + ".")
overlaid, multiples = st.tabs(["Overlaid", "One per config"])
overlaid.plotly_chart(figures.compare_timelines(table.reports), key="compare.chart")
multiples.plotly_chart(figures.small_multiples(table.reports), key="compare.multiples")

stuck = table.blocked()
if stuck is not None:
    # Every config broke the same constraint: say which, where in the session, and what would fix it.
    st.warning(literal_markdown(stuck.text))
# Errors are shown below, one st.error each; the table keeps the configs that ran.
df = table.df.drop(columns=["transcript", "error"], errors="ignore")
lead, rest = figures.compare_columns(df.columns)


def _columns(cols: list[str]) -> dict:
    return {c: st.column_config.Column(label=figures.compare_label(c), help=figures.compare_help(c)) for c in cols}


st.dataframe(figures.style_compare(df[lead]), hide_index=True, key="compare.table", column_config=_columns(lead))
# One settings for every row, so one row's prices are every row's: the model and prices beside the costs.
if table.reports:
    st.caption(explain.prices_caption(next(iter(table.reports.values()))))
# Invalid requests and overflows explained where they are counted: the reasons and requests, per config.
for label, rep in table.reports.items():
    explain.show_invalid(rep, label=label)
    overflowed = explain.overflow_text(rep)
    if overflowed is not None:
        st.caption(literal_markdown(f"{label}: {overflowed}."))
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
with st.expander("Every column"):
    st.dataframe(figures.style_compare(df[rest]), hide_index=True, key="compare.table_all", column_config=_columns(rest))
for err in table.errors:
    st.error(literal_markdown(f"{err.get('config', '')}: {err.get('error', err)}"))

st.subheader("Ranking")
st.caption(
    "Per config and objective: the mean over sessions (each weighs the same; one with nothing needed is left out and counted), "
    "its 95% bootstrap interval (sessions resampled, seed 0) and wins / losses / ties against every other config, session by "
    "session. One session gives no interval: rank configs on a folder with `python -m lab compare DIR ... --ranking FILE`."
)
try:
    ranking = table.ranking()
except LabError as e:
    st.error(str(e))
else:
    st.table(ranking.df.set_index(["objective", "rank"]))  # a static table: a handful of rows
    # st.text: config names are the user's, and must not become markdown.
    st.text(ranking.summary())
