"""What every verb of ``python -m lab`` shares: the parser class, the shared options, and how problems are printed.

Nothing here imports a verb module: the verbs (``transcripts``, ``configs``, ``replay``, ``probe``, ``sweep``,
``serve``, ``bench``) import this module, and ``lab.cli.main`` imports the verbs, so the arrows only point down.

- Problems go to stderr, one line each: ``warning: FILE: ...`` for what an import warned about,
  ``note: ...`` for what a reader of the output should know (a session picked, secrets redacted).
- A bad option value is a ``UsageError`` (from ``Parser.error``) or an argparse type error, which
  ``lab.cli.main`` turns into one ``error:`` line and exit 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any, NoReturn
from collections.abc import Callable

from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import Transcript
    from ..core.providers import ProviderSettings
    from ..core.redact import Tally

__all__ = [
    "Parser",
    "UsageError",
    "MAX_NOTES",
    "STRICT_HELP",
    "cell",
    "print_import_notes",
    "print_batch_warnings",
    "print_redacted",
    "add_session_option",
    "add_no_redact_option",
    "whole_number",
    "provider_settings",
    "add_probe_options",
    "probe_spec",
]

# A long session can drop thousands of blocks; the first few say what kind of thing was dropped.
MAX_NOTES = 20

STRICT_HELP = "Exit with an error (status 2) when any transcript cannot be read, instead of listing it as an error row."


class UsageError(Exception):
    """A command line argparse refused: printed as one ``error:`` line, exit 2."""


class Parser(argparse.ArgumentParser):
    # Set on the subcommands that read a transcript: their --help ends with every format's name and what it reads.
    lists_formats = False

    def error(self, message: str) -> NoReturn:
        # argparse would print the whole usage; users asked for one line.
        raise UsageError(f"{self.prog}: {message}")

    def format_help(self) -> str:
        text = super().format_help()
        # Built only when help is asked for: listing the formats imports every reader, which a command does lazily.
        return text + "\n" + _format_list() if self.lists_formats else text


def _format_list() -> str:
    """The ``--format`` names, one per line with the first sentence of what each reads (detection's error points here)."""
    # Lazy: the format registry imports every reader, which only this help text needs.
    from ..formats import FORMATS

    lines = ["formats (--format NAME; detected automatically when left out):"]
    width = max(len(name) for name in FORMATS)
    for name, fmt in sorted(FORMATS.items()):
        first = fmt.description.split(". ")[0].strip().rstrip(".")
        lines.append(f"  {name:<{width}}  {first}")
    return "\n".join(lines) + "\n"


def cell(value: object) -> str:
    """A table cell: what a file holds, with control characters escaped so they cannot drive the terminal."""
    text = "" if value is None else str(value)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# Every reader that picks one session of several says how to pick another with this (``--session ID``, ``--session N``).
_PICK_HINT = "--session"


def print_import_notes(t: Transcript, path: object = None, *, picked: bool = True, replayed: bool = False,
                       use_timestamps: bool = True, limit: int = MAX_NOTES) -> None:
    """The one place a verb prints what a transcript's import warned about: each warning once, on stderr, one line
    each, ``warning: FILE: ...`` (at most ``limit``, then a count of the rest). ``replayed``: the verb replays it, so
    a simulated clock (no timestamp in the file) is said too (``lab.replayer.explain.import_warnings``). Which session
    of several was read is a ``note:``, left out with ``picked=False``."""
    # Lazy: lab.replayer loads the replay engine, which a verb that only reads a transcript would not otherwise import.
    from ..replayer.explain import import_warnings

    name = cell(path if path is not None else (t.meta.source_path or t.meta.title or "transcript"))
    lines = import_warnings(t, replayed=replayed, use_timestamps=use_timestamps)
    if not picked:
        lines = [w for w in lines if _PICK_HINT not in w]
    _print_file_warnings(name, lines, limit)


def print_batch_warnings(warnings: dict[str, list[str]], limit: int = 5) -> None:
    """``print_import_notes`` for a batch run (compare, sweep): each transcript's import warnings, at most ``limit`` each."""
    for name, lines in warnings.items():
        _print_file_warnings(cell(name), lines, limit)


def _print_file_warnings(name: str, lines: list[str], limit: int) -> None:
    for line in lines[:limit]:
        kind = "note" if _PICK_HINT in line else "warning"
        print(f"{kind}: {name}: {cell(line)}", file=sys.stderr)
    if len(lines) > limit:
        print(f"warning: {name}: ... and {len(lines) - limit} more import warning(s) (`python -m lab import` lists them)", file=sys.stderr)


def print_redacted(tally: Tally) -> None:
    """The count of secrets a write replaced, on stderr: the file differs from the transcript there."""
    note = tally.note()
    if note:
        print(f"note: {note}", file=sys.stderr)


def add_session_option(sp: argparse.ArgumentParser) -> None:
    """``--session ID``, shared by every command that reads one transcript."""
    sp.add_argument(
        "--session",
        metavar="ID",
        help="Read this session of a file or folder that holds several (ids: `python -m lab sessions PATH`).",
    )


def add_no_redact_option(sp: argparse.ArgumentParser) -> None:
    """``--no-redact``, shared by every command that writes transcript text."""
    sp.add_argument(
        "--no-redact",
        action="store_true",
        help="Write secrets found in the transcript (API keys, tokens, private keys) as they are; by default each becomes [REDACTED:<kind>].",
    )


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (argparse turns the error into exit 2 with one line)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def provider_settings(provider: str, model: str, base_url: str | None) -> ProviderSettings:
    """The settings of one model for a probe or a judge; a ``ConfigError`` when no key and no local server is given."""
    # Lazy: lab.core.providers imports both provider SDKs (seconds), which only the probing verbs need.
    from ..core.providers import KEY_ENV_VARS, settings_from_dict

    if not model.strip():
        raise ConfigError("--model must name a model")
    settings = settings_from_dict({"provider": provider, "model": model.strip(), "base_url": base_url})
    if settings.secret() is None:
        raise ConfigError(f"no API key for {provider}: set {KEY_ENV_VARS[provider]}, or give --base-url for a local server that needs none")
    return settings


def add_probe_options(sp: argparse.ArgumentParser) -> None:
    """The options that make ``compare`` and ``sweep`` score every replay with probes too (a probe_score column)."""
    group = sp.add_argument_group("probes (each replay also answers and grades the four probes; costs model calls)")
    group.add_argument("--probe-model", help="Model that answers the probes; turns on the probe_score column / objective.")
    group.add_argument("--probe-judge-model", help="Model that grades the answers (default: the probe model).")
    group.add_argument("--probe-provider", choices=["anthropic", "openai"], default="anthropic", help="SDK for both models.")
    group.add_argument("--probe-base-url", help="API base URL (an OpenAI-compatible server needs /v1).")
    group.add_argument("--probe-max-cost", type=float, help="Dollars at most per replay's probes.")


def probe_spec(args: argparse.Namespace) -> Any:
    """A ``ProbeSpec`` scorer from ``add_probe_options``' options, or None when no probe model is given."""
    if not getattr(args, "probe_model", None):
        return None
    # Lazy: importing lab.evaluation loads the replay engine and the format readers; only a probed run needs it here.
    from ..evaluation.scorers import ProbeSpec

    if args.probe_max_cost is not None and (math.isnan(args.probe_max_cost) or args.probe_max_cost < 0):
        raise ConfigError(f"--probe-max-cost must be >= 0, got {args.probe_max_cost}")
    settings = provider_settings(args.probe_provider, args.probe_model, args.probe_base_url)
    judge = provider_settings(args.probe_provider, args.probe_judge_model, args.probe_base_url) if args.probe_judge_model else None
    return ProbeSpec(settings, judge, args.probe_max_cost)
