"""Pipeline: pick a preset, then switch stages on and off and tune every threshold.

Every widget below is generated from CompactionConfig's fields, and the Replay
section from ReplaySettings' (lab.ui.widgets); a value changed from the preset
(or, for replay settings, from the defaults) carries a marker.
"""

import streamlit as st

from lab.core.diagnostics import config_warnings
from lab.core.presets import preset, preset_description, preset_names
from lab.errors import LabError
from lab.replayer.prices import describe_settings
from lab.ui import state, widgets
from lab.ui.alerts import show_alerts

st.title("Pipeline")
names = preset_names()
current = state.get_preset_name()
left, right = st.columns([3, 1])
left.selectbox("Preset", names, index=names.index(current), key="pipeline.preset",
              on_change=state.preset_picked, args=("pipeline.preset",))
right.button("Reset to preset", key="pipeline.reset", on_click=state.set_preset, args=(current,), width="stretch")
st.caption(preset_description(current))

changed = state.changed_fields()
if changed:
    st.caption(f"{widgets.MARK} {len(changed)} value(s) changed from the preset: " + ", ".join(sorted(changed)))
else:
    st.caption(f"All values are the preset's. Changed values get a {widgets.MARK}.")
if state.config_error():
    st.error(state.config_error())

widgets.config_form(
    state.get_config(),
    key_prefix=f"cfg{state.widget_generation()}",
    settings=state.get_settings(),
    changed=changed,
    baseline=preset(current),
    baseline_settings=state.baseline_settings(),
    on_change=widgets.update_config,
)
# Settings that cannot work at the chosen window (e.g. MewCode's 10k tail at 40k): said here, next to the sliders.
for warning in config_warnings(state.get_config()):
    st.warning(warning)

st.subheader("Effect on the loaded session")
if state.require_transcript() is not None:
    try:
        report = state.get_report()
    except LabError as e:
        st.error(str(e))
        st.stop()
    cols = st.columns(5)
    cols[0].metric("Peak sent", f"{report.peak_sent:,}", help=f"raw history peak {report.peak_raw:,}")
    cols[1].metric("Over watermark", report.requests_over_watermark, help=f"of {report.requests} requests")
    cols[2].metric("Compactions", sum(report.compactions_by_strategy.values()))
    cols[3].metric("Cost", f"${report.total_cost:.4f}",
                   # Markdown reads a pair of dollar signs as math.
                   help=f"without compaction ${report.total_cost_uncompacted:.4f}. {describe_settings(report.settings)}".replace("$", "\\$"))
    score = report.retention_score
    cols[4].metric("Retention", "n/a" if score is None else f"{score:.0%}")
    show_alerts(report)
