"""The window proposed for a session, measured once per (transcript, config, settings) and cached.

Apart from the other cached computations (``replays``) because loading a transcript applies the proposal
(``transcript.set_transcript``) while ``replays`` reads the loaded transcript: taking the transcript as an
argument here keeps the two from importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ..core.config import CompactionConfig
from ..core.messages import Transcript
from ..core.presets import preset
from ..replayer.settings import ReplaySettings
from .settings import get_config, get_preset_name, get_settings

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer.window import WindowProposal

__all__ = ["model_window", "proposal_for"]


@st.cache_resource(max_entries=32, show_spinner="Measuring the window at which this session compacts...")
def _proposal_cached(transcript_key: str, config_key: str, window: int, settings_key: str, _transcript: Transcript,
                     _config: CompactionConfig, _settings: ReplaySettings) -> WindowProposal:
    from ..replayer.window import propose_window  # the replay engine loads on the first proposal, not with the app

    # The model's window is a preset's, valid already; the key names it beside the active config's fingerprint,
    # so a rerun finds the proposal without serialising the copy made here.
    at_window = _config if _config.window == window else _config.model_copy(update={"window": window})
    return propose_window(_transcript, config=at_window, settings=_settings)


def model_window() -> int:
    """The model's own window: the active preset's, before any window the session proposed."""
    return preset(get_preset_name()).window


def proposal_for(transcript: Transcript, key: str) -> WindowProposal:
    """The proposal for ``transcript`` (its content key ``key``) under the active config and replay settings."""
    cfg, rs = get_config(), get_settings()
    return _proposal_cached(key, cfg.fingerprint, model_window(), rs.fingerprint, transcript, cfg, rs)
