"""Export: the agent config and the replay settings (JSON / YAML / TOML), the compacted request at any point, the replay report.

Every file is built from the config model, the settings model or the report; API keys live only
in the LLM panel's session memory and are part of none of them.
"""

import streamlit as st

from lab.core.presets import preset
from lab.errors import LabError
from lab.ui.navigation import request_picker, require_transcript
from lab.ui.replays import get_report
from lab.ui.settings import accept_config_upload, config_restored, get_config, get_preset_name, get_settings
from lab.views import export
from lab.views.markdown import literal_markdown

st.title("Export")
st.subheader("Config")
config = get_config()
# The file's label says whether it is still the preset: a name the user sets, by default "<preset>, changed (n values)".
base_name = get_preset_name()
changed = export.changed_from(config, preset(base_name))
default_label = export.export_label(base_name, changed, config.label)
label = st.text_input("Name in the exported file (its `label`)", value=default_label, key=f"lab.export.label:{default_label}",
                      help="What the file says it is. While every value is the preset's this is the preset's name.")
config = export.labelled(config, label)
if changed:
    st.caption(f"Changed from the {base_name} preset: " + ", ".join(changed))
else:
    st.caption(f"Every value is the {base_name} preset's.")
cols = st.columns(len(export.CONFIG_FORMATS))
for col, fmt in zip(cols, export.CONFIG_FORMATS, strict=True):
    f = export.config_file(config, fmt)  # type: ignore[arg-type]
    col.download_button(f"Config as {fmt.upper()}", f.data, file_name=f.name, mime=f.mime, key=f"lab.export.config.{fmt}", on_click="ignore")
st.caption("Use it in an agent loop:")
st.code(export.python_snippet("compaction.json"), language="python")

st.subheader("Replay settings")
st.caption("Prices, prompt cache, retention weights and clock: how the lab bills and times a replay. "
           "An agent never reads them; pass them back with `--settings FILE` or `lab.replay(..., settings=...)`.")
settings = get_settings()
cols = st.columns(len(export.CONFIG_FORMATS))
for col, fmt in zip(cols, export.CONFIG_FORMATS, strict=True):
    f = export.settings_file(settings, fmt)  # type: ignore[arg-type]
    col.download_button(f"Replay settings as {fmt.upper()}", f.data, file_name=f.name, mime=f.mime, key=f"lab.export.settings.{fmt}",
                        on_click="ignore")

st.subheader("Restore settings from a config file")
upload = st.file_uploader("Config file (.json, .yaml, .yml, .toml)", type=["json", "yaml", "yml", "toml"], key="lab.export.upload")
if upload is not None and accept_config_upload(upload.name, upload.getvalue(), upload.file_id):
    # Rerun so the sidebar and every widget show the restored settings.
    st.rerun()
outcome = config_restored()
if outcome is not None:
    {"error": st.error, "note": st.info}.get(outcome[0], st.success)(outcome[1])

st.subheader("Compacted transcript and replay report")
transcript = require_transcript()
if transcript is not None:
    try:
        report = get_report()
        if report is None or not report.rows:
            st.info("This transcript has no requests to export.")
            st.stop()
        k = request_picker(len(report.rows), key="lab.export.request")
        shape = st.radio("Request shape", export.SHAPES, horizontal=True, key="lab.export.shape")
        body = export.transcript_file(report, k, shape, transcript.tools)
        full = export.report_file(report)
    except LabError as e:
        st.error(str(e))
        st.stop()
    left, right = st.columns(2)
    left.download_button(f"Request {k} ({shape})", body.data, file_name=body.name, mime=body.mime, key="lab.export.request_file", on_click="ignore")
    right.download_button("Replay report (JSON)", full.data, file_name=full.name, mime=full.mime, key="lab.export.report", on_click="ignore")
    st.caption(f"Request {k}: {report.rows[k].sent_messages} messages, {report.rows[k].sent_tokens:,} tokens as sent.")
    for what, file in (("Request file", body), ("Report file", full)):  # secrets the files had redacted: kinds and counts only
        for note in file.notes:
            st.caption(f"{what}: {note}.")
    for warning in body.warnings:
        # The warning names tool ids from the transcript: shown as written, never as markdown.
        st.warning(f"The request file differs from the replayed context: {literal_markdown(warning)}", icon="⚠️")
