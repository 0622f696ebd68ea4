"""``python -m lab presets`` and ``python -m lab config``: the presets by name, and a preset or config file printed.

``config`` validates a file and prints it as JSON, YAML or TOML; an old file's replay section is left out of
the agent config it prints, with a ``note:`` saying so (``lab.cli.settings.read_config``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from collections.abc import Callable

from .settings import read_config
from ..core.presets import PRESETS, preset_description, preset
from ..core.config import dump_config

__all__ = ["add_config_commands"]


def _cmd_presets(args: argparse.Namespace) -> int:
    # Lazy, as every verb's model: the presets build the stage configs, which --help never needs.

    for name in PRESETS:
        print(f"{name:28} {preset_description(name)}")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    # An old file's replay section is left out of the agent config it prints; read_config says so.
    cfg = read_config(args.config)[0] if args.config else preset(args.preset)
    sys.stdout.write(dump_config(cfg, args.format))
    return 0


def add_config_commands(add: Callable[..., Any]) -> None:
    """Register ``presets`` and ``config`` through the ``add(name, fn, help)`` callback of ``lab.cli.main``."""
    add("presets", _cmd_presets, "List the config presets.")

    sp = add("config", _cmd_config, "Print a preset or a config file as JSON, YAML or TOML.")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset")
    g.add_argument("--config", help="A config file to validate and convert.")
    sp.add_argument("--format", choices=["json", "yaml", "toml"], default="json")
