"""``python -m lab probe``: ask a model questions about the session after compaction, and have a judge grade them.

    probe SESSION (--preset P | --config F) [--at K ...] --model M [--judge-model J]
          [--provider anthropic|openai] [--base-url URL] [--window W] [--max-cost DOLLARS] --report PROBES.json

The session is replayed under the config; at each request K (default: the
last) the four probes are built from the recorded session (``lab.probe``),
asked with the compacted context at K, and graded 0-5 by the judge (default:
the same model). The cost estimate is printed before the first call. Keys
come from ANTHROPIC_API_KEY / OPENAI_API_KEY only; a --base-url alone is
enough for a local server. A failed probe is reported, never fatal; bad
input raises a ``LabError``, which ``lab.cli.main`` prints as one line, exit 2.

The probe, replay and format modules are imported when the verb runs: ``lab.probe`` loads both
provider SDKs (seconds), which ``--help`` and the other verbs never need. The options that add probes
to ``compare`` and ``sweep`` are shared, in ``lab.cli.common``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any
from collections.abc import Callable

from ..errors import ConfigError
from .common import print_import_notes, provider_settings
from .settings import add_settings_option, run_inputs

__all__ = ["add_probe_command"]


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
    # The verb's engine loads when it runs, not with the CLI (``--help`` and the other verbs never need it).
    from ..formats import load
    from ..probe.run import run_probes
    from ..replayer import replay

    if args.max_cost is not None and not (math.isfinite(args.max_cost) and args.max_cost >= 0):
        raise ConfigError(f"--max-cost must be a number >= 0, got {args.max_cost:g}")
    cfg, replay_settings = run_inputs(args)
    settings = provider_settings(args.provider, args.model, args.base_url)
    judge = provider_settings(args.provider, args.judge_model, args.base_url) if args.judge_model else settings
    transcript = load(args.path)
    print_import_notes(transcript, args.path)
    report = replay(transcript, cfg, settings=replay_settings, window=args.window)
    out = run_probes(report, settings, judge=judge, at=args.at, tools=list(transcript.tools), max_cost=args.max_cost,
                     echo=print, session=str(args.path))
    out.write(args.report)
    _print_report(out, args.report)
    return 0


def add_probe_command(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    """Register ``probe`` through the ``add(name, fn, help)`` callback of ``lab.cli.main``."""
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
