"""Import speed, as a ratio against plain ``json.loads`` of the same lines in the same run.

Runs are interleaved and each starts after a full collection, and every result is
freed only after its clock stops, so the three timings are taken alike. Every
clock is the process's CPU time (``time.process_time``, user and system): on a
shared machine wall time also counts what other processes ran, which moved the
ratio from one run to the next by more than the changes it is meant to show;
CPU time is steadier, and it still counts the page faults an import's memory
costs.

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
from typing import Any

import msgspec
from ..core.gcpause import gc_paused
from ..core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..formats import load
from ..generator import generate_jsonl_bytes

__all__ = ["bench_imports", "time_import"]

TARGET_RATIO = 1.0
# Each side's clock: CPU time of this process (see the module doc).
_clock = time.process_time
# Best of this many interleaved runs on the generated file, and on the largest corpus file.
GENERATED_REPEATS = 5
CORPUS_REPEATS = 25
# Peak traced memory of the import over the file's size.
TARGET_MEMORY = 2.0


def _json_lines(path: Path, keep: bool) -> float:
    """Seconds for plain ``json.loads`` of every line; with ``keep``, the values are held in a list."""
    kept: list[object] = []
    t0 = _clock()
    if path.suffix == ".jsonl":
        with path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    value = json.loads(line)
                    if keep:
                        kept.append(value)
    else:
        kept.append(json.loads(path.read_bytes()))
    spent = _clock() - t0
    del kept  # freed after the clock stops, like the import's result
    return spent


def _floor_once(path: Path) -> float:
    """Seconds for the least any importer of a Claude Code JSONL must do: parse each line with the lab's
    parser and build its message as the importer's models (blocks, message; validation skipped, as the
    importer's ``trusted`` construction does), with no other logic; the GC paused, as the import runs."""
    decode = msgspec.json.Decoder().decode
    text_block, use_block, result_block, message = TextBlock.trusted, ToolUseBlock.trusted, ToolResultBlock.trusted, Message.trusted
    out: list[Message] = []
    t0 = _clock()
    with gc_paused(), path.open("rb") as fh:
        for line in fh:
            entry = decode(line)
            body = entry.get("message")
            if not isinstance(body, dict):
                continue
            content = body.get("content")
            blocks: list[Any] = []
            for b in content if isinstance(content, list) else [{"type": "text", "text": content or ""}]:
                kind = b.get("type")
                if kind == "text":
                    blocks.append(text_block({"text": b["text"]}))
                elif kind == "tool_use":
                    blocks.append(use_block({"id": b["id"], "name": b["name"], "input": b["input"]}))
                elif kind == "tool_result":
                    inner = b.get("content")
                    text = inner if isinstance(inner, str) else "\n".join(x.get("text", "") for x in inner or ())
                    blocks.append(result_block({"tool_use_id": b["tool_use_id"], "content": text}))
            out.append(message({"id": entry["uuid"], "role": body["role"], "content": tuple(blocks)}))
    spent = _clock() - t0
    del out
    return spent


def _import_once(path: Path) -> float:
    t0 = _clock()
    result = load(path)
    spent = _clock() - t0
    del result
    return spent


def time_import(path: Path, repeats: int = 5, floor: bool = False) -> dict:
    """Best of ``repeats`` interleaved runs of the import and both baselines (and, asked, the floor), each after a full collection."""
    runs = [("import", lambda: _import_once(path)), ("json", lambda: _json_lines(path, False)), ("json_kept", lambda: _json_lines(path, True))]
    if floor:
        runs.append(("floor", lambda: _floor_once(path)))
    best = {name: float("inf") for name, _ in runs}
    for _ in range(repeats):
        for name, fn in runs:
            gc.collect()
            best[name] = min(best[name], fn())
    extra = {"floor_s": round(best["floor"], 3), "floor_ratio": round(best["floor"] / best["json"], 2) if best["json"] else None} if floor else {}
    return {
        **extra,
        "file": path.name,
        "mb": round(path.stat().st_size / 1e6, 2),
        "import_s": round(best["import"], 3),
        "json_loads_s": round(best["json"], 3),
        "json_kept_s": round(best["json_kept"], 3),
        "ratio": round(best["import"] / best["json"], 2) if best["json"] else None,
        "ratio_kept": round(best["import"] / best["json_kept"], 2) if best["json_kept"] else None,
    }


def _peak_memory(path: Path) -> float:
    tracemalloc.start()
    try:
        load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6


def bench_imports(corpus: list[Path], quick: bool = False) -> tuple[list[str], dict]:
    rows = []
    largest = max(corpus, key=lambda p: p.stat().st_size)
    # A corpus file imports in milliseconds, where one scheduler tick moves a best of 5 by a tenth: more runs.
    rows.append(time_import(largest, repeats=CORPUS_REPEATS))
    size = 10_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="lab-bench-") as tmp:
        big = Path(tmp) / "generated.jsonl"
        generate_jsonl_bytes(big, size, seed=7)
        rows.append(time_import(big, repeats=GENERATED_REPEATS, floor=True))
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
    lines.append(
        f"floor on the generated file (parse each line into dicts with msgspec and build its message models, nothing else): "
        f"{big_row['floor_s']:.3f} s = {big_row['floor_ratio']:.2f}x json.loads; the importer decodes into structs of the fields"
        f" it reads instead of dicts, so its own work (chain, threads, ids, checks) can fit under this"
    )
    mem_ok = "ok" if big_row["memory_ok"] else "MISSED"
    lines.append(
        f"peak traced memory importing the generated file: {big_row['peak_mb_traced']} MB for a {big_row['mb']} MB file,"
        f" {big_row['peak_over_size']}x its size  target <= {TARGET_MEMORY}x  {mem_ok}"
    )
    return lines, {"rows": rows, "target_ratio": TARGET_RATIO, "target_memory": TARGET_MEMORY}
