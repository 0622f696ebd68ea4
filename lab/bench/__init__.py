"""``python -m lab bench``: speed and accuracy measured as ratios within one run.

Each section is a function returning printable lines and a JSON-able dict.
Claims in the README quote what this prints; nothing here is a pass/fail test.

The real transcripts come from ``$LAB_CORPUS`` (``lab.corpus``). Without it, a
section that needs them raises ``CorpusMissing`` and ``run_bench`` prints
``skipped: <reason>`` for that section and goes on with the others.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable

from ..atomic import write_text_atomic
from ..errors import LabError
from .corpus import CorpusMissing, corpus_files, default_corpus, sessions_of

__all__ = ["run_bench", "SECTIONS", "corpus_files", "sessions_of", "default_corpus", "register_section", "CorpusMissing"]




def _tokens(quick: bool) -> tuple[list[str], dict]:
    # Each section loads its subject when it runs: ``lab.cli`` imports this package for every verb.
    from .tokens import bench_counters_paths, format_table

    rows = bench_counters_paths(corpus_files())
    return format_table(rows).splitlines(), {"rows": rows}


def _imports(quick: bool) -> tuple[list[str], dict]:
    # Loaded when the section runs, like every section's subject (this package comes with ``lab.cli``).
    from .imports import bench_imports

    return bench_imports(corpus_files(), quick=quick)


SECTIONS: dict[str, Callable[[bool], tuple[list[str], dict]]] = {
    "tokens": _tokens,
    "imports": _imports,
}


def register_section(name: str, fn: Callable[[bool], tuple[list[str], dict]]) -> None:
    SECTIONS[name] = fn


# The machine's reference workload first, so the seconds after it can be read against it.
_FIRST = ("machine",)


def run_bench(sections: list[str] | None = None, quick: bool = False, out: str | None = None) -> dict:
    _load_optional_sections()
    names = sections or sorted(SECTIONS, key=lambda n: n not in _FIRST)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise LabError(f"unknown bench section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    results: dict[str, dict] = {}
    for name in names:
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            lines, data = SECTIONS[name](quick)
        except CorpusMissing as e:
            lines, data = [f"skipped: {e}"], {"skipped": str(e)}
        for line in lines:
            print(line, flush=True)
        data["section_seconds"] = round(time.perf_counter() - t0, 2)
        results[name] = data
        print(flush=True)
    if out:
        try:
            write_text_atomic(out, json.dumps(results, indent=2, default=str) + "\n")
        except OSError as e:
            raise LabError(f"cannot write {out}: {e.strerror or e}") from None
    return results


def _load_optional_sections() -> None:
    # Sections that live in later layers register themselves on import.
    for mod in ("lab.bench.machine", "lab.bench.core", "lab.bench.replay", "lab.bench.quality", "lab.bench.heldout", "lab.bench.app", "lab.bench.scale", "lab.bench.serve"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
