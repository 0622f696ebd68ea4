"""Streamlit widgets generated from pydantic fields, so no setting is listed twice.

The specs (dotted path, widget kind, bounds, help) come from ``lab.fields``,
shared with the notebook explorer, which documents how a field's type picks
its widget. ``render_fields`` draws the specs; ``config_form`` lays out a
``CompactionConfig`` with one section per stage, then the ``ReplaySettings``
beside it (paths under ``replay.``, see ``lab.fields.settings_specs``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any
from collections.abc import Callable, Iterable, Mapping, Sequence

import streamlit as st

from ..core.config import STAGE_FIELDS, CompactionConfig
from ..errors import ConfigError
# The specs are Streamlit-free and shared with the notebook explorer; re-exported here for the pages.
from ..fields import (
    SETTINGS_GROUP,
    FieldSpec,
    WidgetKind,
    config_choices,
    config_specs,
    field_specs,
    from_widget,
    get_path,
    humanize,
    inactive_run_fields,
    run_values,
    run_with_value,
    settings_specs,
    to_widget,
    with_value,
)
from ..replayer.prices import row_names, session_pricing, with_row
from ..replayer.settings import ReplaySettings
from .settings import get_config, get_settings, set_config, set_config_error, set_settings
from .transcript import get_transcript

__all__ = [
    "FieldSpec",
    "WidgetKind",
    "field_specs",
    "humanize",
    "to_widget",
    "from_widget",
    "get_path",
    "with_value",
    "widget_key",
    "render_field",
    "render_fields",
    "config_form",
    "config_specs",
    "config_fields",
    "config_choices",
    "update_config",
    "MARK",
    "PRICE_ROW_PATH",
    "FOLLOW_PATH",
]

MARK = "●"
# A select over the price table's rows: choosing one sets the four prices too (``update_config``).
PRICE_ROW_PATH = "replay.pricing.model"
FOLLOW_PATH = "replay.pricing.follow_session"


def widget_key(prefix: str, path: str) -> str:
    return f"{prefix}:{path}"


# --- drawing ----------------------------------------------------------------------------------

OnChange = Callable[[FieldSpec, Any], None]


def _callback(spec: FieldSpec, key: str, on_change: OnChange) -> None:
    on_change(spec, from_widget(spec, st.session_state.get(key)))


def render_field(
    spec: FieldSpec,
    value: Any,
    *,
    key: str,
    changed: bool = False,
    baseline: Any = None,
    on_change: OnChange | None = None,
    inactive: str | None = None,
) -> Any:
    """Draw one widget for ``spec`` showing ``value``; returns the model-side value it holds.

    ``inactive``: why the setting has no effect under the rest of the config. The widget is then
    disabled, with that reason first in its help, so moving it cannot promise a change that never comes.
    """
    label = spec.label
    if changed:
        label = f"{MARK} {label}"
    help_text = spec.help
    if inactive:
        help_text = f"No effect now: {inactive}\n\n{help_text}"
    if changed and baseline is not None:
        help_text = f"{help_text}\n\nPreset value: {to_widget(spec, baseline)!s}"
    cb: dict[str, Any] = {}
    if on_change is not None:
        cb = {"on_change": _callback, "args": (spec, key, on_change)}
    shown = to_widget(spec, value)
    common = {"key": key, "help": help_text or None, "disabled": bool(inactive), **cb}
    if spec.kind == "toggle":
        raw = st.toggle(label, value=bool(shown), **common)
    elif spec.kind == "select":
        options = list(spec.options)
        if shown not in options:
            options.append(shown)
        raw = st.selectbox(label, options, index=options.index(shown), **common)
    elif spec.kind == "slider":
        raw = st.slider(label, min_value=spec.min_value, max_value=spec.max_value, value=shown, step=spec.step, **common)
    elif spec.kind == "number":
        fmt = None if spec.is_int else "%.2f"
        raw = st.number_input(label, min_value=spec.min_value, max_value=spec.max_value, value=shown, step=spec.step, format=fmt, **common)
    elif spec.kind == "textarea":
        raw = st.text_area(label, value=shown, max_chars=spec.max_chars, **common)
    else:
        raw = st.text_input(label, value=shown, max_chars=spec.max_chars, **common)
    return from_widget(spec, raw)


def render_fields(
    specs: Sequence[FieldSpec],
    values: Mapping[str, Any],
    *,
    key_prefix: str,
    changed: Iterable[str] = (),
    baseline: Mapping[str, Any] | None = None,
    on_change: OnChange | None = None,
    columns: int = 1,
    inactive: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Draw every spec (optionally in columns); returns path -> current model-side value.

    ``inactive`` maps a path to why it has no effect now (``relevance.inactive_fields``); those widgets are disabled.
    """
    changed = set(changed)
    baseline = baseline or {}
    inactive = inactive or {}
    out: dict[str, Any] = {}
    cols = st.columns(columns) if columns > 1 else None
    for i, spec in enumerate(specs):
        target = cols[i % columns] if cols else st.container()
        with target:
            out[spec.path] = render_field(
                spec, values.get(spec.path, spec.default), key=widget_key(key_prefix, spec.path),
                changed=spec.path in changed, baseline=baseline.get(spec.path), on_change=on_change,
                inactive=inactive.get(spec.path),
            )
    return out


def update_config(spec: FieldSpec, value: Any) -> None:
    """on_change callback of the config widgets: set one field of the session's config or replay settings, validated."""
    try:
        if spec.path == PRICE_ROW_PATH:
            # Picking a row fills in its four prices: the number widgets are rebuilt to show them.
            rs = get_settings()
            set_settings(rs.model_copy(update={"pricing": with_row(rs.pricing, str(value), rs.cache.ttl_seconds)}))
            return
        if spec.path == FOLLOW_PATH and value:
            # Back to the session's own model: its row's prices at once, and the number widgets rebuilt to show them.
            transcript = get_transcript()
            rs = get_settings()
            rs = rs.model_copy(update={"pricing": rs.pricing.model_copy(update={"follow_session": True})})
            set_settings(session_pricing(rs, transcript.meta.model if transcript is not None else None)[0])
            return
        cfg, rs = get_config(), get_settings()
        new_cfg, new_rs = run_with_value(cfg, rs, spec.path, value)
        if new_cfg is not cfg:
            set_config(new_cfg, sync_widgets=False)
        if new_rs is not rs:
            set_settings(new_rs, sync_widgets=False)
    except ConfigError as e:
        set_config_error(str(e))


def _specs() -> list[FieldSpec]:
    """The config's specs then the replay settings', the price table's row names offered for ``replay.pricing.model``."""
    specs = [*config_specs(), *settings_specs()]
    return [replace(s, kind="select", options=("", *row_names())) if s.path == PRICE_ROW_PATH else s for s in specs]


def config_fields(
    config: CompactionConfig,
    paths: Sequence[str],
    *,
    key_prefix: str,
    settings: ReplaySettings | None = None,
    changed: Iterable[str] = (),
    baseline: CompactionConfig | None = None,
    baseline_settings: ReplaySettings | None = None,
    on_change: OnChange | None = None,
    columns: int = 1,
) -> dict[str, Any]:
    """A few settings by path (e.g. quick knobs beside a chart), from the same generated specs.

    ``replay.`` paths are replay settings, read from ``settings`` (default: ReplaySettings()).
    """
    by_path = {s.path: s for s in _specs()}
    unknown = [p for p in paths if p not in by_path]
    if unknown:
        raise ConfigError(f"no config field {', '.join(unknown)}")
    rs = settings if settings is not None else ReplaySettings()
    # Out of their section, labels name the stage too: "Watermark ratio", not "Ratio".
    specs = [replace(by_path[p], label=humanize(p.replace(".", " "))) for p in paths]
    base = run_values(baseline, baseline_settings or ReplaySettings(), specs) if baseline is not None else {}
    return render_fields(specs, run_values(config, rs, specs), key_prefix=key_prefix, changed=changed,
                         baseline=base, on_change=on_change, columns=columns, inactive=inactive_run_fields(config, rs))


def config_form(
    config: CompactionConfig,
    *,
    key_prefix: str,
    settings: ReplaySettings | None = None,
    changed: Iterable[str] = (),
    baseline: CompactionConfig | None = None,
    baseline_settings: ReplaySettings | None = None,
    on_change: OnChange | None = None,
) -> dict[str, Any]:
    """The whole config: window and counter, then one section per stage in pipeline order, then the replay settings."""
    specs = _specs()
    rs = settings if settings is not None else ReplaySettings()
    changed = set(changed)
    values = run_values(config, rs, specs)
    base = run_values(baseline, baseline_settings or ReplaySettings(), specs) if baseline is not None else {}
    draw = partial(render_fields, key_prefix=key_prefix, changed=changed, baseline=base, on_change=on_change,
                   inactive=inactive_run_fields(config, rs))
    out = draw([s for s in specs if not s.group], values, columns=2)
    for group in (*STAGE_FIELDS, SETTINGS_GROUP):
        inner = [s for s in specs if s.group == group]
        n = sum(1 for s in inner if s.path in changed)
        sub = getattr(config, group, None)
        state = "" if getattr(sub, "enabled", True) else " (off)"
        title = f"{humanize(group)}{state}" + (f"  {MARK} {n} changed" if n else "")
        with st.expander(title, expanded=bool(n)):
            # Nested groups (replay.pricing, replay.cache...) get a caption each.
            last_parent = None
            for spec in inner:
                parent = spec.path.rsplit(".", 1)[0]
                if parent != group and parent != last_parent:
                    st.caption(humanize(parent.split(".")[-1]))
                last_parent = parent
                out.update(draw([spec], values))
    return out
