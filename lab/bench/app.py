"""Bench section "app": seconds from a slider change to a redrawn timeline, through Streamlit's AppTest.

The largest corpus transcript is uploaded through the Session page, the
Timeline page is opened, then the watermark-ratio knob beside the chart is
moved to values not seen before (each one a cache miss: a fresh replay plus
the three figures) and back to one already seen (a cache hit: drawing only).
Each figure is the wall time of one ``AppTest.run()``, the closest thing to
"the browser sent a widget change and got the page back" without a browser.
The core's own replay time for the same config is printed beside it, so the
app's overhead can be told apart from the replay's. The target is 0.5 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from . import corpus_files, register_section

__all__ = ["TARGET_SECONDS", "bench_app"]

TARGET_SECONDS = 0.5
_APP = Path(__file__).resolve().parents[1] / "app.py"
_KNOB = "tl0:watermark.ratio"


def _timed_run(at: Any) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the app raised: {[e.value for e in at.exception]}")
    return elapsed


def bench_app(path: Path, moves: int = 5) -> dict[str, Any]:
    from streamlit.testing.v1 import AppTest

    from ..core.presets import preset
    from ..formats import load
    from ..replay import replay

    tmp = tempfile.mkdtemp(prefix="lab-bench-app-")
    old_tmp = os.environ.get("LAB_APP_TMP")
    os.environ["LAB_APP_TMP"] = tmp
    try:
        at = AppTest.from_file(str(_APP), default_timeout=600)
        first_run = _timed_run(at)
        at.file_uploader(key="session.upload").set_value((path.name, path.read_bytes(), "application/octet-stream"))
        upload = _timed_run(at)
        at.switch_page("../pages/timeline.py")
        first_timeline = _timed_run(at)
        ratios = [round(0.84 - 0.03 * i, 2) for i in range(moves)]
        misses = []
        for r in ratios:
            at.slider(key=_KNOB).set_value(r)
            misses.append(_timed_run(at))
        at.slider(key=_KNOB).set_value(ratios[0])
        hit = _timed_run(at)
    finally:
        if old_tmp is None:
            os.environ.pop("LAB_APP_TMP", None)
        else:
            os.environ["LAB_APP_TMP"] = old_tmp
        shutil.rmtree(tmp, ignore_errors=True)

    transcript = load(path)
    core_times = []
    for r in ratios[:3]:
        cfg = preset("minicode")
        cfg.watermark.ratio = r
        start = time.perf_counter()
        core = replay(transcript, cfg)
        core_times.append(time.perf_counter() - start)
    core_seconds = statistics.median(core_times)
    median = statistics.median(misses)
    return {
        "transcript": path.name,
        "messages": len(transcript.messages),
        "requests": core.requests,
        "app_first_run_s": round(first_run, 3),
        "upload_and_overview_s": round(upload, 3),
        "first_timeline_s": round(first_timeline, 3),
        "slider_to_timeline_s": [round(x, 3) for x in misses],
        "slider_to_timeline_median_s": round(median, 3),
        "slider_to_timeline_cached_s": round(hit, 3),
        "core_replay_s": round(core_seconds, 3),
        "target_s": TARGET_SECONDS,
        "ratio_to_target": round(median / TARGET_SECONDS, 2),
        "meets_target": median <= TARGET_SECONDS,
    }


def _section(quick: bool) -> tuple[list[str], dict]:
    files = corpus_files()
    largest = max(files, key=lambda p: p.stat().st_size)
    data = bench_app(largest, moves=3 if quick else 5)
    verdict = "meets" if data["meets_target"] else "misses"
    lines = [
        f"largest corpus transcript: {data['transcript']} ({data['messages']} messages, {data['requests']} requests)",
        f"upload + overview: {data['upload_and_overview_s']:.2f} s; first timeline: {data['first_timeline_s']:.2f} s",
        f"slider change -> redrawn timeline (new value, replay + figures): median {data['slider_to_timeline_median_s']:.3f} s "
        f"over {len(data['slider_to_timeline_s'])} moves {data['slider_to_timeline_s']}",
        f"  = {data['ratio_to_target']:.2f} x the {TARGET_SECONDS} s target ({verdict} it)",
        f"slider back to a value seen before (cached replay, drawing only): {data['slider_to_timeline_cached_s']:.3f} s",
        f"core replay alone for the same configs (median): {data['core_replay_s']:.3f} s",
    ]
    return lines, data


register_section("app", _section)
