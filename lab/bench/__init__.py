"""``python -m lab bench``: speed and accuracy measured as ratios within one run.

Each section is a function returning printable lines and a JSON-able dict.
Claims in the README quote what this prints; nothing here is a pass/fail test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from ..errors import LabError

__all__ = ["run_bench", "SECTIONS", "corpus_files", "default_corpus"]


def default_corpus() -> Path:
    # The corpus sits beside the project: <root>/../shared/corpus.
    return Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def corpus_files(folder: Path | None = None) -> list[Path]:
    folder = folder or default_corpus()
    if not folder.is_dir():
        raise LabError(f"corpus folder not found: {folder}")
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".md")


def _tokens(quick: bool) -> tuple[list[str], dict]:
    from .tokens import bench_counters_paths, format_table

    rows = bench_counters_paths(corpus_files())
    return format_table(rows).splitlines(), {"rows": rows}


def _imports(quick: bool) -> tuple[list[str], dict]:
    from .imports import bench_imports

    return bench_imports(corpus_files(), quick=quick)


SECTIONS: dict[str, Callable[[bool], tuple[list[str], dict]]] = {
    "tokens": _tokens,
    "imports": _imports,
}


def register_section(name: str, fn: Callable[[bool], tuple[list[str], dict]]) -> None:
    SECTIONS[name] = fn


def run_bench(sections: list[str] | None = None, quick: bool = False, out: str | None = None) -> dict:
    _load_optional_sections()
    names = sections or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise LabError(f"unknown bench section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    results: dict[str, dict] = {}
    for name in names:
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        lines, data = SECTIONS[name](quick)
        for line in lines:
            print(line, flush=True)
        data["section_seconds"] = round(time.perf_counter() - t0, 2)
        results[name] = data
        print(flush=True)
    if out:
        Path(out).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return results


def _load_optional_sections() -> None:
    # Sections that live in later layers register themselves on import.
    import importlib

    for mod in ("lab.bench.core", "lab.bench.replay", "lab.bench.app"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
