"""Import speed, as a ratio against plain ``json.loads`` of the same lines in the same run.

``json.loads`` per line is the floor any JSONL importer pays; the ratio says
what the lab's validation, merging and model building add on top of it.
Peak memory (tracemalloc) is reported against the file size, to show the
import streams instead of holding the file twice.
"""

from __future__ import annotations

import json
import tempfile
import time
import tracemalloc
from pathlib import Path

__all__ = ["bench_imports", "time_import"]

TARGET_RATIO = 2.0


def _json_baseline(path: Path) -> float:
    t0 = time.perf_counter()
    if path.suffix in (".jsonl",):
        with path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    json.loads(line)
    else:
        json.loads(path.read_bytes())
    return time.perf_counter() - t0


def time_import(path: Path, repeats: int = 3) -> dict:
    from ..formats import load

    best_load = min(_timed(lambda: load(path)) for _ in range(repeats))
    best_json = min(_json_baseline(path) for _ in range(repeats))
    return {
        "file": path.name,
        "mb": round(path.stat().st_size / 1e6, 2),
        "import_s": round(best_load, 3),
        "json_loads_s": round(best_json, 3),
        "ratio": round(best_load / best_json, 2) if best_json else None,
    }


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _peak_memory(path: Path) -> float:
    from ..formats import load

    tracemalloc.start()
    try:
        load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6


def bench_imports(corpus: list[Path], quick: bool = False) -> tuple[list[str], dict]:
    from ..generate import generate_jsonl_bytes

    rows = []
    largest = max(corpus, key=lambda p: p.stat().st_size)
    rows.append(time_import(largest))
    size = 10_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="lab-bench-") as tmp:
        big = Path(tmp) / "generated.jsonl"
        generate_jsonl_bytes(big, size, seed=7)
        rows.append(time_import(big, repeats=1 if not quick else 2))
        peak = _peak_memory(big)
        rows[-1]["peak_mb_traced"] = round(peak, 1)
    lines = [f"{'file':48} {'MB':>8} {'import s':>9} {'json s':>8} {'ratio':>6}  target <= {TARGET_RATIO}x"]
    for r in rows:
        ok = "ok" if r["ratio"] is not None and r["ratio"] <= TARGET_RATIO else "MISSED"
        lines.append(f"{r['file']:48} {r['mb']:8.1f} {r['import_s']:9.3f} {r['json_loads_s']:8.3f} {r['ratio']:6.2f}  {ok}")
    lines.append(f"peak traced memory importing the generated file: {rows[-1]['peak_mb_traced']} MB for a {rows[-1]['mb']} MB file")
    return lines, {"rows": rows, "target_ratio": TARGET_RATIO}
