"""The search space of a sweep: which config fields vary, and over what.

A space is a TOML file whose keys are config paths (``python -m lab sweep
--example-space`` prints a commented one)::

    spill.threshold = [1000, 20000]          # a range: [low, high], int or float from the field's type
    watermark.ratio = [0.5, 0.95]
    spill.preview_format = ["minicode", "mewcode"]   # choices: strings or booleans
    microcompact.enabled = [true, false]     # a stage on/off switch is a choice like any other
    summary.tail_max_tokens = "auto"         # bounds from the model's Field(ge=..., le=...)
    summary.tail_min_messages = { choices = [3, 5, 8] }          # numeric choices
    spill.message_budget = { low = 10000, high = 1000000, log = true, step = 1 }

``"auto"`` (or an empty table ``{}``) takes a number's bounds from the field,
a ``Literal``'s values or a bool's ``[true, false]``; automatic bounds that
span 100x or more (with a low above 0) are sampled on a log scale. Every
problem is one ``ConfigError`` that names the field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from pydantic import BaseModel

from ..core.config import CompactionConfig, parse_config
from ..errors import ConfigError
from ..fields import FieldSpec, config_specs

__all__ = ["Param", "SearchSpace", "parse_space", "load_space", "EXAMPLE_SPACE", "AUTO"]

AUTO = "auto"
_OPTION_KEYS = {"low", "high", "log", "step", "choices"}
# Automatic bounds this far apart are searched per order of magnitude, not uniformly.
_LOG_SPAN = 100

EXAMPLE_SPACE = '''\
# A sweep's search space: config fields (dotted paths, as in a config file) and what they range over.
#   [low, high]                 a range; int or float from the field's type, inside the field's own bounds
#   ["a", "b"] / [true, false]  choices (strings of a Literal field, or booleans)
#   { choices = [3, 5, 8] }     numeric choices
#   { low = 1000, high = 1000000, log = true }   a range on a log scale (optional: step)
#   "auto"                      bounds (or choices) taken from the config model
# Fields not listed keep the base config's value (--preset / --config).

spill.enabled = [true, false]
spill.threshold = { low = 1000, high = 50000, log = true }
spill.preview_format = ["minicode", "mewcode"]
microcompact.enabled = [true, false]
microcompact.keep_recent = [2, 20]
watermark.ratio = [0.5, 0.95]
summary.tail_max_tokens = "auto"
summary.tail_window_share = [0.0, 0.5]
'''


@dataclass(frozen=True)
class Param:
    """One swept field: a numeric range, or a list of choices."""

    path: str
    kind: str  # "int", "float" or "choice"
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple[Any, ...] = ()

    def distribution(self) -> Any:
        """The Optuna distribution this parameter is sampled from."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "choice":
            return CategoricalDistribution(list(self.choices))
        if self.kind == "int":
            return IntDistribution(int(self.low or 0), int(self.high or 0), log=self.log, step=int(self.step or 1))
        return FloatDistribution(float(self.low or 0.0), float(self.high or 0.0), log=self.log, step=self.step)

    def describe(self) -> str:
        if self.kind == "choice":
            return f"{self.path} in {list(self.choices)}"
        scale = ", log" if self.log else ""
        step = f", step {self.step}" if self.step is not None else ""
        return f"{self.path} in [{self.low}, {self.high}] ({self.kind}{scale}{step})"


@dataclass(frozen=True)
class SearchSpace:
    """The swept fields, in file order; ``apply`` turns sampled values into a validated config."""

    params: tuple[Param, ...]

    @property
    def paths(self) -> list[str]:
        return [p.path for p in self.params]

    def distributions(self) -> dict[str, Any]:
        return {p.path: p.distribution() for p in self.params}

    def apply(self, base: CompactionConfig, values: Mapping[str, Any]) -> CompactionConfig:
        """``base`` with each swept field set; a combination the model refuses is a ConfigError naming the field."""
        data = base.model_dump(mode="json")
        for path, value in values.items():
            node = data
            parts = path.split(".")
            for part in parts[:-1]:
                node = node[part]
            node[parts[-1]] = value
        return parse_config(data)

    def to_dict(self) -> dict[str, Any]:
        """A canonical form, stored with a study so a resume can check it is the same space."""
        return {p.path: {"kind": p.kind, "low": p.low, "high": p.high, "log": p.log, "step": p.step, "choices": list(p.choices)} for p in self.params}


def _leaves() -> dict[str, FieldSpec]:
    return {s.path: s for s in config_specs()}


def _submodels() -> set[str]:
    out: set[str] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            ann = info.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                out.add(prefix + name)
                walk(ann, prefix + name + ".")

    walk(CompactionConfig, "")
    return out


def _flatten(data: Mapping[str, Any], prefix: str, leaves: Mapping[str, FieldSpec], groups: set[str]) -> list[tuple[str, Any]]:
    # The model decides what a key is, so a table of options ({low, high}) is never taken for a section.
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        path = prefix + key
        if path in leaves:
            out.append((path, value))
        elif path in groups:
            if not isinstance(value, dict):
                raise ConfigError(f"space field {path}: is a section of the config; name one of its fields, e.g. {path}.enabled")
            out.extend(_flatten(value, path + ".", leaves, groups))
        else:
            raise ConfigError(f"space field {path}: not a config field (see `python -m lab config --preset lab --format toml`)")
    return out


def _number(path: str, spec: FieldSpec, value: Any, what: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"space field {path}: {what} must be a number, got {value!r}")
    if spec.is_int:
        if isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"space field {path}: is a whole-number field, {what} {value!r} is not")
        return int(value)
    return float(value)


def _range(path: str, spec: FieldSpec, low: Any, high: Any, log: Any = False, step: Any = None, auto: bool = False) -> Param:
    lo, hi = _number(path, spec, low, "low"), _number(path, spec, high, "high")
    if spec.min_value is not None and lo < spec.min_value:
        raise ConfigError(f"space field {path}: low {lo} is below the field's minimum {spec.min_value}")
    if spec.max_value is not None and hi > spec.max_value:
        raise ConfigError(f"space field {path}: high {hi} is above the field's maximum {spec.max_value}")
    if lo >= hi:
        raise ConfigError(f"space field {path}: low must be below high, got [{lo}, {hi}]")
    if not isinstance(log, bool):
        raise ConfigError(f"space field {path}: log must be true or false, got {log!r}")
    if auto:
        log = lo > 0 and hi / lo >= _LOG_SPAN
    if log and lo <= 0:
        raise ConfigError(f"space field {path}: a log scale needs low > 0, got {lo}")
    if step is not None:
        step = _number(path, spec, step, "step")
        if step <= 0:
            raise ConfigError(f"space field {path}: step must be > 0, got {step}")
        if log and not (spec.is_int and step == 1):
            # Optuna samples a log scale continuously (integers: in steps of 1).
            raise ConfigError(f"space field {path}: a range cannot have both log = true and a step")
    return Param(path, "int" if spec.is_int else "float", lo, hi, log=log, step=step)


def _choices(path: str, spec: FieldSpec, values: list[Any]) -> Param:
    if not values:
        raise ConfigError(f"space field {path}: the list of choices is empty")
    if len(set(map(repr, values))) != len(values):
        raise ConfigError(f"space field {path}: a choice is listed twice in {values!r}")
    for v in values:
        if spec.kind == "toggle":
            if not isinstance(v, bool):
                raise ConfigError(f"space field {path}: is true/false, got choice {v!r}")
        elif spec.kind == "select":
            if v not in spec.options:
                raise ConfigError(f"space field {path}: {v!r} is not one of {list(spec.options)}")
        elif spec.kind in ("slider", "number"):
            value = _number(path, spec, v, "a choice")
            if (spec.min_value is not None and value < spec.min_value) or (spec.max_value is not None and value > spec.max_value):
                raise ConfigError(f"space field {path}: choice {v!r} is outside the field's bounds [{spec.min_value}, {spec.max_value}]")
    if spec.kind in ("slider", "number"):
        values = [_number(path, spec, v, "a choice") for v in values]
    return Param(path, "choice", choices=tuple(values))


def _auto(path: str, spec: FieldSpec) -> Param:
    if spec.kind == "toggle":
        return Param(path, "choice", choices=(True, False))
    if spec.kind == "select":
        return Param(path, "choice", choices=tuple(spec.options))
    if spec.kind in ("slider", "number"):
        if spec.min_value is None or spec.max_value is None:
            raise ConfigError(f"space field {path}: the model gives no bounds for it; write them as [low, high]")
        return _range(path, spec, spec.min_value, spec.max_value, auto=True)
    raise ConfigError(f"space field {path}: cannot be swept (only numbers, choices and on/off switches can)")


def _param(path: str, spec: FieldSpec, value: Any) -> Param:
    if spec.kind not in ("toggle", "select", "slider", "number"):
        raise ConfigError(f"space field {path}: cannot be swept (only numbers, choices and on/off switches can)")
    if value == AUTO or value == {}:
        return _auto(path, spec)
    numeric = spec.kind in ("slider", "number")
    if isinstance(value, dict):
        unknown = sorted(set(value) - _OPTION_KEYS)
        if unknown:
            raise ConfigError(f"space field {path}: unknown option {unknown[0]!r}; use low, high, log, step or choices")
        if "choices" in value:
            if set(value) != {"choices"}:
                raise ConfigError(f"space field {path}: choices cannot be combined with low/high/log/step")
            if not isinstance(value["choices"], list):
                raise ConfigError(f"space field {path}: choices must be a list, got {value['choices']!r}")
            return _choices(path, spec, value["choices"])
        if not numeric:
            raise ConfigError(f"space field {path}: is not a number; give its choices as a list")
        if "low" not in value or "high" not in value:
            raise ConfigError(f"space field {path}: a range needs both low and high")
        return _range(path, spec, value["low"], value["high"], value.get("log", False), value.get("step"))
    if isinstance(value, list):
        if numeric:
            if len(value) != 2:
                raise ConfigError(f"space field {path}: a range is [low, high], got {len(value)} values; use {{ choices = [...] }} for a set")
            return _range(path, spec, value[0], value[1])
        return _choices(path, spec, value)
    raise ConfigError(f"space field {path}: expected [low, high], a list of choices, a table or \"auto\", got {value!r}")


def parse_space(data: Mapping[str, Any] | str) -> SearchSpace:
    """A space from TOML text or an already-parsed mapping."""
    if isinstance(data, str):
        try:
            data = tomllib.loads(data)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"space: not valid TOML: {e}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"space must be a table of config fields, got {type(data).__name__}")
    leaves = _leaves()
    params = [_param(path, leaves[path], value) for path, value in _flatten(data, "", leaves, _submodels())]
    if not params:
        raise ConfigError("space: names no config field to sweep (see `python -m lab sweep --example-space`)")
    return SearchSpace(tuple(params))


def load_space(path: str | Path) -> SearchSpace:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read space {p}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return parse_space(text)
    except ConfigError as e:
        raise ConfigError(f"{p}: {e}") from None
