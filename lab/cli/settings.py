"""What a CLI command runs with: the agent config (``--config`` / ``--preset``) and the replay settings (``--settings``).

A config file exported before the split may still hold the replay settings
under ``replay``: they are used, and a ``note:`` line on stderr says where they
came from. ``--settings FILE`` wins over them; ``--recorded-compactions`` and
``--hidden-tokens`` win over both. Bad files raise ``ConfigError`` (``lab.cli.main`` prints one line, exits 2).

The replayer's settings module is imported when a command reads its inputs, not with the CLI: it loads the
replay engine, which ``--help`` and the verbs that only read a transcript never need.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING
from ..core.presets import preset

if TYPE_CHECKING:  # pragma: no cover
    from ..core.config import CompactionConfig
    from ..replayer.settings import ReplaySettings

__all__ = ["SETTINGS_HELP", "HIDDEN_HELP", "add_settings_option", "read_config", "run_inputs", "hidden_tokens", "with_hidden"]

SETTINGS_HELP = ("Replay settings file (JSON, YAML or TOML): prices, prompt cache, retention weights, clock, recorded compactions; "
                 "default: the lab's defaults, or the 'replay' section of an old --config file.")


def add_settings_option(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--settings", help=SETTINGS_HELP)


def read_config(path: str) -> tuple[CompactionConfig, ReplaySettings | None]:
    """A config file's agent config and the replay settings it carried (old files), each note printed on stderr."""
    # The replayer's settings load when a verb runs, not with the CLI.
    from ..replayer.settings import load_split

    cfg, carried, notes = load_split(path)
    for note in notes:
        print(f"note: {path}: {note}", file=sys.stderr)
    return cfg, carried


def run_inputs(args: argparse.Namespace) -> tuple[CompactionConfig, ReplaySettings]:
    """The command's config (a file's config, else the ``--preset``) and its replay settings."""
    # The replayer's settings load when a verb runs, not with the CLI.
    from ..replayer.settings import load_settings, resolve_settings

    carried: ReplaySettings | None = None
    if getattr(args, "config", None):
        cfg, carried = read_config(args.config)
    else:
        cfg = preset(args.preset)
    path = getattr(args, "settings", None)
    settings = load_settings(path) if path else carried
    return cfg, with_hidden(resolve_settings(settings, getattr(args, "recorded_compactions", None)), getattr(args, "hidden_tokens", None))


HIDDEN_HELP = ("Tokens every request carries that the file does not hold (system prompt, tool definitions): a number, or auto "
               "(what the transcript's recorded usage says); the provider's window and bill count them. Default: the settings' hidden_tokens, 0.")


def hidden_tokens(text: str) -> int | str:
    """An argparse type: ``auto`` or a whole number of tokens >= 0."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto or a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def with_hidden(settings: ReplaySettings, given: int | str | None) -> ReplaySettings:
    """``settings`` with ``--hidden-tokens`` applied (auto: from the recorded usage), or as they are."""
    if given is None:
        return settings
    if given == "auto":
        return settings.model_copy(update={"hidden_from_usage": True})
    return settings.model_copy(update={"hidden_tokens": int(given), "hidden_from_usage": False})
