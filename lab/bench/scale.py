"""Bench section "scale": a session of many tiny messages, in time per message and memory per file byte.

Why: a session of 100,000 one-line messages took 55 s and 4.9 GiB to replay
from a 27 MB file, while a 315 MB session of big messages took 26 s and
1.2 GiB. What costs per message (rows, per-request copies of the context,
memos per message, searches over the whole history) hides in a session of
big messages and dominates one of tiny messages.

The workload is ``lab.generator.tiny``: a Claude-Code-shaped JSONL of N tiny
messages (user instruction, ``Bash`` call, one-line result, one-line answer),
for N in ``SIZES`` (quick: ``QUICK_SIZES``; ``$LAB_BENCH_SCALE_SIZES``, comma
separated, overrides both, e.g. ``10000,30000,100000`` for the full case).
Each size is imported and replayed (``PRESET`` at ``WINDOW``, every request
played) in a fresh Python process, so its peak memory (``ru_maxrss``) is its
own. The sizes run in turn, ``ROUNDS`` times, and each keeps its fastest
round (CPU time of the process, ``time.process_time``: the machine's other
processes do not count).

Printed, all from this run:

- per size: messages, requests, the file's MB, the import's and the replay's
  microseconds per message, the replay's ms per request over its last 10% of
  requests (the steady-state cost of one request), and memory: the process's
  RSS after importing the lab (the constant: interpreter, libraries, the
  lab's modules and the libraries a replay imports on first use,
  ``LATE_LIBRARIES``, before the file is read), after the import, and its peak.
- linearity: for each size against the smallest, t(size)/t(smallest) divided
  by the ratio of their messages, for the import plus the replay; target
  <= ``LINEAR_TARGET`` (1.0 is exactly linear). The window is small enough
  that every size spends most of its requests at a full context (a tiny
  session of 10,000 messages holds about 130,000 tokens), so the ratio shows
  work that grows with the session, not the context still filling up.
- memory: (peak - constant) / file bytes, target <= ``MEMORY_TARGET``, as
  "replay peak P MB for an F MB file: Rx file + C MB constant", beside the
  share the import alone takes (its RSS after ``load`` less the constant).
- the same memory figure for a session of realistic, big messages
  (``generate_jsonl_bytes``, ``BIG_MB`` MB, quick ``QUICK_BIG_MB``; one
  round), the other shape the target is stated for (a 315 MB Claude Code
  file took 1.2 GiB).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..errors import LabError
from . import register_section
from ..generator import generate_jsonl_bytes
from ..generator.tiny import generate_tiny_jsonl

__all__ = ["LATE_LIBRARIES", "BIG_MB", "QUICK_BIG_MB", "bench_scale", "measure", "run_size", "sizes", "SIZES", "QUICK_SIZES", "PRESET", "WINDOW", "LINEAR_TARGET", "MEMORY_TARGET", "FIXED_ALLOWANCE", "SIZES_ENV"]

SIZES = (10_000, 30_000)
QUICK_SIZES = (3_000, 9_000)
SIZES_ENV = "LAB_BENCH_SCALE_SIZES"
PRESET = "mewcode"
# The replay section's growth window: every size here fills it within its first few thousand messages.
WINDOW = 64_000
ROUNDS = 2
# The session of big messages: its size in MB.
BIG_MB = 20
QUICK_BIG_MB = 5
# Time per message at the larger size over the smallest's; and peak memory beyond the constant, per file byte.
LINEAR_TARGET = 1.2
MEMORY_TARGET = 3.0
# How much of the target's constant may lie beyond what the process holds before reading the file (fixed-size
# caches, code and schemas a replay loads on first use): a constant, but a small one, so that a cache sized by
# the session cannot hide in it.
FIXED_ALLOWANCE = 8_000_000
# The share of a run's last requests whose mean time is its steady-state cost.
_TAIL = 0.1


def _rss_bytes() -> int:
    """This process's peak RSS since its program started.

    On Linux the peak is ``VmHWM`` of ``/proc/self/status``: ``ru_maxrss`` survives ``execve`` and starts from the
    parent's size at ``fork``, so a "fresh" process started from a big bench process (after the sections before
    this one) would report the parent's memory as its own. ``VmHWM`` belongs to the new program's address space.
    Elsewhere ``ru_maxrss`` (KiB on Linux, bytes on macOS) is what there is.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# Libraries a replay imports on first use, inside a function (content recall's rolling hash is numpy's):
# numpy alone is 11 MB of RSS, which the first replay of a process pays whatever the file's size.
LATE_LIBRARIES = ("numpy", "pickle")


def _import_late_libraries() -> None:
    """Import ``LATE_LIBRARIES`` now, so the constant holds them and the file's share does not."""
    for name in LATE_LIBRARIES:
        # A library that is missing costs nothing here: a replay that needs it fails on its own.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def measure(path: str | Path, preset_name: str = PRESET, window: int = WINDOW) -> dict[str, Any]:
    """Import and replay ``path`` in this process; CPU seconds, counts and peak RSS at each step.

    Meant for a fresh process (``run_size``): the peak RSS is the process's own since its program started (``_rss_bytes``).
    """
    # Everything a replay imports, before the file is read: the constant the memory target allows.
    from ..formats import load
    from ..replayer import replay

    _import_late_libraries()
    base = _rss_bytes()
    clock = time.process_time
    start = clock()
    transcript = load(path)
    imported = clock()
    after_import = _rss_bytes()
    marks: list[float] = []
    report = replay(transcript, preset_name, window=window, resume=False, progress=lambda done, total: marks.append(clock()))
    replayed = clock()
    per = [b - a for a, b in pairwise([imported, *marks])]
    tail = per[-max(1, int(len(per) * _TAIL)):] if per else []
    return {
        "file_bytes": os.path.getsize(path),
        "messages": len(transcript.messages),
        "requests": report.requests,
        "invalid_requests": report.invalid_requests,
        "import_seconds": imported - start,
        "replay_seconds": replayed - imported,
        "tail_ms_per_request": 1000 * sum(tail) / len(tail) if tail else 0.0,
        "rss_base": base,
        "rss_after_import": after_import,
        "rss_peak": _rss_bytes(),
    }


def run_size(path: Path, preset_name: str = PRESET, window: int = WINDOW) -> dict[str, Any]:
    """``measure`` in a fresh Python process, so its peak memory is the replay's alone."""
    code = "import json, sys; from lab.bench.scale import measure; print(json.dumps(measure(sys.argv[1], sys.argv[2], int(sys.argv[3]))))"
    done = subprocess.run([sys.executable, "-c", code, str(path), preset_name, str(window)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"scale bench: the replay of {path.name} failed (exit {done.returncode}): {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def sizes(quick: bool) -> tuple[int, ...]:
    """The session sizes to run: ``$LAB_BENCH_SCALE_SIZES`` when set, else the quick or the default ones."""
    given = os.environ.get(SIZES_ENV, "").strip()
    if not given:
        return QUICK_SIZES if quick else SIZES
    try:
        out = tuple(sorted({int(x) for x in given.split(",") if x.strip()}))
    except ValueError:
        raise LabError(f"{SIZES_ENV}={given!r}: expected message counts separated by commas, e.g. 10000,30000") from None
    if len(out) < 2 or out[0] < 100:
        raise LabError(f"{SIZES_ENV}={given!r}: give at least two sizes, each of at least 100 messages")
    return out


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f}"


def _mark(ok: bool) -> str:
    return "ok" if ok else "OVER"


def bench_scale(quick: bool, *, chosen: tuple[int, ...] | None = None, rounds: int = ROUNDS, preset_name: str = PRESET,
                window: int = WINDOW, big_mb: float | None = None) -> tuple[list[str], dict]:
    """The section: ``chosen`` sizes (default ``sizes(quick)``), and a session of ``big_mb`` MB of big messages (0: none)."""
    ns = chosen or sizes(quick)
    big_mb = (QUICK_BIG_MB if quick else BIG_MB) if big_mb is None else big_mb
    best: dict[int, dict[str, Any]] = {}
    big: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="lab-bench-scale-") as tmp:
        paths = {n: Path(tmp) / f"tiny-{n}.jsonl" for n in ns}
        for n, path in paths.items():
            generate_tiny_jsonl(path, n, seed=1)
        if big_mb:
            big_path = Path(tmp) / "big.jsonl"
            generate_jsonl_bytes(big_path, int(big_mb * 1e6), seed=7)
            big = run_size(big_path, preset_name, window)
        # In turn, so a slow spell of the machine hits every size alike; each keeps its fastest round.
        for _ in range(rounds):
            for n, path in paths.items():
                got = run_size(path, preset_name, window)
                seen = best.get(n)
                if seen is None:
                    best[n] = got
                    continue
                for key in ("import_seconds", "replay_seconds", "tail_ms_per_request"):
                    seen[key] = min(seen[key], got[key])
                for key in ("rss_base", "rss_after_import", "rss_peak"):
                    seen[key] = max(seen[key], got[key])
    lines = [f"generated tiny-message sessions, {preset_name} at a {window:,}-token window, every request played; CPU time of a fresh "
             f"process per size, fastest of {rounds} rounds in turn; memory is that process's RSS",
             f"{'messages':>9} {'requests':>8} {'file MB':>8} {'import us/msg':>13} {'replay us/msg':>13} {'last 10% ms/req':>15} "
             f"{'constant MB':>11} {'after import':>12} {'peak MB':>8} {'peak/file':>9}"]
    rows: list[dict[str, Any]] = []
    for n in ns:
        r = best[n]
        m = r["messages"]
        over = (r["rss_peak"] - r["rss_base"]) / r["file_bytes"]
        row = {**r, "size": n, "import_us_per_message": 1e6 * r["import_seconds"] / m, "replay_us_per_message": 1e6 * r["replay_seconds"] / m,
               "memory_over_file": over}
        rows.append(row)
        lines.append(f"{m:>9,} {r['requests']:>8,} {_mb(r['file_bytes']):>8} {row['import_us_per_message']:>13.1f} "
                     f"{row['replay_us_per_message']:>13.1f} {r['tail_ms_per_request']:>15.3f} {_mb(r['rss_base']):>11} "
                     f"{_mb(r['rss_after_import']):>12} {_mb(r['rss_peak']):>8} {over:>8.1f}x")
    small = rows[0]
    per_small = (small["import_seconds"] + small["replay_seconds"]) / small["messages"]
    for row in rows[1:]:
        per = (row["import_seconds"] + row["replay_seconds"]) / row["messages"]
        row["linearity"] = per / per_small if per_small else float("inf")
        row["linear_ok"] = row["linearity"] <= LINEAR_TARGET
        lines.append(f"linearity {small['messages']:,} -> {row['messages']:,} messages: t = {small['import_seconds'] + small['replay_seconds']:.2f} s -> "
                     f"{row['import_seconds'] + row['replay_seconds']:.2f} s, x{row['messages'] / small['messages']:.1f} messages: "
                     f"time per message x{row['linearity']:.2f}  target <= x{LINEAR_TARGET}  {_mark(row['linear_ok'])}")
    for row in rows:
        base = row["rss_base"]
        lines.append(f"replay peak {_mb(row['rss_peak'])} MB for a {_mb(row['file_bytes'])} MB file: {row['memory_over_file']:.1f}x file + "
                     f"{_mb(base)} MB read before the file (the import alone {(row['rss_after_import'] - base) / row['file_bytes']:.1f}x)")
    for a, b in pairwise(rows):
        # What no choice of constant moves: the peak's growth per byte the file grows by.
        grown = b["file_bytes"] - a["file_bytes"]
        b["memory_marginal"] = (b["rss_peak"] - a["rss_peak"]) / grown if grown > 0 else None
        if b["memory_marginal"] is not None:
            lines.append(f"growth {_mb(a['file_bytes'])} -> {_mb(b['file_bytes'])} MB of file: peak {_mb(a['rss_peak'])} -> {_mb(b['rss_peak'])} MB, "
                         f"{b['memory_marginal']:.1f} bytes of peak per byte of file")
    # The target, "at most 3x the file plus a constant": the smallest constant that holds at every size measured, set
    # beside what the process held before reading the file (the rest is fixed-size caches and code a replay loads), and
    # the growth between sizes, which must stay within 3 bytes a byte for that constant to hold for bigger files too.
    constant = max(row["rss_peak"] - MEMORY_TARGET * row["file_bytes"] for row in rows)
    base = max(row["rss_base"] for row in rows)
    growth = [row["memory_marginal"] for row in rows[1:] if row.get("memory_marginal") is not None]
    memory_ok = all(g <= MEMORY_TARGET for g in growth) and constant <= base + FIXED_ALLOWANCE
    lines.append(f"memory: peak <= {MEMORY_TARGET:.0f}x file + {_mb(constant)} MB at every size ({_mb(base)} MB before the file is read, "
                 f"{_mb(max(constant - base, 0.0))} MB of fixed-size caches and late-loaded code beyond it), growth "
                 f"{', '.join(f'{g:.1f}' for g in growth) or 'n/a'} bytes per byte  target <= {MEMORY_TARGET:.0f}x file + constant "
                 f"(growth <= {MEMORY_TARGET:.0f}, fixed part <= {_mb(FIXED_ALLOWANCE)} MB)  {_mark(memory_ok)}")
    if big is not None:
        over = (big["rss_peak"] - big["rss_base"]) / big["file_bytes"]
        big.update(memory_over_file=over, memory_ok=over <= MEMORY_TARGET)
        lines.append(f"big messages ({big['messages']:,} messages, {big['requests']:,} requests, one round): replay peak {_mb(big['rss_peak'])} MB "
                     f"for a {_mb(big['file_bytes'])} MB file: {over:.1f}x file + {_mb(big['rss_base'])} MB constant (the import alone "
                     f"{(big['rss_after_import'] - big['rss_base']) / big['file_bytes']:.1f}x), {big['replay_seconds'] / big['file_bytes'] * 1e6:.2f} s "
                     f"per MB  target <= {MEMORY_TARGET:.0f}x file + constant  {_mark(over <= MEMORY_TARGET)}")
    lines.append("constant: the same process's RSS after importing the lab's importers and replayer (and numpy, which content recall "
                 "imports on first use), before the file is read")
    data = {"preset": preset_name, "window": window, "rounds": rounds, "rows": rows, "big": big, "linear_target": LINEAR_TARGET,
            "memory_target": MEMORY_TARGET, "memory_constant": constant, "memory_growth": growth, "memory_ok": memory_ok}
    return lines, data


def _section(quick: bool) -> tuple[list[str], dict]:
    return bench_scale(quick)


register_section("scale", _section)
