"""The ``st.session_state`` keys the app owns, in one place, and the content hash its caches use.

The state modules (``transcript``, ``settings``, ``replays``, ``navigation``,
``sweep``, and the ``llm`` and ``probe`` panels) each own some of these keys
but clear each other's (a new transcript drops the selected request), so the
names live here rather than in any one of them. The AppTests read some keys
directly ("lab.config", "lab.replay_settings", "lab.request", "lab.sweep_result"): the strings are
part of the app's contract and must not change.

Widget keys are not listed: a widget's key names the widget on its page, and
the state modules read a widget's value only when the page hands them its key.
"""

from __future__ import annotations

# The hash lives with the upload files it first keyed (lab.views, below this floor); the state modules reach it here.
from ..views.files import digest

__all__ = [
    "PREFIX",
    "TRANSCRIPT",
    "LABEL",
    "TKEY",
    "FORMAT",
    "CONFIG",
    "SETTINGS",
    "PRESET",
    "GEN",
    "CFG_ERROR",
    "REQUEST",
    "REQUEST_URL",
    "LLM",
    "DIR",
    "UPLOAD_ID",
    "UPLOAD_ERROR",
    "SESSIONS",
    "PICK_ERROR",
    "SAVED",
    "SESSION_WINDOW",
    "SESSION_HIDDEN",
    "SESSION_PRICES",
    "PRICED_FOR",
    "CONFIG_UPLOAD_ID",
    "CONFIG_RESTORED",
    "SWEEP_RESULT",
    "SWEEP_PICKED",
    "LLM_RESULT",
    "LLM_ERROR",
    "PROBE_RESULT",
    "PROBE_ERROR",
    "digest",
]

PREFIX = "lab."
TRANSCRIPT, LABEL, TKEY, FORMAT = PREFIX + "transcript", PREFIX + "transcript_label", PREFIX + "transcript_key", PREFIX + "format"
CONFIG, PRESET, GEN, CFG_ERROR = PREFIX + "config", PREFIX + "preset", PREFIX + "widget_gen", PREFIX + "config_error"
REQUEST, REQUEST_URL = PREFIX + "request", PREFIX + "request_url"
LLM, DIR, UPLOAD_ID, UPLOAD_ERROR = PREFIX + "llm", PREFIX + "dir", PREFIX + "upload_id", PREFIX + "upload_error"
SAVED = PREFIX + "saved_configs"
# The sessions of an upload that holds several (lab.views.files.StoreSessions), and why the last pick failed.
SESSIONS, PICK_ERROR = PREFIX + "sessions", PREFIX + "session_pick_error"
# The replay settings (prices, cache, retention weights, clock, recorded compactions): beside the config, not in it.
SETTINGS = PREFIX + "replay_settings"
# The window the loaded session proposed (absent: no session, or it proposed none).
SESSION_WINDOW = PREFIX + "session_window"
# Set when the loaded session's proposal turned on counting its hidden tokens (the settings' baseline then counts them).
SESSION_HIDDEN = PREFIX + "session_hidden"
# The price-table row the loaded session's model names, and the transcript it was read from.
SESSION_PRICES, PRICED_FOR = PREFIX + "session_prices", PREFIX + "priced_for"
# A config file restored on the Export page: the upload already applied, and what came of it.
CONFIG_UPLOAD_ID, CONFIG_RESTORED = PREFIX + "export.applied", PREFIX + "export.restore"
SWEEP_RESULT, SWEEP_PICKED = PREFIX + "sweep_result", PREFIX + "sweep_picked"
# The Summary page's panels: the last LLM summary and probe run, each tagged with what it was run on.
LLM_RESULT, LLM_ERROR = PREFIX + "llm.result", PREFIX + "llm.error"
PROBE_RESULT, PROBE_ERROR = PREFIX + "probe.result", PREFIX + "probe.error"

