"""``python -m lab sweep``: search the config space on a set of transcripts.

    sweep PATH_OR_DIR --space SPACE.toml --trials N [--objective NAME ...] [--preset P | --config F]
          [--window W] [--seed S] [--population K] [--processes P | --ray auto|ADDRESS] [--allow-failures]
          [--study FILE.db] [--export-best N --export-to FILE] [--export-chosen FILE] [--folds K] [--strict]
          --out SWEEP.parquet|.csv|.json
    sweep --example-space

Held out by default: the sessions are split into ``--folds`` folds (5 from 10 sessions, one per session
below; 0 turns it off), each fold's search runs on the other sessions, and the table gains
``<objective>_heldout`` and ``chosen``; the recommended trial is printed as "in-sample X, held-out Y".

Progress (with an ETA) is one line on stderr; at the end the front is printed as a table and as a
character scatter of the first two objectives (``lab.tuning.text_plot``). Every file is accounted for
(swept, unreadable and why, or left out as no transcript; ``--strict`` makes an unreadable one an error),
each transcript's import warnings are printed once on stderr, and a sweep with no feasible trial says
which constraint every trial broke, where, and what would fix it. With ``--study`` the trials
live in an sqlite file: run the same command again after an interruption and
it continues where it stopped. Bad input raises a ``LabError``; ``lab.cli.main``
prints it as one line and exits 2.

``lab.tuning`` (Optuna, the replay engine, the format readers) is imported when the verb runs, not
with the CLI; the objectives' names, needed for ``--help``, are a light module of their own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

from ..errors import ConfigError
from ..evaluation.objectives import OBJECTIVES
from .common import STRICT_HELP, add_probe_options, print_batch_warnings, probe_spec, whole_number
from .settings import add_settings_option, run_inputs

__all__ = ["add_sweep_command"]

_OUT = (".parquet", ".csv", ".json")
_CONFIG_OUT = (".json", ".yaml", ".yml", ".toml")
# The front can hold many points; the terminal shows the best ones, the --out file holds them all.
_SHOWN = 10


def _check(args: argparse.Namespace) -> None:
    if args.path is None:
        raise ConfigError("give the transcripts to sweep over: a file or a folder")
    if args.space is None:
        raise ConfigError("give --space SPACE.toml (start from `python -m lab sweep --example-space`)")
    if args.out is None:
        raise ConfigError("give --out SWEEP.parquet, .csv or .json")
    if Path(args.out).suffix.lower() not in _OUT:
        raise ConfigError(f"--out must end in .parquet, .csv or .json, got {Path(args.out).name!r}")
    if (args.export_best is None) != (args.export_to is None):
        raise ConfigError("--export-best N and --export-to FILE go together")
    for flag, value in (("--export-to", args.export_to), ("--export-chosen", args.export_chosen)):
        if value is not None and Path(value).suffix.lower() not in _CONFIG_OUT:
            raise ConfigError(f"{flag} must end in .json, .yaml or .toml, got {Path(value).name!r}")
    if not Path(args.path).exists():
        raise ConfigError(f"no such file or folder: {args.path}")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _cmd_sweep(args: argparse.Namespace) -> int:
    # The tuner (optuna) loads when the verb runs, not with the CLI.
    from ..tuning.space import EXAMPLE_SPACE

    if args.example_space:
        sys.stdout.write(EXAMPLE_SPACE)
        return 0
    _check(args)
    # The tuner (optuna) and its plots load when the verb runs, not with the CLI.
    from ..tuning import load_space, sweep
    from ..tuning.text_plot import pareto_plot

    space = load_space(args.space)
    base, settings = run_inputs(args)
    try:
        result = sweep(
            args.path, space, trials=args.trials, objectives=args.objective, base=base, window=args.window,
            seed=args.seed, **({"population": args.population} if args.population else {}), allow_failures=args.allow_failures, study=args.study,
            processes=args.processes, ray=args.ray, progress=True, probe=probe_spec(args), settings=settings, strict=args.strict,
            folds=args.folds,
        )
    except KeyboardInterrupt:
        if args.study:
            print(f"note: finished trials are kept in {args.study}; run the same command again to continue", file=sys.stderr)
        raise
    print_batch_warnings(result.warnings)
    for skipped in result.skipped:
        print(f"warning: skipped {skipped}", file=sys.stderr)
    result.write(args.out)
    df = result.df
    front = result.pareto
    feasible = int(df["feasible"].sum()) if len(df) else 0
    print(f"swept {len(result.transcripts)} transcript(s) x {len(df)} trial(s) in {result.seconds:.1f} s: "
          f"{feasible} feasible, {len(df) - int((df['state'] == 'complete').sum())} failed, {len(front)} on the Pareto front -> {args.out}")
    if len(result.listed) > 1 or result.skipped or result.left_out:
        print(result.summary())
    if result.infeasible is not None:
        # "0 feasible" alone leaves the user guessing: which constraint, where, and the fix.
        print(f"infeasible: {result.infeasible}")
    if result.folds:
        print(f"held out in {result.folds} folds (each fold's search ran on the other sessions): "
              + "; ".join(f"fold {f}: {', '.join(out)}" for f, out in enumerate(result.held_out, 1)))
    print(result.recommendation())
    held = [f"{o}_heldout" for o in result.objectives] if result.folds else []
    shown = ["trial", *result.objectives, *held, *result.params]
    if len(front):
        print("pareto front (best first by " + result.objectives[0] + "):")
        print("  " + " | ".join(shown))
        for _, row in front.head(_SHOWN).iterrows():
            print("  " + " | ".join(_cell(row[c]) for c in shown))
        if len(front) > _SHOWN:
            print(f"  ... and {len(front) - _SHOWN} more in {args.out}")
    plot = pareto_plot(result)
    if plot is not None:
        print(plot)
    for error in sorted({e for e in df["error"].dropna()})[:3]:
        print(f"note: a trial failed: {error}")
    if args.export_best is not None:
        target = result.export_best(args.export_best, args.export_to)
        print(f"exported point {args.export_best} of the front (trial {int(front.iloc[args.export_best - 1]['trial'])}) -> {target}")
    if args.export_chosen is not None:
        chosen = result.chosen
        target = result.export_chosen(args.export_chosen)
        print(f"exported the recommended trial ({int(chosen['trial']) if chosen else '?'}) -> {target}")
    return 0


_positive = whole_number(1)
_seed = whole_number(0)


def add_sweep_command(add: Callable[..., Any]) -> None:
    """Register ``sweep`` through the ``add(name, fn, help)`` callback of ``lab.cli.main``."""
    sp = add("sweep", _cmd_sweep, "Search the config space on a set of transcripts (Optuna NSGA-II); write every trial and the Pareto front.")
    sp.add_argument("path", nargs="?", help="A transcript file or a folder of them.")
    sp.add_argument("--example-space", action="store_true", help="Print a starting space file and exit.")
    sp.add_argument("--space", help="SPACE.toml: config fields and their ranges or choices.")
    sp.add_argument("--trials", type=_positive, default=30, help="Trials the study holds at the end (a resumed study continues to it).")
    sp.add_argument("--objective", action="append", choices=list(OBJECTIVES),
                    help="An objective (repeatable; default cost and needed_later_recall).")
    base = sp.add_mutually_exclusive_group()
    base.add_argument("--preset", default="lab", help="The base config the space varies (default: lab).")
    base.add_argument("--config", help="A base config file (JSON, YAML or TOML).")
    add_settings_option(sp)
    sp.add_argument("--window", type=_positive, help="Fix every trial's context window, in tokens.")
    sp.add_argument("--seed", type=_seed, default=0, help="Sampler seed: the same seed and inputs give the same sweep.")
    sp.add_argument("--population", type=_positive, help="NSGA-II population: trials per generation (default 10).")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--processes", type=_positive, default=1, help="Worker processes (1 runs in this process).")
    where.add_argument("--ray", help="Run on Ray: auto (a local runtime) or a cluster ADDRESS.")
    sp.add_argument("--allow-failures", action="store_true", help="Do not require 0 failed requests (invalid requests stay forbidden).")
    sp.add_argument("--study", help="An sqlite file holding the trials, so an interrupted sweep can continue.")
    sp.add_argument("--export-best", type=_positive, metavar="N", help="Write the N-th point of the front (1 = best) as a config file.")
    sp.add_argument("--export-to", metavar="FILE", help="Where --export-best writes (.json, .yaml or .toml).")
    sp.add_argument("--export-chosen", metavar="FILE", help="Write the recommended trial (best held out) as a config file.")
    sp.add_argument("--folds", type=_seed, metavar="K",
                    help="Hold sessions out in K folds: each fold's search runs on the others and is scored on them "
                    "(default: 5 from 10 sessions, one per session below; 0: off). --trials is the total over the folds.")
    sp.add_argument("--out", help="SWEEP.parquet, .csv or .json: every trial with its config and scores.")
    sp.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_probe_options(sp)
