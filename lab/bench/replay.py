"""Bench section "replay": how fast the replay engine runs, and whether it stays linear.

- corpus: CPU seconds (``time.process_time``, so other processes on the
  machine do not count) of ``replay`` for every preset on every corpus
  transcript, as ms per request, at a 32k window (where every path,
  recovery included, runs) and, outside quick mode, at 200k; plus the total
  seconds for the largest transcript.
- growth: one generated session of 500 and one of 5,000 requests (quick:
  200 and 2,000) replayed under a preset at a 64k window, so both runs spend
  most requests at a bounded context; the time ratio should be near 10.
  "linear" is printed when it is <= 12. Each size runs five times, the two
  sizes taken in turn, each after ``gc.collect()`` and ``gc.freeze()``, and
  each request counts at its fastest of the five (``lab.bench.core.best_of_each``). Beside the ratio, the
  ms per request over the last 10% of each run's requests (the steady-state
  cost of one request) shows whether a request gets slower as the session
  grows: the short run spends a larger share of its requests while the
  context is still below the window (fewer compactions per request), so its
  average is lower even when the per-request cost is flat.
- compare: ``compare_folder`` over 20 generated sessions (a temp folder) with
  every preset, with 1 and with 2 processes (wall time, best of two each, CPU
  time with the workers' beside it); the ratio is the speed-up, target >= 1.6.
  Then ``run_grid`` throughput over the same transcripts in jobs and trials per
  minute: in process, 2 processes, and a local Ray runtime (when installed).
- recall: what needed-later recall costs, as the ratio of CPU time of every
  corpus transcript x preset replayed at 32k with ``recall=True`` to the same
  with ``recall=False`` (each best of three, taken in turn). Recall indexes a
  transcript's recorded future once (``recall.History``, shared by every
  replay of the same messages), so three figures: a compare of every preset
  (the history built by the first of them: the figure held to the target,
  <= 1.3), a lone first replay (``lab.replayer.clear_caches`` before each,
  with recall and without: everything replays share is built again, the
  index included) and further replays with the history kept (a slider's
  next move, a sweep's next trial). Those leave content recall out; its own
  line is a lone first replay with it against the same without it (target
  <= 1.2, ``CONTENT_LIMIT``).

Every replay timed here plays every request (``resume=False``): a repeat of the
same config would otherwise resume from the previous run's last checkpoint
(``lab.replayer.resume``), and the figures are of the engine, not of that
shortcut, which the "app" section measures where users meet it.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import tempfile
import time
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..core.presets import preset, preset_names
from . import CorpusMissing, corpus_files, default_corpus, register_section, sessions_of
from .core import REPEAT, Timing, best_of_each
from ..formats import load
from ..replayer import clear_caches, replay
from ..generator import GeneratorConfig, generate, write_lab_json
from ..evaluation import compare_folder
from ..evaluation.grid import run_grid
from ..replayer.recall import History
from ..replayer.retention import shared_targets

__all__ = ["bench_replay", "bench_corpus", "bench_growth", "bench_compare", "bench_throughput", "bench_recall", "replay_timing", "LINEAR_LIMIT", "RECALL_LIMIT", "CONTENT_LIMIT"]

LINEAR_LIMIT = 12.0
# Needed-later recall may cost at most this much more replay time.
RECALL_LIMIT = 1.3
# compare_folder with 2 processes must be at least this much faster than with 1, on this many generated sessions.
SPEEDUP_TARGET = 1.6
COMPARE_SESSIONS = 20
GROWTH_WINDOW = 64_000


def _cpu(fn: Any, repeat: int = 1) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
    return best, result


def bench_corpus(files: list[Path], windows: tuple[int, ...]) -> tuple[list[str], dict]:
    lines = [f"{'transcript':46} {'preset':26} {'window':>7} {'req':>4} {'ms/req':>7} {'total s':>8}"]
    rows: list[dict] = []
    for path in files:
        try:
            transcript = load(path)
        except Exception as e:  # noqa: BLE001 - a bench reports, it does not stop
            lines.append(f"{path.name:46} cannot load: {e}")
            continue
        for window in windows:
            for name in preset_names():
                seconds, report = _cpu(partial(replay, transcript, name, window=window, resume=False))
                per = seconds * 1000 / report.requests if report.requests else 0.0
                rows.append({"transcript": path.name, "bytes": path.stat().st_size, "preset": name, "window": window,
                             "requests": report.requests, "seconds": seconds, "ms_per_request": per})
                lines.append(f"{path.name[:46]:46} {name:26} {window:>7} {report.requests:>4} {per:>7.2f} {seconds:>8.3f}")
    if rows:
        largest = max(rows, key=lambda r: r["bytes"])["transcript"]
        worst = max((r for r in rows if r["transcript"] == largest), key=lambda r: r["seconds"])
        lines.append(f"largest transcript {largest}: slowest preset {worst['preset']} at {worst['window']} "
                     f"took {worst['seconds']:.3f} s of CPU for {worst['requests']} requests")
    return lines, {"rows": rows}


def replay_timing(transcript: Any, preset_name: str, window: int) -> Timing:
    """CPU time of one whole replay, and of each request in it (from the progress callback)."""
    clock = time.process_time
    marks: list[float] = []
    start = clock()
    replay(transcript, preset_name, window=window, progress=lambda done, total: marks.append(clock()), resume=False)
    seconds = clock() - start
    per = tuple(b - a for a, b in pairwise([start, *marks]))
    return Timing(seconds=seconds, requests=len(marks), per_request=per)


def bench_growth(small: int, large: int, presets: tuple[str, ...]) -> tuple[list[str], dict]:
    sessions = {n: generate(GeneratorConfig(seed=3, requests=n)) for n in (small, large)}
    lines: list[str] = []
    data: dict[str, Any] = {"small": small, "large": large, "window": GROWTH_WINDOW, "repeat": REPEAT, "presets": {}}
    for name in presets:
        times = best_of_each({n: partial(replay_timing, t, name, GROWTH_WINDOW) for n, t in sessions.items()})
        s, b = times[small], times[large]
        ratio = b.seconds / s.seconds if s.seconds else float("inf")
        verdict = "linear" if ratio <= LINEAR_LIMIT else "NOT linear"
        lines.append(f"{name}: {small} requests {s.seconds:.2f} s, {large} requests {b.seconds:.2f} s: "
                     f"ratio {ratio:.1f} (x{large // small} requests) -> {verdict} (target <= {LINEAR_LIMIT:.0f}); "
                     f"last 10% of requests {s.tail_ms:.3f} vs {b.tail_ms:.3f} ms/request")
        data["presets"][name] = {"seconds_small": s.seconds, "seconds_large": b.seconds, "ratio": ratio, "linear": ratio <= LINEAR_LIMIT,
                                 "tail_ms_per_request_small": s.tail_ms, "tail_ms_per_request_large": b.tail_ms}
    return lines, data


def _cpu_with_children() -> float:
    # Workers are joined when their pool closes, so their CPU time is in the children's counters by then.
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def bench_compare(sessions: int = COMPARE_SESSIONS, requests: int = 40) -> tuple[list[str], dict]:
    """``compare_folder`` over ``sessions`` generated files, 1 vs 2 processes; then grid throughput by where it runs."""
    walls: dict[int, float] = {}
    cpus: dict[int, float] = {}
    table = None
    # Forked workers inherit this process's heap, and every page of it they touch is copied: start from what
    # a fresh `python -m lab compare` holds, not from what the bench's earlier sections left in the caches.
    clear_caches()
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="lab-bench-compare-") as tmp:
        folder = Path(tmp)
        for seed in range(sessions):
            write_lab_json(generate(GeneratorConfig(seed=seed, requests=requests)), folder / f"gen-{seed:02d}.lab.json")
        load_before = _load()
        # Best of two, alternating, so a burst of load from other processes hits both sides alike.
        for _ in range(2):
            for processes in (1, 2):
                cpu, start = _cpu_with_children(), time.perf_counter()
                table = compare_folder(folder, preset_names(), processes=processes, window=32_000)
                wall = time.perf_counter() - start
                if wall < walls.get(processes, float("inf")):
                    walls[processes], cpus[processes] = wall, _cpu_with_children() - cpu
        assert table is not None
        ratio = walls[1] / walls[2] if walls[2] else 0.0
        lines = [
            f"compare_folder over {sessions} generated sessions of {requests} requests x {len(preset_names())} presets at 32,000 "
            f"({len(table.rows)} rows, {len(table.errors)} errors): 1 process {walls[1]:.2f} s wall ({cpus[1]:.2f} s CPU), "
            f"2 processes {walls[2]:.2f} s wall ({cpus[2]:.2f} s CPU, workers included) -> speed-up x{ratio:.2f} "
            f"({'met' if ratio >= SPEEDUP_TARGET else 'MISSED'}: target >= x{SPEEDUP_TARGET}); load average {load_before} before, {_load()} after"
        ]
        data: dict[str, Any] = {"sessions": sessions, "rows": len(table.rows), "errors": len(table.errors), "seconds_1": walls[1],
                                "seconds_2": walls[2], "cpu_seconds_1": cpus[1], "cpu_seconds_2": cpus[2], "speedup": ratio,
                                "target": SPEEDUP_TARGET}
        part, data["throughput"] = bench_throughput(folder)
    return lines + part, data


def bench_throughput(folder: Path) -> tuple[list[str], dict]:
    """Jobs (transcript x config replays) and trials (one config over every transcript) per minute: in process, 2 processes, local Ray.

    The grid is what a sweep hands ``run_grid``: loaded transcripts x every preset. Ray's start-up and its
    first grid (its workers import the lab) are timed apart; the rate is a later grid's.
    """
    # As a sweep reads the folder: every session of a file that holds several is a transcript.
    transcripts, _ = sessions_of([folder])
    configs = [preset(name).model_copy(update={"window": 32_000}) for name in preset_names()]
    jobs = len(transcripts) * len(configs)
    rates: dict[str, float] = {}
    lines: list[str] = []
    data: dict[str, Any] = {"jobs": jobs, "transcripts": len(transcripts)}

    def timed(**where: Any) -> float:
        start = time.perf_counter()
        grid = run_grid(transcripts, configs, **where)
        wall = time.perf_counter() - start
        assert all(c.ok for row in grid for c in row), "a bench grid job failed"
        return wall

    for mode, where in (("in-process", {"processes": 1}), ("2 processes", {"processes": 2})):
        rates[mode] = jobs * 60 / timed(**where)
    if importlib.util.find_spec("ray") is None:
        lines.append("local Ray: skipped (Ray is not installed: pip install -e '.[ray]')")
    else:
        import ray

        started = not ray.is_initialized()
        start = time.perf_counter()
        if started:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        data["ray_init_seconds"] = time.perf_counter() - start
        try:
            data["ray_first_grid_seconds"] = timed(ray="auto")
            rates["local Ray"] = jobs * 60 / timed(ray="auto")
        finally:
            if started:
                ray.shutdown()
        lines.append(f"local Ray (2 CPUs): start-up {data['ray_init_seconds']:.1f} s, first grid {data['ray_first_grid_seconds']:.1f} s "
                     f"(workers start and import the lab), then timed on a second grid")
    base = rates["in-process"]
    lines.insert(0, f"run_grid, {len(transcripts)} transcripts x {len(configs)} presets = {jobs} jobs: " + "; ".join(
        f"{mode} {rate:,.0f} jobs/min ({rate / len(transcripts):,.1f} trials/min, x{rate / base:.2f})" for mode, rate in rates.items()))
    data["jobs_per_minute"] = rates
    return lines, data


# Content recall's cost on a first replay (issue 28): at most this ratio to the same replay without it.
CONTENT_LIMIT = 1.2


def _verdict(ratio: float) -> str:
    return "ok" if ratio <= RECALL_LIMIT else "OVER"


def bench_recall(files: list[Path], window: int = 32_000, repeat: int = 3) -> tuple[list[str], dict]:
    transcripts, _ = sessions_of(files)
    names = preset_names()

    def presets(t: Any, recall: bool, forget_each: bool, content: bool = False) -> float:
        # Recall's figures leave content recall out (``content=False``): it has a line of its own.
        total = 0.0
        for name in names:
            if forget_each:
                clear_caches()
            total += _cpu(partial(replay, t, name, window=window, recall=recall, resume=False, content=content))[0]
        return total

    best: dict[str, float] = {}
    for t in transcripts:
        runs: dict[str, float] = {}
        for _ in range(repeat):
            # In turn, so a burst of load from other processes hits every mode alike; each with recall on
            # and off under the same caching, so every ratio compares like with like.
            timed: dict[str, float] = {}
            for recall, suffix in ((False, "_off"), (True, "")):
                # Every replay from cold: a user's lone first replay of a transcript.
                timed["first" + suffix] = presets(t, recall, True)
                # A compare of every preset: what replays share (recall's history included) built by the first.
                clear_caches()
                timed["compare" + suffix] = presets(t, recall, False)
                # The same again, everything kept (a slider's next move, a sweep's next trial).
                timed["warm" + suffix] = presets(t, recall, False)
            # Content recall on top of names recall, every replay a first one (``content.ContentHistory`` built by each),
            # and a compare of every preset (built by the first of them).
            timed["first_content"] = presets(t, True, True, content=True)
            clear_caches()
            timed["compare_content"] = presets(t, True, False, content=True)
            for mode, seconds in timed.items():
                runs[mode] = min(runs.get(mode, float("inf")), seconds)
        for mode, seconds in runs.items():
            best[mode] = best.get(mode, 0.0) + seconds
    # What a lone first replay's extra time is made of: the index of the transcript's recorded future
    # (``recall.History``, transcript-only, built once per transcript), timed alone from cold memos; the
    # rest is per request. Alone, the build also collects the retention targets (shell commands parsed) every replay needs.

    # ``own``: the same build with the retention targets already there, as a replay without recall builds them too.
    index = own = 0.0
    for t in transcripts:
        fastest = fastest_own = float("inf")
        for _ in range(repeat):
            clear_caches()
            start = time.process_time()
            History(t.messages)
            fastest = min(fastest, time.process_time() - start)
            clear_caches()
            shared_targets(t.messages)
            start = time.process_time()
            History(t.messages)
            fastest_own = min(fastest_own, time.process_time() - start)
        index += fastest * len(names)
        own += fastest_own * len(names)
    clear_caches()
    modes = ("first", "compare", "warm")
    ratio = {m: best[m] / best[m + "_off"] if best.get(m + "_off") else float("inf") for m in modes}
    ratio["content"] = best["first_content"] / best["first"] if best.get("first") else float("inf")
    ratio["content_compare"] = best["compare_content"] / best["compare"] if best.get("compare") else float("inf")
    secs = {m: (best.get(m + "_off", 0.0), best.get(m, 0.0)) for m in modes}
    extra = secs["first"][1] - secs["first"][0]
    lines = [
        f"{len(transcripts)} transcripts x {len(names)} presets at {window:,}, CPU s without / with recall: "
        f"every replay a first one {secs['first'][0]:.2f} / {secs['first'][1]:.2f}, a compare of the presets "
        f"{secs['compare'][0]:.2f} / {secs['compare'][1]:.2f}, everything kept {secs['warm'][0]:.2f} / {secs['warm'][1]:.2f}",
        f"recall cost of a compare (each transcript's history built once, by its first replay): x{ratio['compare']:.2f} "
        f"({_verdict(ratio['compare'])}, target <= x{RECALL_LIMIT})",
        f"recall cost of a lone first replay of a transcript: x{ratio['first']:.2f} ({_verdict(ratio['first'])}); "
        f"each further replay of it: x{ratio['warm']:.2f} ({_verdict(ratio['warm'])})",
        f"of the lone first replays' extra {extra:.2f} s, building each transcript's index alone (once per transcript) takes {index:.2f} s "
        f"({index / secs['first'][0]:.0%} of the replays' time without recall), {own:.2f} s of it beyond the retention targets a replay "
        f"without recall builds too" if secs["first"][0] else "",
        f"content recall cost of a lone first replay, on top of names recall: x{ratio['content']:.2f} "
        f"({'ok' if ratio['content'] <= CONTENT_LIMIT else 'OVER'}, target <= x{CONTENT_LIMIT}; "
        f"{best.get('first', 0.0):.2f} / {best.get('first_content', 0.0):.2f} CPU s); of a compare of the presets: "
        f"x{ratio['content_compare']:.2f} ({'ok' if ratio['content_compare'] <= CONTENT_LIMIT else 'OVER'})",
    ]
    lines = [line for line in lines if line]
    return lines, {"seconds_index": index, "seconds_index_own": own, **{f"seconds_{m}": best.get(m, 0.0) for m in best}, **{f"ratio_{m}": r for m, r in ratio.items()}, "limit": RECALL_LIMIT, "content_limit": CONTENT_LIMIT}


def bench_replay(quick: bool) -> tuple[list[str], dict]:
    lines: list[str] = []
    data: dict[str, Any] = {}
    try:
        files: list[Path] | None = corpus_files()
    except CorpusMissing as e:
        # Growth and compare run on generated sessions: only the corpus parts are skipped.
        files = None
        lines.append(f"-- corpus replay, corpus throughput and recall cost: skipped: {e}")
    if files is not None:
        part, data["corpus"] = bench_corpus(files, (32_000,) if quick else (32_000, 200_000))
        lines += ["-- corpus replay (CPU time)"] + part
    small, large = (200, 2_000) if quick else (500, 5_000)
    presets = ("mewcode",) if quick else ("mewcode", "minicode")
    part, data["growth"] = bench_growth(small, large, presets)
    lines += [f"-- growth at a {GROWTH_WINDOW:,}-token window (CPU time, each request at its fastest of {REPEAT} runs in turn, gc.collect() + gc.freeze() before each)"] + part
    part, data["compare"] = bench_compare()
    lines += ["-- compare_folder speed-up (wall time) and grid throughput by where it runs"] + part
    if files is not None:
        # The sweep's own workload: the corpus under every preset, as one trial generation hands it to run_grid.
        part, data["throughput_corpus"] = bench_throughput(default_corpus())
        lines += ["-- the same grid throughput over the corpus"] + part
        part, data["recall"] = bench_recall(files, repeat=1 if quick else 3)
        lines += ["-- needed-later recall cost (CPU time, recall on / off)"] + part
    return lines, data


register_section("replay", bench_replay)
