"""Cached computations on the loaded transcript: its replay, its token stats, its proposed window, a compare table.

Imports and stats are keyed on the transcript's content key; the replay on
that key + the config's JSON + the replay settings' JSON + a fingerprint of the summarizer settings, so
moving one slider re-runs only the replay. Those caches are shared by
browser sessions holding identical content, so replays spill into a memory
store, never into one session's folder (which holds only uploads). Cached
objects are shared between reruns and sessions: callers treat them as
read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from ..core.config import CompactionConfig
from ..core.messages import Transcript
from ..replayer.settings import ReplaySettings
from . import keys
from .settings import config_for_choice, get_config, get_preset_name, get_settings, llm_settings
from .transcript import get_transcript, transcript_key

if TYPE_CHECKING:  # pragma: no cover
    # providers imports both SDKs (seconds on a busy machine): only pages that call an LLM pay for it.
    from ..core.providers import ProviderSettings
    from ..core.stats import TranscriptStats
    from ..replayer import CompareTable, Report
    from ..replayer.overhead import UsageFit
    from ..replayer.recorded import RecordedCompaction
    from ..replayer.window import WindowProposal

__all__ = [
    "STATS_COUNTERS",
    "summarizer_fingerprint",
    "get_report",
    "get_stats",
    "get_compare",
    "get_recorded",
    "get_window_proposal",
    "model_window",
    "get_usage_fit",
]

# The overview's counters: the two designs' estimates, an exact tokenizer, and the lab's fitted one.
STATS_COUNTERS = ("minicode", "chars/3.5", "o200k", "calibrated")


# --- the summarizer ---------------------------------------------------------------------------


def summarizer_fingerprint(config: CompactionConfig, settings: ProviderSettings | None) -> str:
    """A cache-key part for the summarizer: provider settings and a hash of the key, never the key."""
    if config.summary.summarizer == "rules" or settings is None:
        return "rules"
    secret = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    return keys.digest(settings.model_dump_json() + "\x00" + keys.digest(secret))[:24]


def _summarizer(config: CompactionConfig, settings: ProviderSettings | None) -> Any:
    if config.summary.summarizer == "rules" or settings is None:
        return None  # the Compactor's default: rule-based
    from ..core.summarizers.factory import llm_summarizer

    return llm_summarizer(settings, config)


# --- replay -----------------------------------------------------------------------------------


@st.cache_resource(max_entries=12, show_spinner="Replaying the transcript under this config...")
def _replay_cached(transcript_key: str, config_json: str, settings_json: str, summarizer_key: str, _transcript: Transcript,
                   _summarizer: Any) -> Report:
    # Only the string arguments are hashed; the leading underscores tell Streamlit to skip the
    # objects, whose content those strings already identify. Report objects are shared between
    # reruns (cache_resource does not copy), so callers treat them as read-only.
    from ..replayer import replay

    return replay(_transcript, CompactionConfig.model_validate_json(config_json), settings=ReplaySettings.model_validate_json(settings_json),
                  summarizer=_summarizer)


def get_report() -> Report | None:
    """The replay of the loaded transcript under the active config and replay settings (None when nothing is loaded).

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
        get_settings().model_dump_json(),
        summarizer_fingerprint(cfg, settings),
        transcript,
        _summarizer(cfg, settings),
    )


# --- stats ------------------------------------------------------------------------------------


@st.cache_resource(max_entries=12, show_spinner="Counting tokens...")
def _stats_cached(transcript_key: str, _transcript: Transcript) -> TranscriptStats:
    from ..core.stats import transcript_stats

    return transcript_stats(_transcript, STATS_COUNTERS)


def get_stats() -> TranscriptStats | None:
    transcript = get_transcript()
    if transcript is None:
        return None
    return _stats_cached(transcript_key() or "", transcript)


# --- compare ----------------------------------------------------------------------------------


@st.cache_resource(max_entries=6, show_spinner="Replaying the session under each config...")
def _compare_cached(transcript_key: str, labelled: tuple[tuple[str, str], ...], settings_json: str, _transcript: Transcript) -> CompareTable:
    from ..replayer import compare

    return compare(_transcript, [(label, CompactionConfig.model_validate_json(js)) for label, js in labelled],
                   settings=ReplaySettings.model_validate_json(settings_json))


def get_compare(choices: list[str], *, uniform: bool = True) -> CompareTable | None:
    """``lab.replayer.compare`` of the loaded transcript under the chosen configs, cached like get_report.

    ``uniform`` (the default): every config at the active config's window and counter; False: each at its own.
    Every row is billed and timed with the session's one replay settings.
    """
    transcript = get_transcript()
    if transcript is None:
        return None
    labelled = tuple((c, config_for_choice(c, uniform=uniform).model_dump_json()) for c in choices)
    return _compare_cached(transcript_key() or "", labelled, get_settings().model_dump_json(), transcript)


# --- the proposed window -----------------------------------------------------------------------


@st.cache_resource(max_entries=32, show_spinner="Measuring the window at which this session compacts...")
def _proposal_cached(transcript_key: str, config_json: str, settings_json: str, _transcript: Transcript) -> WindowProposal:
    from ..replayer.window import propose_window

    return propose_window(_transcript, config=CompactionConfig.model_validate_json(config_json),
                          settings=ReplaySettings.model_validate_json(settings_json))


def model_window() -> int:
    """The model's own window: the active preset's, before any window the session proposed."""
    from ..core.presets import preset

    return preset(get_preset_name()).window


def get_window_proposal() -> WindowProposal | None:
    """The window proposed for the loaded session under the active config at the model's window, the
    hidden part counted (``lab.replayer.window``); None: nothing loaded."""
    transcript = get_transcript()
    if transcript is None:
        return None
    cfg = get_config().model_copy(deep=True)
    cfg.window = model_window()
    return _proposal_cached(transcript_key() or "", cfg.model_dump_json(), get_settings().model_dump_json(), transcript)


@st.cache_resource(max_entries=32, show_spinner=False)
def _fit_cached(transcript_key: str, counter: str, _transcript: Transcript) -> UsageFit | None:
    from ..core.tokens import get_counter
    from ..replayer.overhead import fit_usage

    return fit_usage(_transcript.messages, get_counter(counter))


def get_usage_fit() -> UsageFit | None:
    """What the loaded session's recorded usage says the provider saw beyond the file, with the active counter."""
    transcript = get_transcript()
    if transcript is None:
        return None
    return _fit_cached(transcript_key() or "", get_config().counter, transcript)


# --- recorded compactions ----------------------------------------------------------------------


def get_recorded() -> list[RecordedCompaction]:
    """The compactions the loaded session's agent recorded, with what the active config's replay does with each."""
    from ..replayer.recorded import find_recorded

    transcript = get_transcript()
    if transcript is None:
        return []
    return find_recorded(transcript, get_settings().recorded_compactions)
