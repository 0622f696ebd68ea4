"""``python -m lab probe``: ask a model questions about the session after compaction, and have a judge grade them.

    probe SESSION (--preset P | --config F) [--at K ...] --model M [--judge-model J]
          [--provider anthropic|openai] [--base-url URL] [--window W] [--max-cost DOLLARS] --report PROBES.json

The session is replayed under the config; at each request K (default: the
last) the four probes are built from the recorded session (``lab.probe``),
asked with the compacted context at K, and graded 0-5 by the judge (default:
the same model). The cost estimate is printed before the first call. Keys
come from ANTHROPIC_API_KEY / OPENAI_API_KEY only; a --base-url alone is
enough for a local server. A failed probe is reported, never fatal; bad
input raises a ``LabError``, which ``lab.cli`` prints as one line, exit 2.
"""

from __future__ import annotations

import argparse
import math
from typing import Any
from collections.abc import Callable

from .cli_settings import add_settings_option
from .errors import ConfigError

__all__ = ["add_probe_command", "add_probe_options", "probe_spec"]


def _settings(provider: str, model: str, base_url: str | None) -> Any:
    from .core.providers import KEY_ENV_VARS, settings_from_dict

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
    """A ``ProbeSpec`` from ``add_probe_options``' options, or None when no probe model is given."""
    if not getattr(args, "probe_model", None):
        return None
    from .replayer.runner import ProbeSpec

    if args.probe_max_cost is not None and (math.isnan(args.probe_max_cost) or args.probe_max_cost < 0):
        raise ConfigError(f"--probe-max-cost must be >= 0, got {args.probe_max_cost}")
    settings = _settings(args.probe_provider, args.probe_model, args.probe_base_url)
    judge = _settings(args.probe_provider, args.probe_judge_model, args.probe_base_url) if args.probe_judge_model else None
    return ProbeSpec(settings, judge, args.probe_max_cost)


def _score(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _print_report(out: Any, path: str) -> None:
    print(f"probed {out.session} under {out.config} (window {out.window:,}) at request(s) {', '.join(map(str, out.points))}: "
          f"{out.graded} graded, {out.failed} failed, {out.skipped} skipped; {out.calls} calls, ${out.spent:.4f} spent")
    for kind, t in out.by_type.items():
        print(f"  {kind:13} {_score(t.score):>5}  ({t.graded}/{t.probes} graded)")
    for dim, value in out.by_dimension.items():
        print(f"  {dim:22} {_score(value):>5}")
    print(f"score (0-5): {_score(out.score)}")
    for p in out.probes:
        if p.status != "graded":
            print(f"warning: {p.id} {p.status}: {p.error}")
    if out.stopped:
        print(f"warning: {out.stopped}")
    for note in out.notes:
        print(f"note: {note}")
    print(f"report -> {path}")


def _cmd_probe(args: argparse.Namespace) -> int:
    from .cli import print_import_notes
    from .cli_settings import run_inputs
    from .formats import load
    from .probe.run import run_probes
    from .replayer import replay

    if args.max_cost is not None and not (math.isfinite(args.max_cost) and args.max_cost >= 0):
        raise ConfigError(f"--max-cost must be a number >= 0, got {args.max_cost:g}")
    cfg, replay_settings = run_inputs(args)
    settings = _settings(args.provider, args.model, args.base_url)
    judge = _settings(args.provider, args.judge_model, args.base_url) if args.judge_model else settings
    transcript = load(args.path)
    print_import_notes(transcript, args.path)
    report = replay(transcript, cfg, settings=replay_settings, window=args.window)
    out = run_probes(report, settings, judge=judge, at=args.at, tools=list(transcript.tools), max_cost=args.max_cost,
                     echo=print, session=str(args.path))
    out.write(args.report)
    _print_report(out, args.report)
    return 0


def add_probe_command(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    sp = add("probe", _cmd_probe, "Ask a model probes about the session after compaction; a judge grades them 0-5 against the session.")
    sp.add_argument("path", metavar="SESSION")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset")
    g.add_argument("--config", help="A config file (JSON, YAML or TOML).")
    add_settings_option(sp)
    sp.add_argument("--at", type=int, action="append", metavar="K", help="Request to probe (repeatable; negative counts from the end). Default: the last.")
    sp.add_argument("--model", required=True, help="The model that answers the probes.")
    sp.add_argument("--judge-model", help="The model that grades the answers (default: --model).")
    sp.add_argument("--provider", choices=["anthropic", "openai"], default="anthropic")
    sp.add_argument("--base-url", help="API base URL; a local server needs no key (OpenAI-compatible: include /v1).")
    sp.add_argument("--window", type=int, help="Override the config's window.")
    sp.add_argument("--max-cost", type=float, metavar="DOLLARS", help="Stop before a call that could take the run past this many dollars.")
    sp.add_argument("--report", required=True, help="Where to write the probe report (JSON).")
