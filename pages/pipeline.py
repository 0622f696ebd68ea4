"""Pipeline: pick a preset, then switch stages on and off and tune every threshold.

Every widget below is generated from CompactionConfig's fields, and the Replay
section from ReplaySettings' (lab.ui.widgets); a value changed from the preset
(or, for replay settings, from the defaults) carries a marker. The effect of
the current values on the loaded session (tokens, summaries, cost, recall) is
drawn above the controls, so a slider's effect is seen without scrolling (issue
31: it was 3.4 screens below them); what the config does not do at this window
by design is said beside it.
"""

import streamlit as st

from lab.core.diagnostics import config_warnings
from lab.core.presets import preset, preset_description, preset_names
from lab.errors import LabError
from lab.replayer.prices import describe_settings
from lab.replayer.report import Report
from lab.replayer.window import summaries
from lab.ui import explain, widgets
from lab.ui.navigation import require_transcript
from lab.ui.replays import get_report
from lab.ui.settings import baseline_settings, changed_fields, config_error, get_config, get_preset_name, get_settings, preset_picked, set_preset, widget_generation
from lab.ui.alerts import show_alerts

st.title("Pipeline")
names = preset_names()
current = get_preset_name()
left, right = st.columns([3, 1])
left.selectbox("Preset", names, index=names.index(current), key="pipeline.preset",
              on_change=preset_picked, args=("pipeline.preset",))
right.button("Reset to preset", key="pipeline.reset", on_click=set_preset, args=(current,), width="stretch")
st.caption(preset_description(current))


def effect(report: Report) -> None:
    """The replay's totals as one row of metrics, with what the config skips by design beside them."""
    done = summaries(report)
    cols = st.columns(6)
    cols[0].metric("Peak sent", f"{report.peak_sent:,}", help=f"tokens; raw history peak {report.peak_raw:,}")
    cols[1].metric("Over watermark", report.requests_over_watermark, help=f"of {report.requests} requests")
    cols[2].metric("Summaries", done, help="summaries written (full compact, session memory, LLM)")
    cols[3].metric("Spills & clearing", sum(report.compactions_by_strategy.values()) - done,
                   help="tool results spilled to files, deduplicated or cleared: compactions that write no summary")
    cols[4].metric("Cost", f"${report.total_cost:.4f}",
                   # Markdown reads a pair of dollar signs as math.
                   help=f"without compaction ${report.total_cost_uncompacted:.4f}. {describe_settings(report.settings)}".replace("$", "\\$"))
    recall, score = report.needed_later_recall, report.retention_score
    cols[5].metric("Recall", "n/a" if recall is None else f"{recall:.0%}",
                   help="needed-later recall: names a later response used that the context still held. Retention "
                   + ("n/a" if score is None else f"{score:.0%}"))
    explain.show_inactive(get_config())


st.subheader("Effect on the loaded session")
report: Report | None = None
if require_transcript() is not None:
    try:
        report = get_report()
    except LabError as e:
        st.error(str(e))
    if report is not None:
        effect(report)

changed = changed_fields()
if changed:
    st.caption(f"{widgets.MARK} {len(changed)} value(s) changed from the preset: " + ", ".join(sorted(changed)))
else:
    st.caption(f"All values are the preset's. Changed values get a {widgets.MARK}.")
if config_error():
    st.error(config_error())

widgets.config_form(
    get_config(),
    key_prefix=f"cfg{widget_generation()}",
    settings=get_settings(),
    changed=changed,
    baseline=preset(current),
    baseline_settings=baseline_settings(),
    on_change=widgets.update_config,
)
# Settings that cannot work at the chosen window (e.g. MewCode's 10k tail at 40k): said here, next to the sliders.
for warning in config_warnings(get_config()):
    st.warning(warning)

if report is not None:
    st.subheader("Alerts on this replay")
    show_alerts(report)
