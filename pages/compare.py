"""Compare: the loaded session replayed under 2-4 configs, overlaid, with the best value per column highlighted."""

import streamlit as st

from lab import figures
from lab.errors import LabError
from lab.ui import state

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
if len(picked) < 2:
    st.info("Pick at least two configs.")
    st.stop()

try:
    table = state.get_compare(picked)
except LabError as e:
    st.error(str(e))
    st.stop()

st.plotly_chart(figures.compare_timelines(table.reports), key="compare.chart")
st.caption(
    "Best value per column highlighted: lower is better for "
    + ", ".join(figures.LOWER_IS_BETTER) + "; higher for " + ", ".join(figures.HIGHER_IS_BETTER) + "."
)
df = table.df.drop(columns=["transcript", "replay_seconds"], errors="ignore")
st.dataframe(
    figures.style_compare(df), hide_index=True, key="compare.table",
    column_config={
        "cost": st.column_config.NumberColumn(format="$%.4f"),
        "cost_uncompacted": st.column_config.NumberColumn(format="$%.4f"),
        "cache_hit_ratio": st.column_config.NumberColumn(format="percent"),
        "cache_hit_ratio_uncompacted": st.column_config.NumberColumn(format="percent"),
        "retention_score": st.column_config.NumberColumn(format="percent"),
    },
)
for err in table.errors:
    st.error(f"{err.get('config', '')}: {err.get('error', err)}")
