"""Cached computations on the loaded transcript: its replay, its token stats, its proposed window, a compare table.

Imports and stats are keyed on the transcript's content key; the replay on
that key + the config's fingerprint + the replay settings' fingerprint + a fingerprint of the summarizer settings,
so moving one slider re-runs only the replay. A fingerprint is computed once per (frozen) value, and the
value itself rides along unhashed, so nothing is parsed back from JSON. Those caches are shared by
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
from .proposal import proposal_for
from .settings import config_for_choice, get_config, get_settings, llm_settings
from .transcript import get_transcript, transcript_key
from ..core.summarizers.factory import llm_summarizer
from ..replayer import replay
from ..core.stats import transcript_stats
from ..core.tokens import get_counter
from ..replayer.overhead import fit_usage
from ..replayer.recorded import find_recorded

if TYPE_CHECKING:  # pragma: no cover
    # providers imports both SDKs (seconds on a busy machine): only pages that call an LLM pay for it.
    from ..core.providers import ProviderSettings
    from ..core.stats import TranscriptStats
    from ..evaluation import CompareTable
    from ..replayer import Report
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

    return llm_summarizer(settings, config)


# --- replay -----------------------------------------------------------------------------------


@st.cache_resource(max_entries=12, show_spinner="Replaying the transcript under this config...")
def _replay_cached(transcript_key: str, config_key: str, settings_key: str, summarizer_key: str, _transcript: Transcript,
                   _config: CompactionConfig, _settings: ReplaySettings, _summarizer: Any) -> Report:
    # Only the string arguments are hashed; the leading underscores tell Streamlit to skip the
    # objects, whose content those strings already identify. Report objects are shared between
    # reruns (cache_resource does not copy), so callers treat them as read-only.

    return replay(_transcript, _config, settings=_settings, summarizer=_summarizer)


def get_report() -> Report | None:
    """The replay of the loaded transcript under the active config and replay settings (None when nothing is loaded).

    Raises the lab's errors (ConfigError, StageError...), which pages show with st.error.
    """
    transcript = get_transcript()
    if transcript is None:
        return None
    cfg, rs = get_config(), get_settings()
    settings = llm_settings()
    return _replay_cached(
        transcript_key() or "",
        cfg.fingerprint,
        rs.fingerprint,
        summarizer_fingerprint(cfg, settings),
        transcript,
        cfg,
        rs,
        _summarizer(cfg, settings),
    )


# --- stats ------------------------------------------------------------------------------------


@st.cache_resource(max_entries=12, show_spinner="Counting tokens...")
def _stats_cached(transcript_key: str, _transcript: Transcript) -> TranscriptStats:
    return transcript_stats(_transcript, STATS_COUNTERS)


def get_stats() -> TranscriptStats | None:
    transcript = get_transcript()
    if transcript is None:
        return None
    return _stats_cached(transcript_key() or "", transcript)


# --- compare ----------------------------------------------------------------------------------


@st.cache_resource(max_entries=6, show_spinner="Replaying the session under each config...")
def _compare_cached(transcript_key: str, labelled: tuple[tuple[str, str], ...], settings_key: str, _transcript: Transcript,
                    _configs: tuple[CompactionConfig, ...], _settings: ReplaySettings) -> CompareTable:
    # Lazy: lab.evaluation brings numpy, which a page that compares nothing never needs.
    from ..evaluation import compare

    # labelled: (label, fingerprint) pairs, the cache key; _configs: the values they identify, in the same order.
    return compare(_transcript, [(label, cfg) for (label, _), cfg in zip(labelled, _configs, strict=True)], settings=_settings)


def get_compare(choices: list[str], *, uniform: bool = True) -> CompareTable | None:
    """``lab.evaluation.compare`` of the loaded transcript under the chosen configs, cached like get_report.

    ``uniform`` (the default): every config at the active config's window and counter; False: each at its own.
    Every row is billed and timed with the session's one replay settings.
    """
    transcript = get_transcript()
    if transcript is None:
        return None
    configs = tuple(config_for_choice(c, uniform=uniform) for c in choices)
    rs = get_settings()
    labelled = tuple((c, cfg.fingerprint) for c, cfg in zip(choices, configs, strict=True))
    return _compare_cached(transcript_key() or "", labelled, rs.fingerprint, transcript, configs, rs)


# --- the proposed window -----------------------------------------------------------------------


def get_window_proposal() -> WindowProposal | None:
    """The window proposed for the loaded session under the active config at the model's window, the
    hidden part counted (``lab.replayer.window``); None: nothing loaded."""
    transcript = get_transcript()
    return None if transcript is None else proposal_for(transcript, transcript_key() or "")


@st.cache_resource(max_entries=32, show_spinner=False)
def _fit_cached(transcript_key: str, counter: str, _transcript: Transcript) -> UsageFit | None:
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
    transcript = get_transcript()
    if transcript is None:
        return []
    return find_recorded(transcript, get_settings().recorded_compactions)
