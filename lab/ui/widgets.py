"""Streamlit widgets generated from pydantic fields, so no setting is listed twice.

``field_specs(Model)`` walks a model (nested models included) and turns each
field into a ``FieldSpec``: its dotted path, the widget kind its type calls
for, the bounds from ``Field(ge=..., le=...)`` and the help text from its
description. That part is pure and unit-testable. ``render_fields`` draws the
specs; ``config_form`` lays out a ``CompactionConfig`` with one section per
stage.

    bool              -> toggle
    Literal[...]      -> selectbox
    int/float bounded -> slider (small ranges, ratios) or number input
    list[str]         -> text input, comma-separated
    str / str | None  -> text input / text area (empty = None)
    datetime          -> text input, ISO 8601
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import annotated_types as at
import streamlit as st
from pydantic import BaseModel, ValidationError

from ..core.config import STAGE_FIELDS, CompactionConfig, parse_config
from ..core.tokens import counter_names
from ..errors import ConfigError

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
]

WidgetKind = Literal["toggle", "select", "slider", "number", "text", "textarea", "list", "datetime"]
MARK = "●"
# A bounded int range up to this wide gets a slider; wider ones (windows, byte thresholds) a number input.
SLIDER_MAX_INT_RANGE = 1000


@dataclass(frozen=True)
class FieldSpec:
    path: str
    kind: WidgetKind
    label: str
    help: str
    default: Any = None
    min_value: float | int | None = None
    max_value: float | int | None = None
    step: float | int | None = None
    options: tuple[Any, ...] = ()
    is_int: bool = False
    optional: bool = False
    max_chars: int | None = None
    group: str = ""


def humanize(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _bounds(metadata: Iterable[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metadata:
        if isinstance(m, at.Ge):
            out["min"] = m.ge
        elif isinstance(m, at.Gt):
            out["min"] = m.gt
        elif isinstance(m, at.Le):
            out["max"] = m.le
        elif isinstance(m, at.Lt):
            out["max"] = m.lt
        elif isinstance(m, at.MaxLen):
            out["max_len"] = m.max_length
    return out


def _unwrap_optional(ann: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1 and len(args) != len(typing.get_args(ann)):
            return args[0], True
    return ann, False


def _is_model(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _numeric(path: str, ann: type, info: Any, label: str, help_text: str, default: Any, group: str) -> FieldSpec:
    b = _bounds(info.metadata)
    is_int = ann is int
    # Streamlit wants bounds, value and step of one type: `ge=0` on a float field must become 0.0.
    lo, hi = (None if b.get(k) is None else ann(b[k]) for k in ("min", "max"))
    if is_int:
        slider = lo is not None and hi is not None and hi - lo <= SLIDER_MAX_INT_RANGE
        step: float | int = 1
    else:
        # Shares of something (ratios, rates) get a slider with hundredths; prices and weights too.
        slider = lo is not None and hi is not None and hi <= 1.0
        step = 0.01 if hi is not None and hi <= 1000 else 1.0
    return FieldSpec(
        path, "slider" if slider else "number", label, help_text, default,
        min_value=lo, max_value=hi, step=step, is_int=is_int, group=group,
    )


def field_specs(
    model: type[BaseModel],
    *,
    prefix: str = "",
    exclude: Iterable[str] = (),
    choices: Mapping[str, Sequence[Any]] | None = None,
    group: str = "",
) -> list[FieldSpec]:
    """One spec per leaf field of ``model``, in declaration order (nested models flattened)."""
    skip = set(exclude)
    choices = choices or {}
    specs: list[FieldSpec] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        if path in skip:
            continue
        ann, optional = _unwrap_optional(info.annotation)
        if _is_model(ann):
            specs.extend(field_specs(ann, prefix=path + ".", exclude=skip, choices=choices, group=group or path))
            continue
        label = humanize(name)
        help_text = (info.description or "").strip()
        default = info.get_default(call_default_factory=True)
        b = _bounds(info.metadata)
        if path in choices:
            specs.append(FieldSpec(path, "select", label, help_text, default, options=tuple(choices[path]), group=group))
        elif ann is bool:
            specs.append(FieldSpec(path, "toggle", label, help_text, default, group=group))
        elif typing.get_origin(ann) is Literal:
            specs.append(FieldSpec(path, "select", label, help_text, default, options=typing.get_args(ann), group=group))
        elif ann in (int, float):
            specs.append(_numeric(path, ann, info, label, help_text, default, group))
        elif typing.get_origin(ann) is list:
            specs.append(FieldSpec(path, "list", label, help_text, default, group=group))
        elif ann is datetime:
            specs.append(FieldSpec(path, "datetime", label, help_text, default, group=group))
        elif ann is str:
            kind: WidgetKind = "textarea" if optional else "text"
            specs.append(FieldSpec(path, kind, label, help_text, default, optional=optional, max_chars=b.get("max_len"), group=group))
        else:
            raise ConfigError(f"no widget for field {path} of type {info.annotation!r}")
    return specs


# --- values between the model and the widgets -------------------------------------------------


def to_widget(spec: FieldSpec, value: Any) -> Any:
    if spec.kind == "list":
        return ", ".join(value or ())
    if spec.kind == "datetime":
        return value.isoformat() if isinstance(value, datetime) else str(value or "")
    if spec.kind in ("text", "textarea"):
        return "" if value is None else str(value)
    if spec.kind in ("slider", "number"):
        return int(value) if spec.is_int else float(value)
    return value


def from_widget(spec: FieldSpec, raw: Any) -> Any:
    if spec.kind == "list":
        return [part.strip() for part in str(raw or "").split(",") if part.strip()]
    if spec.kind == "textarea" and spec.optional:
        return str(raw) if raw and str(raw).strip() else None
    if spec.kind in ("slider", "number") and raw is not None:
        # Float sliders step in hundredths; rounding keeps 0.86 from arriving as 0.8600000000000001.
        return int(raw) if spec.is_int else round(float(raw), 6)
    return raw


def get_path(model: BaseModel, path: str) -> Any:
    value: Any = model
    for part in path.split("."):
        value = getattr(value, part)
    return value


def with_value(model: BaseModel, path: str, value: Any) -> Any:
    """A validated copy of ``model`` with the field at ``path`` set; ConfigError names the field."""
    data = model.model_dump()
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    if isinstance(model, CompactionConfig):
        return parse_config(data)
    try:
        return type(model).model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or path
        raise ConfigError(f"field {loc}: {first['msg']}") from None


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
) -> Any:
    """Draw one widget for ``spec`` showing ``value``; returns the model-side value it holds."""
    label = spec.label
    if changed:
        label = f"{MARK} {label}"
    help_text = spec.help
    if changed and baseline is not None:
        help_text = f"{help_text}\n\nPreset value: {to_widget(spec, baseline)!s}"
    cb: dict[str, Any] = {}
    if on_change is not None:
        cb = {"on_change": _callback, "args": (spec, key, on_change)}
    shown = to_widget(spec, value)
    common = {"key": key, "help": help_text or None, **cb}
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
) -> dict[str, Any]:
    """Draw every spec (optionally in columns); returns path -> current model-side value."""
    changed = set(changed)
    baseline = baseline or {}
    out: dict[str, Any] = {}
    cols = st.columns(columns) if columns > 1 else None
    for i, spec in enumerate(specs):
        target = cols[i % columns] if cols else st.container()
        with target:
            out[spec.path] = render_field(
                spec, values.get(spec.path, spec.default), key=widget_key(key_prefix, spec.path),
                changed=spec.path in changed, baseline=baseline.get(spec.path), on_change=on_change,
            )
    return out


def update_config(spec: FieldSpec, value: Any) -> None:
    """on_change callback of the config widgets: set one field in the session's config, validated."""
    from . import state

    try:
        state.set_config(with_value(state.get_config(), spec.path, value), sync_widgets=False)
    except ConfigError as e:
        state.set_config_error(str(e))


def config_choices() -> dict[str, list[str]]:
    # The anthropic counter calls the network on every count: far too slow for a replay per slider move.
    return {"counter": [n for n in counter_names() if n != "anthropic"]}


def _flat_values(model: BaseModel, specs: Iterable[FieldSpec]) -> dict[str, Any]:
    return {s.path: get_path(model, s.path) for s in specs}


def config_specs() -> list[FieldSpec]:
    """Every setting of CompactionConfig as a spec (the label is a name, not a setting)."""
    return field_specs(CompactionConfig, exclude=("label",), choices=config_choices())


def config_fields(
    config: CompactionConfig,
    paths: Sequence[str],
    *,
    key_prefix: str,
    changed: Iterable[str] = (),
    baseline: CompactionConfig | None = None,
    on_change: OnChange | None = None,
    columns: int = 1,
) -> dict[str, Any]:
    """A few settings by path (e.g. quick knobs beside a chart), from the same generated specs."""
    by_path = {s.path: s for s in config_specs()}
    unknown = [p for p in paths if p not in by_path]
    if unknown:
        raise ConfigError(f"no config field {', '.join(unknown)}")
    # Out of their section, labels name the stage too: "Watermark ratio", not "Ratio".
    specs = [replace(by_path[p], label=humanize(p.replace(".", " "))) for p in paths]
    base = _flat_values(baseline, specs) if baseline is not None else {}
    return render_fields(specs, _flat_values(config, specs), key_prefix=key_prefix, changed=changed,
                         baseline=base, on_change=on_change, columns=columns)


def config_form(
    config: CompactionConfig,
    *,
    key_prefix: str,
    changed: Iterable[str] = (),
    baseline: CompactionConfig | None = None,
    on_change: OnChange | None = None,
) -> dict[str, Any]:
    """The whole config: window and counter, then one section per stage in pipeline order, then replay settings."""
    specs = config_specs()
    changed = set(changed)
    values = _flat_values(config, specs)
    base = _flat_values(baseline, specs) if baseline is not None else {}
    draw = partial(render_fields, key_prefix=key_prefix, changed=changed, baseline=base, on_change=on_change)
    out = draw([s for s in specs if not s.group], values, columns=2)
    for group in (*STAGE_FIELDS, "replay"):
        inner = [s for s in specs if s.group == group]
        n = sum(1 for s in inner if s.path in changed)
        sub = getattr(config, group)
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
