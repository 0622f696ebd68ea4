"""Compare: the loaded session replayed under 2-4 configs at one window and counter, for deciding between them."""

import streamlit as st

from lab import figures
from lab.errors import LabError
from lab.ui import compare_page
from lab.ui.navigation import require_transcript
from lab.ui.replays import get_compare
from lab.ui.settings import CURRENT, compare_choices, get_config, get_preset_name, save_config
from lab.views.markdown import literal_markdown

st.title("Compare")
if require_transcript() is None:
    st.stop()

with st.expander("Save the current config under a name, to compare it later"):
    name = st.text_input("Name", key="compare.save_name", max_chars=60)
    if st.button("Save current config", key="compare.save"):
        try:
            st.success(f"saved as {save_config(name)!r}")
        except LabError as e:
            st.error(str(e))

choices = compare_choices()
other = "mewcode" if get_preset_name() != "mewcode" else "minicode"
picked = st.multiselect(
    "Configs to compare (2-4): the current config, presets, saved configs",
    choices, default=[CURRENT, other], max_selections=4, key="compare.pick",
)
cfg = get_config()
uniform = st.checkbox(
    "Run every config at the current window and counter", value=True, key="compare.uniform",
    help=f"On: every config runs at window {cfg.window:,} with the {cfg.counter} counter, so the rows differ only in what "
    "they compact. Off: each config at its own window and counter (a smaller window then wins peak sent by itself).",
)
if len(picked) < 2:
    st.info("Pick at least two configs.")
    st.stop()

try:
    table = get_compare(picked, uniform=uniform)
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

st.dataframe(figures.style_compare(df[lead]), hide_index=True, key="compare.table", column_config=compare_page.column_config(lead))
compare_page.config_notes(table)
compare_page.legend(df)
with st.expander("Every column"):
    st.dataframe(figures.style_compare(df[rest]), hide_index=True, key="compare.table_all", column_config=compare_page.column_config(rest))
for err in table.errors:
    st.error(literal_markdown(f"{err.get('config', '')}: {err.get('error', err)}"))
compare_page.ranking(table)
