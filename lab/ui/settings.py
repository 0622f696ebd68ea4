"""The session's settings: the active config and its preset, saved configs, the LLM provider.

All of it is memory only. The Pipeline widgets write the active config
here; a config loaded from a file or a preset switch bumps
``widget_generation`` so the widgets are rebuilt with the new values. The
provider settings hold the API key, which never reaches disk or a cache key
(``replays.summarizer_fingerprint`` hashes it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from ..core.config import CompactionConfig
from ..core.presets import preset, preset_names
from ..errors import ConfigError
from . import keys

if TYPE_CHECKING:  # pragma: no cover
    # providers imports both SDKs (seconds on a busy machine): only pages that call an LLM pay for it.
    from ..core.providers import ProviderSettings

__all__ = [
    "DEFAULT_PRESET",
    "CURRENT",
    "SAVED_PREFIX",
    "get_config",
    "set_config",
    "get_preset_name",
    "set_preset",
    "changed_fields",
    "widget_generation",
    "config_error",
    "set_config_error",
    "saved_configs",
    "save_config",
    "compare_choices",
    "config_for_choice",
    "llm_settings",
    "set_llm_settings",
]

DEFAULT_PRESET = "minicode"
# Compare choices: the active config, a preset by name, or a saved config behind this prefix.
CURRENT = "current"
SAVED_PREFIX = "saved: "


# --- the active config ------------------------------------------------------------------------


def get_config() -> CompactionConfig:
    cfg = st.session_state.get(keys.CONFIG)
    if cfg is None:
        cfg = preset(get_preset_name())
        st.session_state[keys.CONFIG] = cfg
    elif not isinstance(cfg, CompactionConfig):  # kept across a module reload; see transcript.get_transcript
        cfg = CompactionConfig.model_validate(cfg.model_dump())
        st.session_state[keys.CONFIG] = cfg
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
    st.session_state[keys.CONFIG] = config
    st.session_state.pop(keys.CFG_ERROR, None)
    if sync_widgets:
        st.session_state[keys.GEN] = widget_generation() + 1


def get_preset_name() -> str:
    return st.session_state.get(keys.PRESET, DEFAULT_PRESET)


def set_preset(name: str) -> None:
    """Switch to a preset: the config becomes a fresh copy of it (raises ConfigError if unknown)."""
    cfg = preset(name)
    st.session_state[keys.PRESET] = name
    set_config(cfg)


def widget_generation() -> int:
    return st.session_state.get(keys.GEN, 0)


def config_error() -> str | None:
    return st.session_state.get(keys.CFG_ERROR)


def set_config_error(message: str | None) -> None:
    if message is None:
        st.session_state.pop(keys.CFG_ERROR, None)
    else:
        st.session_state[keys.CFG_ERROR] = message


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


# --- saved configs and the Compare page's choices ---------------------------------------------


def saved_configs() -> dict[str, CompactionConfig]:
    """Configs the user saved in this browser session (memory only), by name."""
    return st.session_state.setdefault(keys.SAVED, {})


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


# --- LLM settings: memory only ----------------------------------------------------------------


def llm_settings() -> "ProviderSettings | None":
    """The summarizer's provider settings for this browser session, or None (rule-based)."""
    return st.session_state.get(keys.LLM)


def set_llm_settings(settings: "ProviderSettings | None") -> None:
    if settings is None:
        st.session_state.pop(keys.LLM, None)
    else:
        st.session_state[keys.LLM] = settings
