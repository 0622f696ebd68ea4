"""Per-browser-session state of the app: transcript, config, replay, selection, temp folder.

Pages never touch ``st.session_state`` keys directly; they call these
functions, so the two app helpers (and the tests) agree on one contract:

    get_transcript / set_transcript / transcript_label / transcript_key
    get_config / set_config / get_preset_name / set_preset / changed_fields
    get_report                    replay of the transcript under the config, cached
    selected_request / select_request   shared by Timeline and Diff (+ ?request=k)
    session_dir                   a private temp folder, removed with the session
    llm_settings / set_llm_settings     memory only; the key never reaches disk or a cache key
    load_upload / accept_upload / load_sample / generate_session
    require_transcript / sidebar  the empty state and the sidebar every page shows

Caches: imports and stats are keyed on the transcript's content hash; the
replay on that hash + the config's JSON + a hash of the summarizer settings,
so moving one slider re-runs only the replay. Those caches are shared by
browser sessions holding identical content, so replays spill into a memory
store, never into one session's folder; the session folder holds uploads.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from ..core.config import STAGE_FIELDS, CompactionConfig
from ..core.messages import Transcript
from ..core.presets import preset, preset_names
from ..errors import ConfigError, LabError, TranscriptError
from .files import SessionDir, import_file, sanitize_name, save_upload, sweep_old_dirs, temp_root
from .files import sample_files as _sample_files

if TYPE_CHECKING:  # pragma: no cover
    # providers imports both SDKs (seconds on a busy machine): only pages that call an LLM pay for it.
    from ..core.providers import ProviderSettings
    from ..core.stats import TranscriptStats
    from ..generate import GeneratorConfig
    from ..replay import CompareTable, Report

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
    "get_preset_name",
    "set_preset",
    "changed_fields",
    "widget_generation",
    "config_error",
    "set_config_error",
    "get_report",
    "get_stats",
    "saved_configs",
    "save_config",
    "compare_choices",
    "config_for_choice",
    "get_compare",
    "selected_request",
    "select_request",
    "select_from_click",
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
    "generate_session",
    "page_path",
    "require_transcript",
    "sidebar",
]

ROOT = Path(__file__).resolve().parents[2]
SAMPLES_DIR = ROOT / "sample_sessions"
DEFAULT_SAMPLE = "generated-small.lab.json"
DEFAULT_PRESET = "minicode"
# The overview's counters: the two designs' estimates, an exact tokenizer, and the lab's fitted one.
STATS_COUNTERS = ("minicode", "chars/3.5", "o200k", "calibrated")

_P = "lab."
_TRANSCRIPT, _LABEL, _TKEY, _FORMAT = _P + "transcript", _P + "transcript_label", _P + "transcript_key", _P + "format"
_CONFIG, _PRESET, _GEN, _CFG_ERROR = _P + "config", _P + "preset", _P + "widget_gen", _P + "config_error"
_REQUEST, _LLM, _DIR, _UPLOAD_ID, _UPLOAD_ERROR = _P + "request", _P + "llm", _P + "dir", _P + "upload_id", _P + "upload_error"
_SAVED, _REQUEST_URL = _P + "saved_configs", _P + "request_url"
CURRENT = "current"
SAVED_PREFIX = "saved: "

_swept = False


# --- transcript -------------------------------------------------------------------------------


def _digest(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def get_transcript() -> Transcript | None:
    transcript = st.session_state.get(_TRANSCRIPT)
    if transcript is not None and not isinstance(transcript, Transcript):
        # Streamlit re-imports the project's modules when a source file changes (a dev server):
        # objects kept in the session are then instances of the old class. Rebuild once.
        transcript = Transcript.model_validate(transcript.model_dump())
        st.session_state[_TRANSCRIPT] = transcript
    return transcript


def set_transcript(transcript: Transcript, label: str, *, key: str | None = None, format: str | None = None) -> None:
    """Make ``transcript`` the session's one loaded transcript.

    ``key`` identifies its content for the caches (a hash of the uploaded bytes,
    of a sample file, or of the generator's knobs); without one it is hashed here.
    ``format`` is the importer detection chose (defaults to the transcript's own record).
    """
    st.session_state[_TRANSCRIPT] = transcript
    st.session_state[_LABEL] = label
    st.session_state[_FORMAT] = format or transcript.meta.source_format
    st.session_state[_TKEY] = key or "t:" + _digest(transcript.model_dump_json())
    # Request numbers of the previous transcript mean nothing for this one.
    st.session_state.pop(_REQUEST, None)


def clear_transcript() -> None:
    for k in (_TRANSCRIPT, _LABEL, _TKEY, _FORMAT, _REQUEST):
        st.session_state.pop(k, None)


def transcript_label() -> str:
    return st.session_state.get(_LABEL, "")


def transcript_key() -> str | None:
    return st.session_state.get(_TKEY)


def transcript_format() -> str:
    """The format the importer detected (or "generated")."""
    return st.session_state.get(_FORMAT, "")


# --- config -----------------------------------------------------------------------------------


def get_config() -> CompactionConfig:
    cfg = st.session_state.get(_CONFIG)
    if cfg is None:
        cfg = preset(get_preset_name())
        st.session_state[_CONFIG] = cfg
    elif not isinstance(cfg, CompactionConfig):  # kept across a module reload; see get_transcript
        cfg = CompactionConfig.model_validate(cfg.model_dump())
        st.session_state[_CONFIG] = cfg
    return cfg


def set_config(config: CompactionConfig, *, sync_widgets: bool = True) -> None:
    """Replace the active config.

    With ``sync_widgets`` (a config loaded from a file, a reset) the Pipeline
    widgets are rebuilt so they show the new values; the widgets themselves
    pass False so a slider keeps its focus while it is being moved.
    """
    if not isinstance(config, CompactionConfig):
        if type(config).__name__ != "CompactionConfig":
            raise ConfigError(f"config must be a CompactionConfig, got {type(config).__name__}")
        # An instance of the class as it was before Streamlit reloaded the module: same fields.
        config = CompactionConfig.model_validate(config.model_dump())
    st.session_state[_CONFIG] = config
    st.session_state.pop(_CFG_ERROR, None)
    if sync_widgets:
        st.session_state[_GEN] = widget_generation() + 1


def get_preset_name() -> str:
    return st.session_state.get(_PRESET, DEFAULT_PRESET)


def set_preset(name: str) -> None:
    """Switch to a preset: the config becomes a fresh copy of it (raises ConfigError if unknown)."""
    cfg = preset(name)
    st.session_state[_PRESET] = name
    set_config(cfg)


def widget_generation() -> int:
    return st.session_state.get(_GEN, 0)


def config_error() -> str | None:
    return st.session_state.get(_CFG_ERROR)


def set_config_error(message: str | None) -> None:
    if message is None:
        st.session_state.pop(_CFG_ERROR, None)
    else:
        st.session_state[_CFG_ERROR] = message


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def changed_fields() -> set[str]:
    """Dotted paths whose value differs from the active preset (the label is not a setting)."""
    base = _flatten(preset(get_preset_name()).model_dump(mode="json"))
    now = _flatten(get_config().model_dump(mode="json"))
    return {k for k in now if k != "label" and now[k] != base.get(k)}


# --- LLM settings: memory only ----------------------------------------------------------------


def llm_settings() -> "ProviderSettings | None":
    """The summarizer's provider settings for this browser session, or None (rule-based)."""
    return st.session_state.get(_LLM)


def set_llm_settings(settings: "ProviderSettings | None") -> None:
    if settings is None:
        st.session_state.pop(_LLM, None)
    else:
        st.session_state[_LLM] = settings


def summarizer_fingerprint(config: CompactionConfig, settings: ProviderSettings | None) -> str:
    """A cache-key part for the summarizer: provider settings and a hash of the key, never the key."""
    if config.summary.summarizer == "rules" or settings is None:
        return "rules"
    secret = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    return _digest(settings.model_dump_json() + "\x00" + _digest(secret))[:24]


def _summarizer(config: CompactionConfig, settings: ProviderSettings | None) -> Any:
    if config.summary.summarizer == "rules" or settings is None:
        return None  # the Compactor's default: rule-based
    from ..core.summarizers.llm import make_llm_summarizer
    from ..core.summarizers.ptl import PTLRetrySummarizer

    return PTLRetrySummarizer(
        make_llm_summarizer(
            settings,
            attachment_files=config.summary.attachment_files,
            attachment_file_tokens=config.summary.attachment_file_tokens,
        )
    )


# --- replay and stats (cached) ----------------------------------------------------------------


@st.cache_resource(max_entries=12, show_spinner="Replaying the transcript under this config...")
def _replay_cached(transcript_key: str, config_json: str, summarizer_key: str, _transcript: Transcript, _summarizer: Any) -> "Report":
    # Only the string arguments are hashed; the leading underscores tell Streamlit to skip the
    # objects, whose content those strings already identify. Report objects are shared between
    # reruns (cache_resource does not copy), so callers treat them as read-only.
    from ..replay import replay

    return replay(_transcript, CompactionConfig.model_validate_json(config_json), summarizer=_summarizer)


def get_report() -> "Report | None":
    """The replay of the loaded transcript under the active config (None when nothing is loaded).

    Raises the lab's errors (ConfigError, StageError...), which pages show with st.error.
    """
    transcript = get_transcript()
    if transcript is None:
        return None
    cfg = get_config()
    settings = llm_settings()
    return _replay_cached(
        transcript_key() or "",
        cfg.model_dump_json(),
        summarizer_fingerprint(cfg, settings),
        transcript,
        _summarizer(cfg, settings),
    )


@st.cache_resource(max_entries=12, show_spinner="Counting tokens...")
def _stats_cached(transcript_key: str, _transcript: Transcript) -> "TranscriptStats":
    from ..core.stats import transcript_stats

    return transcript_stats(_transcript, STATS_COUNTERS)


def get_stats() -> "TranscriptStats | None":
    transcript = get_transcript()
    if transcript is None:
        return None
    return _stats_cached(transcript_key() or "", transcript)


# --- saved configs and compare -----------------------------------------------------------------


def saved_configs() -> dict[str, CompactionConfig]:
    """Configs the user saved in this browser session (memory only), by name."""
    return st.session_state.setdefault(_SAVED, {})


def save_config(name: str, config: CompactionConfig | None = None) -> str:
    """Keep a copy of ``config`` (default: the active one) under ``name``; returns its compare choice."""
    name = " ".join(str(name).split())[:60]
    if not name:
        raise ConfigError("a saved config needs a name")
    saved = saved_configs()
    saved[name] = (config or get_config()).model_copy(deep=True)
    return SAVED_PREFIX + name


def compare_choices() -> list[str]:
    """What the Compare page offers: the active config, every preset, every saved config."""
    return [CURRENT, *preset_names(), *(SAVED_PREFIX + n for n in saved_configs())]


def config_for_choice(choice: str) -> CompactionConfig:
    if choice == CURRENT:
        return get_config()
    if choice.startswith(SAVED_PREFIX):
        name = choice[len(SAVED_PREFIX):]
        if name not in saved_configs():
            raise ConfigError(f"no saved config named {name!r}")
        return saved_configs()[name]
    return preset(choice)


@st.cache_resource(max_entries=6, show_spinner="Replaying the session under each config...")
def _compare_cached(transcript_key: str, labelled: tuple[tuple[str, str], ...], _transcript: Transcript) -> "CompareTable":
    from ..replay import compare

    return compare(_transcript, [(label, CompactionConfig.model_validate_json(js)) for label, js in labelled])


def get_compare(choices: list[str]) -> "CompareTable | None":
    """``lab.replay.compare`` of the loaded transcript under the chosen configs, cached like get_report."""
    transcript = get_transcript()
    if transcript is None:
        return None
    labelled = tuple((c, config_for_choice(c).model_dump_json()) for c in choices)
    return _compare_cached(transcript_key() or "", labelled, transcript)


# --- request selection ------------------------------------------------------------------------


def selected_request() -> int:
    """The request Timeline and Diff look at: a new ``?request=k`` in the URL wins, else the session's, else 0."""
    raw = st.query_params.get("request")
    if raw is not None and raw != st.session_state.get(_REQUEST_URL):
        # A link (or a reload) carrying ?request=k: adopt it once, so later picks are not overridden.
        st.session_state[_REQUEST_URL] = raw
        try:
            st.session_state[_REQUEST] = max(0, int(raw))
        except ValueError:
            pass
    return int(st.session_state.get(_REQUEST, 0))


def select_request(k: int) -> None:
    k = max(0, int(k))
    st.session_state[_REQUEST] = k
    st.session_state[_REQUEST_URL] = str(k)
    st.query_params["request"] = str(k)


def select_from_click(points: list[dict[str, Any]], last: int, memo_key: str) -> bool:
    """Select the request of a clicked chart point; True when that changed the selection.

    A plotly chart keeps reporting its selection on every rerun, so a click is
    acted on once (remembered under ``memo_key``); later picks elsewhere win.
    """
    if not points:
        return False
    try:
        clicked = int(points[0]["x"])
    except (KeyError, TypeError, ValueError):
        return False
    if clicked == st.session_state.get(memo_key):
        return False
    st.session_state[memo_key] = clicked
    select_request(min(max(clicked, 0), max(last, 0)))
    return True


# --- the session's temp folder ----------------------------------------------------------------


def session_dir() -> Path:
    """This browser session's private folder (uploads, spill files); created on first use."""
    global _swept
    holder = st.session_state.get(_DIR)
    if holder is None or not holder.alive:
        root = temp_root()
        if not _swept:
            _swept = True
            sweep_old_dirs(root)
        holder = SessionDir(root)
        st.session_state[_DIR] = holder
    return holder.path


# --- loading ----------------------------------------------------------------------------------


def sample_files() -> list[str]:
    """The files of sample_sessions/, the one-click default first."""
    return _sample_files(SAMPLES_DIR, DEFAULT_SAMPLE)


@st.cache_resource(max_entries=32, show_spinner="Importing...")
def _load_sample_cached(path: str, digest: str) -> tuple[Transcript, str]:
    return import_file(Path(path))


def load_sample(name: str | None = None) -> Transcript:
    """Load a file of sample_sessions/ (the default one when ``name`` is None) and make it current."""
    names = sample_files()
    if not names:
        raise TranscriptError("no sample sessions found", file=str(SAMPLES_DIR))
    name = name or names[0]
    if name not in names:
        raise TranscriptError("not a sample session", file=name, expected=f"one of: {', '.join(names)}")
    path = SAMPLES_DIR / name
    digest = _digest(path.read_bytes())
    transcript, fmt = _load_sample_cached(str(path), digest)
    set_transcript(transcript, name, key="f:" + digest, format=fmt)
    return transcript


def load_upload(name: str, data: bytes) -> Transcript:
    """Save uploaded bytes under the session folder with a sanitised name and import them.

    Errors name the file as the user called it, not the temp path.
    """
    return _load_upload(name, data)[0]


def _load_upload(name: str, data: bytes) -> tuple[Transcript, str]:
    path = save_upload(session_dir() / "uploads", name, data)
    return import_file(path, shown_as=name)


def accept_upload(name: str, data: bytes, upload_id: str | None = None) -> Transcript | None:
    """Import an upload once per file id: on success it becomes current, on failure the error is kept."""
    marker = upload_id or _digest(data)
    if st.session_state.get(_UPLOAD_ID) == marker:
        return None
    st.session_state[_UPLOAD_ID] = marker
    try:
        transcript, fmt = _load_upload(name, data)
    except LabError as e:
        st.session_state[_UPLOAD_ERROR] = str(e)
        return None
    st.session_state.pop(_UPLOAD_ERROR, None)
    set_transcript(transcript, sanitize_name(name), key="f:" + _digest(data), format=fmt)
    return transcript


def upload_error() -> str | None:
    return st.session_state.get(_UPLOAD_ERROR)


def generate_session(config: "GeneratorConfig") -> Transcript:
    from ..generate import generate

    transcript = generate(config)
    set_transcript(
        transcript,
        f"generated (seed {config.seed}, {config.requests} requests)",
        key="g:" + _digest(config.model_dump_json()),
    )
    return transcript


# --- page helpers -----------------------------------------------------------------------------


def page_path(name: str) -> Path:
    """Absolute path of a page file, as st.page_link and st.switch_page accept it."""
    return ROOT / "pages" / f"{name}.py"


def require_transcript() -> Transcript | None:
    """The loaded transcript, or None after drawing the empty state with a one-click sample."""
    transcript = get_transcript()
    if transcript is not None:
        return transcript
    st.info("No session loaded yet. Load one on the Session page, or start with a sample.")
    if st.button("Load a sample session", key="lab.load_sample", type="primary"):
        try:
            load_sample()
        except LabError as e:
            st.error(str(e))
            return None
        st.rerun()
    return None


def _enabled_stages(cfg: CompactionConfig) -> list[str]:
    return [name for name in STAGE_FIELDS if getattr(cfg, name).enabled]


def sidebar() -> None:
    """The loaded session and the active config, on every page."""
    with st.sidebar:
        st.caption("Session")
        transcript = get_transcript()
        if transcript is None:
            st.text("none loaded")
        else:
            # File names come from the user: st.text never interprets them.
            st.text(f"{transcript_label()}\n{len(transcript.messages)} messages")
        st.caption("Config")
        cfg = get_config()
        changed = changed_fields()
        mark = f" + {len(changed)} change(s)" if changed else ""
        st.text(f"preset {get_preset_name()}{mark}\nwindow {cfg.window:,} | counter {cfg.counter}")
        st.text("stages: " + (", ".join(_enabled_stages(cfg)) or "none"))
        if config_error():
            st.error(config_error())
