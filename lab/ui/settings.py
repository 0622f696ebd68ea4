"""The session's settings: the active config and its preset, the replay settings, saved configs, the LLM provider.

All of it is memory only. The Pipeline widgets write the active config
here; a config restored from a file (``accept_config_upload``, the Export
page) or a preset switch bumps ``widget_generation`` so the widgets are
rebuilt with the new values.

While a session is loaded the window is the session's, not the preset's: a
loaded session applies its proposed window (``lab.replayer.window``, through
``set_session_window``), a preset switch or reset applies the preset at that
window, the ● marks compare with the preset at that window, and Compare
runs every config at the current window and counter unless told otherwise.

The replay settings (``ReplaySettings``: prices, prompt cache, retention
weights, clock, recorded compactions) are kept beside the config, not in it:
a preset switch or reset leaves them alone, and their ● marks compare with
the defaults. Prices follow the library's one rule (``lab.replayer.prices.session_pricing``,
the same for ``lab replay``): a loaded session whose model names a row of the price table is
billed with that row, unless prices were chosen (a row picked, a price edited, a settings file).

The provider settings hold the API key, which never reaches disk or a cache
key (``replays.summarizer_fingerprint`` hashes it).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import streamlit as st

from ..core.config import CompactionConfig, with_value
from ..core.presets import preset, preset_names
from ..errors import ConfigError, LabError
from ..replayer.prices import match_model, price_row, session_pricing
from ..fields import SETTINGS_GROUP
from ..replayer.settings import MOVED_SECTION, ReplaySettings, resolve_settings
from . import keys
from ..views.export import restore_split
from .reload import as_current

if TYPE_CHECKING:  # pragma: no cover
    # providers imports both SDKs (seconds on a busy machine): only pages that call an LLM pay for it.
    from ..core.providers import ProviderSettings

__all__ = [
    "DEFAULT_PRESET",
    "CURRENT",
    "SAVED_PREFIX",
    "get_config",
    "set_config",
    "get_settings",
    "set_settings",
    "baseline_settings",
    "get_preset_name",
    "set_preset",
    "preset_picked",
    "session_window",
    "set_session_window",
    "session_prices",
    "recorded_mode",
    "set_recorded_mode",
    "changed_fields",
    "widget_generation",
    "config_error",
    "set_config_error",
    "accept_config_upload",
    "config_restored",
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
    stored = st.session_state.get(keys.CONFIG)
    # A config stored before a module reload is rebuilt; one that no longer fits starts again from the preset.
    current = as_current(stored, CompactionConfig)
    cfg = current if current is not None else preset(get_preset_name())
    if cfg is not stored:
        st.session_state[keys.CONFIG] = cfg
    if st.session_state.get(keys.PRICED_FOR) != st.session_state.get(keys.TKEY):
        # The session's prices are settled on first use of either half, so session_prices() is known after get_config().
        get_settings()
    return cfg


def set_config(config: CompactionConfig, *, sync_widgets: bool = True) -> None:
    """Replace the active config.

    With ``sync_widgets`` (a config loaded from a file, a reset) the Pipeline
    widgets are rebuilt so they show the new values; the widgets themselves
    pass False so a slider keeps its focus while it is being moved.
    """
    current = as_current(config, CompactionConfig)
    if current is None:
        raise ConfigError(f"config must be a CompactionConfig, got {type(config).__name__}")
    st.session_state[keys.CONFIG] = current
    st.session_state.pop(keys.CFG_ERROR, None)
    if sync_widgets:
        st.session_state[keys.GEN] = widget_generation() + 1


def get_settings() -> ReplaySettings:
    """The replay settings every replay of this session is billed and timed with (defaults until changed)."""
    stored = st.session_state.get(keys.SETTINGS)
    current = as_current(stored, ReplaySettings)
    settings = current if current is not None else ReplaySettings()
    if settings is not stored:
        st.session_state[keys.SETTINGS] = settings
    if st.session_state.get(keys.PRICED_FOR) != st.session_state.get(keys.TKEY):
        settings = _price_for_session(settings)
    return settings


def set_settings(settings: ReplaySettings, *, sync_widgets: bool = True) -> None:
    """Replace the replay settings; ``sync_widgets`` as in ``set_config``."""
    current = as_current(settings, ReplaySettings)
    if current is None:
        raise ConfigError(f"replay settings must be ReplaySettings, got {type(settings).__name__}")
    st.session_state[keys.SETTINGS] = current
    st.session_state.pop(keys.CFG_ERROR, None)
    if sync_widgets:
        st.session_state[keys.GEN] = widget_generation() + 1


def baseline_settings() -> ReplaySettings:
    """What the settings' ● marks compare with: the defaults, at the loaded session's prices."""
    # The loaded session's window was proposed with its hidden tokens counted: counting them is its default.
    return _baseline(session_prices(), bool(st.session_state.get(keys.SESSION_HIDDEN)))


@functools.lru_cache(maxsize=64)
def _baseline(prices: str | None, hidden_from_usage: bool) -> ReplaySettings:
    # Drawn on every rerun (the ● marks): one value per price row and hidden-token choice.
    return _with_session_prices(ReplaySettings(), prices).model_copy(update={"hidden_from_usage": hidden_from_usage})


def get_preset_name() -> str:
    return st.session_state.get(keys.PRESET, DEFAULT_PRESET)


def set_preset(name: str) -> None:
    """Switch to a preset: the config becomes that preset (raises ConfigError if unknown).

    The replay settings (prices, how the session's recorded compactions are replayed) are about the
    session, not the preset, so they stay; so does the window the loaded session proposed (the
    preset's other settings apply at the session's window, and a reset clears the config's ● marks).
    """
    cfg = _preset_at_session(name)
    st.session_state[keys.PRESET] = name
    set_config(cfg)


def preset_picked(widget_key: str) -> None:
    """``on_change`` of a preset picker: switch to the preset the widget under ``widget_key`` now holds."""
    set_preset(st.session_state[widget_key])


def _preset_at_session(name: str) -> CompactionConfig:
    """The preset at the loaded session's window: what a switch applies and the ● marks compare with."""
    return _preset_at(name, session_window())


@functools.lru_cache(maxsize=64)
def _preset_at(name: str, window: int | None) -> CompactionConfig:
    # Drawn on every rerun (the ● marks): one value per preset and window, so its JSON form is made once.
    cfg = preset(name)
    return cfg if window is None or window == cfg.window else with_value(cfg, "window", window)


def session_prices() -> str | None:
    """The price-table row the loaded session's model names, or None (no session, or a model the table lacks)."""
    return st.session_state.get(keys.SESSION_PRICES)


def _with_session_prices(settings: ReplaySettings, prices: str | None) -> ReplaySettings:
    row = price_row(prices or "")
    if row is None:
        return settings
    # Still following the session, as the defaults do: the baseline is the rule's answer, not a chosen row.
    return settings.model_copy(update={"pricing": row.pricing(settings.cache.ttl_seconds).model_copy(update={"follow_session": True})})


def _price_for_session(settings: ReplaySettings) -> ReplaySettings:
    """Once per loaded transcript: the library's pricing rule (``prices.session_pricing``), so the Pipeline's
    price widgets show what the replay bills; the replay applies the same rule and finds nothing to change."""
    tkey = st.session_state.get(keys.TKEY)
    st.session_state[keys.PRICED_FOR] = tkey
    transcript = st.session_state.get(keys.TRANSCRIPT) if tkey is not None else None
    model = transcript.meta.model if transcript is not None else None
    row = match_model(model)
    st.session_state[keys.SESSION_PRICES] = row.name if row is not None else None
    priced, _ = session_pricing(settings, model)
    if priced is not settings:
        set_settings(priced)
    return priced


def session_window() -> int | None:
    """The window the loaded session proposed and applied, or None (no session, or a session too small for any)."""
    return st.session_state.get(keys.SESSION_WINDOW)


def set_session_window(window: int | None) -> None:
    """Run the loaded session at ``window`` (None: keep the config's window): called when a session loads."""
    if window is None:
        st.session_state.pop(keys.SESSION_WINDOW, None)
        return
    st.session_state[keys.SESSION_WINDOW] = window
    cfg = get_config()
    if cfg.window != window:
        set_config(with_value(cfg, "window", window))


def recorded_mode() -> str:
    """``undo`` or ``keep``: what replays do with the compactions the session's agent recorded."""
    settings = as_current(st.session_state.get(keys.SETTINGS), ReplaySettings)
    return settings.recorded_compactions if settings is not None else "undo"


def set_recorded_mode(mode: str) -> None:
    """Replay the session's recorded compactions as ``mode``, for the current config and every compared one."""
    set_settings(resolve_settings(get_settings(), mode), sync_widgets=False)


def widget_generation() -> int:
    return st.session_state.get(keys.GEN, 0)


def config_error() -> str | None:
    return st.session_state.get(keys.CFG_ERROR)


def set_config_error(message: str | None) -> None:
    if message is None:
        st.session_state.pop(keys.CFG_ERROR, None)
    else:
        st.session_state[keys.CFG_ERROR] = message


def accept_config_upload(name: str, data: bytes, upload_id: str) -> bool:
    """Restore the settings from an uploaded config file, once per upload; True when this call applied it.

    The uploader keeps offering the same file on every rerun, and applying it again would undo
    the edits made since. A file written before the split also carries replay settings (its
    ``replay`` section): both are applied, and the outcome says so. What came of it is kept for
    ``config_restored``.
    """
    if st.session_state.get(keys.CONFIG_UPLOAD_ID) == upload_id:
        return False
    st.session_state[keys.CONFIG_UPLOAD_ID] = upload_id
    try:
        cfg, settings, notes = restore_split(name, data)
    except LabError as e:
        st.session_state[keys.CONFIG_RESTORED] = ("error", str(e))
        return True
    set_config(cfg)
    if settings is not None:
        set_settings(settings)
    done = "Settings restored; the replay now uses them."
    if notes:
        moved = " ".join(n[:1].upper() + n[1:] + "." for n in notes)
        st.session_state[keys.CONFIG_RESTORED] = ("note", f"{done} {moved} Export them from now on with the replay settings download, "
                                                          f"beside the config; the agent config no longer has a '{MOVED_SECTION}' section.")
    else:
        st.session_state[keys.CONFIG_RESTORED] = ("ok", done)
    return True


def config_restored() -> tuple[str, str] | None:
    """What the last config upload did, ``("ok" | "note" | "error", message)``, or None before any.

    "note": restored, and the file held settings that moved (an old file's replay section), said in the message.
    """
    return st.session_state.get(keys.CONFIG_RESTORED)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def changed_fields() -> set[str]:
    """Dotted paths whose value differs from the active preset at the session's window (the label is not a setting).

    The replay settings' paths start with ``replay.``, as their widgets' do, and compare with ``baseline_settings``.
    """
    # json_data: each value's JSON form, made once per value (the active config's is its replay's cache key too).
    base = _flatten(_preset_at_session(get_preset_name()).json_data())
    now = _flatten(get_config().json_data())
    changed = {k for k in now if k != "label" and now[k] != base.get(k)}
    base_s = _flatten(baseline_settings().json_data())
    now_s = _flatten(get_settings().json_data())
    return changed | {f"{SETTINGS_GROUP}.{k}" for k in now_s if now_s[k] != base_s.get(k)}


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
    saved[name] = config or get_config()  # frozen: kept as it is
    return SAVED_PREFIX + name


def compare_choices() -> list[str]:
    """What the Compare page offers: the active config, every preset, every saved config."""
    return [CURRENT, *preset_names(), *(SAVED_PREFIX + n for n in saved_configs())]


def config_for_choice(choice: str, *, uniform: bool = False) -> CompactionConfig:
    """The config a compare choice names (every row shares the session's replay settings, ``get_settings``).

    ``uniform``: at the active config's window and counter, so rows differ only in what compacts.
    """
    if choice == CURRENT:
        return get_config()
    if choice.startswith(SAVED_PREFIX):
        name = choice[len(SAVED_PREFIX):]
        if name not in saved_configs():
            raise ConfigError(f"no saved config named {name!r}")
        cfg = saved_configs()[name]
    else:
        cfg = preset(choice)
    if uniform:
        # A smaller window wins "peak sent", and counters disagree by up to a quarter: neither is the config's doing.
        current = get_config()
        # Both values are the active config's own, valid already.
        cfg = cfg.model_copy(update={"window": current.window, "counter": current.counter})
    return cfg


# --- LLM settings: memory only ----------------------------------------------------------------


def llm_settings() -> ProviderSettings | None:
    """The summarizer's provider settings for this browser session, or None (rule-based)."""
    return st.session_state.get(keys.LLM)


def set_llm_settings(settings: ProviderSettings | None) -> None:
    if settings is None:
        st.session_state.pop(keys.LLM, None)
    else:
        st.session_state[keys.LLM] = settings
