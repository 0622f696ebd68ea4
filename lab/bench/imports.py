"""Import speed, as a ratio against plain ``json.loads`` of the same lines in the same run.

Runs are interleaved and each starts after a full collection, and every result is
freed only after its clock stops, so the three timings are taken alike.

The baseline is stdlib ``json.loads`` of every line, values discarded: what a
plain Python reader of the file pays. The lab parses with a faster parser
(msgspec) and spends what that saves on validation, merging and model
building; the target is an import no slower than that baseline. Peak memory
(tracemalloc) is reported against the file size, to show the import streams
instead of holding the file twice; the target is at most 2x.
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

__all__ = ["bench_imports", "time_import"]

TARGET_RATIO = 1.0
# Peak traced memory of the import over the file's size.
TARGET_MEMORY = 2.0


def _json_lines(path: Path, keep: bool) -> float:
    """Seconds for plain ``json.loads`` of every line; with ``keep``, the values are held in a list."""
    kept: list[object] = []
    t0 = time.perf_counter()
    if path.suffix == ".jsonl":
        with path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    value = json.loads(line)
                    if keep:
                        kept.append(value)
    else:
        kept.append(json.loads(path.read_bytes()))
    spent = time.perf_counter() - t0
    del kept  # freed after the clock stops, like the import's result
    return spent


def _import_once(path: Path) -> float:
    from ..formats import load

    t0 = time.perf_counter()
    result = load(path)
    spent = time.perf_counter() - t0
    del result
    return spent


def time_import(path: Path, repeats: int = 5) -> dict:
    """Best of ``repeats`` interleaved runs of the import and both baselines, each after a full collection."""
    best = {"import": float("inf"), "json": float("inf"), "json_kept": float("inf")}
    for _ in range(repeats):
        for name, fn in (("import", lambda: _import_once(path)), ("json", lambda: _json_lines(path, False)), ("json_kept", lambda: _json_lines(path, True))):
            gc.collect()
            best[name] = min(best[name], fn())
    return {
        "file": path.name,
        "mb": round(path.stat().st_size / 1e6, 2),
        "import_s": round(best["import"], 3),
        "json_loads_s": round(best["json"], 3),
        "json_kept_s": round(best["json_kept"], 3),
        "ratio": round(best["import"] / best["json"], 2) if best["json"] else None,
        "ratio_kept": round(best["import"] / best["json_kept"], 2) if best["json_kept"] else None,
    }


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
    from ..generator import generate_jsonl_bytes

    rows = []
    largest = max(corpus, key=lambda p: p.stat().st_size)
    rows.append(time_import(largest))
    size = 10_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="lab-bench-") as tmp:
        big = Path(tmp) / "generated.jsonl"
        generate_jsonl_bytes(big, size, seed=7)
        rows.append(time_import(big, repeats=3))
        peak = _peak_memory(big)
        rows[-1]["peak_mb_traced"] = round(peak, 1)
        # From the unrounded figures: a rounded ratio could hide a peak just over the target.
        over = peak * 1e6 / big.stat().st_size
        rows[-1]["peak_over_size"] = round(over, 3)
        rows[-1]["memory_ok"] = over <= TARGET_MEMORY
    lines = [
        f"{'file':36} {'MB':>7} {'import s':>9} {'json s':>8} {'ratio':>6} {'kept s':>7} {'ratio':>6}  target <= {TARGET_RATIO}x json.loads",
    ]
    for r in rows:
        ok = "ok" if r["ratio"] is not None and r["ratio"] <= TARGET_RATIO else "MISSED"
        lines.append(
            f"{r['file']:36} {r['mb']:7.1f} {r['import_s']:9.3f} {r['json_loads_s']:8.3f} {r['ratio']:6.2f}"
            f" {r['json_kept_s']:7.3f} {r['ratio_kept']:6.2f}  {ok}"
        )
    lines.append("json s: json.loads per line, values discarded; kept s: the same, values kept in a list (an importer keeps what it parses)")
    big_row = rows[-1]
    mem_ok = "ok" if big_row["memory_ok"] else "MISSED"
    lines.append(
        f"peak traced memory importing the generated file: {big_row['peak_mb_traced']} MB for a {big_row['mb']} MB file,"
        f" {big_row['peak_over_size']}x its size  target <= {TARGET_MEMORY}x  {mem_ok}"
    )
    return lines, {"rows": rows, "target_ratio": TARGET_RATIO, "target_memory": TARGET_MEMORY}
