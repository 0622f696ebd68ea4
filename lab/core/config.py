"""``CompactionConfig``: the single source of truth for what the pipeline does.

One sub-model per stage, each defined beside its stage. Field bounds and
descriptions drive the app's widgets; an export is ``model_dump``. Loading
accepts JSON, YAML and TOML and turns every validation failure into a
``ConfigError`` that names the field.

It holds only what the ``Compactor`` reads. How a replay bills and times the
requests (prices, prompt cache, retention weights, clock) is the replayer's
``ReplaySettings`` (``lab.replayer.settings``). Files exported before the
split carry those under ``replay``: ``parse_config`` drops that section with a
``MovedSettingsWarning``; the lab's own loaders read it through
``lab.replayer.settings.split_config`` instead.

A config is a frozen value (``lab.core.frozen``): change one with
``model_copy(update=...)`` or ``with_value(cfg, "watermark.ratio", 0.7)``.
Its ``fingerprint`` keys every cache (the app's replays, the replay's resume
traces), computed once per value.
"""

from __future__ import annotations

import json
import tomllib
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import tomli_w
import yaml
from pydantic import BaseModel, Field, ValidationError

from ..errors import ConfigError, MovedSettingsWarning
from .frozen import FrozenModel, with_value, with_values
from .stages.active import ActiveContextConfig
from .stages.dedup import DedupConfig
from .stages.microcompact import MicrocompactConfig
from .stages.recovery import RecoveryConfig
from .stages.spill import SpillConfig
from .stages.summary import SummaryConfig
from .stages.watermark import WatermarkConfig

__all__ = [
    "CompactionConfig",
    "ConfigFormat",
    "STAGE_FIELDS",
    "MOVED_SECTION",
    "with_value",
    "with_values",
    "load_config",
    "dump_config",
    "parse_config",
    "read_config_data",
    "describe_error",
]

ConfigFormat = Literal["json", "yaml", "toml"]

# Pipeline order; the names of the stage sub-models on CompactionConfig.
STAGE_FIELDS = ("active", "spill", "dedup", "microcompact", "watermark", "summary", "recovery")

# The section configs exported before the split held the replay settings in; it is no longer a config field.
MOVED_SECTION = "replay"


class CompactionConfig(FrozenModel):
    """What the Compactor does: a frozen value, its sections shared between the copies a change makes."""

    label: str = Field("custom", max_length=200, description="Where this config came from (a preset name or 'custom').")
    window: int = Field(200_000, ge=1_000, le=2_000_000, description="The model's context window in tokens.")
    counter: str = Field("minicode", description="Token counter used for estimates: minicode, chars/3.5, o200k, cl100k, calibrated, anthropic.")
    active: ActiveContextConfig = Field(default_factory=ActiveContextConfig)
    spill: SpillConfig = Field(default_factory=SpillConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    microcompact: MicrocompactConfig = Field(default_factory=MicrocompactConfig)
    watermark: WatermarkConfig = Field(default_factory=WatermarkConfig)
    summary: SummaryConfig = Field(default_factory=SummaryConfig)
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig)

    @cached_property
    def gate_free_fingerprint(self) -> str:
        """The fingerprint without the watermark's gate fields (``WatermarkConfig.GATE_FIELDS``).

        Two configs that share it make the same requests until the first one at which either's gate
        says anything but "below", so a replay under one may resume from the other's (``lab.replayer.resume``).
        """
        return self.fingerprint_without("watermark", WatermarkConfig.GATE_FIELDS)


def describe_error(err: ValidationError, what: str = "config field ") -> str:
    """A validation failure as one line: ``what``, the first failing field's path, its message, how many more."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "<root>"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{what}{loc}: {first['msg']}{more}"


def parse_config(data: Any) -> CompactionConfig:
    """A validated config from a mapping; an old file's ``replay`` section is dropped with a ``MovedSettingsWarning``."""
    if not isinstance(data, dict):
        raise ConfigError(f"config must be a mapping, got {type(data).__name__}")
    if MOVED_SECTION in data:
        # An agent loading an old export runs the same; the replay settings it carried are no business of the Compactor.
        warnings.warn(
            "the config's 'replay' section (prices, cache, retention weights, clock) is no longer part of the agent config "
            "and was ignored; the lab reads it as replay settings (lab.replayer.settings.split_config)",
            MovedSettingsWarning, stacklevel=2,
        )
        data = {k: v for k, v in data.items() if k != MOVED_SECTION}
    try:
        return CompactionConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe_error(e)) from None


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt:
        return fmt
    ext = path.suffix.lower().lstrip(".")
    return {"yml": "yaml", "json": "json", "yaml": "yaml", "toml": "toml"}.get(ext, "json")


def load_config(source: str | Path | bytes, fmt: ConfigFormat | None = None) -> CompactionConfig:
    """Read a config from a path, or from bytes/str content when ``fmt`` is given."""
    return parse_config(read_config_data(source, fmt))


def read_config_data(source: str | Path | bytes, fmt: ConfigFormat | None = None, *, what: str = "config") -> Any:
    """The parsed JSON/YAML/TOML of a path, or of bytes/str content when ``fmt`` is given; not validated."""
    if isinstance(source, bytes):
        if fmt is None:
            raise ConfigError(f"{what} content given as bytes needs its format: json, yaml or toml")
        try:
            source = source.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            raise ConfigError(f"<{what}>: not UTF-8 text: {e}") from None
    if isinstance(source, str) and fmt is not None:
        text = source
        kind: str = fmt
        where = f"<{what}>"
    else:
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read {what} {path}: {e}") from None
        kind = _format_of(path, fmt)
        where = str(path)
    try:
        if kind == "json":
            data = json.loads(text)
        elif kind == "yaml":
            data = yaml.safe_load(text)
        elif kind == "toml":
            data = tomllib.loads(text)
        else:
            raise ConfigError(f"unknown {what} format {kind!r}; use json, yaml or toml")
    except (json.JSONDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{where}: not valid {kind}: {e}") from None
    return data


def _drop_none(value: Any) -> Any:
    # TOML has no null: an unset optional is simply left out, and loads back as its default.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def dump_config(config: BaseModel, fmt: ConfigFormat = "json") -> str:
    data = config.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False)
    if fmt == "toml":
        return tomli_w.dumps(_drop_none(data))
    raise ConfigError(f"unknown config format {fmt!r}; use json, yaml or toml")
