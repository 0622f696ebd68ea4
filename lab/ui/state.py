"""Per-browser-session state of the app: transcript, config, replay, selection, temp folder.

Pages never touch ``st.session_state``; they call these functions, so the
pages, the state modules and the tests agree on one contract (a test checks
that no page file names ``session_state``):

    get_transcript / set_transcript / transcript_label / transcript_key
    get_config / set_config / get_preset_name / set_preset / changed_fields
    get_settings / set_settings / baseline_settings   the replay settings, kept beside the config
    preset_picked / request_picked / show_request   a page's picker widgets, read and set by key
    accept_config_upload / config_restored   a config file restored on the Export page, once per upload
    get_report                    replay of the transcript under the config, cached
    get_window_proposal / model_window / session_window / set_session_window   the window proposed and applied on load, the model's own
    get_usage_fit                         what the recorded usage says the provider saw beyond the file
    session_prices                the price-table row the loaded session's model names (its replays are billed so)
    get_recorded / recorded_mode / set_recorded_mode   the agent's own recorded compactions: undone or kept
    selected_request / select_request   shared by Timeline and Diff (+ ?request=k)
    session_dir                   a private temp folder, removed with the session
    llm_settings / set_llm_settings     memory only; the key never reaches disk or a cache key
    load_upload / accept_upload / load_sample / generate_session
    session_choices / show_session / session_picked / pick_session / session_pick_error   one session of an upload of several
    require_transcript / sidebar  the empty state and the sidebar every page shows

This module is the one name pages import; the state itself lives, by concern, in

    keys         the session_state key names and the content hash of cache keys
    transcript   the loaded transcript, the session's temp folder, loading (sample, upload, generator)
    settings     the active config and preset, the replay settings, saved configs and compare choices, LLM settings
    replays      cached replay, token stats and compare of the loaded transcript
    navigation   the selected request, page paths, the empty state and the sidebar
    sweep        the Sweep page: sessions to sweep over, the last result, loading a trial as the config

and ``files`` holds the Streamlit-free file functions they use; ``reload`` rebuilds
the models they keep after Streamlit re-imports the project's modules.
"""

from __future__ import annotations

from .files import sanitize_name, sweep_old_dirs, temp_root
from .navigation import (
    page_path,
    request_picked,
    require_transcript,
    select_from_click,
    select_request,
    selected_request,
    show_request,
    sidebar,
)
from .replays import STATS_COUNTERS, get_compare, get_recorded, get_report, get_stats, get_usage_fit, get_window_proposal, model_window, summarizer_fingerprint
from .settings import (
    CURRENT,
    DEFAULT_PRESET,
    SAVED_PREFIX,
    accept_config_upload,
    changed_fields,
    compare_choices,
    config_error,
    config_for_choice,
    config_restored,
    get_config,
    baseline_settings,
    get_preset_name,
    get_settings,
    llm_settings,
    preset_picked,
    recorded_mode,
    save_config,
    saved_configs,
    session_prices,
    session_window,
    set_config,
    set_config_error,
    set_llm_settings,
    set_preset,
    set_recorded_mode,
    set_settings,
    set_session_window,
    widget_generation,
)
from .sweep import SWEEP_LOADED
from .sweep import example_space, load_selection, load_sweep_trial, run_sweep, sweep_result, sweep_sources, trial_from_selection
from .transcript import (
    DEFAULT_SAMPLE,
    ROOT,
    SAMPLES_DIR,
    accept_upload,
    clear_transcript,
    generate_session,
    get_transcript,
    load_sample,
    load_upload,
    pick_session,
    sample_files,
    session_choices,
    session_dir,
    session_pick_error,
    session_picked,
    set_transcript,
    show_session,
    transcript_format,
    transcript_key,
    transcript_label,
    upload_error,
)

__all__ = [
    "ROOT",
    "SAMPLES_DIR",
    "DEFAULT_SAMPLE",
    "DEFAULT_PRESET",
    "STATS_COUNTERS",
    "CURRENT",
    "SAVED_PREFIX",
    "get_transcript",
    "set_transcript",
    "clear_transcript",
    "transcript_label",
    "transcript_key",
    "transcript_format",
    "get_config",
    "set_config",
    "get_settings",
    "set_settings",
    "baseline_settings",
    "get_preset_name",
    "set_preset",
    "preset_picked",
    "changed_fields",
    "widget_generation",
    "config_error",
    "set_config_error",
    "accept_config_upload",
    "config_restored",
    "get_report",
    "get_stats",
    "get_window_proposal",
    "model_window",
    "get_usage_fit",
    "session_window",
    "session_prices",
    "set_session_window",
    "get_recorded",
    "recorded_mode",
    "set_recorded_mode",
    "saved_configs",
    "save_config",
    "compare_choices",
    "config_for_choice",
    "get_compare",
    "selected_request",
    "select_request",
    "select_from_click",
    "show_request",
    "request_picked",
    "session_dir",
    "temp_root",
    "sweep_old_dirs",
    "sanitize_name",
    "llm_settings",
    "set_llm_settings",
    "summarizer_fingerprint",
    "sample_files",
    "load_sample",
    "load_upload",
    "accept_upload",
    "upload_error",
    "session_choices",
    "show_session",
    "session_picked",
    "pick_session",
    "session_pick_error",
    "generate_session",
    "page_path",
    "require_transcript",
    "sidebar",
    "SWEEP_LOADED",
    "sweep_sources",
    "run_sweep",
    "sweep_result",
    "trial_from_selection",
    "load_sweep_trial",
    "load_selection",
    "example_space",
]
