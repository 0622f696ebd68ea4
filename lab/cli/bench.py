"""``python -m lab bench``: measure counters, imports and the pipeline on this machine (``lab.bench``).

``lab.bench`` imports each section's subject (replayer, formats, tokenizers) only when the section runs.
"""

from __future__ import annotations

import argparse
from typing import Any
from collections.abc import Callable

from ..bench import run_bench

__all__ = ["add_bench_command"]


def _cmd_bench(args: argparse.Namespace) -> int:
    run_bench(sections=args.section, quick=args.quick, out=args.json)
    return 0


def add_bench_command(add: Callable[..., Any]) -> None:
    """Register ``bench`` through the ``add(name, fn, help)`` callback of ``lab.cli.main``."""
    sp = add("bench", _cmd_bench, "Measure counters, imports and the pipeline; print ratios from this run.")
    sp.add_argument("--section", action="append", help="Run only these sections (repeatable).")
    sp.add_argument("--quick", action="store_true", help="Smaller generated inputs, for a fast look.")
    sp.add_argument("--json", help="Also write the results as JSON here.")
