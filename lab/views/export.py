"""The files the Export page offers, as bytes; no Streamlit here.

Everything is built from the config model, the replay settings and the
replay's report, so an export holds exactly what the models dump: no API key
can reach it (provider settings are part of neither ``CompactionConfig`` nor
``ReplaySettings``, and ``ProviderSettings`` excludes its key from every dump
anyway). The config file is the agent config alone, what a ``Compactor``
loads; the replay settings are a second file.

A request body and a report hold transcript text, which may hold a key a user
pasted into the session: both are redacted like every file the CLI writes
(``lab.core.redact``), with the count in the file's ``notes``, unless the
caller asks for ``redact=False``. Lone surrogates become U+FFFD, so the bytes
are always valid UTF-8.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal
from collections.abc import Sequence

from ..atomic import encode_text
from ..core.config import CompactionConfig, ConfigFormat, dump_config
from ..core.redact import Tally, redact_text
from ..core.messages import ToolSpec
from ..errors import ConfigError
from ..replayer.settings import ReplaySettings, dump_settings, load_split
from ..core.presets import preset_names
from ..formats.export import to_anthropic, to_openai
from ..formats.tool_results import export_warnings

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer import Report

__all__ = [
    "CONFIG_FORMATS",
    "SHAPES",
    "ExportFile",
    "config_file",
    "changed_from",
    "export_label",
    "labelled",
    "settings_file",
    "transcript_file",
    "report_file",
    "python_snippet",
    "restore_config",
    "restore_split",
]

CONFIG_FORMATS: dict[str, str] = {"json": "application/json", "yaml": "application/x-yaml", "toml": "application/toml"}
_EXTENSIONS = {"json": "json", "yaml": "yaml", "yml": "yaml", "toml": "toml"}
Shape = Literal["anthropic", "openai"]
SHAPES: tuple[Shape, ...] = ("anthropic", "openai")


@dataclass(frozen=True)
class ExportFile:
    name: str
    data: bytes
    mime: str
    # What the export had to change for the provider to accept the body (orphan or moved results, rewritten ids).
    warnings: tuple[str, ...] = ()
    # What the export did to the text itself (the secrets it redacted).
    notes: tuple[str, ...] = ()


def _text_bytes(text: str, redact: bool) -> tuple[bytes, tuple[str, ...]]:
    tally = Tally()
    if redact:
        text = redact_text(text, tally)
    note = tally.note(hint=None)
    return encode_text(text), (note,) if note else ()


def config_file(config: CompactionConfig, fmt: ConfigFormat = "json", stem: str = "compaction") -> ExportFile:
    if fmt not in CONFIG_FORMATS:
        raise ConfigError(f"unknown config format {fmt!r}; use json, yaml or toml")
    return ExportFile(f"{stem}.{fmt}", dump_config(config, fmt).encode("utf-8"), CONFIG_FORMATS[fmt])


def _flat(data: object, prefix: str = "") -> dict[str, object]:
    if isinstance(data, dict):
        out: dict[str, object] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def changed_from(config: CompactionConfig, base: CompactionConfig) -> list[str]:
    """The dotted fields where ``config`` differs from ``base`` (its preset), the label left out, sorted."""
    now, was = _flat(config.model_dump(mode="json")), _flat(base.model_dump(mode="json"))
    return sorted(k for k in now if k != "label" and now[k] != was.get(k))


def export_label(preset_name: str, changed: Sequence[str], label: str = "") -> str:
    """The label an exported config carries by default: the preset's name while it is the preset, else says it changed.

    A file labelled "minicode" after three changes claimed to be MiniCode's defaults, which it no longer was.
    ``label``: the config's own, kept when a user gave it (a restored file's name is neither a preset's nor "custom").
    """
    if label and label != "custom" and label not in preset_names():
        return label
    if not changed:
        return preset_name
    return f"{preset_name}, changed ({len(changed)} value{'s' if len(changed) != 1 else ''})"


def labelled(config: CompactionConfig, label: str) -> CompactionConfig:
    """A copy of ``config`` carrying ``label`` (stripped; empty keeps the config's own; cut to the field's 200 characters)."""
    label = " ".join(label.split())[:200]
    # A config is frozen: the copy carries the label (cut to the field's maximum above, so valid).
    return config.model_copy(update={"label": label}) if label else config


def settings_file(settings: ReplaySettings, fmt: ConfigFormat = "json", stem: str = "replay-settings") -> ExportFile:
    """The replay settings (prices, cache, retention weights, clock) as a file ``--settings`` and the API read."""
    if fmt not in CONFIG_FORMATS:
        raise ConfigError(f"unknown settings format {fmt!r}; use json, yaml or toml")
    return ExportFile(f"{stem}.{fmt}", dump_settings(settings, fmt).encode("utf-8"), CONFIG_FORMATS[fmt])


def transcript_file(report: Report, k: int, shape: Shape, tools: Sequence[ToolSpec] = (), *, redact: bool = True) -> ExportFile:
    """The request body sent at request ``k``, in the provider's own shape (secrets redacted unless ``redact=False``)."""
    if shape not in SHAPES:
        raise ConfigError(f"unknown request shape {shape!r}; use anthropic or openai")
    messages = report.context_at(k)
    notes: list[str] = []
    body = (to_anthropic if shape == "anthropic" else to_openai)(messages, tools, notes=notes)
    data, redacted = _text_bytes(json.dumps(body, ensure_ascii=False, indent=1), redact)
    return ExportFile(f"request-{k}.{shape}.json", data, "application/json", tuple(export_warnings(notes)), redacted)


def report_file(report: Report, *, redact: bool = True) -> ExportFile:
    """The replay report as JSON (secrets in its notes and retention items redacted unless ``redact=False``)."""
    data, redacted = _text_bytes(report.to_json(), redact)
    return ExportFile("replay-report.json", data, "application/json", notes=redacted)


def python_snippet(filename: str = "compaction.json") -> str:
    """How to use an exported config in an agent loop; the names are the core's real API."""
    return (
        "from lab.core import Compactor, load_config\n"
        "\n"
        f"compactor = Compactor(load_config({filename!r}))\n"
        "\n"
        "# before every request to the model:\n"
        "outcome = compactor.process_request(messages)  # messages: list[lab.core.Message]\n"
        "messages = outcome.messages\n"
        "print(outcome.tokens_before, '->', outcome.tokens_after, outcome.freed_by_stage)\n"
    )


def restore_config(name: str, data: bytes) -> CompactionConfig:
    """The agent config of an uploaded config file (``restore_split`` without the settings and notes)."""
    return restore_split(name, data)[0]


def restore_split(name: str, data: bytes) -> tuple[CompactionConfig, ReplaySettings | None, list[str]]:
    """Read an uploaded config: the agent config, the replay settings an old file carried, and notes on what moved.

    The format comes from the file name (JSON when it says nothing).
    """
    ext = PurePath(name).suffix.lower().lstrip(".")
    fmt = _EXTENSIONS.get(ext)
    if fmt is None:
        if ext:
            raise ConfigError(f"{name}: unknown config file type .{ext}; use .json, .yaml, .yml or .toml")
        fmt = "json"
    try:
        return load_split(data, fmt)  # type: ignore[arg-type]
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: not UTF-8 text") from None
    except ConfigError as e:
        raise ConfigError(f"{name}: {e}") from None
