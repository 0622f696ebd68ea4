"""Settings state that pages reach only through lab.ui.settings: config restore, the preset picker, reloaded configs."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

TIMEOUT = 60


def _run(script: object) -> list[str]:
    at = AppTest.from_function(script, default_timeout=TIMEOUT)  # type: ignore[arg-type]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return [t.value for t in at.text]


def _config_upload_script() -> None:
    import streamlit as st

    from lab.core import dump_config, preset
    from lab.core.config import with_value
    from lab.ui.settings import accept_config_upload, config_restored, get_config, set_config

    cfg = with_value(preset("mewcode"), "window", 77_000)
    data = dump_config(cfg, "json").encode()
    seen = [config_restored()]
    applied = [accept_config_upload("mine.json", data, "upload-1")]
    seen.append(config_restored())
    restored = get_config().window
    set_config(with_value(get_config(), "window", 60_000))
    # A rerun sees the same upload again: the edit made since must stand.
    applied.append(accept_config_upload("mine.json", data, "upload-1"))
    kept = get_config().window
    applied.append(accept_config_upload("bad.json", b'{"window": 5}', "upload-2"))
    outcome = config_restored()
    st.text(repr(applied))
    st.text(repr([None if s is None else s[0] for s in seen]))
    st.text(repr((restored, kept, get_config().window)))
    st.text(f"{outcome[0] if outcome else None} | {outcome[1] if outcome else ''}")


def test_a_config_upload_applies_once_and_keeps_what_came_of_it() -> None:
    applied, seen, windows, outcome = _run(_config_upload_script)
    assert applied == "[True, False, True]"
    assert seen == "[None, 'ok']"
    assert windows == "(77000, 60000, 60000)", "a bad file leaves the config as it was"
    status, message = outcome.split(" | ", 1)
    assert status == "error" and "bad.json" in message and "window" in message


def _replay_settings_script() -> None:
    import streamlit as st

    from lab.replayer.settings import ReplaySettings
    from lab.ui.settings import changed_fields, get_settings, recorded_mode, set_preset, set_recorded_mode, set_settings

    fresh = get_settings() == ReplaySettings()
    set_settings(ReplaySettings(seconds_per_request=12))
    set_recorded_mode("keep")
    marked = sorted(p for p in changed_fields() if p.startswith("replay."))
    # A preset switch is about the config: the replay settings stay.
    set_preset("mewcode")
    kept = get_settings()
    st.text(repr((fresh, marked, kept.seconds_per_request, recorded_mode())))


def test_the_replay_settings_sit_beside_the_config_with_their_marks() -> None:
    (line,) = _run(_replay_settings_script)
    assert line == "(True, ['replay.recorded_compactions', 'replay.seconds_per_request'], 12.0, 'keep')"


def _preset_picker_script() -> None:
    import streamlit as st

    from lab.ui.settings import get_config, get_preset_name, preset_picked

    # What a selectbox under this key holds after the user picked a preset.
    st.session_state["test.preset"] = "mewcode"
    preset_picked("test.preset")
    st.text(f"{get_preset_name()} {get_config().label}")


def test_the_preset_picker_switches_to_the_preset_its_widget_holds() -> None:
    assert _run(_preset_picker_script) == ["mewcode mewcode"]


def _stale_objects_script() -> None:
    import streamlit as st
    from pydantic import BaseModel, ConfigDict

    from lab.core.config import CompactionConfig
    from lab.core.messages import Transcript
    from lab.core.presets import preset
    from lab.errors import ConfigError
    from lab.ui.settings import get_config, get_preset_name, set_config
    from lab.ui.transcript import get_transcript, transcript_label

    class Gone(BaseModel):
        # A reload removed a field the stored object still has: it fits neither class.
        model_config = ConfigDict(extra="forbid")
        gone: int = 1

    Gone.__qualname__ = CompactionConfig.__qualname__
    st.session_state["lab.config"] = Gone()
    st.text(f"{type(get_config()) is CompactionConfig} {get_config() == preset(get_preset_name())}")
    try:
        set_config(Gone())  # type: ignore[arg-type]
    except ConfigError as e:
        st.text(f"refused: {e}")
    Gone.__qualname__ = Transcript.__qualname__
    st.session_state["lab.transcript"] = Gone()
    st.session_state["lab.transcript_label"] = "old.jsonl"
    st.text(f"{get_transcript()} {transcript_label()!r}")


def test_stored_models_that_no_longer_fit_are_refused() -> None:
    rebuilt, refused, transcript = _run(_stale_objects_script)
    assert rebuilt == "True True", "a config that no longer fits starts again from the preset"
    assert refused == "refused: config must be a CompactionConfig, got Gone"
    assert transcript == "None ''", "an unreadable transcript leaves the session empty, label and all"
