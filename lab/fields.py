"""Widget specs generated from pydantic fields: the part of the config controls that no UI library owns.

The Streamlit app (``lab.ui.widgets``) and the notebook explorer
(``lab.notebook``) draw their controls from the same specs, so a setting is
declared once, on its model, and both front ends show the same bounds, help
and choices.

``field_specs(Model)`` walks a model (nested models included) and turns each
field into a ``FieldSpec``: its dotted path, the widget kind its type calls
for, the bounds from ``Field(ge=..., le=...)`` and the help text from its
description.

    bool              -> toggle
    Literal[...]      -> select
    int/float bounded -> slider (small ranges, ratios) or number input
    list[str]         -> text input, comma-separated
    str / str | None  -> text input / text area (empty = None)
    datetime          -> text input, ISO 8601

The replay settings (``ReplaySettings``) sit beside the config; their specs
(``settings_specs``) carry paths under ``replay.`` so one set of paths names
every control, and ``run_values`` / ``run_with_value`` / ``inactive_run_fields``
read, set and judge a (config, settings) pair by those paths.

This module imports no UI library.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar
from collections.abc import Iterable, Mapping, Sequence

import annotated_types as at
from pydantic import BaseModel

from .core.config import CompactionConfig
from .core.frozen import with_value as _with_value
from .core.relevance import inactive_fields
from .core.tokens import counter_names
from .errors import ConfigError
from .replayer.settings import ReplaySettings, settings_relevance

__all__ = [
    "FieldSpec",
    "WidgetKind",
    "SLIDER_MAX_INT_RANGE",
    "field_specs",
    "humanize",
    "to_widget",
    "from_widget",
    "get_path",
    "with_value",
    "flat_values",
    "config_specs",
    "config_choices",
    "SETTINGS_GROUP",
    "settings_specs",
    "is_settings_path",
    "run_values",
    "run_with_value",
    "inactive_run_fields",
]

_M = TypeVar("_M", bound=BaseModel)

WidgetKind = Literal["toggle", "select", "slider", "number", "text", "textarea", "list", "datetime"]
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
    # Widgets want bounds, value and step of one type: `ge=0` on a float field must become 0.0.
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


def with_value(model: _M, path: str, value: Any) -> _M:
    """A validated copy of ``model`` with the field at ``path`` set; ConfigError names the field.

    ``lab.core.frozen.with_value``: only the section that holds the field is validated, the others are shared.
    """
    return _with_value(model, path, value, what="config field " if isinstance(model, CompactionConfig) else "field ")


def flat_values(model: BaseModel, specs: Iterable[FieldSpec]) -> dict[str, Any]:
    """path -> the model's current value, for each spec."""
    return {s.path: get_path(model, s.path) for s in specs}


def config_choices() -> dict[str, list[str]]:
    # The anthropic counter calls the network on every count: far too slow for a replay per control move.
    return {"counter": [n for n in counter_names() if n != "anthropic"]}


def config_specs() -> list[FieldSpec]:
    """Every setting of CompactionConfig as a spec (the label is a name, not a setting)."""
    return field_specs(CompactionConfig, exclude=("label",), choices=config_choices())


# --- the replay settings beside the config ------------------------------------------------------

# The group (and path prefix) of the replay settings' controls: the section old config files kept them in.
SETTINGS_GROUP = "replay"
_PREFIX = SETTINGS_GROUP + "."


def settings_specs() -> list[FieldSpec]:
    """Every replay setting as a spec, its path under ``replay.`` (``replay.pricing.model``)."""
    return field_specs(ReplaySettings, prefix=_PREFIX, group=SETTINGS_GROUP)


def is_settings_path(path: str) -> bool:
    return path.startswith(_PREFIX)


def run_values(config: CompactionConfig, settings: ReplaySettings, specs: Iterable[FieldSpec]) -> dict[str, Any]:
    """path -> current value, config paths from ``config`` and ``replay.`` paths from ``settings``."""
    return {s.path: get_path(settings, s.path[len(_PREFIX):]) if is_settings_path(s.path) else get_path(config, s.path) for s in specs}


def run_with_value(config: CompactionConfig, settings: ReplaySettings, path: str, value: Any) -> tuple[CompactionConfig, ReplaySettings]:
    """The pair with the field at ``path`` set in whichever half holds it, validated (ConfigError names the field)."""
    if is_settings_path(path):
        inner = path[len(_PREFIX):]
        try:
            out = with_value(settings, inner, value)
        except ConfigError as e:
            raise ConfigError(str(e).replace("field ", f"field {_PREFIX}", 1)) from None
        if inner.startswith("pricing.") and inner != "pricing.follow_session" and out.pricing.follow_session:
            # A price set is a price chosen: it wins over the session's model (lab.replayer.prices.session_pricing).
            out = out.model_copy(update={"pricing": out.pricing.model_copy(update={"follow_session": False})})
        return config, out
    return with_value(config, path, value), settings


def inactive_run_fields(config: CompactionConfig, settings: ReplaySettings) -> dict[str, str]:
    """``inactive_fields`` of the config and ``settings_relevance`` of the settings, by control path."""
    out = inactive_fields(config)
    out.update({_PREFIX + k: why for k, why in settings_relevance(settings).items()})
    return out
